"""Continuations: what a new turn continues from, and how a response (re)starts.

Invariants:
- Fail closed: continuing a response that is missing, still running, waiting for replies that
  were not given, or whose workflow checkpoint is gone (or holds a refused type) is a 4xx; a
  workflow is never silently restarted from its entry executor.
- Everything a run would refuse is refused here first, with a 4xx, before a response is created
  or a request is marked answered (`check`): a reply to a paused workflow holds only
  function_call_output items, each for one of its pending calls, each convertible to the type
  its request declared; a function_call_output elsewhere must answer a function_call that the
  input or the prior turns hold; an item_reference must name an item of the same user.
- A reply answers a pending request exactly once (`answer_pending` is all-or-none).
- `plan()` derives the start of a run from stored data only, so recovery restarts a response
  that has no checkpoint yet exactly as its first run started.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import Message, WorkflowCheckpoint

from ..protocol import errors
from ..protocol.request import CreateRequest
from ..store import (
    ABANDONED_STATUSES,
    TERMINAL_STATUSES,
    CheckpointRow,
    PendingRequestRow,
    ResponseRow,
    Store,
)
from ._af_private import CheckpointTypeRefused, decode_checkpoint, decode_session
from ._offload import for_input
from .apps import HostedApp
from .ending import SESSION_ROWS
from .history import MAX_HISTORY_RESPONSES, History
from .inputs import InputError
from .messages import declaration_tools, input_items_to_messages
from .plan import RunPlan
from .references import resolve_references
from .replies import (
    answered_ids,
    approval_messages,
    check_agent_approvals,
    check_pause_reply,
    pending_of,
    reply_messages,
    typed_replies,
)

# Decoded checkpoints kept by id (a checkpoint row never changes): `check` and `plan` share one.
_DECODED_CACHE = 16


def _kind(item: Mapping[str, Any]) -> str:
    return str(item.get("type") or "message")


def _call_ids(items: Sequence[Mapping[str, Any]], kind: str) -> list[str]:
    return [str(i.get("call_id")) for i in items if i.get("type") == kind]


def _quoted(ids: Sequence[str]) -> str:
    return ", ".join(f"'{i}'" for i in ids)


class Continuations:
    def __init__(self, store: Store, app: HostedApp, allowed_types: tuple[str, ...]) -> None:
        self.store = store
        self.app = app
        self.allowed_types = allowed_types
        self.history = History(store)
        self._decoded: OrderedDict[str, WorkflowCheckpoint] = OrderedDict()

    async def check(self, user_id: str, req: CreateRequest) -> ResponseRow | None:
        """The response this one continues (for pending requests), after validating it and the input."""
        prev = await self._previous(user_id, req)
        await self.check_input(user_id, req, prev)
        return prev

    async def _previous(self, user_id: str, req: CreateRequest) -> ResponseRow | None:
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
            # A failed or cancelled turn's work was stopped: the next turn continues the last
            # turn that finished (its pending requests, its checkpoint).
            finished = [r for r in prior if r.status not in ABANDONED_STATUSES]
            return finished[-1] if finished else None
        return None

    # -- validating the input of a new turn -------------------------------------------------

    async def check_input(self, user_id: str, req: CreateRequest, prev: ResponseRow | None) -> None:
        """Refuse (4xx) an input the run would fail on, before anything is created or answered."""
        items = req.input_items
        if self.app.is_workflow and prev is not None:
            pending = await self.store.pending_requests(prev.id, user_id)
            earlier = await self._answered_earlier(user_id, req, prev, pending)
            if pending or earlier:
                cp = await self._checkpoint(user_id, req, None)
                decoded = self._decode(cp) if cp is not None else None
                check_pause_reply(
                    prev.id, items, [*pending, *earlier], pending_of(decoded) if decoded else {}
                )
                if decoded is not None:
                    typed_replies(decoded, items)
                return
        if not self.app.is_workflow:
            rows = await self.store.pending_requests(prev.id, user_id) if prev is not None else []
            if prev is not None:
                rows = [*rows, *await self._answered_earlier(user_id, req, prev, rows)]
            check_agent_approvals(prev.id if prev is not None else None, items, rows)
        resolved = await self.resolve_references(user_id, items, strict=True)
        replies = _call_ids(resolved, "function_call_output")
        if replies:
            await self._check_calls_exist(user_id, req, prev, resolved, replies)
        if self.app.typed_input:
            self._check_typed_input(resolved)

    def _check_typed_input(self, items: list[dict[str, Any]]) -> None:
        """A new run of a workflow that takes a typed input: the input must become one (400)."""
        spec = self.app.input
        try:
            spec.convert(input_items_to_messages(items))
        except InputError as exc:
            raise errors.bad_request(
                spec.error_message(str(exc)), param="input", code="invalid_workflow_input"
            ) from None

    async def _answered_earlier(
        self, user_id: str, req: CreateRequest, prev: ResponseRow, rows: Sequence[PendingRequestRow]
    ) -> list[PendingRequestRow]:
        """The requests of the conversation's earlier turns that this input answers again and that
        were answered already. A conversation continues from its last turn (`prev`), but a request
        answered in it is the conversation's: answering it again is a 409 naming the response that
        answered it, not a 400 "unknown" (as with previous_response_id of the turn that asked)."""
        if not req.conversation_id or req.previous_response_id:
            return []
        wanted = {str(i.get("call_id")) for i in req.input_items if _kind(i) == "function_call_output"}
        wanted |= {
            str(i.get("approval_request_id")) for i in req.input_items if _kind(i) == "mcp_approval_response"
        }
        wanted -= {r.call_id for r in rows}
        found: list[PendingRequestRow] = []
        if not wanted:
            return found
        prior = await self.store.conversation_responses(user_id, req.conversation_id)
        for row in reversed(prior[-MAX_HISTORY_RESPONSES:]):
            if row.id == prev.id:
                continue
            for p in await self.store.pending_requests(row.id, user_id):
                if p.call_id in wanted and p.status == "answered":
                    found.append(p)
                    wanted.discard(p.call_id)
            if not wanted:
                break
        return found

    async def _check_calls_exist(
        self,
        user_id: str,
        req: CreateRequest,
        prev: ResponseRow | None,
        resolved: Sequence[Mapping[str, Any]],
        replies: Sequence[str],
    ) -> None:
        """Each function_call_output answers a function_call of this input or of a prior turn."""
        known = set(_call_ids(resolved, "function_call"))
        missing = [c for c in replies if c not in known]
        if missing and prev is not None and not self.app.is_workflow:
            async for items in self.history.prior_items_newest_first(user_id, req, prev):
                known.update(_call_ids(items, "function_call"))
                missing = [c for c in missing if c not in known]
                if not missing:
                    return
        if not missing:
            return
        if prev is None:
            hint = (
                "Continue from the response whose output holds that function_call (previous_response_id), "
                "or include the function_call item in input before its output."
            )
        elif self.app.is_workflow:
            hint = (
                f"Response '{prev.id}' is not a workflow paused for a request, so there is nothing to "
                "answer; continue from the response that returned the function_call."
            )
        else:
            hint = f"Neither the input nor the history of response '{prev.id}' holds that function_call."
        raise errors.bad_request(
            f"No tool call found for function call output with call_id {missing[0]}. {hint}",
            param="input",
            code="unknown_call_id",
        )

    async def resolve_references(
        self, user_id: str, items: Sequence[dict[str, Any]], *, strict: bool
    ) -> list[dict[str, Any]]:
        """`items` with each item_reference replaced by the stored item it names (`references`)."""
        return await resolve_references(self.store, user_id, items, strict=strict)

    # -- marking replies ------------------------------------------------------------------

    async def answer_pending(
        self, user_id: str, prev: ResponseRow, req: CreateRequest, rid: str
    ) -> str | None:
        """Mark the requests this input answers as answered by `rid` (all or none, after `check`)."""
        pending = await self.store.pending_requests(prev.id, user_id)
        if not pending:
            return None  # not a pause: `check` let function outputs through as answers to calls
        open_ids = [p.call_id for p in pending if p.status == "pending"]
        if self.app.is_workflow:
            cp = await self._checkpoint(user_id, req, None)
            requests = pending_of(self._decode(cp)) if cp is not None else {}
            replies = answered_ids(req.input_items, requests, open_ids)
        else:
            replies = check_agent_approvals(prev.id, req.input_items, pending)
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

    # -- planning a run ---------------------------------------------------------------------

    async def plan(self, user_id: str, req: CreateRequest, rid: str) -> RunPlan:
        """How to (re)start a response from its stored input (also used by recovery)."""
        items = await self.resolve_references(user_id, req.input_items, strict=False)
        tools = declaration_tools(req.tools) if req.tools else []
        if not self.app.is_workflow:
            return await self._plan_agent(user_id, req, rid, items, tools)
        if self.app.typed_input:
            cp = await self._paused_checkpoint(user_id, req, rid)
        else:
            cp = await self._checkpoint(user_id, req, rid)
        if cp is None:
            return RunPlan(messages=await for_input(len(items), input_items_to_messages, items), tools=tools)
        return self._deliver(cp, items, tools)

    async def _paused_checkpoint(self, user_id: str, req: CreateRequest, rid: str) -> CheckpointRow | None:
        """A workflow with a typed input continues only a pause: a new turn with no request to
        answer is a new run of the workflow on the new input (the conversation keeps the history)."""
        if not req.previous_response_id and not req.conversation_id:
            return None
        try:
            cp = await self._checkpoint(user_id, req, rid)
        except errors.ProtocolError as exc:
            if exc.code != "checkpoint_not_found":
                raise
            prev = req.previous_response_id
            if prev and await self.store.pending_requests(prev, user_id):
                raise  # a pause whose checkpoint is gone: fail closed
            return None
        if cp is None or not pending_of(self._decode(cp)):
            return None
        return cp

    async def _plan_agent(
        self, user_id: str, req: CreateRequest, rid: str, items: list[dict[str, Any]], tools: list[Any]
    ) -> RunPlan:
        """A plain agent's turn: its previous turn's session (which holds the history) and this
        turn's input; without a stored session, the history rebuilt from the stored items."""
        # `instructions` apply to this response only (they are not carried over by
        # previous_response_id), as a system message ahead of everything else.
        system = [Message(role="system", contents=[req.instructions])] if req.instructions else []
        session_row, prev_id = await self._session(user_id, req, rid)
        rows = await self.store.pending_requests(prev_id, user_id) if prev_id is not None else []
        current = await for_input(len(items), approval_messages, items, rows)
        if session_row is not None:
            session = decode_session(session_row.data, allowed_types=self.allowed_types)
            return RunPlan(messages=system + current, tools=tools, session=session)
        history = await self.history.messages(user_id, req, rid)
        return RunPlan(messages=system + history + current, tools=tools)

    async def _session(
        self, user_id: str, req: CreateRequest, rid: str
    ) -> tuple[CheckpointRow | None, str | None]:
        """The session a plain agent's turn continues (and the response that left it), if stored."""
        if req.previous_response_id:
            row = await self.store.latest_checkpoint(
                user_id=user_id, response_id=req.previous_response_id, workflow_name=SESSION_ROWS
            )
            return row, req.previous_response_id
        if req.conversation_id:
            row = await self.store.latest_checkpoint(
                user_id=user_id,
                lineage=f"conv:{req.conversation_id}",
                workflow_name=SESSION_ROWS,
                skip_abandoned=True,
            )
            if row is not None and row.response_id == rid:
                row = None  # (a recovery of this very turn never stored one; be safe)
            return row, row.response_id if row is not None else None
        return None, None

    async def plan_delivery(self, user_id: str, req: CreateRequest, cp: CheckpointRow) -> RunPlan:
        """Restore `cp` and deliver the request's input to it: the recovery of a run whose newest
        checkpoint was saved after its restore and before its input reached the workflow."""
        items = await self.resolve_references(user_id, req.input_items, strict=False)
        return self._deliver(cp, items, declaration_tools(req.tools) if req.tools else [])

    def _deliver(self, cp: CheckpointRow, items: list[dict[str, Any]], tools: list[Any]) -> RunPlan:
        current = reply_messages(self._decode(cp), items)
        return RunPlan(messages=current, checkpoint_id=cp.checkpoint_id, tools=tools)

    async def _checkpoint(self, user_id: str, req: CreateRequest, rid: str | None) -> CheckpointRow | None:
        """The checkpoint a workflow turn continues from (None: a fresh start); 409 if it is gone."""
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
            return cp
        if req.conversation_id:
            prior = [
                r
                for r in await self.store.conversation_responses(user_id, req.conversation_id)
                if r.id != rid and r.status not in ABANDONED_STATUSES
            ]
            found = await self.store.latest_checkpoint(
                user_id=user_id, lineage=f"conv:{req.conversation_id}", skip_abandoned=True
            )
            if found is not None and found.response_id == rid:
                found = None  # recovery without own checkpoint: never happens (caller checks), be safe
            if prior and found is None:
                raise errors.conflict(
                    f"The workflow state of conversation '{req.conversation_id}' is not available "
                    "(no checkpoint is stored for it), so it cannot be continued; start a new conversation.",
                    code="checkpoint_not_found",
                    param="conversation",
                )
            return found
        return None

    def _decode(self, cp: CheckpointRow) -> WorkflowCheckpoint:
        """Decode a checkpoint, failing closed (422) on a type off the allow-list."""
        cached = self._decoded.get(cp.checkpoint_id)
        if cached is not None:
            self._decoded.move_to_end(cp.checkpoint_id)
            return cached
        try:
            checkpoint = decode_checkpoint(cp.data, allowed_types=self.allowed_types)
        except CheckpointTypeRefused as exc:
            raise errors.unprocessable(str(exc), code="checkpoint_type_refused") from exc
        self._decoded[cp.checkpoint_id] = checkpoint
        while len(self._decoded) > _DECODED_CACHE:
            self._decoded.popitem(last=False)
        return checkpoint
