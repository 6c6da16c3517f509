"""Continuations: what a new turn continues from, and how a response (re)starts.

Invariants:
- Fail closed: continuing a response that is missing, still running, waiting for replies that
  were not given, or whose workflow checkpoint is gone (or holds a refused type) is a 4xx; a
  workflow is never silently restarted from its entry executor.
- A reply answers a pending request exactly once (`answer_pending` is all-or-none).
- `plan()` derives the start of a run from stored data only, so recovery restarts a response
  that has no checkpoint yet exactly as its first run started.
"""

from __future__ import annotations

import json
from typing import Any

from ..protocol import errors
from ..protocol.request import CreateRequest
from ..store import TERMINAL_STATUSES, CheckpointRow, ResponseRow, Store
from ._af_private import CheckpointTypeRefused, decode_checkpoint
from .apps import HostedApp
from .messages import declaration_tools, input_items_to_messages, output_items_to_messages
from .run import RunPlan

MAX_HISTORY_RESPONSES = 1000


class Continuations:
    def __init__(self, store: Store, app: HostedApp, allowed_types: tuple[str, ...]) -> None:
        self.store = store
        self.app = app
        self.allowed_types = allowed_types

    async def check(self, user_id: str, req: CreateRequest) -> ResponseRow | None:
        """The response this one continues (for pending requests), after validating it."""
        if req.previous_response_id:
            prev = await self.store.get_response(req.previous_response_id, user_id)
            if prev is None:
                raise errors.not_found(
                    f"Previous response with id '{req.previous_response_id}' not found.",
                    param="previous_response_id",
                )
            if prev.status not in TERMINAL_STATUSES:
                raise errors.conflict(
                    f"Previous response '{prev.id}' is still {prev.status}; wait for it to finish "
                    "(or cancel it) before continuing from it.",
                    code="previous_response_in_progress",
                )
            return prev
        if req.conversation_id:
            prior = await self.store.conversation_responses(user_id, req.conversation_id)
            for r in prior:
                if r.status not in TERMINAL_STATUSES:
                    raise errors.conflict(
                        f"Conversation '{req.conversation_id}' has a response in progress ({r.id}); "
                        "wait for it to finish before adding a turn.",
                        code="conversation_busy",
                    )
            return prior[-1] if prior else None
        return None

    async def answer_pending(
        self, user_id: str, prev: ResponseRow, req: CreateRequest, rid: str
    ) -> str | None:
        replies = [i["call_id"] for i in req.input_items if i.get("type") == "function_call_output"]
        if not self.app.is_workflow:
            return None
        pending = await self.store.pending_requests(prev.id, user_id)
        open_ids = {p.call_id for p in pending if p.status == "pending"}
        answered = {p.call_id: p.answered_by for p in pending if p.status == "answered"}
        for call_id in replies:
            if call_id in answered:
                raise errors.conflict(
                    f"The request with call_id '{call_id}' was already answered by response "
                    f"'{answered[call_id]}'; continue from that response instead.",
                    code="call_already_answered",
                    param="input",
                )
            if call_id not in open_ids:
                raise errors.bad_request(
                    f"No pending request with call_id '{call_id}' on response '{prev.id}'.",
                    param="input",
                    code="unknown_call_id",
                )
        if open_ids and not replies:
            raise errors.bad_request(
                f"Response '{prev.id}' is waiting for a function_call_output for call_id(s) "
                f"{', '.join(sorted(open_ids))}; send those as input items.",
                param="input",
                code="pending_request",
            )
        if not replies:
            return None
        refused = await self.store.answer_pending(prev.id, user_id, replies, rid)
        if refused:
            raise errors.conflict(
                f"The request(s) {', '.join(refused)} were answered concurrently by another response.",
                code="call_already_answered",
                param="input",
            )
        return prev.id

    async def plan(self, user_id: str, req: CreateRequest, rid: str) -> RunPlan:
        """How to (re)start a response from its stored input (also used by recovery)."""
        current = input_items_to_messages(req.input_items)
        tools = declaration_tools(req.tools) if req.tools else []
        if not self.app.is_workflow:
            history = await self.history(user_id, req, rid)
            return RunPlan(messages=history + current, tools=tools)
        checkpoint_id: str | None = None
        cp: CheckpointRow | None = None
        if req.previous_response_id:
            cp = await self.store.latest_checkpoint(user_id=user_id, response_id=req.previous_response_id)
            if cp is None:
                raise errors.conflict(
                    f"The workflow state of previous response '{req.previous_response_id}' is not "
                    "available (no checkpoint is stored for it), so it cannot be continued; start a new "
                    "response without previous_response_id.",
                    code="checkpoint_not_found",
                    param="previous_response_id",
                )
            checkpoint_id = cp.checkpoint_id
        elif req.conversation_id:
            prior = [
                r
                for r in await self.store.conversation_responses(user_id, req.conversation_id)
                if r.id != rid
            ]
            cp = await self.store.latest_checkpoint(user_id=user_id, lineage=f"conv:{req.conversation_id}")
            if cp is not None and cp.response_id == rid:
                cp = None  # recovery without own checkpoint: never happens (caller checks), be safe
            if prior and cp is None:
                raise errors.conflict(
                    f"The workflow state of conversation '{req.conversation_id}' is not available "
                    "(no checkpoint is stored for it), so it cannot be continued; start a new conversation.",
                    code="checkpoint_not_found",
                    param="conversation",
                )
            checkpoint_id = cp.checkpoint_id if cp is not None else None
        if cp is not None:
            self.check_decodable(cp.data)
        return RunPlan(messages=current, checkpoint_id=checkpoint_id, tools=tools)

    def check_decodable(self, data: str) -> None:
        """Fail closed, before anything runs, on a checkpoint holding a type not allowed."""
        try:
            decode_checkpoint(data, allowed_types=self.allowed_types)
        except CheckpointTypeRefused as exc:
            raise errors.unprocessable(str(exc), code="checkpoint_type_refused") from exc

    async def history(self, user_id: str, req: CreateRequest, rid: str) -> list[Any]:
        """Prior turns' input and output, oldest first, for a plain agent."""
        chain: list[ResponseRow] = []
        if req.previous_response_id:
            next_id: str | None = req.previous_response_id
            while next_id and len(chain) < MAX_HISTORY_RESPONSES:
                row = await self.store.get_response(next_id, user_id)
                if row is None:
                    break
                chain.append(row)
                next_id = row.previous_response_id
            chain.reverse()
        elif req.conversation_id:
            chain = [
                r
                for r in await self.store.conversation_responses(user_id, req.conversation_id)
                if r.id != rid
            ]
        messages: list[Any] = []
        for row in chain:
            inputs = [json.loads(i.data) for i in await self.store.input_items(row.id)]
            outputs = [json.loads(o.data) for o in await self.store.output_items(row.id)]
            messages.extend(input_items_to_messages(inputs))
            messages.extend(output_items_to_messages(outputs))
        return messages
