"""The store's reads of a response's row, items, journal and events (a mixin of `Store`).

Invariant: reads never scan what came before: event reads are index range reads from a
sequence number; item reads are the response's own rows, by index.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, func, literal, select, union_all

from .. import _tables as t
from .._base import Query, StoreBase
from ..records import EventRow, InputItemRow, JournalRow, OutputItemRow, ResponseRow
from ..write import _events, _sql
from . import _read_sql

# The largest event sequence number the column holds (a 32-bit integer): a page's upper bound.
_SEQ_MAX = 2**31 - 1


class ResponseReads(StoreBase):
    """A response's row, output and input items, journal records and events."""

    async def get_response(self, response_id: str, user_id: str | None) -> ResponseRow | None:
        """`user_id=None` is the runtime's own unscoped read (recovery); HTTP always scopes."""
        (found,) = await self._fetch(_response_query(response_id, user_id))
        return _read_sql.response_of(found[0]) if found else None

    async def output_items(self, response_id: str, *, included_only: bool = True) -> list[OutputItemRow]:
        kind = _read_sql.INCLUDED_OUTPUT_ITEMS if included_only else _read_sql.OUTPUT_ITEMS
        (found,) = await self._fetch((kind, (response_id,)))
        return _read_sql.item_rows(found)

    async def response_with_output(
        self, response_id: str, user_id: str | None
    ) -> tuple[ResponseRow, list[OutputItemRow]] | None:
        """A response (scoped as `get_response`) and the output items kept in its output (what
        `GET /responses/{id}` shows), read on one connection: one checkout, and on PostgreSQL
        one ping, for both. Two statements, as two calls would be: a write commits a response's
        items with (or before) the state that shows them, so the items read after the row are
        at least the row's, at most newer ones."""
        found, items = await self._fetch(
            _response_query(response_id, user_id), (_read_sql.INCLUDED_OUTPUT_ITEMS, (response_id,))
        )
        return (_read_sql.response_of(found[0]), _read_sql.item_rows(items)) if found else None

    async def journal(self, response_id: str) -> list[JournalRow]:
        """The response's journal records, oldest first (a newer record of the same place
        supersedes an older one)."""
        j = t.journal.c
        q = (
            select(*(j[c] for c in _sql.JOURNAL.value_columns))
            .where(j.response_id == response_id)
            .order_by(j.seq)
        )
        async with self._read() as conn:
            rows = (await conn.execute(q)).all()
        return [JournalRow(*r) for r in rows]

    async def input_items(self, response_id: str) -> list[InputItemRow]:
        q = (
            select(t.input_items.c.position, t.input_items.c.item_id, t.input_items.c.data)
            .where(t.input_items.c.response_id == response_id)
            .order_by(t.input_items.c.position)
        )
        async with self._read() as conn:
            rows = (await conn.execute(q)).all()
        return [InputItemRow(*r) for r in rows]

    async def find_items(self, user_id: str, item_id: str, *, limit: int = 8) -> list[str]:
        """The stored JSON of the items with id `item_id` among `user_id`'s responses (at most `limit`).

        What an `item_reference` names: an output item (only ones kept in the output) or an input
        item. An id can occur more than once (a client may send an earlier item back with its id,
        or as an item_reference, which is stored under the id it names): output items come first,
        then input items oldest first, so the original precedes its copies. Scoped by `user_id`
        (another tenant's item reads as absent). The items are found by their id
        (`ix_output_items_by_item_id`, `ix_input_items_by_item_id`, migration 0003), then joined
        to their responses to keep only this user's.
        """
        r, o, i = t.responses.c, t.output_items.c, t.input_items.c
        outputs = (
            select(o.data.label("data"), literal(0).label("rank"), r.created_at.label("created_at"))
            .select_from(t.output_items.join(t.responses, r.id == o.response_id))
            .where(and_(r.user_id == user_id, o.item_id == item_id, o.included.is_(True)))
        )
        inputs = (
            select(i.data.label("data"), literal(1).label("rank"), r.created_at.label("created_at"))
            .select_from(t.input_items.join(t.responses, r.id == i.response_id))
            .where(and_(r.user_id == user_id, i.item_id == item_id))
        )
        both = union_all(outputs, inputs).subquery()
        q = select(both.c.data).order_by(both.c.rank, both.c.created_at).limit(limit)
        async with self._read() as conn:
            rows = (await conn.execute(q)).all()
        return [str(row[0]) for row in rows]

    async def list_input_items(
        self,
        response_id: str,
        *,
        after: str | None,
        before: str | None,
        limit: int,
        order: str,
    ) -> tuple[list[InputItemRow], bool] | None:
        """A page of input items; `None` when a cursor id is not an item of this response."""
        c = t.input_items.c
        async with self._read() as conn:
            conds = [c.response_id == response_id]
            for cursor, op in ((after, "after"), (before, "before")):
                if cursor is None:
                    continue
                pos = (
                    await conn.execute(
                        select(c.position).where(and_(c.response_id == response_id, c.item_id == cursor))
                    )
                ).scalar()
                if pos is None:
                    return None
                forward = (op == "after") == (order == "asc")
                conds.append(c.position > pos if forward else c.position < pos)
            # `before` alone pages backwards: the `limit` items just before the cursor (the
            # previous page), still returned in `order`; `has_more` then means more before them.
            backward = before is not None and after is None
            ascending = (order == "asc") != backward
            q = (
                select(c.position, c.item_id, c.data)
                .where(and_(*conds))
                .order_by(c.position.asc() if ascending else c.position.desc())
                .limit(limit + 1)
            )
            rows = (await conn.execute(q)).all()
        page = [InputItemRow(*r) for r in rows[:limit]]
        if backward:
            page.reverse()
        return page, len(rows) > limit

    async def read_events(self, response_id: str, after_seq: int, limit: int = 1000) -> list[EventRow]:
        """The events after `after_seq`, at most `limit`, in order.

        A response's events are numbered without a gap (invariant 4), so the page is also the
        range `after_seq < seq <= after_seq + limit`, and says so: with `seq > after_seq` alone,
        PostgreSQL's custom plan for a response longer than its statistics expect (they give
        every response the table's average) is a bitmap scan of every later event of the
        response plus a sort, per page: 242 ms instead of 1.2 ms for a page of 2,000 in the middle
        of a 100,000-event response, and a full replay that grows with the square of its length.
        Custom plans are what a connection runs for a statement's first five executions, and
        always behind a transaction pooler (no prepared statement is kept)."""
        if after_seq >= _SEQ_MAX:
            return []  # (a client's `starting_after` beyond any number the column holds)
        after_seq = max(after_seq, -1)
        upper = min(after_seq + limit, _SEQ_MAX)
        # A row is keyed by its last event and holds at most `RUN` (`_events`): the rows that
        # hold the page end at most `RUN - 1` past it.
        rows_upper = min(upper + _events.RUN - 1, _SEQ_MAX)
        rows_limit = limit + _events.RUN
        (rows,) = await self._fetch((_read_sql.READ_EVENTS, (response_id, after_seq, rows_upper, rows_limit)))
        return _events.decode(rows, after_seq, upper)

    async def max_event_seq(self, response_id: str) -> int:
        q = select(func.max(t.events.c.seq)).where(t.events.c.response_id == response_id)
        async with self._read() as conn:
            v = (await conn.execute(q)).scalar()
        return -1 if v is None else int(v)

    async def max_output_index(self, response_id: str) -> int:
        """The highest output index ever announced (`output_item.added`), or -1."""
        q = select(func.max(t.output_items.c.output_index)).where(t.output_items.c.response_id == response_id)
        async with self._read() as conn:
            v = (await conn.execute(q)).scalar()
        return -1 if v is None else int(v)


def _response_query(response_id: str, user_id: str | None) -> tuple[Query, tuple[Any, ...]]:
    if user_id is None:
        return _read_sql.GET_RESPONSE, (response_id,)
    return _read_sql.GET_USER_RESPONSE, (response_id, user_id)
