"""A commit in doubt: the connection died after COMMIT was sent, so its outcome is unknown.

Job: when a group commit fails on the connection (reset, server gone), find out whether its
one transaction is durable anyway (the database committed, its reply was lost) before retrying
it: a retry of a committed write fails on its own rows (a duplicate key), which would stop its
run for nothing and, for a creation, answer its client with an error for a response that
exists. And when it did not commit, the group can be retried whole, at once, on a new
connection, instead of write by write (a reset is not an outage).

Invariant: a write counts as committed only when one of its own rows is read back: the row of
its last event (a row is keyed by its last event, `_events`; the outbox's continuity guard
means no other write can have committed that event), or
else its checkpoint (ids are unique). A write with neither cannot tell.

Where the rows are read: `committed_anyway` through the store's reader (SQLite); on PostgreSQL
the writer reads them on its own new connection (`READ_BACK`, one statement), since the pool's
connections died with the writer's: a new pool connection costs its codec set-up and a ping on
top (over a 100 ms round trip the pool's read back took 0.6 to 1.1 s, the writer's ~0.3 s).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, or_, select

from .. import _tables as t
from ..db._engine import Database
from ..records import Write
from ._sql import Params, PgStatement


def _read_back() -> PgStatement:
    """The rows of `Lookup` that exist: ('e', response id, seq) and ('c', checkpoint id, NULL)."""
    p = Params()
    rids, seqs = p.take("rids", "text[]"), p.take("seqs", "int4[]")
    checkpoints = p.take("checkpoints", "text[]")
    text = (
        "SELECT 'e', e.response_id, e.seq FROM events e "
        f"JOIN unnest({rids}, {seqs}) AS k(response_id, seq) "
        "ON e.response_id = k.response_id AND e.seq = k.seq "
        "UNION ALL SELECT 'c', c.checkpoint_id, NULL FROM checkpoints c "
        f"WHERE c.checkpoint_id = ANY({checkpoints})"
    )
    return PgStatement.of(text, p)


READ_BACK = _read_back()


@dataclass(frozen=True, slots=True)
class Lookup:
    """What to read back for a group: each write's last event (the key of the row that holds
    it, `_events`), or else its checkpoint."""

    by_event: list[Write]
    by_checkpoint: list[Write]

    @classmethod
    def of(cls, writes: Sequence[Write]) -> Lookup | None:
        """None: no write of `writes` has a row to look for."""
        by_event = [w for w in writes if w.events]
        by_checkpoint = [w for w in writes if not w.events and w.checkpoint is not None]
        return cls(by_event, by_checkpoint) if by_event or by_checkpoint else None

    @property
    def checkpoint_ids(self) -> list[str]:
        return [cid for w in self.by_checkpoint if (cid := _checkpoint_id(w)) is not None]

    def arguments(self) -> list[Any]:
        """`READ_BACK`'s parameters, as `READ_BACK.encode` sends them."""
        return READ_BACK.encode(
            READ_BACK.bind(
                {
                    "rids": [w.response_id for w in self.by_event],
                    "seqs": [w.events[-1].seq for w in self.by_event],
                    "checkpoints": self.checkpoint_ids,
                }
            )
        )

    def found(self, events: set[tuple[str, int]], checkpoints: set[str]) -> list[Write]:
        """The writes whose rows are among those read back."""
        by_event = [w for w in self.by_event if (w.response_id, w.events[-1].seq) in events]
        by_checkpoint = [w for w in self.by_checkpoint if _checkpoint_id(w) in checkpoints]
        return by_event + by_checkpoint

    def found_in(self, rows: Sequence[Sequence[object]]) -> list[Write]:
        """`found` from `READ_BACK`'s rows."""
        events = {(str(r[1]), int(str(r[2]))) for r in rows if r[0] == "e"}
        return self.found(events, {str(r[1]) for r in rows if r[0] == "c"})


def _checkpoint_id(w: Write) -> str | None:
    return w.checkpoint.checkpoint_id if w.checkpoint is not None else None


async def committed_anyway(db: Database, writes: list[Write]) -> list[Write] | None:
    """The writes of `writes` whose rows are in the tables; None when that cannot be told (the
    database is still unreachable, or no write has a row to look for)."""
    lookup = Lookup.of(writes)
    if lookup is None:
        return None
    ev, cp = t.events.c, t.checkpoints.c
    try:
        async with db.reader.connect() as conn:
            events: set[tuple[str, int]] = set()
            if lookup.by_event:
                keys = [
                    and_(ev.response_id == w.response_id, ev.seq == w.events[-1].seq) for w in lookup.by_event
                ]
                rows = (await conn.execute(select(ev.response_id, ev.seq).where(or_(*keys)))).all()
                events = {(r[0], r[1]) for r in rows}
            checkpoints: set[str] = set()
            if lookup.by_checkpoint:
                q = select(cp.checkpoint_id).where(cp.checkpoint_id.in_(lookup.checkpoint_ids))
                checkpoints = set((await conn.execute(q)).scalars())
    except Exception:
        return None  # still unreachable: the retries fail as the database does
    return lookup.found(events, checkpoints)
