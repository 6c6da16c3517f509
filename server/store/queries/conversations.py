"""Conversations: their rows, the items added to them by hand, and the item list of each.

Job: what the Conversations API reads and writes. A conversation's items are not copied: its
turns' input and output items are the rows of its responses (`input_items`, `output_items`),
and only what was added by hand lives here (`conversation_items`) until a turn takes it as its
input (its creation's claims): from then on it is that turn's input, stored with the turn.

Invariants:
- Every read and write is scoped by `user_id`: another user's conversation reads as absent.
- The item list is one order, the same for every page: the turns in creation order (each its
  input items, then its output items kept in the output), then the items added by hand since
  the last turn, by `seq`. An item deleted from the list (`hide`) is left out of every page.
- An item added by hand is taken by exactly one turn: the turn's creation marks it with the
  response id in the transaction that inserts the response (`records.Claims`), or, when another
  turn took it meanwhile, commits nothing. A claim whose response does not exist (made before
  claims committed with their creation) is taken again once it is `STALE_CLAIM_SECONDS` old,
  and until then the item is listed as added by hand (it is in no turn yet).
- A deleted conversation keeps its row (`deleted_at`): its id is never created again by use.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Float,
    Integer,
    String,
    and_,
    cast,
    delete,
    exists,
    insert,
    literal,
    not_,
    or_,
    select,
    tuple_,
    union_all,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import Select

from .. import _tables as t
from .._base import StoreBase
from ..db._engine import Database
from ..records import STALE_CLAIM_SECONDS

# Sorts the items added by hand after every turn (a created_at no turn will reach).
_AFTER_TURNS = 1e300


@dataclass(slots=True, frozen=True)
class ConversationRow:
    id: str
    user_id: str
    created_at: float
    metadata: str  # JSON object
    deleted_at: float | None = None


@dataclass(slots=True, frozen=True)
class AddedItem:
    """An item added by hand: its id and stored JSON (and its `seq`, once stored)."""

    item_id: str
    data: str
    seq: int | None = None


_c = t.conversations.c
_a = t.conversation_items.c
_h = t.conversation_hidden_items.c
_r = t.responses.c
_i = t.input_items.c
_o = t.output_items.c


def _no_response(response_id: Any) -> Any:
    return not_(exists().where(_r.id == response_id))


class ConversationStore(StoreBase):
    def __init__(self, db: Database) -> None:
        self._db = db
        self.db = db
        self.dialect = db.dialect

    # -- conversations ------------------------------------------------------------------

    async def create(
        self, user_id: str, conversation_id: str, metadata: str, items: Sequence[AddedItem]
    ) -> ConversationRow:
        now = time.time()
        async with self._write() as conn:
            await conn.execute(
                insert(t.conversations).values(
                    user_id=user_id, id=conversation_id, created_at=now, metadata=metadata
                )
            )
            if items:
                await conn.execute(
                    insert(t.conversation_items), self._rows(user_id, conversation_id, items, now)
                )
        return ConversationRow(conversation_id, user_id, now, metadata)

    @staticmethod
    def _rows(
        user_id: str, conversation_id: str, items: Sequence[AddedItem], now: float
    ) -> list[dict[str, Any]]:
        return [
            {
                "user_id": user_id,
                "conversation_id": conversation_id,
                "item_id": i.item_id,
                "data": i.data,
                "created_at": now,
            }
            for i in items
        ]

    async def get(
        self, user_id: str, conversation_id: str, *, deleted: bool = False
    ) -> ConversationRow | None:
        """The conversation (`deleted`: also one that was deleted)."""
        q = select(t.conversations).where(and_(_c.user_id == user_id, _c.id == conversation_id))
        async with self._read() as conn:
            row = (await conn.execute(q)).first()
        if row is None:
            return None
        conv = ConversationRow(**dict(row._mapping))
        return conv if deleted or conv.deleted_at is None else None

    async def update_metadata(
        self, user_id: str, conversation_id: str, metadata: str
    ) -> ConversationRow | None:
        where = and_(_c.user_id == user_id, _c.id == conversation_id, _c.deleted_at.is_(None))
        async with self._write() as conn:
            res = await conn.execute(update(t.conversations).where(where).values(metadata=metadata))
            if res.rowcount != 1:
                return None
        return await self.get(user_id, conversation_id)

    async def delete(self, user_id: str, conversation_id: str) -> bool:
        """Mark the conversation deleted and drop what was added by hand and not yet taken."""
        where = and_(_c.user_id == user_id, _c.id == conversation_id, _c.deleted_at.is_(None))
        async with self._write() as conn:
            res = await conn.execute(update(t.conversations).where(where).values(deleted_at=time.time()))
            if res.rowcount != 1:
                return False
            mine = and_(_a.user_id == user_id, _a.conversation_id == conversation_id)
            await conn.execute(delete(t.conversation_items).where(and_(mine, _a.response_id.is_(None))))
            await conn.execute(
                delete(t.conversation_hidden_items).where(
                    and_(_h.user_id == user_id, _h.conversation_id == conversation_id)
                )
            )
        return True

    # -- items added by hand --------------------------------------------------------------

    async def add_items(self, user_id: str, conversation_id: str, items: Sequence[AddedItem]) -> None:
        async with self._write() as conn:
            await conn.execute(
                insert(t.conversation_items), self._rows(user_id, conversation_id, items, time.time())
            )

    def _free(self, user_id: str, conversation_id: str, now: float) -> Any:
        stale = and_(_a.claimed_at < now - STALE_CLAIM_SECONDS, _no_response(_a.response_id))
        return and_(
            _a.user_id == user_id,
            _a.conversation_id == conversation_id,
            or_(_a.response_id.is_(None), stale),
        )

    async def unclaimed(self, user_id: str, conversation_id: str) -> list[AddedItem]:
        """The items added by hand that no turn has taken yet, in order (read only): a stored
        turn takes them in its creation's own write (`records.Claims`)."""
        q = (
            select(_a.item_id, _a.data, _a.seq)
            .where(self._free(user_id, conversation_id, time.time()))
            .order_by(_a.seq)
        )
        async with self._read() as conn:
            return [AddedItem(r[0], r[1], r[2]) for r in (await conn.execute(q)).all()]

    # -- the item list ------------------------------------------------------------------

    def _union(self, user_id: str, conversation_id: str) -> Any:
        """Every listed item with its sort key (t, rid, part, pos), as a subquery."""
        turn = and_(_r.user_id == user_id, _r.conversation_id == conversation_id)
        inputs = (
            select(
                cast(_r.created_at, Float).label("t"),
                cast(_r.id, String).label("rid"),
                cast(literal(0), Integer).label("part"),
                cast(_i.position, Integer).label("pos"),
                _i.item_id.label("item_id"),
                _i.data.label("data"),
            )
            .select_from(t.input_items.join(t.responses, _r.id == _i.response_id))
            .where(turn)
        )
        outputs = (
            select(
                cast(_r.created_at, Float),
                cast(_r.id, String),
                cast(literal(1), Integer),
                cast(_o.output_index, Integer),
                _o.item_id,
                _o.data,
            )
            .select_from(t.output_items.join(t.responses, _r.id == _o.response_id))
            .where(and_(turn, _o.included.is_(True)))
        )
        added = select(
            cast(literal(_AFTER_TURNS), Float),
            cast(literal(""), String),
            cast(literal(2), Integer),
            cast(_a.seq, Integer),
            _a.item_id,
            _a.data,
        ).where(
            and_(
                _a.user_id == user_id,
                _a.conversation_id == conversation_id,
                or_(_a.response_id.is_(None), _no_response(_a.response_id)),
            )
        )
        return union_all(inputs, outputs, added).subquery("items")

    def _visible(self, u: Any, user_id: str, conversation_id: str) -> Select[Any]:
        hidden = select(_h.item_id).where(and_(_h.user_id == user_id, _h.conversation_id == conversation_id))
        return select(u.c.t, u.c.rid, u.c.part, u.c.pos, u.c.item_id, u.c.data).where(
            u.c.item_id.not_in(hidden)
        )

    async def list_items(
        self, user_id: str, conversation_id: str, *, after: str | None, limit: int, order: str
    ) -> tuple[list[str], bool] | None:
        """A page of the item list (stored JSON); None when `after` is not an item of it."""
        u = self._union(user_id, conversation_id)
        key = tuple_(u.c.t, u.c.rid, u.c.part, u.c.pos)
        q = self._visible(u, user_id, conversation_id)
        async with self._read() as conn:
            if after is not None:
                found = (
                    await conn.execute(q.where(u.c.item_id == after).order_by(*key.clauses).limit(1))
                ).first()
                if found is None:
                    return None
                cursor = tuple_(*(literal(v) for v in found[:4]))
                q = q.where(key > cursor if order == "asc" else key < cursor)
            ordering = [c.asc() if order == "asc" else c.desc() for c in key.clauses]
            rows = (await conn.execute(q.order_by(*ordering).limit(limit + 1))).all()
        return [str(r[5]) for r in rows[:limit]], len(rows) > limit

    async def get_item(self, user_id: str, conversation_id: str, item_id: str) -> str | None:
        u = self._union(user_id, conversation_id)
        q = self._visible(u, user_id, conversation_id).where(u.c.item_id == item_id).order_by(u.c.t, u.c.rid)
        async with self._read() as conn:
            row = (await conn.execute(q.limit(1))).first()
        return None if row is None else str(row[5])

    async def delete_item(self, user_id: str, conversation_id: str, item_id: str) -> bool:
        """Remove an item from the list: one added by hand and not yet taken is dropped (no turn
        will take it); one of a turn is hidden (the turn's own record keeps it)."""
        if await self.get_item(user_id, conversation_id, item_id) is None:
            return False
        mine = and_(_a.user_id == user_id, _a.conversation_id == conversation_id, _a.item_id == item_id)
        hid = and_(_h.user_id == user_id, _h.conversation_id == conversation_id, _h.item_id == item_id)
        try:
            async with self._write() as conn:
                await conn.execute(delete(t.conversation_items).where(and_(mine, _a.response_id.is_(None))))
                if (await conn.execute(select(_h.item_id).where(hid))).first() is None:
                    await conn.execute(
                        insert(t.conversation_hidden_items).values(
                            user_id=user_id, conversation_id=conversation_id, item_id=item_id
                        )
                    )
        except IntegrityError:
            pass  # hidden concurrently
        return True

    async def hidden_ids(self, user_id: str, conversation_id: str) -> set[str]:
        q = select(_h.item_id).where(and_(_h.user_id == user_id, _h.conversation_id == conversation_id))
        async with self._read() as conn:
            return {str(r[0]) for r in (await conn.execute(q)).all()}
