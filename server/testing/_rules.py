"""The fake model's reply rules: a pure function from a `Prompt` to a `Reply` with its usage.

Rules, first match wins (the "latest user text" is the text of the last user message):
1. `model_error:<code>` in the latest user text: an OpenAI-shaped error (`ERRORS` lists the codes).
2. The last message is a tool result: text quoting every result since the last tool call turn,
   `<who>: Tool <name> returned: <result>` (so a test sees results, and rejections, reach the model).
3. A GroupChat or Magentic manager prompt: the JSON or text that manager parses (`_managers`).
4. A `handoff_to_<target>` tool whose target is named in the latest user text: a call to it
   (`{}` arguments). Never to the agent itself (the name after "You are" in the system text).
5. A declared tool whose name is in the latest user text and that was not called since that
   message: a call to it, arguments filled from its JSON schema (`key=value` words in the user
   text override a top-level property). Several named tools: parallel calls, in the order named.
   `tool_choice` is honoured: "none" calls no tool (rules 4 and 5 are skipped); a forced
   function, or "required", calls that function (the first declared one) if no tool was
   called since the latest user text.
6. A `json_schema` response format: a JSON object filled from the schema; `json_object`:
   `{"reply": "<latest user text, quoted as in 7>"}`.
7. Otherwise text: `<who>: You said "<latest user text, first 24 tokens>"`, padded with filler
   tokens up to N when the user text contains `tokens=N`.
A token limit in the request (`max_output_tokens`, `max_completion_tokens`, `max_tokens`) cuts
the reply's text after that many tokens (and drops its calls): the reply is `truncated`, which the
wire shows as OpenAI does (`finish_reason: "length"`; a Responses `incomplete` response with
`incomplete_details.reason` `max_output_tokens`).
`<who>` is the agent's name (the word after "You are" in the system text) or "assistant".
Reasoning (a summary text, counted as reasoning tokens) is added when the request asks for it
(`reasoning` / `reasoning_effort`) or the latest user text has the word "think".
Tokens are `TOKEN_RE` pieces (each keeps its leading space); usage counts them deterministically.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from ._managers import manager_answer
from ._prompt import Prompt, ToolSpec, Turn

TOKEN_RE = re.compile(r"\s*[\w']+|\s*[^\w\s]|\s+")
_ERROR_RE = re.compile(r"model_error:(\w+)")
_NAME_RE = re.compile(r"\byou are (?:the |an |a )?([\w-]+)", re.IGNORECASE)
_OVERRIDE_RE = re.compile(r"(\w+)=(\"[^\"]*\"|\S+)")
_TOKENS_RE = re.compile(r"\btokens=(\d+)\b")
_THINK_RE = re.compile(r"\bthink\b", re.IGNORECASE)
HANDOFF_PREFIX = "handoff_to_"
QUOTE_TOKENS = 24
MAX_TOKENS = 100_000


@dataclass(frozen=True)
class ModelError:
    status: int
    code: str | None
    type: str
    message: str
    param: str | None = None

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}


ERRORS: dict[str, ModelError] = {
    "context_length_exceeded": ModelError(
        400,
        "context_length_exceeded",
        "invalid_request_error",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9000 tokens. Please reduce the length of the messages.",
        "messages",
    ),
    "content_filter": ModelError(
        400,
        "content_filter",
        "invalid_request_error",
        "The response was filtered due to the prompt triggering content management policy.",
        "prompt",
    ),
    "invalid_request_error": ModelError(
        400, "invalid_request_error", "invalid_request_error", "Invalid request."
    ),
    "invalid_api_key": ModelError(
        401, "invalid_api_key", "invalid_request_error", "Incorrect API key provided."
    ),
    "rate_limit_exceeded": ModelError(
        429, "rate_limit_exceeded", "requests", "Rate limit reached for requests. Please try again in 1s."
    ),
    "insufficient_quota": ModelError(
        429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota."
    ),
    "server_error": ModelError(
        500, "server_error", "server_error", "The server had an error while processing your request."
    ),
    "overloaded": ModelError(503, "overloaded", "server_error", "The engine is currently overloaded."),
}


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True)
class PlannedCall:
    name: str
    arguments: str


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: tuple[PlannedCall, ...] = ()
    reasoning: str = ""
    error: ModelError | None = None
    usage: Usage = Usage()
    truncated: bool = False


def tokens(text: str) -> list[str]:
    """The pieces the fake streams, one per token; joined they give `text` back."""
    return TOKEN_RE.findall(text)


def agent_name(prompt: Prompt) -> str | None:
    match = _NAME_RE.search(prompt.system_text)
    return match.group(1).rstrip(".,") if match else None


def _render(turn: Turn) -> str:
    calls = " ".join(f"{c.name}({c.arguments})" for c in turn.tool_calls)
    return f"{turn.role}: {turn.text} {calls}"


def _usage(prompt: Prompt, reply: Reply) -> Usage:
    head = [prompt.system_text, *(json.dumps(dict(t.parameters), sort_keys=True) for t in prompt.tools)]
    turns = [_render(t) for t in prompt.dialogue]
    prefix = sum(len(tokens(s)) for s in head + turns[:-1])
    total_in = prefix + sum(len(tokens(s)) for s in turns[-1:])
    reasoning = len(tokens(reply.reasoning))
    out = len(tokens(reply.text)) + sum(1 + len(tokens(c.arguments)) for c in reply.calls) + reasoning
    cached = prefix if len(turns) > 1 else 0
    return Usage(input_tokens=total_in, output_tokens=out, reasoning_tokens=reasoning, cached_tokens=cached)


def _quote(text: str) -> str:
    words = tokens(" ".join(text.split()))
    quoted = "".join(words[:QUOTE_TOKENS]).strip()
    return quoted + ("..." if len(words) > QUOTE_TOKENS else "")


def _mentions(text: str, name: str) -> bool:
    variants = {name, name.replace("_", " "), name.replace("-", " ")}
    return any(re.search(rf"(?<![\w]){re.escape(v)}(?![\w])", text, re.IGNORECASE) for v in variants if v)


def _coerce(raw: str, schema: Mapping[str, Any]) -> Any:
    raw = raw[1:-1] if len(raw) >= 2 and raw.startswith('"') and raw.endswith('"') else raw
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
        if kind == "boolean":
            return raw.lower() in ("true", "1", "yes")
        if kind in ("array", "object"):
            return json.loads(raw)
    except ValueError:
        return raw
    return raw


def example_value(schema: Mapping[str, Any], key: str, defs: Mapping[str, Any]) -> Any:
    """A deterministic value that satisfies `schema` (the subset tool schemas use)."""
    if "$ref" in schema:
        ref = str(schema["$ref"]).rsplit("/", 1)[-1]
        return example_value(cast(Mapping[str, Any], defs.get(ref, {})), key, defs)
    for combo in ("anyOf", "oneOf", "allOf"):
        if combo in schema:
            options = [cast(Mapping[str, Any], s) for s in schema[combo]]
            usable = [s for s in options if s.get("type") != "null"] or options
            return example_value(usable[0], key, defs) if usable else None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "string":
        return f"{key}_value"
    if kind == "integer":
        return max(1, int(schema.get("minimum", 1)))
    if kind == "number":
        return float(schema.get("minimum", 1.5))
    if kind == "boolean":
        return True
    if kind == "array":
        return [example_value(cast(Mapping[str, Any], schema.get("items", {})), key, defs)]
    if kind == "object":
        props = cast(Mapping[str, Mapping[str, Any]], schema.get("properties", {}))
        return {name: example_value(sub, name, defs) for name, sub in props.items()}
    return None


def fill_schema(schema: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
    defs = cast(Mapping[str, Any], schema.get("$defs", schema.get("definitions", {})))
    value = example_value(schema, "value", defs)
    obj: dict[str, Any] = value if isinstance(value, dict) else {}
    props = cast(Mapping[str, Mapping[str, Any]], schema.get("properties", {}))
    for key, raw in (overrides or {}).items():
        if key in props:
            obj[key] = _coerce(raw, props[key])
    return obj


def _tool_result_reply(prompt: Prompt, who: str) -> str:
    turns = prompt.dialogue
    start = len(turns)
    while start > 0 and turns[start - 1].role == "tool":
        start -= 1
    parts = [f"Tool {prompt.tool_name_for(t.tool_call_id)} returned: {t.text}" for t in turns[start:]]
    return f"{who}: " + "; ".join(parts)


def _planned_calls(prompt: Prompt, me: str | None) -> tuple[PlannedCall, ...]:
    if prompt.tool_choice == "none":
        return ()
    text = prompt.latest_user_text
    called = {c.name for c in prompt.calls_since_latest_user()}
    if prompt.tool_choice == "required" and not called:
        forced = [t for t in prompt.tools if t.name == prompt.forced_tool or prompt.forced_tool is None]
        if forced:
            overrides = dict(_OVERRIDE_RE.findall(text))
            arguments = json.dumps(fill_schema(forced[0].parameters, overrides), separators=(",", ":"))
            return (PlannedCall(forced[0].name, arguments),)
    handoffs: list[ToolSpec] = [
        t
        for t in prompt.tools
        if t.name.startswith(HANDOFF_PREFIX)
        and _mentions(text, t.name[len(HANDOFF_PREFIX) :])
        and (me is None or t.name[len(HANDOFF_PREFIX) :].lower() != me.lower())
    ]
    if handoffs and not any(n.startswith(HANDOFF_PREFIX) for n in called):
        return (PlannedCall(handoffs[0].name, "{}"),)
    named = [
        t
        for t in prompt.tools
        if not t.name.startswith(HANDOFF_PREFIX) and t.name not in called and _mentions(text, t.name)
    ]
    lowered = text.lower()
    named.sort(key=lambda t: lowered.find(t.name.lower()))
    if not prompt.parallel_tool_calls:
        named = named[:1]
    overrides = dict(_OVERRIDE_RE.findall(text))
    return tuple(
        PlannedCall(t.name, json.dumps(fill_schema(t.parameters, overrides), separators=(",", ":")))
        for t in named
    )


def _text_reply(prompt: Prompt, who: str) -> str:
    text = f'{who}: You said "{_quote(prompt.latest_user_text)}"'
    match = _TOKENS_RE.search(prompt.latest_user_text)
    if match:
        want = min(int(match.group(1)), MAX_TOKENS)
        have = len(tokens(text))
        text += "".join(f" w{i}" for i in range(max(0, want - have)))
    return text


def reply_for(prompt: Prompt) -> Reply:
    """The reply (or error) the fake model gives to `prompt`."""
    latest = prompt.latest_user_text
    error = _ERROR_RE.search(latest)
    if error:
        code = error.group(1)
        return Reply(
            error=ERRORS.get(code, ModelError(400, code, "invalid_request_error", f"Fake error {code}."))
        )
    me = agent_name(prompt)
    who = me or "assistant"
    last = prompt.dialogue[-1] if prompt.dialogue else None
    calls: tuple[PlannedCall, ...] = ()
    if last is not None and last.role == "tool":
        text = _tool_result_reply(prompt, who)
    elif (answer := manager_answer(prompt)) is not None:
        text = answer
    elif calls := _planned_calls(prompt, me):
        text = ""
    elif prompt.json_schema is not None:
        text = json.dumps(fill_schema(prompt.json_schema))
    elif prompt.json_object:
        text = json.dumps({"reply": _quote(latest)})
    else:
        text = _text_reply(prompt, who)
    reasoning = ""
    if prompt.reasoning_requested or _THINK_RE.search(latest):
        reasoning = f'Thinking about "{_quote(latest)}" step by step.'
    truncated = False
    if prompt.max_tokens is not None and len(tokens(text)) + len(calls) > prompt.max_tokens:
        text, calls, truncated = "".join(tokens(text)[: prompt.max_tokens]), (), True
    reply = Reply(text=text, calls=calls, reasoning=reasoning, truncated=truncated)
    return dataclasses.replace(reply, usage=_usage(prompt, reply))
