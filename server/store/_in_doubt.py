"""A commit in doubt: the connection died after COMMIT was sent, so its outcome is unknown.

Job: when a group commit fails on the connection (reset, server gone), find out whether its
one transaction is durable anyway (the database committed, its reply was lost) before retrying
it: a retry of a committed write fails on its own rows (a duplicate key), which would stop its
run for nothing and, for a creation, answer its client with an error for a response that
exists. And when it did not commit, the group can be retried whole, at once, on a new
connection, instead of write by write (a reset is not an outage).

Invariant: a write counts as committed only when one of its own rows is read back: its first
event (the outbox's continuity guard means no other write can have committed that event), or
else its checkpoint (ids are unique). A write with neither cannot tell.
"""

from __future__ import annotations

from sqlalchemy import and_, or_, select

from . import _tables as t
from ._engine import Database
from .records import Write


async def committed_anyway(db: Database, writes: list[Write]) -> list[Write] | None:
    """The writes of `writes` whose rows are in the tables; None when that cannot be told (the
    database is still unreachable, or no write has a row to look for)."""
    by_event = [w for w in writes if w.events]
    by_checkpoint = [w for w in writes if not w.events and w.checkpoint is not None]
    if not by_event and not by_checkpoint:
        return None
    ev, cp = t.events.c, t.checkpoints.c
    try:
        async with db.reader.connect() as conn:
            events: set[tuple[str, int]] = set()
            if by_event:
                keys = [and_(ev.response_id == w.response_id, ev.seq == w.events[0].seq) for w in by_event]
                rows = (await conn.execute(select(ev.response_id, ev.seq).where(or_(*keys)))).all()
                events = {(r[0], r[1]) for r in rows}
            checkpoints: set[str] = set()
            if by_checkpoint:
                ids = [w.checkpoint.checkpoint_id for w in by_checkpoint if w.checkpoint is not None]
                checkpoints = set(
                    (await conn.execute(select(cp.checkpoint_id).where(cp.checkpoint_id.in_(ids)))).scalars()
                )
    except Exception:
        return None  # still unreachable: the retries fail as the database does
    return [w for w in by_event if (w.response_id, w.events[0].seq) in events] + [
        w for w in by_checkpoint if w.checkpoint is not None and w.checkpoint.checkpoint_id in checkpoints
    ]
