"""A plain agent's conversation so far: the prior turns a new turn continues, read from the store.

Invariant: a prior turn is seen as its run saw it (item references resolved, leniently: an
item deleted since is left out), oldest first, at most `MAX_HISTORY_RESPONSES` turns back;
items deleted from a conversation's item list are left out of the history rebuilt here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ...protocol.request import CreateRequest
from ...store import ResponseRow, Store
from ..apps.messages import input_items_to_messages, output_items_to_messages
from .references import resolve_references

MAX_HISTORY_RESPONSES = 1000


class History:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def _chain(
        self,
        user_id: str,
        req: CreateRequest,
        rid: str | None,
        prev: ResponseRow | None,
        conversation: tuple[ResponseRow, ...] | None,
    ) -> list[ResponseRow]:
        """The prior turns of a plain agent's conversation, oldest first (`prev`, `conversation`:
        not read again)."""
        chain: list[ResponseRow] = []
        if req.previous_response_id:
            next_id: str | None = req.previous_response_id
            while next_id and len(chain) < MAX_HISTORY_RESPONSES:
                row = (
                    prev
                    if prev is not None and prev.id == next_id
                    else await self.store.get_response(next_id, user_id)
                )
                if row is None:
                    break
                chain.append(row)
                next_id = row.previous_response_id
            chain.reverse()
        elif req.conversation_id:
            turns = conversation
            if turns is None:
                turns = tuple(await self.store.conversation_responses(user_id, req.conversation_id))
            chain = [r for r in turns if r.id != rid]
        return chain

    async def turn_items(self, user_id: str, row: ResponseRow) -> tuple[list[Any], list[Any]]:
        """A prior turn's input (references resolved, as its run saw them) and output items."""
        inputs = [json.loads(i.data) for i in await self.store.input_items(row.id)]
        outputs = [json.loads(o.data) for o in await self.store.output_items(row.id)]
        return await resolve_references(self.store, user_id, inputs, strict=False), outputs

    async def prior_items_newest_first(
        self, user_id: str, req: CreateRequest, prev: ResponseRow
    ) -> AsyncIterator[list[Any]]:
        """Each prior turn's output then input items, newest turn first (stops early if asked)."""
        if req.previous_response_id:
            row: ResponseRow | None = prev
            seen = 0
            while row is not None and seen < MAX_HISTORY_RESPONSES:
                inputs, outputs = await self.turn_items(user_id, row)
                yield outputs
                yield inputs
                seen += 1
                nxt = row.previous_response_id
                row = await self.store.get_response(nxt, user_id) if nxt else None
        elif req.conversation_id:
            for turn in reversed(await self.store.conversation_responses(user_id, req.conversation_id)):
                inputs, outputs = await self.turn_items(user_id, turn)
                yield outputs
                yield inputs

    async def messages(
        self,
        user_id: str,
        req: CreateRequest,
        rid: str | None,
        *,
        prev: ResponseRow | None = None,
        conversation: tuple[ResponseRow, ...] | None = None,
    ) -> list[Any]:
        """Prior turns' input and output, oldest first, for a plain agent; `prev` (the previous
        response) and `conversation` (the conversation's turns; None: not read): as the caller
        already read them."""
        messages: list[Any] = []
        # Items deleted from a conversation's item list are left out of the history rebuilt here.
        hidden = (
            await self.store.conversations.hidden_ids(user_id, req.conversation_id)
            if req.conversation_id
            else set()
        )
        for row in await self._chain(user_id, req, rid, prev, conversation):
            inputs, outputs = await self.turn_items(user_id, row)
            if hidden:
                inputs = [i for i in inputs if i.get("id") not in hidden]
                outputs = [o for o in outputs if o.get("id") not in hidden]
            messages.extend(input_items_to_messages(inputs))
            messages.extend(output_items_to_messages(outputs))
        return messages
