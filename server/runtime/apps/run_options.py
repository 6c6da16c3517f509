"""Request options become the run's options, as agent-framework defines them, or are refused.

Which options can reach a model depends on the app (`reach_of`, read once off the app's probe):
- `AGENT`: an agent whose `run()` takes `options` (agent-framework's `Agent`): the request's
  options are its run's `ChatOptions` (`options=`), the tool-call limit a function middleware
  (`middleware=`). `instructions` stay this turn's system message (`continuation`).
- `WORKFLOW`: a workflow with agent executors: the options go where the framework forwards run
  options to its agents, `client_kwargs` (every `AgentExecutor` passes them to its agent's chat
  client, whose middleware layer takes per-call `middleware` from them): `ApplyRequestOptions`
  (a chat middleware) sets them on each model call of every agent executor, `instructions`
  appended to the agent's own; `ToolCallLimit` (a function middleware) holds the tool calls of
  the run to `max_tool_calls`. Agents a custom executor builds inside its handler are not
  reached (the framework does not forward run options to them).
- `NONE`: no model the host can reach (a workflow without agent executors, an agent whose
  `run()` takes no options): an option that would change the reply is refused (400
  `unsupported_parameter`), one that cannot matter is ignored and echoed as not applied (null).

`applied(req, reach)` is what the response echoes and the run uses (README, "Request options").
Invariant: the options are a pure function of the stored request, so recovery applies exactly
what the first run applied; both middlewares hold only JSON data (a workflow's checkpoints keep
them with the run's kwargs: `HOST_CHECKPOINT_TYPES` admits them).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Mapping
from enum import StrEnum
from typing import Any

from agent_framework import AgentExecutor as _AgentExecutor
from agent_framework import (
    ChatContext,
    ChatMiddleware,
    FunctionInvocationContext,
    FunctionMiddleware,
    WorkflowAgent,
)

from ...protocol import errors
from ...protocol.request import CreateRequest

__all__ = [
    "HOST_CHECKPOINT_TYPES",
    "NO_REACH",
    "AppReach",
    "ApplyRequestOptions",
    "Reach",
    "ToolCallLimit",
    "applied",
    "reach_of",
    "run_kwargs",
]


class Reach(StrEnum):
    AGENT = "agent"
    WORKFLOW = "workflow"
    NONE = "none"


# The option key under which each known chat client takes `reasoning` (None: it takes none).
_REASONING_KEYS = {
    "RawOpenAIChatClient": "reasoning",  # Responses API: {"effort", "summary"}
    "RawOpenAIChatCompletionClient": "reasoning_effort",  # chat completions: the effort alone
}
# Known clients that must not get `metadata`: OpenAI's chat completions take it only for stored
# completions (`store: true`), which an agent's client does not ask for.
_NO_METADATA = frozenset({"RawOpenAIChatCompletionClient"})


def _known(client: Any) -> str | None:
    for cls in type(client).__mro__:
        if cls.__module__.startswith("agent_framework") and cls.__name__ in _REASONING_KEYS:
            return cls.__name__
    return None


def reasoning_key(client: Any) -> str | None:
    known = _known(client)
    return _REASONING_KEYS[known] if known is not None else None


def takes_metadata(client: Any) -> bool:
    return _known(client) not in _NO_METADATA


@dataclasses.dataclass(frozen=True)
class AppReach:
    """What of a request's options can reach the app's model calls."""

    kind: Reach
    # A plain agent: the option key its client takes `reasoning` under (None: none), and
    # whether its `run()` takes per-run `middleware` (the tool-call limit).
    reasoning_key: str | None = None
    takes_middleware: bool = False


NO_REACH = AppReach(Reach.NONE)


def reach_of(probe: Any) -> AppReach:
    """How far request options reach into `probe` (the app as its factory built it)."""
    try:
        parameters = inspect.signature(probe.run).parameters
    except (TypeError, ValueError):
        return NO_REACH
    if isinstance(probe, WorkflowAgent):
        executors = getattr(getattr(probe, "workflow", None), "executors", None) or {}
        agents = [e for e in executors.values() if isinstance(e, _AgentExecutor)]
        # (An app's own `run()` override that does not take `client_kwargs` reaches none.)
        return AppReach(Reach.WORKFLOW) if agents and _takes(parameters, "client_kwargs") else NO_REACH
    if "options" not in parameters:  # (not `**kwargs`: an agent that names it takes it)
        return NO_REACH
    client = getattr(probe, "client", None)
    return AppReach(Reach.AGENT, reasoning_key(client), takes_middleware=_takes(parameters, "middleware"))


def _takes(parameters: Mapping[str, inspect.Parameter], name: str) -> bool:
    return name in parameters or any(p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _unsupported(param: str, why: str) -> errors.ProtocolError:
    return errors.bad_request(
        f"'{param}' is not supported by this app: {why}. Leave it out of the request.",
        param=param,
        code="unsupported_parameter",
    )


_NO_MODEL = "it makes no model call the host can pass request options to"


def applied(req: CreateRequest, reach: AppReach) -> CreateRequest:
    """`req` as the run applies it: options that cannot reach a model are refused (400
    `unsupported_parameter`) or, when they cannot change the reply, set to null (not applied)."""
    fmt = (req.text or {}).get("format") or {}
    if reach.kind == Reach.NONE:
        if fmt.get("type") in ("json_schema", "json_object"):
            raise _unsupported("text.format", f"{_NO_MODEL}, so its output cannot be made to follow a format")
        if req.tool_choice not in ("auto", "none"):  # ("none" holds: nothing calls a tool)
            raise _unsupported("tool_choice", f"{_NO_MODEL}, so no tool call can be required")
        text = None if req.text is None else {k: v for k, v in req.text.items() if k != "verbosity"}
        return dataclasses.replace(
            req,
            instructions=None,
            temperature=None,
            top_p=None,
            max_output_tokens=None,
            max_tool_calls=None,
            reasoning=None,
            text=text,
        )
    if reach.kind == Reach.AGENT:
        ignored: dict[str, Any] = {}
        if reach.reasoning_key is None and req.reasoning is not None:
            ignored["reasoning"] = None
        if not reach.takes_middleware and req.max_tool_calls is not None:
            ignored["max_tool_calls"] = None
        return dataclasses.replace(req, **ignored) if ignored else req
    return req


def _tool_mode(choice: Any) -> Any:
    """The request's `tool_choice` as agent-framework's `ToolMode`."""
    if isinstance(choice, str):
        return choice
    kind = choice.get("type")
    if kind == "function":
        return {"mode": "required", "required_function_name": choice["name"]}
    if kind == "allowed_tools":
        names = [t.get("name") for t in choice.get("tools", []) if isinstance(t, Mapping) and t.get("name")]
        return {"mode": choice.get("mode", "auto"), "allowed_tools": names}
    return "auto"


def _response_format(fmt: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = fmt.get("type")
    if kind == "json_schema":
        schema: dict[str, Any] = {"name": fmt["name"], "schema": fmt["schema"]}
        if fmt.get("strict") is not None:
            schema["strict"] = fmt["strict"]
        if fmt.get("description"):
            schema["description"] = fmt["description"]
        return {"type": "json_schema", "json_schema": schema}
    if kind == "json_object":
        return {"type": "json_object"}
    return None


def chat_options(req: CreateRequest, reasoning_key: str | None, metadata: bool = True) -> dict[str, Any]:
    """The request's options as agent-framework `ChatOptions` (instructions aside; `reasoning`
    under the key the client takes it, `metadata` only to a client that takes it)."""
    options: dict[str, Any] = {}
    fmt = (req.text or {}).get("format") or {}
    response_format = _response_format(fmt)
    if response_format is not None:
        options["response_format"] = response_format
    if req.tool_choice != "auto":
        options["tool_choice"] = _tool_mode(req.tool_choice)
    if req.max_output_tokens is not None:
        options["max_tokens"] = req.max_output_tokens
    if req.temperature is not None:
        options["temperature"] = req.temperature
    if req.top_p is not None:
        options["top_p"] = req.top_p
    if req.presence_penalty is not None:
        options["presence_penalty"] = req.presence_penalty
    if req.frequency_penalty is not None:
        options["frequency_penalty"] = req.frequency_penalty
    if not req.parallel_tool_calls:
        options["allow_multiple_tool_calls"] = False
    if req.metadata and metadata:
        options["metadata"] = dict(req.metadata)
    if req.reasoning and reasoning_key == "reasoning":
        options["reasoning"] = {k: v for k, v in req.reasoning.items() if v is not None}
    elif req.reasoning and reasoning_key == "reasoning_effort" and req.reasoning.get("effort"):
        options["reasoning_effort"] = req.reasoning["effort"]
    return options


class ApplyRequestOptions(ChatMiddleware):
    """Sets the request's options on each model call of a workflow's agents (see module doc)."""

    def __init__(self, options: dict[str, Any], reasoning: dict[str, Any] | None, instructions: str | None):
        self.options = options
        self.reasoning = reasoning
        self.instructions = instructions

    async def process(self, context: ChatContext, call_next: Callable[[], Awaitable[None]]) -> None:
        options = dict(context.options or {})
        options.update(self.options)
        if not takes_metadata(context.client):
            options.pop("metadata", None)
        key = reasoning_key(context.client)
        if self.reasoning and key == "reasoning":
            options["reasoning"] = dict(self.reasoning)
        elif self.reasoning and key == "reasoning_effort" and self.reasoning.get("effort"):
            options["reasoning_effort"] = self.reasoning["effort"]
        if self.instructions:
            own = options.get("instructions")
            options["instructions"] = f"{own}\n\n{self.instructions}" if own else self.instructions
        context.options = options
        await call_next()


class ToolCallLimit(FunctionMiddleware):
    """`max_tool_calls`: a tool call past the limit does not run; the model is told so."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.calls = 0

    async def process(
        self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
    ) -> None:
        if self.calls >= self.limit:
            context.result = (
                f"Error: the tool did not run: this response's limit of {self.limit} tool call(s) "
                "(max_tool_calls) is reached."
            )
            return
        self.calls += 1
        await call_next()


