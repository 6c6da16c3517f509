"""The one intermediate form of the outbox's writes: a batch of `Write`s as what it does to the
tables (no SQL, no I/O here). Each dialect's renderer (`_pg_render`, `_sqlite_render`) turns it
into statements; nothing else decides how a write is committed.

The form:
- `creations`: the writes that insert their response (its row and input items) first, and mark
  the pending requests each answers and the items added by hand each claims (`answered`,
  `claimed`: all of a creation's or, when one was taken meanwhile, the renderer raises
  `AnswersTaken` / `ItemsTaken` and the transaction commits nothing);
- `fences`: one per (response, owner), in response id order (the order every transaction of
  ours locks response rows in, so two of them cannot deadlock): the lease to check or renew,
  and the response row's changes (status, usage, journal counts, the terminal transition)
  and deletions (old checkpoints, journal records) that commit only where the fence matches;
- `owned`: the writes whose rows (events, items, checkpoints, pending requests, journal
  records, webhook events) commit only where their fence matches, in submission order;
- `unowned`: the writes whose rows commit unfenced (a creation's first events, a checkpoint a
  run's storage writes directly).

Invariants the renderers keep: creations come before every fence, fences before the rows they
guard; a fenced-off (response, owner) commits nothing of its own and is reported, its
neighbours commit. Deletions act as if after every row the batch inserts (a response's prune
keeps its newest checkpoint, even one of this batch). The form itself leaves out the journal
records a deletion of the same (response, owner) in the batch takes (`_drop_superseded`), so
no renderer needs its journal deletions to see the batch's own records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace

from ..records import Answers, Claims, Finish, Write

# A write renews its lease only once less than this share of the lease is left (unless it
# names its `lease_until`, or changes the row anyway): the LeaseKeeper renews every third of it,
# and a renewal at every commit would rewrite the response's row and its lease index entry once
# per token of every live stream (on SQLite ~6% of the server's CPU per token; on PostgreSQL a
# row version, its WAL and a dead tuple per response and batch).
RENEW_BELOW_SHARE = 2 / 3

# Every field of `Write` this form carries: a new field fails here, at import, until the form
# (and so every renderer) knows what to do with it.
WRITE_FIELDS = frozenset(
    {
        *("response_id", "owner", "events", "items", "checkpoint", "pending", "create", "answers"),
        *("claims", "status"),
        *("usage", "finish", "prune", "lease_until", "webhooks", "journal", "journal_keep"),
        *("journal_clear", "journal_stats", "urgent"),
    }
)
if {f.name for f in fields(Write)} != WRITE_FIELDS:
    raise TypeError(f"Write's fields changed: {sorted({f.name for f in fields(Write)} ^ WRITE_FIELDS)}")


@dataclass(slots=True)
class Fence:
    """What one (response, owner) of a batch does to its response row, if it holds the lease."""

    response_id: str
    owner: str
    until: float
    # The lease is set to `until` only if it now ends before this (`RENEW_BELOW_SHARE`).
    renew_below: float = math.inf
    status: str | None = None  # the last non-terminal status change of the batch
    usage: str | None = None  # the last usage of the batch
    journal_stats: str | None = None  # the last journal counts of the batch
    finish: Finish | None = None  # the terminal transition (clears the lease)
    prune: tuple[str, str | None] | None = None  # (user id, lineage) whose old checkpoints go
    journal_keep: str | None = None  # delete the journal records of every other checkpoint
    journal_clear: bool = False  # delete every journal record

    @property
    def check_only(self) -> bool:
        """Whether the row changes only if its lease needs renewing: a lease still fresh is
        then only checked."""
        return (
            self.status is None and self.usage is None and self.journal_stats is None and self.finish is None
        )

    @property
    def key(self) -> tuple[str, str]:
        return (self.response_id, self.owner)


@dataclass(slots=True)
class Batch:
    creations: list[Write] = field(default_factory=list)
    fences: list[Fence] = field(default_factory=list)
    owned: list[Write] = field(default_factory=list)
    unowned: list[Write] = field(default_factory=list)
    now: float = 0.0  # when it was formed (a webhook delivery is due then)

    @classmethod
    def of(cls, writes: Iterable[Write], *, lease_seconds: float, now: float) -> Batch:
        """The batch of `writes`: each sorted into its part, each (response, owner)'s writes
        folded into its fence, then the batch built once from them."""
        creations: list[Write] = []
        owned: list[Write] = []
        unowned: list[Write] = []
        by_key: dict[tuple[str, str], list[Write]] = {}
        for w in writes:
            if w.create is not None:
                creations.append(w)
            elif w.answers is not None or w.claims is not None:
                raise ValueError(f"a write of {w.response_id} answers or claims without creating it")
            if w.owner is None:
                _check_unowned(w)
                unowned.append(w)
                continue
            owned.append(w)
            by_key.setdefault((w.response_id, w.owner), []).append(w)
        implicit = (now + lease_seconds, now + lease_seconds * RENEW_BELOW_SHARE)
        fences = {key: _fence(key, ws, implicit) for key, ws in by_key.items()}
        if any(f.journal_keep is not None or f.journal_clear for f in fences.values()):
            owned = _drop_superseded(owned, fences)
        return cls(creations, sorted(fences.values(), key=lambda f: f.response_id), owned, unowned, now)

    def kept(self, lost: set[tuple[str, str]]) -> list[Write]:
        """The owned writes whose fence matched."""
        return [w for w in self.owned if (w.response_id, w.owner) not in lost] if lost else self.owned

    def answered(self) -> list[tuple[str, Answers]]:
        """(answering response, its answers) of each creation that answers pending requests."""
        return [(w.response_id, w.answers) for w in self.creations if w.answers is not None]

    def claimed(self) -> list[tuple[str, Claims]]:
        """(claiming response, its claims) of each creation that takes items added by hand."""
        return [(w.response_id, w.claims) for w in self.creations if w.claims is not None]

    def created_ids(self) -> set[str]:
        return {w.response_id for w in self.creations}


def _drop_superseded(writes: list[Write], fences: dict[tuple[str, str], Fence]) -> list[Write]:
    """`writes` without the journal records their fence's deletion takes: all of them where it
    clears, those of another checkpoint than the one it keeps. (Deleted after every insert, as
    SQLite's statements run, they would be gone all the same: a batch's later records belong
    to the kept checkpoint.)"""
    out = []
    for w in writes:
        fence = fences[(w.response_id, w.owner)] if w.journal and w.owner is not None else None
        if fence is not None and (fence.journal_clear or fence.journal_keep is not None):
            keep = None if fence.journal_clear else fence.journal_keep
            w = replace(w, journal=[r for r in w.journal if r.checkpoint_id == keep])
        out.append(w)
    return out


def _fence(key: tuple[str, str], writes: list[Write], implicit: tuple[float, float]) -> Fence:
    """One (response, owner)'s fence from its writes, in submission order: the longest lease
    any asks for, and of each change to the row the last one given. (Plain comparisons and
    positional arguments: this runs for every response of every batch.) `implicit`: the lease's
    end and renewal threshold of a write that names no `lease_until`."""
    until, below = -math.inf, -math.inf
    status = usage = journal_stats = journal_keep = None
    finish: Finish | None = None
    prune: tuple[str, str | None] | None = None
    clear = False
    for w in writes:
        if w.lease_until is None:
            u, b = implicit
        else:
            u, b = w.lease_until, math.inf
        if u > until:
            until = u
        if b > below:
            below = b
        if w.status is not None:
            status = w.status
        if w.usage is not None:
            usage = w.usage
        if w.journal_stats is not None:
            journal_stats = w.journal_stats
        if w.finish is not None:
            finish = w.finish
        if w.prune is not None:
            prune = w.prune
        if w.journal_keep is not None:
            journal_keep = w.journal_keep
        clear = clear or w.journal_clear
    rid, owner = key
    return Fence(rid, owner, until, below, status, usage, journal_stats, finish, prune, journal_keep, clear)


def _check_unowned(w: Write) -> None:
    """A write without an owner inserts its response and rows; what changes a response row or
    deletes needs the lease's owner."""
    if (
        w.status is not None
        or w.usage is not None
        or w.finish is not None
        or w.prune is not None
        or w.webhooks
        or w.journal_keep is not None
        or w.journal_clear
        or w.journal_stats is not None
    ):
        raise ValueError(f"a write of {w.response_id} without an owner changes its response row or deletes")
