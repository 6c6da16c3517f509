"""The reads recovery makes before it resumes the responses it claimed, for a whole batch of
them at once: one query per table, not one per table per response.

For each response: its newest checkpoint (with its data: the resumed run restores it without
reading it again), the events committed after that checkpoint (what the crash left open), the
highest event sequence number and output index ever written, the output items kept in its
output (the requests and tool runs already announced), its journal records and its takeovers.

Invariants:
- Every read is an index range read per response (`max` through the index, events from the
  checkpoint's sequence number on): the cost per response stays flat as responses grow.
- A checkpoint is scoped by its response's user, as `Checkpoints.latest_checkpoint` is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import and_, func, or_, select

from .. import _tables as t
from .._base import StoreBase, checkpoint_row
from ..ops.ops import Takeover
from ..records import CheckpointRow, EventRow, JournalRow, OutputItemRow, ResponseRow
from ..write import _events, _sql

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ResumeState:
    """What recovery reads of one claimed response before resuming it."""

    checkpoint: CheckpointRow | None = None
    events: list[EventRow] = field(default_factory=list)  # after the checkpoint's event_seq
    max_seq: int = -1
    max_index: int = -1
    outputs: list[OutputItemRow] = field(default_factory=list)  # the included ones
    journal: list[JournalRow] = field(default_factory=list)
    takeovers: list[Takeover] = field(default_factory=list)

    @property
    def after(self) -> int:
        """The sequence number the resumed events follow (the checkpoint's, or -1)."""
        return _after(self.checkpoint)


def _after(checkpoint: CheckpointRow | None) -> int:
    return checkpoint.event_seq if checkpoint is not None else -1


def _grouped(rows: Sequence[Any], make: Callable[..., T]) -> dict[str, list[T]]:
    """Rows of (response id, *values), in order, as `make(*values)` per response."""
    out: dict[str, list[T]] = {}
    for rid, *rest in rows:
        out.setdefault(rid, []).append(make(*rest))
    return out


class ResumeReads(StoreBase):
    async def resume_states(self, rows: Sequence[ResponseRow], *, journal: bool) -> dict[str, ResumeState]:
        """The `ResumeState` of each of `rows` (claimed responses), by response id: the reads
        run at once (the events after the checkpoints read, once those are known), then each
        state is built from what they read."""
        if not rows:
            return {}
        ids = [row.id for row in rows]
        users = {row.id: row.user_id for row in rows}
        checkpoints = asyncio.ensure_future(self._newest_checkpoints(ids))
        maxima = asyncio.ensure_future(self._maxima(ids))
        outputs = asyncio.ensure_future(self._outputs(ids))
        takeovers = asyncio.ensure_future(self._takeovers(ids))
        journals = asyncio.ensure_future(self._journal(ids)) if journal else None
        others: list[asyncio.Future[Any]] = [checkpoints, maxima, outputs, takeovers]
        if journals is not None:
            others.append(journals)
        try:
            newest = {
                cp.response_id: cp for cp in await checkpoints if users.get(cp.response_id) == cp.user_id
            }
            events = await self._events({rid: _after(newest.get(rid)) for rid in ids})
        finally:
            # Every read ends before this returns or raises (the first error raised).
            done = await asyncio.gather(*others, return_exceptions=True)
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome
        journal_rows = journals.result() if journals is not None else {}
        return {
            rid: ResumeState(
                checkpoint=newest.get(rid),
                events=events.get(rid, []),
                max_seq=maxima.result().get(rid, (-1, -1))[0],
                max_index=maxima.result().get(rid, (-1, -1))[1],
                outputs=outputs.result().get(rid, []),
                journal=journal_rows.get(rid, []),
                takeovers=takeovers.result().get(rid, []),
            )
            for rid in ids
        }

    async def _newest_checkpoints(self, ids: list[str]) -> list[CheckpointRow]:
        c, r = t.checkpoints.c, t.responses.c
        newest = select(func.max(c.seq)).where(c.response_id == r.id).scalar_subquery()
        seqs = select(newest).select_from(t.responses).where(r.id.in_(ids))
        q = select(t.checkpoints).where(c.seq.in_(seqs))
        async with self._read() as conn:
            return [checkpoint_row(row) for row in (await conn.execute(q)).all()]

    async def _maxima(self, ids: list[str]) -> dict[str, tuple[int, int]]:
        """(highest event sequence number, highest output index) of each response (-1: none)."""
        r, e, o = t.responses.c, t.events.c, t.output_items.c
        q = select(
            r.id,
            select(func.max(e.seq)).where(e.response_id == r.id).scalar_subquery(),
            select(func.max(o.output_index)).where(o.response_id == r.id).scalar_subquery(),
        ).where(r.id.in_(ids))
        async with self._read() as conn:
            return {
                rid: (-1 if seq is None else int(seq), -1 if index is None else int(index))
                for rid, seq, index in (await conn.execute(q)).all()
            }

    async def _events(self, afters: dict[str, int]) -> dict[str, list[EventRow]]:
        """The events of each response after its sequence number in `afters`."""
        e = t.events.c
        # A row is keyed by its last event (`_events`): the first row past `after` may hold
        # events before it too, which `decode` leaves out.
        after = or_(*(and_(e.response_id == rid, e.seq > seq) for rid, seq in afters.items()))
        q = (
            select(e.response_id, e.seq, e.type, e.data, e.size, e.packed)
            .where(after)
            .order_by(e.response_id, e.seq)
        )
        async with self._read() as conn:
            by_response = _grouped((await conn.execute(q)).all(), lambda *row: row)
        return {rid: _events.decode(rows, afters[rid]) for rid, rows in by_response.items()}

    async def _outputs(self, ids: list[str]) -> dict[str, list[OutputItemRow]]:
        o = t.output_items.c
        q = (
            select(o.response_id, o.output_index, o.item_id, o.status, o.included, o.data)
            .where(and_(o.response_id.in_(ids), o.included.is_(True)))
            .order_by(o.response_id, o.output_index)
        )
        async with self._read() as conn:
            return _grouped((await conn.execute(q)).all(), OutputItemRow)

    async def _journal(self, ids: list[str]) -> dict[str, list[JournalRow]]:
        j = t.journal.c
        q = (
            select(j.response_id, *(j[c] for c in _sql.JOURNAL.value_columns))
            .where(j.response_id.in_(ids))
            .order_by(j.response_id, j.seq)
        )
        async with self._read() as conn:
            return _grouped((await conn.execute(q)).all(), JournalRow)

    async def _takeovers(self, ids: list[str]) -> dict[str, list[Takeover]]:
        c = t.takeovers.c
        q = (
            select(c.response_id, c.attempt, c.at, c.owner, c.previous_owner, c.checkpoint_id, c.span_id)
            .where(c.response_id.in_(ids))
            .order_by(c.response_id, c.attempt)
        )
        async with self._read() as conn:
            return _grouped((await conn.execute(q)).all(), Takeover)
