"""`RuleChatClient`: the fake model's rules as an in-process agent-framework chat client.

For examples and tests that need a deterministic agent with no server and no network: the
client turns agent-framework's messages and options into the fake model's `Prompt` and answers
with `reply_for`, exactly as `FakeModel` answers over HTTP (tool calls when a tool is named,
handoffs when the target is named, text quoting tool results, text otherwise), streamed one
token per update, with usage. Tools run through agent-framework's own function-invocation layer
(approval-gated tools included).

It honours the run's options the way the fake model honours a request's: `tool_choice`,
`response_format` (a JSON schema or `json_object`), `max_tokens` (a reply cut there finishes
with "length"), `allow_multiple_tool_calls`.
Invariant: the reply is a pure function of the messages, instructions, tools and options it is given.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterable, Awaitable, Mapping, Sequence
from typing import Any, Literal

from agent_framework import (
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
    ResponseStream,
)

from ._prompt import Prompt, ToolCall, ToolSpec, Turn
from ._rules import reply_for, tokens

__all__ = ["RuleChatClient"]


def _tool_specs(options: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    specs: list[ToolSpec] = []
    for tool in options.get("tools") or ():
        if isinstance(tool, FunctionTool):
            specs.append(ToolSpec(tool.name, tool.description or "", tool.parameters()))
    return tuple(specs)


def _call_id(name: str) -> str:
    """A call id that names its tool (see `_called_name`)."""
    return f"call_{uuid.uuid4().hex[:24]}_{name}"


def _called_name(call_id: str | None) -> str | None:
    """The tool a call id of `_call_id` names. An agent whose history the service is meant to
    keep (`require_per_service_call_history_persistence`, as handoff participants are) sends
    only what is new: after an approval, the tool's result without the call it answers."""
    head, sep, name = (call_id or "").partition("_")
    if head != "call" or not sep:
        return None
    _, sep, name = name.partition("_")
    return name or None if sep else None


def _turn(message: Message) -> list[Turn]:
    calls = tuple(
        ToolCall(
            c.call_id or "",
            c.name or "",
            c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments or {}),
        )
        for c in message.contents
        if c.type == "function_call"
    )
    results = [c for c in message.contents if c.type == "function_result"]
    if results:
        return [
            Turn("tool", str(c.result if c.result is not None else ""), tool_call_id=c.call_id)
            for c in results
        ]
    return [Turn(str(message.role), message.text or "", name=message.author_name, tool_calls=calls)]


def _turns(messages: Sequence[Message]) -> tuple[Turn, ...]:
    """The messages as turns; a tool result whose call is not among them follows that call,
    restored from its id, so the reply can name the tool."""
    turns: list[Turn] = []
    seen: set[str] = set()
    for message in messages:
        for turn in _turn(message):
            seen.update(c.call_id for c in turn.tool_calls)
            name = _called_name(turn.tool_call_id)
            if turn.role == "tool" and turn.tool_call_id not in seen and name is not None:
                assert turn.tool_call_id is not None
                turns.append(Turn("assistant", tool_calls=(ToolCall(turn.tool_call_id, name, "{}"),)))
                seen.add(turn.tool_call_id)
            turns.append(turn)
    return tuple(turns)


def _tool_choice(mode: Any) -> tuple[str, str | None]:
    """agent-framework's `tool_choice` (a string or a `ToolMode`) as (mode, forced function)."""
    if isinstance(mode, Mapping):
        name = mode.get("required_function_name")
        return str(mode.get("mode") or "auto"), str(name) if name else None
    return (mode if mode in ("none", "required") else "auto"), None


def _schema(response_format: Any) -> tuple[Mapping[str, Any] | None, bool]:
    """(the JSON schema, whether any JSON object will do) of a `response_format` option."""
    if isinstance(response_format, type) and hasattr(response_format, "model_json_schema"):
        return response_format.model_json_schema(), False
    if not isinstance(response_format, Mapping):
        return None, False
    if response_format.get("type") == "json_object":
        return None, True
    section = response_format.get("json_schema", response_format)
    schema = section.get("schema") if isinstance(section, Mapping) else None
    return (schema if isinstance(schema, Mapping) else None), False


def prompt_of(messages: Sequence[Message], options: Mapping[str, Any], *, stream: bool) -> Prompt:
    """The fake model's `Prompt` for a call: the messages, instructions, tools and the options the
    rules read (`tool_choice`, `response_format`, `max_tokens`, `allow_multiple_tool_calls`)."""
    instructions = options.get("instructions")
    choice, forced = _tool_choice(options.get("tool_choice"))
    schema, json_object = _schema(options.get("response_format"))
    max_tokens = options.get("max_tokens")
    return Prompt(
        api="chat",
        model=str(options.get("model") or "rules"),
        stream=stream,
        turns=_turns(messages),
        tools=_tool_specs(options),
        instructions=instructions if isinstance(instructions, str) else "",
        parallel_tool_calls=options.get("allow_multiple_tool_calls") is not False,
        json_schema=schema,
        json_object=json_object,
        tool_choice=choice,
        forced_tool=forced,
        max_tokens=max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else None,
    )


class RuleChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A deterministic chat client (see the module docstring)."""

    OTEL_PROVIDER_NAME = "rules"

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        reply = reply_for(prompt_of(messages, options, stream=stream))
        if reply.error is not None:
            raise RuntimeError(f"{reply.error.code}: {reply.error.message}")
        response_id = f"rules_{uuid.uuid4().hex}"
        message_id = f"msg_{uuid.uuid4().hex}"
        contents: list[Content] = [Content.from_text(t) for t in tokens(reply.text)]
        contents += [
            Content.from_function_call(call_id=_call_id(c.name), name=c.name, arguments=c.arguments)
            for c in reply.calls
        ]
        usage = Content.from_usage(
            {"input_token_count": reply.usage.input_tokens, "output_token_count": reply.usage.output_tokens}
        )
        finish: Literal["length", "tool_calls", "stop"] = (
            "length" if reply.truncated else "tool_calls" if reply.calls else "stop"
        )
        if stream:

            async def updates() -> AsyncIterable[ChatResponseUpdate]:
                for content in [*contents, usage]:
                    yield ChatResponseUpdate(
                        contents=[content],
                        role="assistant",
                        response_id=response_id,
                        message_id=message_id,
                        finish_reason=finish if content is usage else None,
                    )

            return self._build_response_stream(updates())

        async def respond() -> ChatResponse:
            calls = [c for c in contents if c.type == "function_call"]
            body: list[Content] = ([Content.from_text(reply.text)] if reply.text else []) + calls
            return ChatResponse(
                messages=[Message(role="assistant", contents=body, message_id=message_id)],
                response_id=response_id,
                finish_reason=finish,
            )

        return respond()
