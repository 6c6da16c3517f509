"""Echo agent: a plain (non-workflow) chat agent on a deterministic fake chat client.

The agent is agent_framework's standard ``Agent`` over ``EchoChatClient``, a ``BaseChatClient`` that
needs no model or network. It replies "echo: <last user text> (turn K)", streamed word by word, where K
is the number of user messages it was sent, so tests can see multi-turn history arrive. When the
request declares a function tool and the user text starts with "call <toolname>", it answers with a
function call to that tool (arguments ``{}``) instead, so request tools are visible end to end; once
the tool's result comes back (a ``function_call_output``) it replies "echo: <tool> returned <output>
(turn K)" and calls nothing, as a model does, so a client that runs tools in a loop stops.
Invariant: the reply is a pure function of the messages and tools it is given.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterable, Awaitable, Mapping, Sequence
from typing import Any

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationLayer,
    FunctionTool,
    Message,
    ResponseStream,
)

_CHUNK_RE = re.compile(r"\s*\S+")
_CALL_RE = re.compile(r"^\s*call\s+(\S+)", re.IGNORECASE)


def _tool_names(options: Mapping[str, Any]) -> set[str]:
    names: set[str] = set()
    for tool in options.get("tools") or ():
        if isinstance(tool, FunctionTool):
            names.add(tool.name)
        elif isinstance(tool, Mapping):
            # A raw function declaration dict ({"type": "function", "name"|"function": {...}}).
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else tool.get("name")
            if isinstance(name, str):
                names.add(name)
    return names


def _tool_results(messages: Sequence[Message]) -> str | None:
    """`<tool> returned <output>` for each tool result in the last message, if it has any."""
    if not messages:
        return None
    results = [c for c in messages[-1].contents if c.type == "function_result"]
    if not results:
        return None
    names = {c.call_id: c.name for m in messages for c in m.contents if c.type == "function_call"}
    return "; ".join(f"{names.get(c.call_id) or 'tool'} returned {c.result}" for c in results)


def plan_reply(messages: Sequence[Message], options: Mapping[str, Any]) -> list[Content]:
    """The reply contents: one function call, or the echo text as word chunks. After a tool's
    result the reply quotes it and calls nothing (a client that runs tools then stops)."""
    user_messages = [m for m in messages if m.role == "user"]
    text = (user_messages[-1].text or "").strip() if user_messages else ""
    results = _tool_results(messages)
    call = _CALL_RE.match(text)
    if results is not None:
        text = results
    elif call and call.group(1) in _tool_names(options):
        return [
            Content.from_function_call(call_id=f"call_{uuid.uuid4().hex}", name=call.group(1), arguments="{}")
        ]
    reply = f"echo: {text} (turn {len(user_messages)})"
    return [Content.from_text(chunk) for chunk in _CHUNK_RE.findall(reply)]


class EchoChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A deterministic chat client: no model, no network (see module docstring)."""

    OTEL_PROVIDER_NAME = "echo"

    def _inner_get_response(
        self,
        *,
        messages: Sequence[Message],
        stream: bool,
        options: Mapping[str, Any],
        **kwargs: Any,
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        contents = plan_reply(messages, options)
        response_id = f"echo_{uuid.uuid4().hex}"
        message_id = f"msg_{uuid.uuid4().hex}"
        if stream:

            async def updates() -> AsyncIterable[ChatResponseUpdate]:
                for content in contents:
                    yield ChatResponseUpdate(
                        contents=[content],
                        role="assistant",
                        response_id=response_id,
                        message_id=message_id,
                    )

            return self._build_response_stream(updates())

        async def respond() -> ChatResponse:
            text = "".join(c.text or "" for c in contents if c.type == "text")
            reply_contents: list[Content] = [Content.from_text(text)] if text else list(contents)
            return ChatResponse(
                messages=[Message(role="assistant", contents=reply_contents, message_id=message_id)],
                response_id=response_id,
            )

        return respond()


def echo_agent() -> Agent:
    """A fresh echo agent (a standard chat ``Agent`` over ``EchoChatClient``)."""
    return Agent(
        client=EchoChatClient(), name="echo-agent", description="Echoes the user, deterministically."
    )