# `module:qualname` of the host's own types a workflow checkpoint may hold (its run kwargs).
HOST_CHECKPOINT_TYPES = (
    f"{__name__}:ApplyRequestOptions",
    f"{__name__}:ToolCallLimit",
)


def run_kwargs(req: CreateRequest, reach: AppReach, agent: Any) -> dict[str, Any]:
    """The keyword arguments of `agent.run(...)` that carry the request's options."""
    if reach.kind == Reach.AGENT:
        kwargs: dict[str, Any] = {}
        client = getattr(agent, "client", None)
        options = chat_options(req, reasoning_key(client), takes_metadata(client))
        if options:
            kwargs["options"] = options
        if req.max_tool_calls is not None and reach.takes_middleware:
            kwargs["middleware"] = [ToolCallLimit(req.max_tool_calls)]
        return kwargs
    if reach.kind == Reach.WORKFLOW:
        # Always given (empty too): a continuation's checkpoint keeps the previous turn's run
        # kwargs, which apply unless the call gives its own.
        middleware: list[Any] = []
        options = chat_options(req, None)
        if options or req.reasoning or req.instructions:
            middleware.append(ApplyRequestOptions(options, req.reasoning, req.instructions))
        if req.max_tool_calls is not None:
            middleware.append(ToolCallLimit(req.max_tool_calls))
        return {"client_kwargs": {"middleware": middleware} if middleware else {}}
    return {}
