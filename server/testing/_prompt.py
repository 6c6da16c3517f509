"""One normalized view of a model request, whichever OpenAI API it came in on.

`parse_chat` reads a chat-completions body, `parse_responses` a Responses body (with the items of
the `previous_response_id` chain already resolved by the caller). Both give a `Prompt`: the system
text, the turns in order, the declared function tools and the few options the reply rules read.
Invariant: parsing is pure; ids the client chose (call ids) are kept, nothing else is invented.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

Api = Literal["chat", "responses"]


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    """One message: `role` is system, developer, user, assistant or tool (a tool result)."""

    role: str
    text: str = ""
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Prompt:
    api: Api
    model: str
    stream: bool
    turns: tuple[Turn, ...]
    tools: tuple[ToolSpec, ...] = ()
    instructions: str = ""
    parallel_tool_calls: bool = True
    reasoning_requested: bool = False
    json_schema: Mapping[str, Any] | None = None
    include: tuple[str, ...] = field(default=())

    @property
    def system_text(self) -> str:
        parts = [self.instructions] if self.instructions else []
        parts += [t.text for t in self.turns if t.role in ("system", "developer") and t.text]
        return "\n".join(parts)

    @property
    def dialogue(self) -> tuple[Turn, ...]:
        return tuple(t for t in self.turns if t.role not in ("system", "developer"))

    def latest_user_index(self) -> int:
        turns = self.dialogue
        for i in range(len(turns) - 1, -1, -1):
            if turns[i].role == "user":
                return i
        return -1

    @property
    def latest_user_text(self) -> str:
        i = self.latest_user_index()
        return self.dialogue[i].text if i >= 0 else ""

    def calls_since_latest_user(self) -> list[ToolCall]:
        turns = self.dialogue[self.latest_user_index() + 1 :]
        return [c for t in turns for c in t.tool_calls]

    def tool_name_for(self, call_id: str | None) -> str:
        for turn in self.dialogue:
            for call in turn.tool_calls:
                if call.call_id == call_id:
                    return call.name
        return "tool"


class PromptError(ValueError):
    """The request body is not one this fake understands (answered with a 400)."""


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, Mapping):
                p = cast(Mapping[str, Any], part)
                text = p.get("text", p.get("refusal"))
                if isinstance(text, str):
                    texts.append(text)
        return "\n".join(texts)
    return json.dumps(content)


def _require_list(body: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = body.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise PromptError(f"'{key}' must be a list of objects")
    return cast(list[Mapping[str, Any]], value)


def _model_of(body: Mapping[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise PromptError("'model' is required")
    return model


def parse_chat(body: Mapping[str, Any]) -> Prompt:
    turns: list[Turn] = []
    for m in _require_list(body, "messages"):
        calls = tuple(
            ToolCall(
                call_id=str(c.get("id") or ""),
                name=str((c.get("function") or {}).get("name") or ""),
                arguments=str((c.get("function") or {}).get("arguments") or ""),
            )
            for c in cast(list[Mapping[str, Any]], m.get("tool_calls") or [])
        )
        name = m.get("name")
        turns.append(
            Turn(
                role=str(m.get("role") or "user"),
                text=_text_of(m.get("content")),
                name=name if isinstance(name, str) else None,
                tool_calls=calls,
                tool_call_id=cast("str | None", m.get("tool_call_id")),
            )
        )
    if not turns:
        raise PromptError("'messages' must not be empty")
    tools = tuple(
        ToolSpec(
            name=str(f.get("name") or ""),
            description=str(f.get("description") or ""),
            parameters=cast(Mapping[str, Any], f.get("parameters") or {}),
        )
        for t in _require_list(body, "tools")
        if t.get("type", "function") == "function"
        for f in [cast(Mapping[str, Any], t.get("function") or {})]
    )
    schema: Mapping[str, Any] | None = None
    fmt = body.get("response_format")
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        schema = cast(Mapping[str, Any], (fmt.get("json_schema") or {}).get("schema") or {})
    effort = body.get("reasoning_effort")
    return Prompt(
        api="chat",
        model=_model_of(body),
        stream=bool(body.get("stream")),
        turns=tuple(turns),
        tools=tools,
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,
        reasoning_requested=isinstance(effort, str) and effort not in ("none", "minimal"),
        json_schema=schema,
    )


def responses_input_items(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The request's `input` as a list of items (a plain string is one user message)."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(v, Mapping) for v in raw):
        raise PromptError("'input' must be a string or a list of items")
    return cast(list[Mapping[str, Any]], raw)


def _turns_from_items(items: Sequence[Mapping[str, Any]]) -> list[Turn]:
    turns: list[Turn] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            turns.append(Turn(role=str(item.get("role") or "user"), text=_text_of(item.get("content"))))
        elif kind == "function_call":
            call = ToolCall(
                call_id=str(item.get("call_id") or ""),
                name=str(item.get("name") or ""),
                arguments=str(item.get("arguments") or ""),
            )
            last = turns[-1] if turns else None
            if last is not None and last.role == "assistant":
                turns[-1] = Turn(
                    role="assistant", text=last.text, name=last.name, tool_calls=(*last.tool_calls, call)
                )
            else:
                turns.append(Turn(role="assistant", tool_calls=(call,)))
        elif kind == "function_call_output":
            turns.append(
                Turn(
                    role="tool",
                    text=_text_of(item.get("output")),
                    tool_call_id=str(item.get("call_id") or ""),
                )
            )
        # reasoning, mcp_* and other items carry nothing the reply rules read.
    return turns


def parse_responses(body: Mapping[str, Any], history: Sequence[Mapping[str, Any]] = ()) -> Prompt:
    """`history`: the input and output items of the `previous_response_id` chain, oldest first."""
    items = [*history, *responses_input_items(body)]
    turns = _turns_from_items(items)
    if not turns:
        raise PromptError("'input' must not be empty")
    tools = tuple(
        ToolSpec(
            name=str(t.get("name") or ""),
            description=str(t.get("description") or ""),
            parameters=cast(Mapping[str, Any], t.get("parameters") or {}),
        )
        for t in _require_list(body, "tools")
        if t.get("type") == "function"
    )
    schema: Mapping[str, Any] | None = None
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        schema = cast(Mapping[str, Any], fmt.get("schema") or {})
    reasoning = body.get("reasoning")
    effort = reasoning.get("effort") if isinstance(reasoning, Mapping) else None
    instructions = body.get("instructions")
    include = body.get("include")
    return Prompt(
        api="responses",
        model=_model_of(body),
        stream=bool(body.get("stream")),
        turns=tuple(turns),
        tools=tools,
        instructions=instructions if isinstance(instructions, str) else "",
        parallel_tool_calls=body.get("parallel_tool_calls") is not False,
        reasoning_requested=isinstance(reasoning, Mapping) and effort not in ("none", "minimal"),
        json_schema=schema,
        include=tuple(str(i) for i in include) if isinstance(include, list) else (),
    )
