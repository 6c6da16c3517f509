"""Functional workflows (`@workflow` / `@step`) hosted through the host's agent interface.

`FunctionalAgent.run(messages, stream=True, checkpoint_storage=..., checkpoint_id=...)` is what
the `Driver` calls for every workflow:
- a new run: the function's input (its first parameter that is not the `RunContext`) built from
  the messages (`inputs.InputSpec`), `FunctionalWorkflow.run(message=...)`;
- recovery: `run(checkpoint_id=C)` with no messages; the framework restores C's `@step` cache and
  the original input and calls the function again, every finished step answered from the cache,
  so a crash resumes after the last finished step;
- an answer to a pause: `run(checkpoint_id=C, responses={request id: value})`.
Each `@step` that finishes saves a checkpoint through the host's storage (paired like a superstep's).

What a client sees: the framework gives a functional workflow's events only once the function has
returned or paused (agent-framework 1.23: "not true streaming"), so its output (the return value,
as text; JSON when structured) and its `request_info` calls (a `function_call` named
`request_info`, as a graph workflow's) arrive at the end of the run.

A run that returned is not run again. The framework saves a last checkpoint after the return
value's output event, so the host commits that checkpoint with the output, and a restore of it
calls the function again (every step from the cache) and gives the output a second time. The
host's storage marks that checkpoint (`_Returned`) and a recovery from a marked one runs nothing:
what the run produced is stored, and the response ends with it.

Invariant: public agent-framework names only (`FunctionalWorkflow.run`, `WorkflowEvent`,
`CheckpointStorage.load`); the function is read from `__wrapped__`, which the framework's
definition and built workflow both set (`functools.update_wrapper`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    CheckpointStorage,
    Content,
    FunctionalWorkflow,
    Message,
    RunContext,
    WorkflowAgent,
    WorkflowCheckpoint,
)

from .inputs import InputSpec, annotation_types, spec_for_types
from .messages import ReplyTypeError, function_output_value
from .outputs import output_value

__all__ = ["FunctionalAgent", "fresh_functional", "functional_input"]

# How far back a run looks for the request a reply answers (see `_responses`).
_MAX_CHAIN = 64
# The state key that marks the checkpoint a run saved after its function returned.
RETURNED_KEY = "__durable_responses_returned__"


def _is_context(name: str, annotation: Any) -> bool:
    return annotation is RunContext or name == "ctx"


def functional_input(workflow: FunctionalWorkflow) -> InputSpec:
    """The input spec of a functional workflow: its function's first non-context parameter."""
    func = getattr(workflow, "__wrapped__", None)
    declared = annotation_types(func, _is_context) if callable(func) else [str]
    return spec_for_types(declared) if declared else InputSpec(types=(str,))


def fresh_functional(built: Any) -> FunctionalWorkflow:
    """A new `FunctionalWorkflow` of the same function (one instance runs one run at a time)."""
    func = getattr(built, "__wrapped__", None)
    if not callable(func):
        raise TypeError(f"{type(built).__name__} does not expose its function (__wrapped__)")
    return FunctionalWorkflow(func, name=built.name, description=getattr(built, "description", None))


def _contents(data: Any) -> list[Content]:
    shown = output_value(data)
    if isinstance(shown, str):
        return [Content.from_text(shown)]
    if isinstance(shown, Content):
        return [shown]
    if isinstance(shown, Message):
        return list(shown.contents)
    if isinstance(shown, AgentResponse):
        return [c for m in shown.messages for c in m.contents]
    if isinstance(shown, AgentResponseUpdate):
        return list(shown.contents)
    if isinstance(shown, list):
        return [c for x in shown for c in _contents(x)]
    return [Content.from_text(str(shown))]


class _Returned:
    """The run's checkpoint storage, marking the checkpoint saved once the function returned (an
    output seen, no request): the framework saves one after the return value's output event."""

    def __init__(self, inner: CheckpointStorage) -> None:
        self._inner = inner
        self._returned = False
        self._requested = False
        # The checkpoint the run restores, read once: the host's check, the answers' conversion
        # and the framework's restore all load it (the host's storage preloads it for one load).
        self._restored: tuple[str, WorkflowCheckpoint] | None = None

    async def returned_before(self, checkpoint_id: str) -> bool:
        """Whether the function had returned when `checkpoint_id` was saved (see `save`)."""
        checkpoint = await self._inner.load(checkpoint_id)
        self._restored = (checkpoint_id, checkpoint)
        return RETURNED_KEY in checkpoint.state

    def saw(self, event_type: str) -> None:
        """The run gave an event: an output (with no request before it) means the function
        returned, a request that it paused."""
        if event_type == "request_info":
            self._requested, self._returned = True, False
        elif event_type == "output" and not self._requested:
            self._returned = True

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        if self._returned:
            checkpoint = dataclasses.replace(checkpoint, state={**checkpoint.state, RETURNED_KEY: True})
        return await self._inner.save(checkpoint)

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        if self._restored is not None and self._restored[0] == checkpoint_id:
            checkpoint = self._restored[1]
            checkpoint = dataclasses.replace(checkpoint, state=dict(checkpoint.state))  # callers' own
        else:
            checkpoint = await self._inner.load(checkpoint_id)
        if RETURNED_KEY not in checkpoint.state:
            return checkpoint
        state = {k: v for k, v in checkpoint.state.items() if k != RETURNED_KEY}
        return dataclasses.replace(checkpoint, state=state)

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        return await self._inner.list_checkpoints(workflow_name=workflow_name)

    async def delete(self, checkpoint_id: str) -> bool:
        return await self._inner.delete(checkpoint_id)

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        return await self._inner.get_latest(workflow_name=workflow_name)

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        return await self._inner.list_checkpoint_ids(workflow_name=workflow_name)


