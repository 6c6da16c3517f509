"""The restore fix: a ``WorkflowAgent`` resumable through its public ``run()`` (see the package
docstring, "The framework's restore bug"), a typed-input ``WorkflowAgent``, and the hook after a
workflow's last event.

Private names: ``WorkflowAgent._run_core`` and
``WorkflowAgent._convert_workflow_event_to_agent_response_updates`` (overridden by the mixin),
``WorkflowAgent._extract_function_responses`` (called by the mixin to convert a call's answers),
``WorkflowAgent._workflow`` (set by ``_TypedInputWorkflowAgent``).
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from typing import Any

from agent_framework import (
    AgentResponseUpdate,
    BaseAgent,
    CheckpointStorage,
    Content,
    Message,
    ToolTypes,
    Workflow,
    WorkflowAgent,
    WorkflowEvent,
    WorkflowInvocationKwargs,
    WorkflowRunState,
)
from agent_framework.exceptions import AgentInvalidRequestException

from ..apps.outputs import output_value
from .forwarding import forwarded

__all__ = ["make_restorable", "on_events_end", "typed_workflow_agent"]


# The contents that answer a pending request (``_answered_request_ids``).
_ANSWER_TYPES = frozenset({"function_result", "function_approval_response"})


def _answered_request_ids(messages: Sequence[Message]) -> set[str]:
    """Request ids that the call's own input answers (function results and approval responses)."""
    answered: set[str] = set()
    for message in messages:
        for content in message.contents:
            if content.type == "function_result" and content.call_id:
                answered.add(content.call_id)
            elif content.type == "function_approval_response" and content.id:
                answered.add(content.id)
    return answered


def _answered(event: WorkflowEvent, answered: set[str]) -> bool:
    """Whether a re-emitted request is one the call answers: by its request id, or (a
    declaration-only tool's call, answered as the call it is) by its call's id."""
    if event.request_id in answered:
        return True
    data = event.data
    return isinstance(data, Content) and data.type == "function_call" and data.call_id in answered


async def _workflow_events(
    workflow: Workflow, streaming: bool, run_kwargs: dict[str, Any]
) -> AsyncIterable[WorkflowEvent]:
    """The events of ``workflow.run(**run_kwargs)``, streamed or (non-streaming) all at its end."""
    if streaming:
        async for event in workflow.run(stream=True, **run_kwargs):
            yield event
    else:
        for event in await workflow.run(**run_kwargs):
            yield event


def _input_delivered(storage: CheckpointStorage | None) -> None:
    """Tell the host's storage (which has ``input_delivered``) that the run's input now reaches
    the workflow: a checkpoint it saves from now on holds that input."""
    delivered = getattr(storage, "input_delivered", None)
    if callable(delivered):
        delivered()


async def _answers(
    agent: WorkflowAgent,
    messages: Sequence[Message],
    answered: set[str],
    checkpoint_id: str,
    storage: CheckpointStorage,
) -> dict[str, Any] | None:
    """The ``responses`` that deliver ``messages`` to the checkpoint's pending requests in the run
    that restores it, or None where the input is not only answers to pending requests.

    Restoring alone runs a superstep (it re-emits the pending requests), which counts against
    the workflow's ``max_iterations``; ``Workflow.run(checkpoint_id=..., responses=...)``
    restores and delivers in one run, as the framework resumes a pause itself. The answers are
    converted as the original converts them once restored (``_extract_function_responses`` over
    the pending requests: a declaration-only tool's result, answered by its call's id, goes to
    its request). Anything else in the input (a new message, a checkpoint with no pending
    request) goes the two-run way.
    """
    if not answered or any(c.type not in _ANSWER_TYPES for m in messages for c in m.contents):
        return None
    try:
        checkpoint = await storage.load(checkpoint_id)
    except Exception:
        # A checkpoint that cannot be read here fails the restore the same way (missing, a
        # refused type): the two-run way reports it as the framework's restore always has.
        return None
    pending = checkpoint.pending_request_info_events
    if not pending:
        return None
    responses: dict[str, Any] = agent._extract_function_responses(messages, pending)
    return responses


