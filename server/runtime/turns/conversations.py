"""The Conversations API's runtime side: conversations, their item lists, and what a turn takes.

Job: create, read, update and delete conversations and their items (through
`store.conversations`), and give a new turn (`Host.create`) the items added to its
conversation by hand since the last turn: they become the beginning of that turn's input,
stored with it. So for a plain agent they reach the model once (its stored session then holds
them like any input), for a workflow they arrive as the next turn's input (a paused workflow
refuses them as it refuses any input that is not a reply), and the item list shows them once:
added by hand until a turn takes them, then as that turn's input.

Invariants:
- Tenants are walls: every call is scoped by the caller's user id; another user's
  conversation, a deleted one or an unknown one is a 404.
- An item added by hand is taken by one stored turn: `take` reads it, the turn's creation
  claims it in its own write (all its items, or the creation fails: nothing to give back). A
  `store=false` turn sees the items and takes none.
"""

from __future__ import annotations

import json
from typing import Any

from ...protocol import errors
from ...protocol.conversations import (
    ItemListParams,
    conversation_body,
    conversation_deleted_body,
    conversation_item,
    item_list_body,
    new_conversation_id,
)
from ...protocol.request import CreateRequest
from ...protocol.sse import dumps
from ...store import AddedItem, Claims, ConversationRow, Store
from .continuation import Continuations


def conversation_not_found(conversation_id: str) -> errors.ProtocolError:
    """The 404 of a conversation that is not the caller's, was deleted or does not exist."""
    return errors.not_found(
        f"Conversation with id '{conversation_id[:128]}' not found.", param="conversation_id"
    )


def _body(row: ConversationRow) -> dict[str, Any]:
    return conversation_body(row.id, row.created_at, json.loads(row.metadata or "{}"))


class ConversationService:
    def __init__(self, store: Store, continuations: Continuations) -> None:
        self._store = store
        self._conversations = store.conversations
        self._continuations = continuations

    # -- conversations ------------------------------------------------------------------

    async def create(
        self, user_id: str, metadata: dict[str, str], items: list[dict[str, Any]]
    ) -> dict[str, Any]:
        added = [AddedItem(str(i["id"]), dumps(i)) for i in items]
        row = await self._conversations.create(user_id, new_conversation_id(), dumps(metadata), added)
        return _body(row)

    async def _row(self, user_id: str, conversation_id: str) -> ConversationRow:
        row = await self._conversations.get(user_id, conversation_id)
        if row is None:
            raise conversation_not_found(conversation_id)
        return row

    async def get(self, user_id: str, conversation_id: str) -> dict[str, Any]:
        return _body(await self._row(user_id, conversation_id))

    async def update(self, user_id: str, conversation_id: str, metadata: dict[str, str]) -> dict[str, Any]:
        row = await self._conversations.update_metadata(user_id, conversation_id, dumps(metadata))
        if row is None:
            raise conversation_not_found(conversation_id)
        return _body(row)

    async def delete(self, user_id: str, conversation_id: str) -> dict[str, Any]:
        if not await self._conversations.delete(user_id, conversation_id):
            raise conversation_not_found(conversation_id)
        return conversation_deleted_body(conversation_id)

    # -- items --------------------------------------------------------------------------

    async def _items(self, user_id: str, stored: list[str]) -> list[dict[str, Any]]:
        items = [json.loads(d) for d in stored]
        # A turn's item_reference inputs are listed as the items they name.
        resolved = await self._continuations.resolve_references(user_id, items, strict=False)
        return [conversation_item(i) for i in resolved]

    async def list_items(self, user_id: str, conversation_id: str, params: ItemListParams) -> dict[str, Any]:
        await self._row(user_id, conversation_id)
        page = await self._conversations.list_items(
            user_id, conversation_id, after=params.after, limit=params.limit, order=params.order
        )
        if page is None:
            raise errors.bad_request(
                f"No item with id '{(params.after or '')[:128]}' in conversation '{conversation_id}'.",
                param="after",
            )
        stored, has_more = page
        return item_list_body(await self._items(user_id, stored), has_more=has_more)

    async def add_items(
        self, user_id: str, conversation_id: str, items: list[dict[str, Any]]
    ) -> dict[str, Any]:
        await self._row(user_id, conversation_id)
        await self._conversations.add_items(
            user_id, conversation_id, [AddedItem(str(i["id"]), dumps(i)) for i in items]
        )
        return item_list_body([conversation_item(i) for i in items], has_more=False)

    async def get_item(self, user_id: str, conversation_id: str, item_id: str) -> dict[str, Any]:
        await self._row(user_id, conversation_id)
        data = await self._conversations.get_item(user_id, conversation_id, item_id)
        if data is None:
            raise errors.not_found(f"Item with id '{item_id[:128]}' not found.", param="item_id")
        return (await self._items(user_id, [data]))[0] if data else {}

    async def delete_item(self, user_id: str, conversation_id: str, item_id: str) -> dict[str, Any]:
        row = await self._row(user_id, conversation_id)
        if not await self._conversations.delete_item(user_id, conversation_id, item_id):
            raise errors.not_found(f"Item with id '{item_id[:128]}' not found.", param="item_id")
        return _body(row)

    # -- a turn -------------------------------------------------------------------------

    async def take(self, user_id: str, req: CreateRequest) -> tuple[list[dict[str, Any]], Claims | None]:
        """The items added by hand that a new turn of `req.conversation_id` starts its input
        with, and (a stored turn) the claims its creation's own write takes them with, with the
        conversation: created on an id's first use, refused if deleted since this read."""
        conv = req.conversation_id
        if conv is None:
            return [], None
        row = await self._conversations.get(user_id, conv, deleted=True)
        if row is not None and row.deleted_at is not None:
            raise conversation_not_found(conv)
        # First use: the creation's own write creates it (a store=false turn creates none).
        added = await self._conversations.unclaimed(user_id, conv) if row is not None else []
        seqs = tuple(a.seq for a in added if a.seq is not None)
        return [json.loads(a.data) for a in added], Claims(user_id, conv, seqs) if req.store else None
