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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, func, or_, select

from .. import _tables as t
from .._base import StoreBase, checkpoint_row
from ..ops.ops import Takeover
from ..records import CheckpointRow, EventRow, JournalRow, OutputItemRow, ResponseRow
from ..write import _events, _sql


@dataclass(slots=True)
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
        return self.checkpoint.event_seq if self.checkpoint is not None else -1


class ResumeReads(StoreBase):
    async def resume_states(self, rows: Sequence[ResponseRow], *, journal: bool) -> dict[str, ResumeState]:
        """The `ResumeState` of each of `rows` (claimed responses), by response id: the reads
        run at once (the events after the checkpoints read, once those are known)."""
        states = {row.id: ResumeState() for row in rows}
        if not rows:
            return states
        ids = list(states)
        users = {row.id: row.user_id for row in rows}
        checkpoints = asyncio.ensure_future(self._newest_checkpoints(ids))
        others: list[asyncio.Future[Any]] = [
            checkpoints,
            asyncio.ensure_future(self._maxima(ids, states)),
            asyncio.ensure_future(self._outputs(ids, states)),
            asyncio.ensure_future(self._takeovers(ids, states)),
        ]
        if journal:
            others.append(asyncio.ensure_future(self._journal(ids, states)))
        try:
            for cp in await checkpoints:
                if users.get(cp.response_id) == cp.user_id:
                    states[cp.response_id].checkpoint = cp
            await self._events(states)
        finally:
            # Every read ends before this returns or raises (the first error raised).
            done = await asyncio.gather(*others, return_exceptions=True)
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome
        return states

    async def _newest_checkpoints(self, ids: list[str]) -> list[CheckpointRow]:
        c, r = t.checkpoints.c, t.responses.c
        newest = select(func.max(c.seq)).where(c.response_id == r.id).scalar_subquery()
        seqs = select(newest).select_from(t.responses).where(r.id.in_(ids))
        q = select(t.checkpoints).where(c.seq.in_(seqs))
        async with self._read() as conn:
            return [checkpoint_row(row) for row in (await conn.execute(q)).all()]

    async def _maxima(self, ids: list[str], states: dict[str, ResumeState]) -> None:
        r, e, o = t.responses.c, t.events.c, t.output_items.c
        q = select(
            r.id,
            select(func.max(e.seq)).where(e.response_id == r.id).scalar_subquery(),
            select(func.max(o.output_index)).where(o.response_id == r.id).scalar_subquery(),
        ).where(r.id.in_(ids))
        async with self._read() as conn:
            for rid, seq, index in (await conn.execute(q)).all():
                state = states[rid]
                state.max_seq = -1 if seq is None else int(seq)
                state.max_index = -1 if index is None else int(index)

    async def _events(self, states: dict[str, ResumeState]) -> None:
        e = t.events.c
        # A row is keyed by its last event (`_events`): the first row past `after` may hold
        # events before it too, which `decode` leaves out.
        after = or_(*(and_(e.response_id == rid, e.seq > s.after) for rid, s in states.items()))
        q = (
            select(e.response_id, e.seq, e.type, e.data, e.size, e.packed)
            .where(after)
            .order_by(e.response_id, e.seq)
        )
        by_response: dict[str, list[Any]] = {}
        async with self._read() as conn:
            for rid, *row in (await conn.execute(q)).all():
                by_response.setdefault(rid, []).append(row)
        for rid, rows in by_response.items():
            states[rid].events.extend(_events.decode(rows, states[rid].after))

    async def _outputs(self, ids: list[str], states: dict[str, ResumeState]) -> None:
        o = t.output_items.c
        q = (
            select(o.response_id, o.output_index, o.item_id, o.status, o.included, o.data)
            .where(and_(o.response_id.in_(ids), o.included.is_(True)))
            .order_by(o.response_id, o.output_index)
        )
        async with self._read() as conn:
            for rid, *rest in (await conn.execute(q)).all():
                states[rid].outputs.append(OutputItemRow(*rest))

    async def _journal(self, ids: list[str], states: dict[str, ResumeState]) -> None:
        j = t.journal.c
        q = (
            select(j.response_id, *(j[c] for c in _sql.JOURNAL.value_columns))
            .where(j.response_id.in_(ids))
            .order_by(j.response_id, j.seq)
        )
        async with self._read() as conn:
            for rid, *rest in (await conn.execute(q)).all():
                states[rid].journal.append(JournalRow(*rest))

    async def _takeovers(self, ids: list[str], states: dict[str, ResumeState]) -> None:
        c = t.takeovers.c
        q = (
            select(c.response_id, c.attempt, c.at, c.owner, c.previous_owner, c.checkpoint_id, c.span_id)
            .where(c.response_id.in_(ids))
            .order_by(c.response_id, c.attempt)
        )
        async with self._read() as conn:
            for rid, *rest in (await conn.execute(q)).all():
                states[rid].takeovers.append(Takeover(*rest))