class FunctionalAgent:
    """Runs a `FunctionalWorkflow` the way the host runs a workflow agent (see module doc)."""

    def __init__(self, workflow: FunctionalWorkflow, spec: InputSpec, *, name: str) -> None:
        self.workflow = workflow
        self.input = spec
        self.name = name
        self.id = f"FunctionalAgent_{name}"

    def run(
        self,
        messages: Sequence[Message] | None = None,
        *,
        stream: bool = True,
        checkpoint_storage: CheckpointStorage | None = None,
        checkpoint_id: str | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[AgentResponseUpdate]:
        if not stream:
            raise ValueError("the host runs functional workflows streamed")
        return self._run(list(messages or []), checkpoint_storage, checkpoint_id)

    async def _run(
        self,
        messages: list[Message],
        storage: CheckpointStorage | None,
        checkpoint_id: str | None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        marking = _Returned(storage) if storage is not None else None
        run_kwargs: dict[str, Any] = {"stream": True, "checkpoint_storage": marking}
        if checkpoint_id is None:
            run_kwargs["message"] = self.input.convert(messages)
        else:
            if marking is not None and await marking.returned_before(checkpoint_id):
                return  # the function returned before this checkpoint: its output is stored
            run_kwargs["checkpoint_id"] = checkpoint_id
            responses = await self._responses(messages, marking, checkpoint_id)
            if responses:
                run_kwargs["responses"] = responses
        response_id = str(uuid.uuid4())
        async for event in self.workflow.run(**run_kwargs):
            if marking is not None:
                marking.saw(event.type)
            if event.type == "output":
                contents = _contents(event.data)
                if contents:
                    yield AgentResponseUpdate(
                        contents=contents,
                        role="assistant",
                        author_name=self.name,
                        response_id=response_id,
                        message_id=str(uuid.uuid4()),
                    )
            elif event.type == "request_info" and event.request_id:
                call = Content.from_function_call(
                    call_id=event.request_id,
                    name=WorkflowAgent.REQUEST_INFO_FUNCTION_NAME,
                    arguments={"request_id": event.request_id, "data": event.data},
                )
                yield AgentResponseUpdate(
                    contents=[call],
                    role="assistant",
                    author_name=self.name,
                    response_id=response_id,
                    message_id=str(uuid.uuid4()),
                )

    async def _responses(
        self, messages: list[Message], storage: CheckpointStorage | None, checkpoint_id: str
    ) -> dict[str, Any]:
        """Request id -> answer, from the function results among `messages`.

        The host converts an answer to its request's `response_type` from the checkpoint it
        restores (`replies.reply_messages`). Recovery of an answering run restores a later
        checkpoint of that run, which no longer holds the request (the framework keeps only
        open ones): its raw answer is converted here, by the request in an earlier checkpoint.
        """
        results = {
            c.call_id: c.result
            for m in messages
            for c in m.contents
            if c.type == "function_result" and c.call_id
        }
        if not results or storage is None:
            return results
        raw = [rid for rid, value in results.items() if isinstance(value, str)]
        current: str | None = checkpoint_id
        for _ in range(_MAX_CHAIN):
            if not raw or current is None:
                break
            checkpoint = await storage.load(current)
            for rid in list(raw):
                event = checkpoint.pending_request_info_events.get(rid)
                if event is None:
                    continue
                raw.remove(rid)
                try:
                    response_type: Any = event.response_type
                except RuntimeError:  # an event without one: nothing to convert to
                    continue
                if response_type is not str:
                    try:
                        results[rid] = function_output_value(results[rid], response_type)
                    except ReplyTypeError:
                        pass  # the framework refuses it with its own message
            current = checkpoint.previous_checkpoint_id
        return results
