"""Continuations: what a new turn continues from, and how a response (re)starts.

Invariants:
- Fail closed: continuing a response that is missing, still running, waiting for replies that
  were not given, or whose workflow checkpoint is gone (or holds a refused type) is a 4xx; a
  workflow is never silently restarted from its entry executor.
- A turn's facts are read once (`prepare`: the response it follows, that response's pending
  requests, the checkpoint or agent session it continues, its input's item references), then
  checked and planned from that one read (`plan_for`, a pure function); nothing read for it
  is read again.
- Everything a run would refuse is refused here first, with a 4xx, before a response is created
  or a request is marked answered (`prepare`): a reply to a paused workflow holds only
  function_call_output items, each for one of its pending calls, each convertible to the type
  its request declared; a function_call_output elsewhere must answer a function_call that the
  input or the prior turns hold; an item_reference must name an item of the same user.
- A reply answers a pending request exactly once: the creation's own write marks every request
  it answers or, when one was answered meanwhile, creates nothing (`answers`).
- `plan()` derives the start of a run from stored data only, so recovery restarts a response
  that has no checkpoint yet exactly as its first run started.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from agent_framework import Message, WorkflowCheckpoint

from ...protocol import errors
from ...protocol.request import CreateRequest
from ...store import (
    Answers,
    CheckpointRow,
    PendingRequestRow,
    ResponseRow,
    Store,
)
from .._af_private import CheckpointTypeRefused, decode_checkpoint, decode_session
from ..apps.apps import HostedApp
from ..apps.inputs import InputError
from ..apps.messages import declaration_tools, input_items_to_messages
from ..pauses.approval_calls import held_calls
from ..pauses.replies import (
    answered_ids,
    approval_messages,
    check_agent_approvals,
    check_pause_reply,
    pending_of,
    reply_messages,
    typed_replies,
)
from ..run.plan import RunPlan
from ._offload import for_input
from .history import History
from .references import resolve_references
from .turn_facts import (
    Followed,
    Turn,
    answered_earlier,
    checkpoint_of,
    follow,
    previous_of,
    session_of,
)

# Decoded checkpoints kept by id (a checkpoint row never changes): `check` and `plan` share one.
_DECODED_CACHE = 16


def _kind(item: Mapping[str, Any]) -> str:
    return str(item.get("type") or "message")


def _call_ids(items: Sequence[Mapping[str, Any]], kind: str) -> list[str]:
    return [str(i.get("call_id")) for i in items if i.get("type") == kind]


def _answers_calls(items: Sequence[Mapping[str, Any]]) -> bool:
    """Whether `items` answer a tool approval or a call: the answers that let agent-framework run
    the calls it held back beside them (`approval_calls.held_calls`)."""
    return any(_kind(i) in ("mcp_approval_response", "function_call_output") for i in items)


def _quoted(ids: Sequence[str]) -> str:
    return ", ".join(f"'{i}'" for i in ids)


class Continuations:
    def __init__(self, store: Store, app: HostedApp, allowed_types: tuple[str, ...]) -> None:
        self.store = store
        self.app = app
        self.allowed_types = allowed_types
        self.history = History(store)
        self._decoded: OrderedDict[str, WorkflowCheckpoint] = OrderedDict()
        self._decoding = threading.Lock()

    async def prepare(self, user_id: str, req: CreateRequest, followed: Followed | None = None) -> Turn:
        """A new turn's facts, read once, after refusing (4xx) what its run would fail on:
        `followed` is what the turn follows, as already read (else read here)."""
        if followed is None:
            followed = await follow(self.store, user_id, req)
        prev = previous_of(req, followed)
        turn = await self._facts(user_id, req, None, prev, followed.conversation, strict=True)
        await self.check_input(user_id, req, turn)
        return turn

    async def _facts(
        self,
        user_id: str,
        req: CreateRequest,
        rid: str | None,
        prev: ResponseRow | None,
        conversation: tuple[ResponseRow, ...] | None,
        *,
        strict: bool,
    ) -> Turn:
        """Read what a turn needs, each fact once: `prev`'s pending requests, a workflow's
        checkpoint or an agent's session, the input's references (`strict`: 404 for one that
        names nothing; recovery drops it)."""
        store = self.store
        items = tuple(await self.resolve_references(user_id, req.input_items, strict=strict))
        pending = tuple(await store.pending_requests(prev.id, user_id)) if prev is not None else ()
        turns = conversation or ()
        earlier = tuple(await answered_earlier(store, user_id, req, prev, pending, turns))
        turn = Turn(prev, turns, items, pending, earlier)
        follows = bool(req.previous_response_id or req.conversation_id)
        if not follows:
            return turn
        if self.app.is_workflow:
            try:
                return replace(turn, checkpoint=await checkpoint_of(store, user_id, req, rid, turns))
            except errors.ProtocolError as exc:
                if exc.code != "checkpoint_not_found":
                    raise
                if prev is None and req.previous_response_id:
                    # (Recovery: whether the turn answers a pause, which then fails closed.)
                    pending = tuple(await store.pending_requests(req.previous_response_id, user_id))
                return replace(turn, pending=pending, checkpoint_gone=exc)
        session, session_from = await session_of(store, user_id, req, rid)
        if session_from is None:
            rows: tuple[PendingRequestRow, ...] = ()
        elif prev is not None and session_from == prev.id:
            rows = pending
        else:
            rows = tuple(await store.pending_requests(session_from, user_id))
        turn = replace(turn, session=session, session_from=session_from, session_pending=rows)
        if session is not None:
            return turn
        # No stored session: the history is rebuilt from the stored items (the rows of the
        # responses it follows as already read, `prev` and `conversation`).
        history = await self.history.messages(user_id, req, rid, prev=prev, conversation=conversation)
        return replace(turn, history=tuple(history))

    # -- validating the input of a new turn -------------------------------------------------

    async def check_input(self, user_id: str, req: CreateRequest, turn: Turn) -> None:
        """Refuse (4xx) an input the run would fail on, before anything is created or answered."""
        items, prev = req.input_items, turn.prev
        if self.app.is_workflow and prev is not None and (turn.pending or turn.earlier):
            if turn.checkpoint_gone is not None:
                raise turn.checkpoint_gone
            decoded = self._decode(turn.checkpoint) if turn.checkpoint is not None else None
            check_pause_reply(
                prev.id, items, [*turn.pending, *turn.earlier], pending_of(decoded) if decoded else {}
            )
            if decoded is not None:
                typed_replies(decoded, items)
            return
        if not self.app.is_workflow:
            check_agent_approvals(
                prev.id if prev is not None else None, items, [*turn.pending, *turn.earlier]
            )
        resolved = list(turn.items)
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

    def replies(self, req: CreateRequest, turn: Turn) -> list[str]:
        """The pending requests of `turn.prev` this input answers (after `prepare`'s checks)."""
        if turn.prev is None or not turn.pending:
            return []  # not a pause: function outputs went through as answers to calls
        if not self.app.is_workflow:
            return check_agent_approvals(turn.prev.id, req.input_items, turn.pending)
        open_ids = [p.call_id for p in turn.pending if p.status == "pending"]
        cp = turn.checkpoint
        requests = pending_of(self._decode(cp)) if cp is not None else {}
        return answered_ids(req.input_items, requests, open_ids)

    def answers(self, user_id: str, req: CreateRequest, turn: Turn) -> Answers | None:
        """The pending requests of `turn.prev` this input answers, for the creation's own write
        to mark (`Store.insert_response`: all or none); None when it answers none."""
        replies = self.replies(req, turn)
        if turn.prev is None or not replies:
            return None
        return Answers(turn.prev.id, user_id, tuple(replies))

    # -- planning a run ---------------------------------------------------------------------

    async def plan(self, user_id: str, req: CreateRequest, rid: str) -> RunPlan:
        """How to (re)start a response from its stored input (recovery: its facts read now)."""
        conversation: tuple[ResponseRow, ...] | None = None  # (None: not read)
        if req.conversation_id and not req.previous_response_id and self.app.is_workflow:
            conversation = tuple(await self.store.conversation_responses(user_id, req.conversation_id))
        turn = await self._facts(user_id, req, rid, None, conversation, strict=False)
        return await for_input(len(turn.items), self.plan_for, req, turn)

    def plan_for(self, req: CreateRequest, turn: Turn) -> RunPlan:
        """How to start the run of `req` from its turn's facts (read by `prepare` or `plan`):
        pure (no I/O; CPU only, thread-safe: a large input's plan runs in a worker thread)."""
        items = list(turn.items)
        tools = declaration_tools(req.tools) if req.tools else []
        if not self.app.is_workflow:
            return self._plan_agent(req, items, tools, turn)
        cp = self._paused_checkpoint(req, turn) if self.app.typed_input else self._continued(turn)
        if cp is None:
            return RunPlan(messages=input_items_to_messages(items), tools=tools)
        return self._deliver(cp, items, tools)

    @staticmethod
    def _continued(turn: Turn) -> CheckpointRow | None:
        """The checkpoint a workflow turn continues from (None: a fresh start); 409 if it is gone."""
        if turn.checkpoint_gone is not None:
            raise turn.checkpoint_gone
        return turn.checkpoint

    def _paused_checkpoint(self, req: CreateRequest, turn: Turn) -> CheckpointRow | None:
        """A workflow with a typed input continues only a pause: a new turn with no request to
        answer is a new run of the workflow on the new input (the conversation keeps the history)."""
        if turn.checkpoint_gone is not None:
            if req.previous_response_id and turn.pending:
                raise turn.checkpoint_gone  # a pause whose checkpoint is gone: fail closed
            return None
        cp = turn.checkpoint
        if cp is None or not pending_of(self._decode(cp)):
            return None
        return cp

    def _plan_agent(
        self, req: CreateRequest, items: list[dict[str, Any]], tools: list[Any], turn: Turn
    ) -> RunPlan:
        """A plain agent's turn: its previous turn's session (which holds the history) and this
        turn's input; without a stored session, the history rebuilt from the stored items."""
        # `instructions` apply to this response only (they are not carried over by
        # previous_response_id), as a system message ahead of everything else.
        system = [Message(role="system", contents=[req.instructions])] if req.instructions else []
        current = approval_messages(items, list(turn.session_pending))
        if turn.session is not None:
            session = decode_session(turn.session.data, allowed_types=self.allowed_types)
            held = held_calls(session) if _answers_calls(items) else {}
            return RunPlan(messages=system + current, tools=tools, session=session, held_calls=held)
        return RunPlan(messages=system + list(turn.history) + current, tools=tools)

    async def plan_delivery(self, user_id: str, req: CreateRequest, cp: CheckpointRow) -> RunPlan:
        """Restore `cp` and deliver the request's input to it: the recovery of a run whose newest
        checkpoint was saved after its restore and before its input reached the workflow."""
        items = await self.resolve_references(user_id, req.input_items, strict=False)
        return self._deliver(cp, items, declaration_tools(req.tools) if req.tools else [])

    def _deliver(self, cp: CheckpointRow, items: list[dict[str, Any]], tools: list[Any]) -> RunPlan:
        checkpoint = self._decode(cp)
        current = reply_messages(checkpoint, items)
        held = held_calls(checkpoint.state) if _answers_calls(items) else {}
        return RunPlan(
            messages=current,
            checkpoint_id=cp.checkpoint_id,
            checkpoint_data=cp.data,
            tools=tools,
            held_calls=held,
        )

    def _decode(self, cp: CheckpointRow) -> WorkflowCheckpoint:
        """Decode a checkpoint, failing closed (422) on a type off the allow-list (the cache
        behind a lock: a large input's plan decodes in a worker thread)."""
        with self._decoding:
            cached = self._decoded.get(cp.checkpoint_id)
            if cached is not None:
                self._decoded.move_to_end(cp.checkpoint_id)
                return cached
        try:
            checkpoint = decode_checkpoint(cp.data, allowed_types=self.allowed_types)
        except CheckpointTypeRefused as exc:
            raise errors.unprocessable(str(exc), code="checkpoint_type_refused") from exc
        with self._decoding:
            self._decoded[cp.checkpoint_id] = checkpoint
            while len(self._decoded) > _DECODED_CACHE:
                self._decoded.popitem(last=False)
        return checkpoint
