"""The create-request model (`CreateRequest`) and its parser, the gate every `POST /responses` passes.

Invariant: a `CreateRequest` only ever holds a request that satisfied every rule below, in
normalized form (canonical input items, explicit defaults), and `from_json_dict(to_json_dict(r))`
equals `r`, so the store can persist it and recovery can rebuild exactly what the first run saw.
Anything refused raises a 400 `ProtocolError` whose `param` names the offending field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._check import (
    fail,
    json_copy,
    reject_unknown,
    require,
    want_bool,
    want_enum,
    want_int,
    want_list,
    want_number,
    want_object,
    want_str,
)
from .content_parts import MAX_TEXT_CHARS
from .errors import bad_request
from .ids import is_valid_conversation_id, is_valid_response_id
from .input_items import normalize_input
from .query import ListParams, StreamParams, parse_list_params, parse_stream_params
from .sse import dumps
from .tools import parse_tool_choice, parse_tools

__all__ = [
    "KNOWN_PARAMETERS",
    "CreateRequest",
    "ListParams",
    "StreamParams",
    "parse_create_request",
    "parse_list_params",
    "parse_stream_params",
]

# Every property of the schema's CreateResponseBody ...
_SCHEMA_PARAMETERS = frozenset(
    {
        "model", "input", "previous_response_id", "include", "tools", "tool_choice", "metadata", "text",
        "temperature", "top_p", "presence_penalty", "frequency_penalty", "parallel_tool_calls", "stream",
        "stream_options", "background", "max_output_tokens", "max_tool_calls", "reasoning",
        "safety_identifier", "prompt_cache_key", "truncation", "instructions", "store", "service_tier",
        "top_logprobs",
    }
)  # fmt: skip
# ... every other parameter of the openai SDK's `responses.create` (accepted; the host ignores them) ...
_SDK_PARAMETERS = frozenset(
    {
        "access_programs", "background_options", "context_management", "conversation", "image",
        "moderation", "prompt", "prompt_cache_options", "prompt_cache_retention", "user",
    }
)  # fmt: skip
# ... and how Foundry clients name the agent to run (`extra_body`).
# (`agent_session_id`: Foundry's session affinity, returned on the response.)
KNOWN_PARAMETERS = _SCHEMA_PARAMETERS | _SDK_PARAMETERS | {"agent_reference", "agent", "agent_session_id"}
MAX_SESSION_ID = 256

MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512
SERVICE_TIERS = ("auto", "default", "flex", "priority", "scale")


@dataclass(frozen=True)
class CreateRequest:
    """A validated, normalized `POST /responses` body.

    `input_items` are canonical items (see `input_items.normalize_input`); an item's `"id"` is None
    when the client sent none, and the caller assigns `ids.input_item_id(response_id, position)`.
    """

    model: str | None = None
    input_items: list[dict[str, Any]] = field(default_factory=list)
    instructions: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    store: bool = True
    background: bool = False
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    previous_response_id: str | None = None
    conversation_id: str | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Any = "auto"
    max_output_tokens: int | None = None
    max_tool_calls: int | None = None
    truncation: str = "disabled"
    parallel_tool_calls: bool = True
    include: list[str] = field(default_factory=list)
    agent_reference: dict[str, Any] | None = None
    agent_session_id: str | None = None
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    top_logprobs: int | None = None
    text: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    service_tier: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    user: str | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """A JSON-ready deep copy of every field."""
        # Not `dataclasses.asdict`: its generic recursion cost ~0.2 ms on every create.
        return {name: json_copy(getattr(self, name)) for name in _FIELD_NAMES}

    def to_json(self, input_items: Sequence[bytes] | None = None) -> str:
        """`dumps(self.to_json_dict())`, the stored form, without the deep copy (~5 us per input
        item: half a second for 100,000 items). `input_items`: each input item's JSON as already
        encoded (`encode_items`), spliced in as is: the same text, each item encoded once."""
        fields = {name: getattr(self, name) for name in _FIELD_NAMES}
        if input_items is not None:
            items = fields["input_items"]
            fields["input_items"] = orjson.Fragment(b"[" + b",".join(input_items) + b"]")
            try:
                return orjson.dumps(fields).decode()
            except TypeError:  # a value only `dumps`'s fallback encodes, outside the items
                fields["input_items"] = items
        return dumps(fields)

    @classmethod
    def from_json_dict(cls, d: Mapping[str, Any]) -> CreateRequest:
        """The inverse of `to_json_dict`; keys it does not know (a newer writer's) are ignored.

        `d`'s values become the request's own, uncopied: pass freshly decoded JSON (as every
        caller does: `json.loads(row.request)`) or a `to_json_dict()`. A deep copy here cost
        ~1 s of event loop per read of a response with 100,000 input items.
        """
        return cls(**{k: v for k, v in d.items() if k in _FIELD_NAMES})


_FIELD_NAMES = tuple(f.name for f in dataclasses.fields(CreateRequest))


def encode_items(items: Sequence[Mapping[str, Any]]) -> list[bytes] | None:
    """Each item's JSON as the stored form holds it (`dumps`'s text, for `CreateRequest.to_json`
    and the input item rows); None when orjson refuses one (an integer beyond 64 bits): the
    request is then encoded whole through `dumps`'s fallback, as it always was."""
    try:
        return [orjson.dumps(item) for item in items]
    except TypeError:
        return None


