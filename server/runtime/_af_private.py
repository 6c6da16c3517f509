"""The one module that touches private agent-framework names, and the restore fix that needs them.

Job: make a ``WorkflowAgent`` resumable through its public ``run()``, pace a workflow's events,
(de)serialize checkpoints with the framework's own encoding, and convert a reply to a pending
request the way the framework will (reading requests out of checkpoints needs no private name:
``pending.py``).

Invariant: no other module of the server imports a private agent-framework name. Everything here is
verified against each supported agent-framework-core release (``VERIFIED_RELEASES``: the oldest and
the newest, 1.23.0 and 1.26.0, on which CI runs the suite); ``check_compatibility()`` (called at host
start-up) and ``tests/runtime/test_af_private.py`` (which pins each release's sources) fail loudly
when a release changes what this relies on. Where the releases differ, the host takes one behaviour
on all of them (the forwarding of what an agent inside a workflow streams, below).

The framework's restore bug
---------------------------
``WorkflowAgent._run_core`` (``_workflows/_agent.py``) restores a checkpoint by running
``workflow.run(checkpoint_id=...)`` and DISCARDING every event; without new input it then returns.
So on a fresh instance ``agent.run(checkpoint_id=C)`` yields nothing even though the workflow drained
the checkpoint's queued work (a countdown restored mid-way silently finishes). With new input, the
restored work's outputs are lost and only the new input's appear. It also omits
``function_invocation_kwargs`` / ``client_kwargs`` from the restore call. No public hook recovers
those events (``WorkflowAgent`` never runs agent middleware, context providers see an empty response,
there are no workflow event observers), and the host must go through the application's own
``agent.run()`` (never around it) so a subclass that overrides ``run()`` sees recovery.

Private names used, and why
---------------------------
- ``WorkflowAgent._run_core``: overridden by ``_RestoreForwardingMixin`` (signature pinned) so the
  restore phase's events are yielded; the input phase is delegated to the original with
  ``checkpoint_id=None``. The mixin is combined with the application's own class by
  ``make_restorable`` (``__class__`` rebinding), so an overridden ``run()`` stays the entry point.
  After the workflow's last event it awaits the host's ``on_events_end`` hook, before the
  framework's stream builds its final response from every update.
- ``WorkflowAgent._convert_workflow_event_to_agent_response_updates``: overridden by the mixin so
  an output that is an agent's reply (update, response, message, list of messages) is forwarded
  with every content, as 1.23.0 does (``_forwarded``); 1.26.0 drops tool calls, approval responses
  and tool results there, and the host shows the tools an agent inside a workflow runs. Its other
  events go to the framework's own conversion (1.26.0 adds a ``role_gate`` parameter).
  ``agent_framework._types._copy_operation_state`` copies a response's operation state as both do.
- ``agent_framework._workflows._typing_utils.try_coerce_to_type`` / ``is_instance_of``: what
  ``Workflow.run(responses=...)`` does to a reply (``_coerce_request_info_response``) before it
  refuses a wrong type at run time; ``coerce_request_response`` applies the same up front, so a reply
  the host accepts is one the framework accepts.
- ``Workflow._runner_context`` (the framework's own ``WorkflowAgent`` reads it too): ``pace_events``
  wraps that instance's ``add_event``, through which every event of an executor reaches the stream.
- ``WorkflowAgent._workflow``: ``_TypedInputWorkflowAgent`` sets it itself instead of calling
  ``WorkflowAgent.__init__``, which refuses a workflow whose start executor does not take
  messages; its input phase sends the typed input the host built (``typed_workflow_agent``).
- ``Executor._response_handler_specs``: the request and response types of an executor's
  ``@response_handler``s (``declared_request_types``), admitted to the checkpoint allow-list.
- ``FunctionalWorkflowAgent._workflow``: the functional workflow an app's ``.as_agent()`` wraps
  (``functional_workflow_of``).
- ``_typing_utils.is_instance_of`` also tells whether the framework can route a value to a
  declared input type (``dispatchable``: a ``TypedDict`` cannot be, in 1.23.0).
- ``agent_framework._workflows._checkpoint_encoding.encode_checkpoint_value`` /
  ``decode_checkpoint_value``: the encoding ``FileCheckpointStorage`` uses (JSON, non-JSON values as
  base64 pickle + type name, restricted unpickler with an allow-list). Only ``register_checkpoint_type``
  is public in 1.23.0. The refused type's name is read from the restricted unpickler's message.

What this relies on, measured on 1.23.0 and again on 1.26.0 (when a restored run saves checkpoints,
which kwargs a restore uses, that ``save(C_k)`` runs only after the host took every update of
superstep k) is written down and kept true in ``tests/runtime/test_af_private.py``.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import json
import logging
import re
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from agent_framework import (
    AgentResponse,
    AgentResponseUpdate,
    BaseAgent,
    CheckpointStorage,
    Executor,
    Message,
    ToolTypes,
    Workflow,
    WorkflowAgent,
    WorkflowCheckpoint,
    WorkflowEvent,
    WorkflowInvocationKwargs,
    WorkflowRunState,
)

# Copies a response's background-operation state onto an update (both releases' forwarding does).
from agent_framework._types import _copy_operation_state

# The one private import outside the mixin: the framework's checkpoint value encoding.
from agent_framework._workflows._checkpoint_encoding import (
    decode_checkpoint_value,
    encode_checkpoint_value,
)

# The coercion ``Workflow.run(responses=...)`` applies to a reply before checking its type.
from agent_framework._workflows._typing_utils import is_instance_of, try_coerce_to_type
from agent_framework.exceptions import AgentInvalidRequestException, WorkflowCheckpointException

from .outputs import output_value

__all__ = [
    "ALLOW_TYPES_ENV",
    "ALLOW_TYPE_FLAG",
    "ALWAYS_ALLOWED_TYPES",
    "CONVERT_PARAMETERS",
    "RUN_CORE_PARAMETERS",
    "VERIFIED_RELEASES",
    "CheckpointTypeRefused",
    "check_compatibility",
    "coerce_request_response",
    "declared_request_types",
    "decode_checkpoint",
    "decode_session",
    "dispatchable",
    "encode_checkpoint",
    "encode_session",
    "functional_workflow_of",
    "make_restorable",
    "on_events_end",
    "pace_events",
    "quiet_repeated_build_warnings",
    "typed_workflow_agent",
    "unverified_release",
]

_log = logging.getLogger("durable_responses.runtime")

# The agent-framework-core releases this module is verified against (pyproject.toml admits the
# range between them; README: supported agent-framework releases).
VERIFIED_RELEASES: tuple[str, ...] = ("1.23.0", "1.26.0")

# The leading parameters of WorkflowAgent._convert_workflow_event_to_agent_response_updates (1.26.0
# adds `role_gate` after them).
CONVERT_PARAMETERS: tuple[str, ...] = ("self", "response_id", "event")

# What the mixin was written against (the same in every verified release).
RUN_CORE_PARAMETERS: tuple[str, ...] = (
    "self",
    "input_messages",
    "checkpoint_id",
    "checkpoint_storage",
    "streaming",
    "tools",
    "function_invocation_kwargs",
    "client_kwargs",
)

# Keyword arguments the restore phase passes to Workflow.run.
_WORKFLOW_RUN_RESTORE_KWARGS: tuple[str, ...] = (
    "stream",
    "checkpoint_id",
    "checkpoint_storage",
    "tools",
    "function_invocation_kwargs",
    "client_kwargs",
)
_CHECKPOINT_FIELDS: tuple[str, ...] = (
    "workflow_name",
    "graph_signature_hash",
    "checkpoint_id",
    "previous_checkpoint_id",
    "messages",
    "state",
    "pending_request_info_events",
    "iteration_count",
)

# Admitted in every checkpoint beyond the framework's own allow-list: `list[Message]` and other
# builtin generics pickle as `types.GenericAlias` (a class, built from parts the allow-list
# checks itself); the official Handoff orchestration checkpoints one as its pending request's
# response type. `allowed_types` admits classes only, so no callable can come in this way.
ALWAYS_ALLOWED_TYPES: frozenset[str] = frozenset({"types:GenericAlias"})

ALLOW_TYPE_FLAG = "--allow-checkpoint-type"
ALLOW_TYPES_ENV = "DURABLE_RESPONSES_CHECKPOINT_TYPES"


# region restore fix


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


async def _aiter(events: Iterable[WorkflowEvent]) -> AsyncIterable[WorkflowEvent]:
    for event in events:
        yield event


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
                "tools": tools,
                "function_invocation_kwargs": function_invocation_kwargs,
                "client_kwargs": client_kwargs,
            }
            if streaming:
                events: AsyncIterable[WorkflowEvent] = self.workflow.run(stream=True, **restore)
            else:
                events = _aiter(await self.workflow.run(**restore))
            async for event in events:
                if not (event.type == "request_info" and event.request_id in answered):
                    yield _shown(event)
            if not input_messages:
                await _events_ended(self)
                return
        # Input phase: the original delivers function results to pending requests or sends a new
        # message when idle; with checkpoint_id=None it does not restore again. The host's
        # storage marks checkpoints saved before this point (they lack the input).
        delivered = getattr(checkpoint_storage, "input_delivered", None)
        if callable(delivered):
            delivered()
        convert = vars(self).get(_INPUT_ATTR)
        if convert is not None and self.workflow.status == WorkflowRunState.IDLE:
            # A workflow whose start executor does not take messages: its typed input, built
            # from the messages by the host (`inputs.InputSpec`), as the original would send them.
            run_kwargs: dict[str, Any] = {
                "message": convert(input_messages),
                "checkpoint_storage": checkpoint_storage,
                "tools": tools,
                "function_invocation_kwargs": function_invocation_kwargs,
                "client_kwargs": client_kwargs,
            }
            typed: AsyncIterable[WorkflowEvent] = (
                self.workflow.run(stream=True, **run_kwargs)
                if streaming
                else _aiter(await self.workflow.run(**run_kwargs))
            )
            async for event in typed:
                yield _shown(event)
        else:
            async for event in original(
                self,
                input_messages,
                None,
                checkpoint_storage,
                streaming,
                tools=tools,
                function_invocation_kwargs=function_invocation_kwargs,
                client_kwargs=client_kwargs,
            ):
                yield _shown(event)
        await _events_ended(self)

    def _convert_workflow_event_to_agent_response_updates(
        self, response_id: str, event: WorkflowEvent[Any], *rest: Any
    ) -> list[AgentResponseUpdate]:
        """Every content an executor emits, as 1.23.0 forwards it (see `_forwarded`); `rest` is
        1.26.0's role gate, used only by the framework's own conversion of other events."""
        forwarded = _forwarded(response_id, event)
        if forwarded is not None:
            return forwarded
        convert = super()._convert_workflow_event_to_agent_response_updates  # type: ignore[misc]
        return convert(response_id, event, *rest)


def _now() -> str:
    return datetime.now(tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _forwarded(response_id: str, event: WorkflowEvent[Any]) -> list[AgentResponseUpdate] | None:
    """The updates for an output of an agent's reply (an update, a response, a message or a list
    of them), every content and role kept, or None for any other event.

    agent-framework-core 1.23.0's ``WorkflowAgent`` forwards these as they are; 1.26.0 drops a
    message or update that holds a function call or an approval response, and every message
    that is not the assistant's (tool results), and adds the response's usage as a content.
    The host shows the tools an agent inside a workflow runs (a call and its result make one
    item, `mapping`) and counts usage from the model calls themselves (`usage`), so it takes
    the 1.23.0 forwarding on every supported release.
    """
    if event.type not in ("output", "intermediate", "data"):
        return None
    data, executor_id = event.data, event.executor_id
    if isinstance(data, AgentResponseUpdate):
        update = copy.copy(data)  # a fresh update: the executor still holds `data`
        update.contents = list(data.contents)
        update.author_name = data.author_name or executor_id
        if data.additional_properties is not None:
            update.additional_properties = dict(data.additional_properties)
        return [update]
    if isinstance(data, AgentResponse):
        updates = [
            AgentResponseUpdate(
                contents=list(msg.contents),
                role=msg.role,
                author_name=msg.author_name or executor_id,
                response_id=data.response_id or response_id,
                message_id=msg.message_id or str(uuid.uuid4()),
                created_at=data.created_at or _now(),
                raw_representation=msg,
            )
            for msg in data.messages
        ]
        if updates:
            last = updates[-1]
            last.agent_id = data.agent_id
            last.finish_reason = data.finish_reason
            last.continuation_token = data.continuation_token
            _copy_operation_state(data, last)
            last.additional_properties = dict(data.additional_properties)
        return updates
    messages: list[Message]
    if isinstance(data, Message):
        messages, own_ids = [data], False
    elif isinstance(data, list) and data and all(isinstance(m, Message) for m in data):
        messages, own_ids = data, True
    else:
        return None
    return [
        AgentResponseUpdate(
            contents=list(msg.contents),
            role=msg.role,
            author_name=msg.author_name or executor_id,
            response_id=response_id,
            message_id=(msg.message_id if own_ids else None) or str(uuid.uuid4()),
            created_at=_now(),
            raw_representation=msg,
        )
        for msg in messages
    ]


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


def functional_workflow_of(agent: Any) -> Any:
    """The ``FunctionalWorkflow`` a ``FunctionalWorkflowAgent`` (``.build().as_agent()``) wraps:
    in 1.23.0 only its private ``_workflow`` holds it."""
    workflow = getattr(agent, "_workflow", None)
    if workflow is None:
        raise TypeError("this FunctionalWorkflowAgent does not hold its workflow as _workflow")
    return workflow


def dispatchable(value: Any, declared: Any) -> bool:
    """Whether the framework can route ``value`` to a handler declared for ``declared`` (its
    ``is_instance_of``; in 1.23.0 a ``TypedDict`` cannot be: ``isinstance`` refuses it)."""
    try:
        return bool(is_instance_of(value, declared))
    except TypeError:
        return False


def declared_request_types(executor: Executor) -> list[Any]:
    """The request and response types of ``executor``'s ``@response_handler``s (what its
    ``ctx.request_info`` calls send and take). In 1.23.0 they are known only from the private
    ``_response_handler_specs`` the executor builds at construction."""
    found: list[Any] = []
    for spec in getattr(executor, "_response_handler_specs", None) or ():
        for key in ("request_type", "response_type"):
            if isinstance(spec, Mapping) and spec.get(key) is not None:
                found.append(spec[key])
    return found


# endregion

# region pacing

# The attribute of a runner context that holds its current pace callback (see `pace_events`).
_PACE_ATTR = "_durable_responses_pace"


def pace_events(agent: Any, pace: Callable[[], Awaitable[None]]) -> bool:
    """Make every event the workflow behind ``agent`` emits await ``pace()`` once it is queued.

    In 1.23.0 ``ctx.yield_output`` only puts the event on the runner's unbounded queue: an
    executor that yields many outputs without awaiting anything else runs its whole handler
    before the runner (and the host's stream) sees the first one (a 1000-output superstep
    showed its first output only after all 1000). ``pace`` gives the loop a turn (the runner
    takes the event at once) or holds the executor while the host waits for a commit. Only
    this workflow instance's context is changed; returns False (no pacing) where the agent is
    not a workflow or the framework no longer looks like this.
    """
    workflow = getattr(agent, "workflow", None)
    ctx = getattr(workflow, "_runner_context", None)
    if ctx is None:
        return False
    if _PACE_ATTR in vars(ctx):
        # The app hands out the same workflow again: swap the callback, do not wrap twice.
        setattr(ctx, _PACE_ATTR, pace)
        return True
    add_event = getattr(ctx, "add_event", None)
    if add_event is None or not inspect.iscoroutinefunction(add_event):
        return False

    async def paced_add_event(event: WorkflowEvent[Any]) -> None:
        await add_event(event)
        await getattr(ctx, _PACE_ATTR)()

    setattr(ctx, _PACE_ATTR, pace)
    ctx.add_event = paced_add_event
    return True


# endregion

# region checkpoint encoding


class CheckpointTypeRefused(Exception):
    """A checkpoint holds a value whose type is not on the checkpoint allow-list (fail closed)."""

    def __init__(self, type_name: str, detail: str = "") -> None:
        self.type_name = type_name
        message = (
            f"Checkpoint refused: it contains a value of type '{type_name}', which is not on the "
            "checkpoint type allow-list (agent_framework.*, agent_framework_orchestrations.*, "
            "openai.types.*, builtin generics such as list[Message], safe built-ins). If this "
            f"type is trusted, allow it with '{ALLOW_TYPE_FLAG} {type_name}' or the environment "
            f"variable {ALLOW_TYPES_ENV} (comma-separated 'module:qualname' entries)."
        )
        if detail:
            message = f"{message} ({detail})"
        super().__init__(message)


# The restricted unpickler names the blocked global as "... type 'module:qualname'".
_BLOCKED_TYPE_RE = re.compile(r"blocked for (?:nested |non-type global )?(?:type )?'([^']+)'")


def _decode_value(raw: Any, allowed_types: Iterable[str]) -> Any:
    """``decode_checkpoint_value`` with the allow-list, a refused type raised as such."""
    try:
        return decode_checkpoint_value(raw, allowed_types=ALWAYS_ALLOWED_TYPES | frozenset(allowed_types))
    except WorkflowCheckpointException as exc:
        detail = " ".join(str(e) for e in (exc, exc.__cause__) if e is not None)
        match = _BLOCKED_TYPE_RE.search(detail)
        if match:
            raise CheckpointTypeRefused(match.group(1)) from exc
        raise


def encode_checkpoint(checkpoint: WorkflowCheckpoint) -> str:
    """Serialize a checkpoint to JSON text exactly as ``FileCheckpointStorage`` encodes it."""
    return json.dumps(
        encode_checkpoint_value(checkpoint.to_dict()), ensure_ascii=False, separators=(",", ":")
    )


def decode_checkpoint(text: str, *, allowed_types: Iterable[str] = ()) -> WorkflowCheckpoint:
    """Rebuild a checkpoint from ``encode_checkpoint`` text, refusing types off the allow-list.

    ``allowed_types`` extends the framework's allow-list with "module:qualname" entries.

    Raises:
        CheckpointTypeRefused: a value's type is not allowed.
        WorkflowCheckpointException: the text is not a valid checkpoint.
    """
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise WorkflowCheckpointException(f"Checkpoint is not valid JSON: {exc}") from exc
    decoded = _decode_value(raw, allowed_types)
    if not isinstance(decoded, dict):
        raise WorkflowCheckpointException("Checkpoint text does not hold a checkpoint object.")
    return WorkflowCheckpoint.from_dict(decoded)


def encode_session(session: dict[str, Any]) -> str:
    """A plain agent's ``AgentSession.to_dict()`` as JSON text, with the checkpoint encoding (values
    that are not JSON are kept the way checkpoints keep them, and decoded through the same allow-list)."""
    return json.dumps(encode_checkpoint_value(session), ensure_ascii=False, separators=(",", ":"))


def decode_session(text: str, *, allowed_types: Iterable[str] = ()) -> dict[str, Any]:
    """The session dict of ``encode_session`` text, refusing types off the allow-list."""
    decoded = _decode_value(json.loads(text), allowed_types)
    if not isinstance(decoded, dict):
        raise WorkflowCheckpointException("Session text does not hold a session object.")
    return decoded


# endregion

# region reply coercion


def coerce_request_response(value: Any, response_type: Any) -> Any:
    """``value`` (a decoded JSON value) as an instance of ``response_type``, converted exactly as
    ``Workflow.run(responses=...)`` converts a reply (dict -> dataclass / pydantic model /
    ``from_dict``, int -> float, typed lists, dicts, tuples, sets and unions).

    Raises:
        TypeError: ``value`` cannot become a ``response_type``; the message says why when known.
    """
    if isinstance(value, bool) and response_type in (int, float):
        raise TypeError("a boolean is not a number")
    coerced = try_coerce_to_type(value, response_type)
    try:
        ok = is_instance_of(coerced, response_type)
    except TypeError:  # an annotation isinstance cannot check: the framework cannot either
        ok = True
    if ok:
        return coerced
    detail = ""
    model_validate = getattr(response_type, "model_validate", None)
    if isinstance(value, dict) and callable(model_validate):
        try:
            model_validate(value)
        except Exception as exc:  # pydantic's ValidationError names the failing fields
            detail = " ".join(str(exc).split())
    raise TypeError(detail)


# endregion

# region build warnings

# The logger of the framework's graph validation (a private module's `__name__`): it warns each
# time a workflow is built, e.g. "Self-loop detected" for an intentional self-edge (the
# countdown example's). The host builds a fresh workflow for every run and every recovery.
VALIDATION_LOGGER = "agent_framework._workflows._validation"
_DISTINCT_WARNINGS = 1000


class _OncePerProcess(logging.Filter):
    """Lets each distinct warning through once; later copies of it are dropped."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        message = record.getMessage()
        if message in self.seen:
            return False
        if len(self.seen) < _DISTINCT_WARNINGS:
            self.seen.add(message)
        return True


