"""Large create requests (100,000 input items) at the protocol layer: parsed whole and in order,
errors named by position, and the stored form (`to_json`) byte-identical to
`dumps(to_json_dict())`, so request hashes stored before it was added still match a retry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from durable_responses.protocol import ProtocolError
from durable_responses.protocol._check import json_copy
from durable_responses.protocol.request import CreateRequest, parse_create_request
from durable_responses.protocol.sse import dumps

N = 100_000


def _body(n: int) -> dict[str, Any]:
    kinds: list[dict[str, Any]] = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "a", "annotations": [{"x": 1}]}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "t"}]},
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "o"}]},
    ]
    return {"model": "m", "input": [kinds[i % len(kinds)] for i in range(n)]}


def test_large_input_parses_whole_and_in_order() -> None:
    body = _body(N)
    req = parse_create_request(body)
    assert len(req.input_items) == N
    assert [item["type"] for item in req.input_items[:5]] == [
        "message",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert req.input_items[N - 1]["type"] == "function_call_output"
    # The body's items are shared by reference N/5 times each: every parsed item is its own.
    assert len({id(item) for item in req.input_items}) == N
    req.input_items[1]["content"][0]["annotations"][0]["x"] = 2
    assert req.input_items[6]["content"][0]["annotations"][0]["x"] == 1
    assert body["input"][1]["content"][0]["annotations"][0]["x"] == 1
    req.input_items[2]["summary"][0]["text"] = "changed"
    assert req.input_items[7]["summary"][0]["text"] == "t"


def test_large_input_error_names_the_item() -> None:
    body = _body(N)
    body["input"] = [*body["input"][:-1], {"role": "robot", "content": "x"}]
    with pytest.raises(ProtocolError) as info:
        parse_create_request(body)
    assert info.value.status == 400
    assert info.value.param == f"input[{N - 1}].role"


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_to_json_is_dumps_of_to_json_dict(n: int) -> None:
    body = {
        **_body(n),
        "instructions": "be \u00e9 \U0001f389 \u0000",
        "metadata": {"k": "v"},
        "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
        "temperature": 0.5,
        "text": {"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}}},
    }
    if n == 0:
        body["input"] = "hi"
    req = parse_create_request(body)
    assert req.to_json() == dumps(req.to_json_dict())
    assert CreateRequest.from_json_dict(json.loads(req.to_json())) == req


def test_from_json_dict_takes_the_decoded_values() -> None:
    req = parse_create_request(_body(10))
    data = json.loads(req.to_json())
    again = CreateRequest.from_json_dict(data)
    assert again == req
    assert again.input_items is data["input_items"]  # no copy of a large input on every read


def test_json_copy_is_deep() -> None:
    value: Any = {"a": [1, {"b": [2.5, None, True, "s"]}], "t": (1, [2])}
    copied = json_copy(value)
    assert copied == {"a": [1, {"b": [2.5, None, True, "s"]}], "t": [1, [2]]}
    copied["a"][1]["b"].append(3)
    copied["t"][1].append(3)
    assert value == {"a": [1, {"b": [2.5, None, True, "s"]}], "t": (1, [2])}