def parse_create_request(body: object) -> CreateRequest:
    """Validate and normalize a decoded JSON body; 400 `ProtocolError` on the first violation."""
    if not isinstance(body, dict):
        raise bad_request("The request body must be a JSON object.", param=None, code="invalid_type")
    for key in body:
        if key not in KNOWN_PARAMETERS:
            fail(f"Unknown parameter: '{key}'.", key, "unknown_parameter")
    # An explicit null means "not given" for every field (the SDK and other clients send both).
    b = {k: v for k, v in body.items() if v is not None}

    store = want_bool(b.get("store", True), "store")
    background = want_bool(b.get("background", False), "background")
    stream = want_bool(b.get("stream", False), "stream")
    if background and not store:
        fail(
            "background=true requires store=true: a background response must be stored to be retrieved.",
            "background",
        )
    stream_options = None
    if "stream_options" in b:
        stream_options = json_copy(want_object(b["stream_options"], "stream_options"))
        if not stream:
            fail("stream_options is only allowed when stream=true.", "stream_options")
        if stream_options.get("include_obfuscation") is not None:
            want_bool(stream_options["include_obfuscation"], "stream_options.include_obfuscation")

    previous_response_id = _previous_response_id(b)
    conversation_id = _conversation_id(b)
    if previous_response_id is not None and conversation_id is not None:
        fail("previous_response_id and conversation cannot be used together.", "conversation")

    # An empty string is no input at all, not an empty user message.
    input_items = [] if b.get("input") == "" else normalize_input(b.get("input"))
    if not input_items and previous_response_id is None and conversation_id is None:
        fail(
            "input is required (unless previous_response_id or conversation is given).",
            "input",
            "missing_required_parameter",
        )

    return CreateRequest(
        model=_opt_str(b, "model", 256),
        input_items=input_items,
        instructions=_opt_str(b, "instructions", MAX_TEXT_CHARS),
        metadata=parse_metadata(b.get("metadata")),
        store=store,
        background=background,
        stream=stream,
        stream_options=stream_options,
        previous_response_id=previous_response_id,
        conversation_id=conversation_id,
        tools=parse_tools(b.get("tools")),
        tool_choice=parse_tool_choice(b.get("tool_choice")),
        max_output_tokens=_opt_int(b, "max_output_tokens", 16),
        max_tool_calls=_opt_int(b, "max_tool_calls", 1),
        truncation=want_enum(b.get("truncation", "disabled"), "truncation", ("auto", "disabled")),
        parallel_tool_calls=want_bool(b.get("parallel_tool_calls", True), "parallel_tool_calls"),
        include=[
            want_str(v, f"include[{i}]", max_len=256)
            for i, v in enumerate(want_list(b.get("include", []), "include"))
        ],
        agent_reference=_agent_reference(b),
        agent_session_id=_opt_str(b, "agent_session_id", MAX_SESSION_ID),
        temperature=_opt_number(b, "temperature", 0.0, 2.0),
        top_p=_opt_number(b, "top_p", 0.0, 1.0),
        presence_penalty=_opt_number(b, "presence_penalty", -2.0, 2.0),
        frequency_penalty=_opt_number(b, "frequency_penalty", -2.0, 2.0),
        top_logprobs=_opt_int(b, "top_logprobs", 0, 20),
        text=_text(b.get("text")),
        reasoning=_reasoning(b.get("reasoning")),
        service_tier=None
        if "service_tier" not in b
        else want_enum(b["service_tier"], "service_tier", SERVICE_TIERS),
        safety_identifier=_opt_str(b, "safety_identifier", 64),
        prompt_cache_key=_opt_str(b, "prompt_cache_key", 64),
        user=_opt_str(b, "user", 512),
    )