_ONCE = _OncePerProcess()


def quiet_repeated_build_warnings() -> None:
    """Show each of the framework's graph-validation warnings once per process, not once per
    request (the app's graph is the same at every build)."""
    logger = logging.getLogger(VALIDATION_LOGGER)
    if _ONCE not in logger.filters:
        logger.addFilter(_ONCE)


# endregion

# region compatibility


def unverified_release() -> str | None:
    """The installed agent-framework-core release when it is not one of ``VERIFIED_RELEASES``."""
    installed = metadata.version("agent-framework-core")
    return None if installed in VERIFIED_RELEASES else installed


def check_compatibility() -> None:
    """Raise ``RuntimeError`` if agent-framework no longer offers what this module relies on; warn
    (once, at start-up) when the installed release is not one this module was verified against."""
    unverified = unverified_release()
    if unverified is not None:
        _log.warning(
            "agent-framework-core %s is not one of the releases this server is verified against (%s); "
            "it passed the start-up checks, but see README 'Supported agent-framework releases'",
            unverified,
            ", ".join(VERIFIED_RELEASES),
        )
    problems: list[str] = []
    run_core = getattr(WorkflowAgent, "_run_core", None)
    if run_core is None or not inspect.isasyncgenfunction(run_core):
        problems.append("WorkflowAgent._run_core is missing or no longer an async generator")
    else:
        params = tuple(inspect.signature(run_core).parameters)
        if params != RUN_CORE_PARAMETERS:
            problems.append(
                f"WorkflowAgent._run_core parameters are {params}, expected {RUN_CORE_PARAMETERS}"
            )
    convert = getattr(WorkflowAgent, "_convert_workflow_event_to_agent_response_updates", None)
    if convert is None:
        problems.append("WorkflowAgent._convert_workflow_event_to_agent_response_updates is missing")
    else:
        convert_params = tuple(inspect.signature(convert).parameters)
        if convert_params[: len(CONVERT_PARAMETERS)] != CONVERT_PARAMETERS:
            problems.append(
                "WorkflowAgent._convert_workflow_event_to_agent_response_updates parameters are "
                f"{convert_params}, expected {CONVERT_PARAMETERS} first"
            )
    workflow_cls = getattr(WorkflowAgent, "workflow", None)
    if workflow_cls is None:
        problems.append("WorkflowAgent.workflow is missing")
    from agent_framework import Workflow

    run_params = set(inspect.signature(Workflow.run).parameters)
    missing = [name for name in _WORKFLOW_RUN_RESTORE_KWARGS if name not in run_params]
    if missing:
        problems.append(f"Workflow.run no longer accepts {missing}")
    if not callable(encode_checkpoint_value) or not callable(decode_checkpoint_value):
        problems.append("checkpoint encoding helpers are missing")
    else:
        decode_params = inspect.signature(decode_checkpoint_value).parameters
        if "allowed_types" not in decode_params:
            problems.append("decode_checkpoint_value no longer takes allowed_types")
    checkpoint_fields = {f.name for f in dataclasses.fields(WorkflowCheckpoint)}
    missing_fields = [name for name in _CHECKPOINT_FIELDS if name not in checkpoint_fields]
    if missing_fields:
        problems.append(f"WorkflowCheckpoint lacks fields {missing_fields}")
    coerce_params = tuple(inspect.signature(try_coerce_to_type).parameters)
    if coerce_params[:2] != ("data", "target_type") or not callable(is_instance_of):
        problems.append("_typing_utils.try_coerce_to_type / is_instance_of changed")
    if getattr(WorkflowEvent, "response_type", None) is None:
        problems.append("WorkflowEvent.response_type is missing")
    if getattr(WorkflowAgent, "REQUEST_INFO_FUNCTION_NAME", None) != "request_info":
        problems.append("WorkflowAgent.REQUEST_INFO_FUNCTION_NAME is no longer 'request_info'")
    if problems:
        raise RuntimeError(
            "The installed agent-framework (agent-framework-core "
            f"{metadata.version('agent-framework-core')}) is not one server/runtime/_af_private.py "
            f"was written against (agent-framework-core {', '.join(VERIFIED_RELEASES)}): "
            + "; ".join(problems)
            + ". Re-verify the restore bug (module docstring) and update the module before running this host."
        )


# endregion