class _RestoreForwardingMixin(WorkflowAgent):
    """Overrides ``WorkflowAgent._run_core`` so a restore's events reach the caller (see module doc)."""

    async def _run_core(
        self,
        input_messages: Sequence[Message],
        checkpoint_id: str | None,
        checkpoint_storage: CheckpointStorage | None,
        streaming: bool,
        tools: ToolTypes | Callable[..., Any] | Sequence[ToolTypes | Callable[..., Any]] | None = None,
        function_invocation_kwargs: WorkflowInvocationKwargs
        | Mapping[str, Mapping[str, Any]]
        | Mapping[str, Any]
        | None = None,
        client_kwargs: WorkflowInvocationKwargs
        | Mapping[str, Mapping[str, Any]]
        | Mapping[str, Any]
        | None = None,
    ) -> AsyncIterable[WorkflowEvent]:
        original = WorkflowAgent._run_core
        kwargs: dict[str, Any] = {
            "tools": tools,
            "function_invocation_kwargs": function_invocation_kwargs,
            "client_kwargs": client_kwargs,
        }
        if checkpoint_id is not None:
            if checkpoint_storage is None:
                raise AgentInvalidRequestException(
                    "checkpoint_storage must be provided when checkpoint_id is provided"
                )
            # Restoring re-emits every pending request; the ones this call answers are not news.
            answered = _answered_request_ids(input_messages)
            restore: dict[str, Any] = {
                "checkpoint_id": checkpoint_id,
                "checkpoint_storage": checkpoint_storage,
                **kwargs,
            }
            responses = await _answers(self, input_messages, answered, checkpoint_id, checkpoint_storage)
            if responses is not None:
                # One run restores and delivers (`_answers`): its first checkpoint, saved once the
                # answers are queued and before any executor runs, already holds them.
                _input_delivered(checkpoint_storage)
                restore["responses"] = responses
            async for event in _workflow_events(self.workflow, streaming, restore):
                if not (event.type == "request_info" and _answered(event, answered)):
                    yield _shown(event)
            if responses is not None or not input_messages:
                await _events_ended(self)
                return
        # Input phase: the original delivers function results to pending requests or sends a new
        # message when idle; with checkpoint_id=None it does not restore again. The host's
        # storage marks checkpoints saved before this point (they lack the input).
        _input_delivered(checkpoint_storage)
        convert = vars(self).get(_INPUT_ATTR)
        if convert is not None and self.workflow.status == WorkflowRunState.IDLE:
            # A workflow whose start executor does not take messages: its typed input, built
            # from the messages by the host (`inputs.InputSpec`), as the original would send them.
            typed = {"message": convert(input_messages), "checkpoint_storage": checkpoint_storage, **kwargs}
            async for event in _workflow_events(self.workflow, streaming, typed):
                yield _shown(event)
        else:
            async for event in original(self, input_messages, None, checkpoint_storage, streaming, **kwargs):
                yield _shown(event)
        await _events_ended(self)

    def _convert_workflow_event_to_agent_response_updates(
        self, response_id: str, event: WorkflowEvent[Any], *rest: Any
    ) -> list[AgentResponseUpdate]:
        """Every content an executor emits, as 1.23.0 forwards it (see `forwarding.forwarded`); `rest` is
        1.26.0's role gate, used only by the framework's own conversion of other events."""
        forwarded_updates = forwarded(response_id, event)
        if forwarded_updates is not None:
            return forwarded_updates
        convert = super()._convert_workflow_event_to_agent_response_updates  # type: ignore[misc]
        return convert(response_id, event, *rest)


def _shown(event: WorkflowEvent) -> WorkflowEvent:
    """`event`, its output as text where the framework would show a value's repr (`outputs`)."""
    if event.type not in ("output", "intermediate", "data"):
        return event
    shown = output_value(event.data)
    if shown is event.data:
        return event
    event = copy.copy(event)
    event.data = shown
    return event


_INPUT_ATTR = "_durable_responses_input"


class _TypedInputWorkflowAgent(WorkflowAgent):
    """A ``WorkflowAgent`` over a workflow whose start executor does not take messages.

    ``WorkflowAgent.__init__`` refuses such a workflow (``Workflow's start executor cannot handle
    list[Message]``); this one skips only that check and sets the instance's ``_workflow`` (which
    ``WorkflowAgent.workflow`` returns) itself. Made restorable, its input phase sends the typed
    input built from the messages (`_RestoreForwardingMixin`); replies to pending requests go the
    framework's own way.
    """

    def __init__(
        self, workflow: Workflow, *, name: str | None = None, description: str | None = None
    ) -> None:
        BaseAgent.__init__(
            self, id=f"WorkflowAgent_{uuid.uuid4().hex[:8]}", name=name, description=description
        )
        self._workflow = workflow


def typed_workflow_agent(
    workflow: Workflow, convert: Callable[[Sequence[Message]], Any], *, name: str | None = None
) -> WorkflowAgent:
    """A restorable agent for ``workflow`` whose new runs start with ``convert(messages)``."""
    agent = make_restorable(_TypedInputWorkflowAgent(workflow, name=name, description=workflow.description))
    setattr(agent, _INPUT_ATTR, convert)
    return agent


_EVENTS_END_ATTR = "_durable_responses_events_end"


async def _events_ended(agent: WorkflowAgent) -> None:
    hook = vars(agent).get(_EVENTS_END_ATTR)
    if hook is not None:
        await hook()


def on_events_end(agent: WorkflowAgent, hook: Callable[[], Awaitable[None]] | None) -> bool:
    """Have the restorable ``agent`` await ``hook()`` once its workflow's last event is yielded.

    In 1.23.0 ``WorkflowAgent``'s stream then builds its final response from every update, twice
    (``_run_stream_impl`` for the after-run providers, the ``ResponseStream``'s finalizer when the
    stream is exhausted): after a 1000-output superstep that is tens of milliseconds of the event
    loop, which the hook lets the host spend after it has delivered what it holds, not before.
    Returns False (no hook) where ``agent`` was not made restorable (``make_restorable``).
    """
    if not isinstance(agent, _RestoreForwardingMixin):
        return False
    setattr(agent, _EVENTS_END_ATTR, hook)
    return True


_RESTORABLE_CLASSES: dict[type[WorkflowAgent], type[WorkflowAgent]] = {}


def make_restorable(agent: WorkflowAgent) -> WorkflowAgent:
    """Give ``agent`` the restore fix in place and return it (idempotent).

    The instance's class becomes a cached subclass ``(_RestoreForwardingMixin, type(agent))``: the
    mixin's ``_run_core`` comes first in the MRO, while the application's own ``run()`` (if it
    overrides one) is still found on its class and stays the entry point the host calls.
    """
    if not isinstance(agent, WorkflowAgent):
        raise TypeError(f"make_restorable expects a WorkflowAgent, got {type(agent).__name__}")
    cls = type(agent)
    if issubclass(cls, _RestoreForwardingMixin):
        return agent
    restorable = _RESTORABLE_CLASSES.get(cls)
    if restorable is None:
        restorable = type(
            f"Restorable{cls.__name__}",
            (_RestoreForwardingMixin, cls),
            {"__module__": cls.__module__, "__doc__": cls.__doc__},
        )
        _RESTORABLE_CLASSES[cls] = restorable
    agent.__class__ = restorable
    return agent