def _opt_str(b: dict[str, Any], key: str, max_len: int) -> str | None:
    return None if key not in b else want_str(b[key], key, max_len=max_len)


def _opt_int(b: dict[str, Any], key: str, minimum: int, maximum: int | None = None) -> int | None:
    return None if key not in b else want_int(b[key], key, minimum=minimum, maximum=maximum)


def _opt_number(b: dict[str, Any], key: str, minimum: float, maximum: float) -> float | None:
    return None if key not in b else want_number(b[key], key, minimum=minimum, maximum=maximum)


def _previous_response_id(b: dict[str, Any]) -> str | None:
    if "previous_response_id" not in b:
        return None
    value = want_str(b["previous_response_id"], "previous_response_id")
    if not is_valid_response_id(value):
        fail(
            f"Invalid 'previous_response_id': {value[:140]!r} is not a valid response id.",
            "previous_response_id",
        )
    return value


def _conversation_id(b: dict[str, Any]) -> str | None:
    if "conversation" not in b:
        return None
    value = b["conversation"]
    param = "conversation"
    if isinstance(value, dict):
        reject_unknown(value, frozenset({"id"}), "conversation")
        param = "conversation.id"
        value = require(value, "id", "conversation")
    value = want_str(value, param)
    if not is_valid_conversation_id(value):
        fail(f"Invalid '{param}': {value[:140]!r} is not a valid conversation id.", param)
    return value


def parse_metadata(value: object) -> dict[str, str]:
    if value is None:
        return {}
    obj = want_object(value, "metadata")
    if len(obj) > MAX_METADATA_PAIRS:
        fail(
            f"Invalid 'metadata': at most {MAX_METADATA_PAIRS} key-value pairs are allowed, got {len(obj)}.",
            "metadata",
            "object_above_max_properties",
        )
    for key, item in obj.items():
        if not isinstance(key, str) or len(key) > MAX_METADATA_KEY:
            fail(
                f"Invalid 'metadata': key {str(key)[:80]!r} is longer than {MAX_METADATA_KEY} characters.",
                "metadata",
                "string_above_max_length",
            )
        if not isinstance(item, str):
            fail(
                f"Invalid 'metadata': the value of {key[:80]!r} must be a string.", "metadata", "invalid_type"
            )
        if len(item) > MAX_METADATA_VALUE:
            fail(
                f"Invalid 'metadata': the value of {key[:80]!r} is over {MAX_METADATA_VALUE} characters.",
                "metadata",
                "string_above_max_length",
            )
    return dict(obj)


def _text(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    text = json_copy(want_object(value, "text"))
    fmt = text.get("format")
    if fmt is not None:
        fmt = want_object(fmt, "text.format")
        kind = want_enum(
            require(fmt, "type", "text.format"), "text.format.type", ("text", "json_object", "json_schema")
        )
        if kind == "json_schema":
            want_str(require(fmt, "name", "text.format"), "text.format.name", min_len=1, max_len=64)
            want_object(require(fmt, "schema", "text.format"), "text.format.schema")
    if text.get("verbosity") is not None:
        want_enum(text["verbosity"], "text.verbosity", ("low", "medium", "high"))
    return text


def _reasoning(value: object) -> dict[str, Any] | None:
    if value is None:
        return None
    reasoning = json_copy(want_object(value, "reasoning"))
    for key in ("effort", "summary", "generate_summary"):
        if reasoning.get(key) is not None:
            want_str(reasoning[key], f"reasoning.{key}", max_len=64)
    return reasoning


def _agent_reference(b: dict[str, Any]) -> dict[str, Any] | None:
    # `agent_reference` is current; `agent` is what older Foundry samples send. The newer name wins.
    key = "agent_reference" if "agent_reference" in b else "agent" if "agent" in b else None
    if key is None:
        return None
    value = b[key]
    if isinstance(value, str):
        return {"type": "agent_reference", "name": want_str(value, key, min_len=1, max_len=256)}
    obj = want_object(value, key)
    if obj.get("type") is not None:
        want_enum(obj["type"], f"{key}.type", ("agent_reference",))
    ref = json_copy(obj)
    ref["type"] = "agent_reference"
    ref["name"] = want_str(require(obj, "name", key), f"{key}.name", min_len=1, max_len=256)
    version = obj.get("version")
    if version is not None:
        if isinstance(version, int) and not isinstance(version, bool):
            version = str(version)
        ref["version"] = want_str(version, f"{key}.version", min_len=1, max_len=128)
    return ref
