"""Random JSON thrown at the parser only ever produces a request or a client-error ProtocolError.

Three generators: arbitrary JSON; request-shaped bodies (known and unknown keys, arbitrary values);
and near-valid bodies, valid items and parameters with one value swapped for arbitrary JSON, so the
parser's deep paths are exercised too. Whatever parses must round-trip through JSON and, where the
schema can describe it, render a Response that validates.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_validator import validate_response

from durable_responses.protocol import ProtocolError
from durable_responses.protocol.request import KNOWN_PARAMETERS, CreateRequest, parse_create_request
from durable_responses.protocol.response import build_response

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
_text = st.text(max_size=12)
_name = st.sampled_from(["f", "get_weather", "request_info", "bad name", ""])
_status = st.sampled_from(["completed", "in_progress", "incomplete", "done"])

_part = st.one_of(
    st.fixed_dictionaries({"type": st.just("input_text"), "text": _text}),
    st.fixed_dictionaries(
        {"type": st.just("input_image")},
        optional={
            "image_url": st.sampled_from(["https://x/y.png", "data:image/png;base64,AA", "ftp://x"]),
            "file_id": _text,
            "detail": st.sampled_from(["auto", "low", "high", "max"]),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("input_file")},
        optional={"file_id": _text, "file_data": _text, "file_url": _text, "filename": _text},
    ),
    st.fixed_dictionaries(
        {"type": st.just("output_text"), "text": _text},
        optional={"annotations": st.lists(st.just({}), max_size=1)},
    ),
    st.fixed_dictionaries({"type": st.just("refusal"), "refusal": _text}),
)
_near_items = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "system", "developer", "tool"]),
            "content": _text | st.lists(_part, max_size=3),
        },
        optional={"type": st.just("message"), "id": _text, "status": _status},
    ),
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": _text, "name": _name, "arguments": _text},
        optional={"id": _text, "status": _status},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("function_call_output"),
            "call_id": _text,
            "output": _text | st.lists(_part, max_size=2),
        },
        optional={"id": _text, "status": _status},
    ),
    st.fixed_dictionaries({"id": _text}, optional={"type": st.just("item_reference")}),
    st.fixed_dictionaries({"type": st.just("reasoning"), "summary": st.just([])}),
)

_near_params: dict[str, st.SearchStrategy[Any]] = {
    "model": _text,
    "input": _text | st.lists(_near_items, max_size=3),
    "instructions": _text,
    "metadata": st.dictionaries(_text, _text, max_size=3),
    "store": st.booleans(),
    "background": st.booleans(),
    "stream": st.booleans(),
    "stream_options": st.just({"include_obfuscation": False}),
    "previous_response_id": st.sampled_from(["resp_1", "caresp_x", "bad"]),
    "conversation": st.sampled_from(["conv_1", {"id": "conv_2"}]),
    "tools": st.lists(
        st.fixed_dictionaries({"type": st.just("function"), "name": _name}, optional={"description": _text}),
        max_size=2,
    ),
    "tool_choice": st.sampled_from(["auto", "none", "required", {"type": "function", "name": "f"}]),
    "max_output_tokens": st.integers(0, 100),
    "truncation": st.sampled_from(["auto", "disabled"]),
    "temperature": st.floats(0, 2),
    "agent": st.sampled_from(["a", {"name": "a", "version": "1"}]),
}


def _mutate(body: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    mutated = dict(body)
    mutated[key] = value
    return mutated


_near_bodies = st.fixed_dictionaries({}, optional=_near_params)
_mutated_bodies = st.builds(
    _mutate, _near_bodies, st.sampled_from(sorted(_near_params)), _json | st.lists(_json, max_size=2)
)
_mutated_items = st.builds(
    lambda item, key, value: {"input": [_mutate(item, key, value)]},
    _near_items,
    st.sampled_from(["type", "role", "content", "id", "call_id", "name", "arguments", "output", "status"]),
    _json | st.lists(_part, max_size=2) | st.lists(_json, max_size=2),
)
_shaped_bodies = st.dictionaries(
    st.sampled_from(sorted(KNOWN_PARAMETERS)) | st.text(max_size=8),
    _json | st.sampled_from(["resp_1", "conv_1", "auto", "hi"]),
    max_size=8,
)


def _renderable(req: CreateRequest) -> bool:
    # The schema's Tool union has only function tools, and its json_schema format demands schema=null.
    fmt = (req.text or {}).get("format") or {}
    return all(t["type"] == "function" for t in req.tools) and fmt.get("type") != "json_schema"


def _check(body: Any) -> None:
    try:
        req = parse_create_request(body)
    except ProtocolError as exc:
        assert exc.status in (400, 413, 422), exc
        assert exc.body()["error"]["message"]
        return
    assert isinstance(req, CreateRequest)
    assert CreateRequest.from_json_dict(json.loads(json.dumps(req.to_json_dict()))) == req
    if _renderable(req):
        validate_response(build_response(req, response_id="resp_1", status="completed", created_at=1))


def _settings(examples: int) -> settings:
    # No example database: the suite must not write into the working tree.
    return settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
    )


@_settings(200)
@given(_json)
def test_any_json_value(body: Any) -> None:
    _check(body)


@_settings(200)
@given(_shaped_bodies)
def test_request_shaped_bodies(body: dict[str, Any]) -> None:
    _check(body)


@_settings(300)
@given(_near_bodies | _mutated_bodies)
def test_near_valid_bodies(body: dict[str, Any]) -> None:
    _check(body)


@_settings(300)
@given(_mutated_items)
def test_mutated_input_items(body: dict[str, Any]) -> None:
    _check(body)
