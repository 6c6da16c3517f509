"""One normalized view of a model request, whichever OpenAI API it came in on.

`parse_chat` reads a chat-completions body, `parse_responses` a Responses body (with the items of
the `previous_response_id` chain already resolved by the caller). Both give a `Prompt`: the system
text, the turns in order, the declared function tools and the few options the reply rules read.
Tool calls and results must pair up as OpenAI requires (`check_tool_pairing`): a conversation
OpenAI would refuse with a 400 is refused here too, so tests see what production would.
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
    # `json_object` response format (any JSON object will do).
    json_object: bool = False
    # "auto", "none", "required", or the name of the one function the model must call.
    tool_choice: str = "auto"
    forced_tool: str | None = None
    # The token limit the request set (`max_output_tokens`, `max_completion_tokens`, `max_tokens`).
    max_tokens: int | None = None

    @property
    def system_text(self) -> str:
        parts = [self.instructions] if self.instructions else []
        parts += [t.text for t in self.turns if t.role in ("system", "developer") and t.text]
        return "\n".join(parts)

    @property
    def dialogue(self) -> tuple[Turn, ...]:
        return tuple(t for t in self.turns if t.role not in ("system", "developer"))

    def latest_user_index(self) -> int:
        """The last user message with text (a message that only carries, say, an approval has none)."""
        turns = self.dialogue
        for i in range(len(turns) - 1, -1, -1):
            if turns[i].role == "user" and turns[i].text.strip():
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
    """A request OpenAI would refuse, or one this fake does not understand (answered with a 400)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def check_tool_pairing(turns: Sequence[Turn], api: Api) -> None:
    """Refuse what OpenAI refuses: a tool result that answers no call just before it, or a call
    left without its result when the conversation goes on (or ends)."""
    expected: set[str] = set()
    pending: list[str] = []
    for i, turn in enumerate(turns):
        if turn.role == "tool":
            if turn.tool_call_id not in expected:
                if api == "chat":
                    raise PromptError(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                        "message with 'tool_calls'.",
                        f"messages.[{i}].role",
                    )
                raise PromptError(
                    f"No tool call found for function call output with call_id {turn.tool_call_id}.", "input"
                )
            pending = [p for p in pending if p != turn.tool_call_id]
            continue
        if pending:
            break
        expected = {c.call_id for c in turn.tool_calls}
        pending = [c.call_id for c in turn.tool_calls]
    if pending:
        if api == "chat":
            raise PromptError(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                "'tool_call_id'. The following tool_call_ids did not have response messages: "
                + ", ".join(pending),
                "messages",
            )
        raise PromptError(f"No tool output found for function call {pending[0]}.", "input")


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
    check_tool_pairing(turns, "chat")
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
    choice, forced = _tool_choice(body.get("tool_choice"))
    return Prompt(
        json_object=isinstance(fmt, Mapping) and fmt.get("type") == "json_object",
        tool_choice=choice,
        forced_tool=forced,
        max_tokens=_max_tokens(body, "max_completion_tokens", "max_tokens"),
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
    check_tool_pairing(turns, "responses")
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
    choice, forced = _tool_choice(body.get("tool_choice"))
    return Prompt(
        json_object=isinstance(fmt, Mapping) and fmt.get("type") == "json_object",
        tool_choice=choice,
        forced_tool=forced,
        max_tokens=_max_tokens(body, "max_output_tokens"),
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


def _tool_choice(value: Any) -> tuple[str, str | None]:
    """("auto" | "none" | "required", the forced function's name) of either API's `tool_choice`."""
    if isinstance(value, str):
        return (value if value in ("none", "required") else "auto"), None
    if isinstance(value, Mapping):
        kind = value.get("type")
        if kind == "function":
            nested = value.get("function")
            name = nested.get("name") if isinstance(nested, Mapping) else value.get("name")
            return "required", str(name) if name else None
        if kind == "allowed_tools":
            mode = value.get("mode")
            return ("required" if mode == "required" else "auto"), None
    return "auto", None


def _max_tokens(body: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None
