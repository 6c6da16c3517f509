"""Turn a batch of outbox `Write`s into the statements of one transaction (no I/O here).

Invariants:
- Per write, its creation (if any) comes before its lease fence, and every fence comes before
  the rows it guards; a fence is an UPDATE that must hit exactly one row, or the transaction is
  abandoned with `LeaseLost` (the executor checks `Op.fence`).
- Rows of the same table across the whole batch go in one executemany, so the number of
  statements per batch does not grow with the number of events.

Rows come from the records through `_sql`'s row specs (built from the table metadata), never
from hand-written dicts. The end of the module holds what the dialects' fast paths share
(`_pg_writer`, `_sqlite_writer`): which kind of write each one is (`WriteKind`), one fence per
(response, owner), the rows of plain creations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, insert, text, update
from sqlalchemy.sql import Executable

from . import _sql
from . import _tables as t
from ._writer import WriteKind
from .records import WebhookEvent, Write


@dataclass(slots=True)
class Op:
    stmt: Executable
    params: list[dict[str, Any]] | dict[str, Any] | None = None
    fence: str | None = None  # this UPDATE must hit one row, else the lease of `fence` was lost


# The statements, built once: constructing SQLAlchemy expressions cost more than executing
# them (~10% of a short response's event-loop time). Values travel as bound parameters
# (named b_*: a column's own name is reserved in an UPDATE's SET clause).
_r = t.responses.c
_INSERT_RESPONSE = insert(t.responses)
_FENCE = (
    update(t.responses)
    .where(and_(_r.id == bindparam("b_id"), _r.lease_owner == bindparam("b_owner")))
    .values(
        lease_expires_at=bindparam("b_until"),
        usage=func.coalesce(bindparam("b_usage"), _r.usage),
        journal=func.coalesce(bindparam("b_journal"), _r.journal),
    )
)
_STATUS = update(t.responses).where(_r.id == bindparam("b_id")).values(status=bindparam("b_status"))
_FINISH_BINDS = tuple(f"b_{c}" for c in _sql.FINISH_COLUMNS)
_FINISH = (
    update(t.responses)
    .where(_r.id == bindparam("b_id"))
    .values(
        {
            **{c: bindparam(b) for c, b in zip(_sql.FINISH_COLUMNS, _FINISH_BINDS, strict=True)},
            "lease_owner": None,
            "lease_expires_at": None,
        }
    )
)
_INSERT_WEBHOOK_EVENT = insert(t.webhook_events)
_INSERT_WEBHOOK_DELIVERY = insert(t.webhook_deliveries)
_INSERTS = {
    spec.table.name: insert(spec.table)
    for spec in (_sql.INPUTS, _sql.EVENTS, _sql.ITEMS, _sql.CHECKPOINTS, _sql.PENDING, _sql.JOURNAL)
}
_PRUNE = text(_sql.PRUNE)
_j = t.journal.c
_JOURNAL_KEEP = delete(t.journal).where(
    and_(_j.response_id == bindparam("b_id"), _j.checkpoint_id != bindparam("b_keep"))
)
_JOURNAL_CLEAR = delete(t.journal).where(_j.response_id == bindparam("b_id"))


def plan(writes: Iterable[Write], *, lease_seconds: float, now: float | None = None) -> list[Op]:
    now = time.time() if now is None else now
    writes = list(writes)
    # The usage a (response, owner)'s fence keeps: its last write's in the batch that has one.
    usage = {(w.response_id, w.owner): w.usage for w in writes if w.usage is not None}
    stats = {(w.response_id, w.owner): w.journal_stats for w in writes if w.journal_stats is not None}
    ops: list[Op] = []
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in _INSERTS}
    inputs, events, items = rows["input_items"], rows["events"], rows["output_items"]
    checkpoints, pending = rows["checkpoints"], rows["pending_requests"]
    journal = rows["journal"]
    tail: list[Op] = []
    # Keyed by (response, owner), not by response: a stale owner's write that shares a batch
    # with the current owner's write to the same response must still be fenced off.
    fenced: set[tuple[str, str]] = set()
    for w in writes:
        rid = w.response_id
        if w.create is not None:
            row, input_rows = w.create
            ops.append(Op(_INSERT_RESPONSE, _sql.RESPONSES.mapping(rid, row)))
            inputs.extend(_sql.INPUTS.mapping(rid, i) for i in input_rows)
        if w.owner is not None and (rid, w.owner) not in fenced:
            fenced.add((rid, w.owner))
            until = w.lease_until if w.lease_until is not None else now + lease_seconds
            params = {
                "b_id": rid,
                "b_owner": w.owner,
                "b_until": until,
                "b_usage": usage.get((rid, w.owner)),
                "b_journal": stats.get((rid, w.owner)),
            }
            ops.append(Op(_FENCE, params, fence=rid))
        events.extend(_sql.EVENTS.mapping(rid, e) for e in w.events)
        items.extend(_sql.ITEMS.mapping(rid, i) for i in w.items)
        if w.checkpoint is not None:
            checkpoints.append(_sql.CHECKPOINTS.mapping(rid, w.checkpoint))
        pending.extend(_sql.PENDING.mapping(rid, p) for p in w.pending)
        journal.extend(_sql.JOURNAL.mapping(rid, j) for j in w.journal)
        # (After every insert of the batch: a deletion never targets a later write's records,
        # which belong to the kept checkpoint or, after an end, to nothing.)
        if w.journal_keep is not None:
            tail.append(Op(_JOURNAL_KEEP, {"b_id": rid, "b_keep": w.journal_keep}))
        if w.journal_clear:
            tail.append(Op(_JOURNAL_CLEAR, {"b_id": rid}))
        if w.status is not None:
            tail.append(Op(_STATUS, {"b_id": rid, "b_status": w.status}))
        if w.finish is not None:
            finish = dict(zip(_FINISH_BINDS, _sql.finish_values(w.finish), strict=True))
            tail.append(Op(_FINISH, {"b_id": rid, **finish}))
        if w.prune is not None:
            tail.append(prune_op(rid, *w.prune))
        for event in w.webhooks:
            tail.extend(webhook_ops(event, now))
    # One executemany per table (the creation's response row is already first: its inputs
    # and events refer to it).
    for name in ("input_items", "events", "output_items", "checkpoints", "pending_requests", "journal"):
        if rows[name]:
            ops.append(Op(_INSERTS[name], rows[name]))
    ops.extend(tail)
    return ops


def prune_op(response_id: str, user_id: str, lineage: str | None) -> Op:
    """Delete every checkpoint of the response and its lineage but the newest of each
    (`_sql.prune_condition`, the same text PostgreSQL's end statement embeds)."""
    return Op(_PRUNE, prune_params(response_id, user_id, lineage))


def prune_params(response_id: str, user_id: str, lineage: str | None) -> dict[str, Any]:
    """The parameters of `_sql.PRUNE`."""
    return {"b_id": response_id, "b_user": user_id, "b_lineage": lineage}


def webhook_ops(event: WebhookEvent, now: float) -> list[Op]:
    """The webhook event of a response's end and one delivery per endpoint (due at once)."""
    row = {
        "id": event.event_id,
        "response_id": event.response_id,
        "type": event.type,
        "created_at": event.created_at,
        "data": event.data,
    }
    deliveries = [
        {
            "event_id": event.event_id,
            "endpoint": url,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
        }
        for url in event.endpoints
    ]
    ops = [Op(_INSERT_WEBHOOK_EVENT, row)]
    if deliveries:
        ops.append(Op(_INSERT_WEBHOOK_DELIVERY, deliveries))
    return ops


def response_ids(writes: Sequence[Write]) -> set[str]:
    return {w.response_id for w in writes}


# -- the fast paths (`_pg_writer`, `_sqlite_writer`): one contract, rows as tuples -----------


def qualifies(w: Write) -> bool:
    """Whether `w` may take a dialect's fast path: an owned write of events, closed items, a
    checkpoint, a status change and journal records (the writes of every superstep)."""
    return (
        w.owner is not None
        and w.create is None
        and w.finish is None
        and w.prune is None
        and not w.pending
        and not w.webhooks
        and not w.journal_clear
    )


def has_journal(w: Write) -> bool:
    """Whether `w` records or deletes journal records (the general path writes those)."""
    return bool(w.journal) or w.journal_keep is not None or w.journal_clear or w.journal_stats is not None


def is_plain_creation(w: Write) -> bool:
    """A creation with its first events and nothing else (`Store.insert_response`)."""
    return (
        w.create is not None
        and w.owner is None
        and not w.items
        and w.checkpoint is None
        and not w.pending
        and w.status is None
        and w.finish is None
        and w.prune is None
        and not w.webhooks
        and not has_journal(w)
    )


def is_plain_end(w: Write) -> bool:
    """An owned write that ends its response: the terminal transition with the last events,
    closed items and the pruning of old checkpoints, no checkpoint, no pending requests."""
    return (
        w.owner is not None
        and w.finish is not None
        and w.create is None
        and w.checkpoint is None
        and not w.pending
        and not w.webhooks  # (a webhook event takes the general path: `webhook_ops`)
        and not w.journal
        and w.journal_keep is None
    )


# A superstep write renews its lease only once less than this share of the lease is left: the
# LeaseKeeper renews every third of it anyway, and a renewal at every commit would rewrite the
# response's row and its lease index entry once per token of every live stream (on SQLite
# ~6% of the server's CPU per token; on PostgreSQL the UPDATE is HOT and costs little). A
# write that names its `lease_until` always renews.
RENEW_BELOW_SHARE = 2 / 3


@dataclass(slots=True)
class Fence:
    """The lease fence of one (response, owner) in a batch of qualifying writes."""

    response_id: str
    owner: str
    until: float
    status: str | None  # the last status change of the batch, if any
    usage: str | None = None  # the last usage of the batch, if any
    # The lease is set to `until` only if it now ends before this (`RENEW_BELOW_SHARE`).
    renew_below: float = math.inf
    journal: str | None = None  # the last journal counts of the batch, if any

    @property
    def check_only(self) -> bool:
        """Whether the write changes nothing of the response but its lease (no status, no
        usage, no journal counts): a lease still fresh is then only checked."""
        return self.status is None and self.usage is None and self.journal is None


def fences(writes: Iterable[Write], *, lease_seconds: float, now: float) -> list[Fence]:
    """One fence per (response, owner): the latest lease renewal and the last status change."""
    by_key: dict[tuple[str, str], Fence] = {}
    implicit_below = now + lease_seconds * RENEW_BELOW_SHARE
    for w in writes:
        assert w.owner is not None
        if w.lease_until is None:
            until, below = now + lease_seconds, implicit_below
        else:
            until, below = w.lease_until, math.inf
        fence = by_key.get((w.response_id, w.owner))
        if fence is None:
            by_key[(w.response_id, w.owner)] = Fence(
                w.response_id, w.owner, until, w.status, w.usage, below, w.journal_stats
            )
        else:
            fence.until = max(fence.until, until)
            fence.renew_below = max(fence.renew_below, below)
            if w.status is not None:
                fence.status = w.status
            if w.usage is not None:
                fence.usage = w.usage
            if w.journal_stats is not None:
                fence.journal = w.journal_stats
    # In id order: the order every transaction of ours locks response rows in (a renewal, a
    # batch of ends), so two of them cannot deadlock on each other.
    return sorted(by_key.values(), key=lambda f: f.response_id)


def journal_keeps(writes: Iterable[Write]) -> list[tuple[str, str, str]]:
    """(response, owner, checkpoint kept) of each write of a fast-path batch that deletes the
    journal's records of every other checkpoint (`Write.journal_keep`)."""
    return [
        (w.response_id, w.owner, w.journal_keep) for w in writes if w.journal_keep is not None and w.owner
    ]


def journal_rows(writes: Sequence[Write]) -> list[tuple[Any, ...]]:
    """The journal records of a fast-path batch as (response, owner, *`JOURNAL.value_columns`),
    without those a keep of the same (response, owner) in the batch supersedes: the general
    path deletes them right after inserting them (its deletions follow every insert), a fast
    path's DELETE does not see the rows its own statement inserts."""
    keeps: dict[tuple[str, str | None], set[str]] = {}
    for w in writes:
        if w.journal_keep is not None:
            keeps.setdefault((w.response_id, w.owner), set()).add(w.journal_keep)
    rows = _sql.JOURNAL.guarded_rows([w for w in writes if w.journal])
    if not keeps:
        return rows
    checkpoint = _sql.JOURNAL.value_columns.index("checkpoint_id") + 2
    return [r for r in rows if keeps.get((r[0], r[1]), {r[checkpoint]}) == {r[checkpoint]}]


def creation_rows(
    writes: Iterable[Write],
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Plain creations (`is_plain_creation`) as rows of responses, input items and events
    (each in its `_sql` spec's column order)."""
    rows: list[tuple[Any, ...]] = []
    inputs: list[tuple[Any, ...]] = []
    events: list[tuple[Any, ...]] = []
    for w in writes:
        assert w.create is not None
        row, input_rows = w.create
        rid = row.id
        rows.append(_sql.RESPONSES.values(row))
        inputs.extend(_sql.INPUTS.keyed_rows(rid, input_rows))
        events.extend(_sql.EVENTS.keyed_rows(rid, w.events))
    return rows, inputs, events


def kind_of(w: Write) -> WriteKind:
    """The fastest group `w` may take (the outbox may still send it to GENERAL)."""
    if is_plain_creation(w):
        return WriteKind.CREATE
    if qualifies(w):
        return WriteKind.SUPERSTEP
    if is_plain_end(w):
        return WriteKind.END
    return WriteKind.GENERAL


def split(writes: list[Write], fast: frozenset[WriteKind]) -> tuple[list[tuple[WriteKind, list[Write]]], int]:
    """A batch as groups, in commit order (`WriteKind`'s): plain creations, superstep writes,
    the rest, plain ends; a kind the dialect has no fast path for (`fast`) joins GENERAL.
    Also returns how many superstep writes went GENERAL for the reason below.

    A response's writes keep their order: a creation comes before anything else of its
    response; a superstep write goes fast unless a write of its response that takes another
    path comes before it in the batch (then all of that response's superstep writes take the
    general path). So a superstep's writes go fast even when the response's end or another
    response's creation shares the batch.
    """
    kinds = [k if k in fast else WriteKind.GENERAL for k in map(kind_of, writes)]
    slow_seen: set[str] = set()
    mixed: set[str] = set()
    for w, k in zip(writes, kinds, strict=True):
        if k is WriteKind.SUPERSTEP:
            if w.response_id in slow_seen:
                mixed.add(w.response_id)
        elif k is not WriteKind.CREATE:
            slow_seen.add(w.response_id)
    groups: dict[WriteKind, list[Write]] = {kind: [] for kind in WriteKind}
    moved = 0
    for w, k in zip(writes, kinds, strict=True):
        if k is WriteKind.SUPERSTEP and w.response_id in mixed:
            k = WriteKind.GENERAL
            moved += 1
        groups[k].append(w)
    return [(kind, group) for kind, group in groups.items() if group], moved
