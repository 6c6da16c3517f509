from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest
from schema_validator import validate_item

from durable_responses.protocol import ProtocolError
from durable_responses.protocol.request import (
    KNOWN_PARAMETERS,
    CreateRequest,
    encode_items,
    parse_create_request,
)
from durable_responses.protocol.sse import dumps

USER_HI = {
    "type": "message",
    "id": None,
    "role": "user",
    "content": [{"type": "input_text", "text": "hi"}],
    "status": "completed",
}


def _bad(body: object) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        parse_create_request(body)
    assert info.value.status == 400, info.value
    return info.value


def test_string_input_and_defaults() -> None:
    req = parse_create_request({"model": "m", "input": "hi"})
    assert req.input_items == [USER_HI]
    assert req.model == "m"
    assert (req.store, req.background, req.stream) == (True, False, False)
    assert req.tool_choice == "auto" and req.truncation == "disabled" and req.parallel_tool_calls is True
    assert req.metadata == {} and req.tools == [] and req.include == []
    assert req.agent_reference is None and req.conversation_id is None


def test_nulls_mean_absent() -> None:
    req = parse_create_request(
        {
            "input": "hi",
            "model": None,
            "store": None,
            "tools": None,
            "metadata": None,
            "tool_choice": None,
            "truncation": None,
            "temperature": None,
        }
    )
    assert req == parse_create_request({"input": "hi"})


def test_message_list_normalization() -> None:
    req = parse_create_request(
        {
            "input": [
                {"role": "system", "content": "sys"},
                {"role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "earlier answer"},
                {
                    "type": "message",
                    "id": "msg_client",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "look"},
                        {"type": "input_image", "image_url": "https://x/y.png"},
                        {"type": "input_image", "file_id": "file_1", "detail": "high"},
                        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                        {"type": "input_file", "file_id": "file_2", "filename": "a.pdf"},
                        {"type": "input_file", "file_data": "QUJD", "filename": "b.txt"},
                        {"type": "input_file", "file_url": "https://x/c.pdf"},
                    ],
                },
                {
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": "t", "annotations": []},
                        {"type": "refusal", "refusal": "no"},
                    ],
                },
            ]
        }
    )
    items = req.input_items
    assert items[0]["content"] == [{"type": "input_text", "text": "sys"}]
    assert items[3]["content"] == [{"type": "output_text", "text": "earlier answer", "annotations": []}]
    assert items[4]["id"] == "msg_client"
    parts = items[4]["content"]
    assert parts[1] == {"type": "input_image", "image_url": "https://x/y.png", "detail": "auto"}
    assert parts[2] == {"type": "input_image", "image_url": None, "file_id": "file_1", "detail": "high"}
    assert parts[4] == {"type": "input_file", "file_id": "file_2", "filename": "a.pdf"}
    for item in items:
        assert item["type"] == "message" and item["status"] == "completed" and "id" in item
        validate_item({**item, "id": item["id"] or "in_x"})


def test_function_call_round_trip_items() -> None:
    req = parse_create_request(
        {
            "previous_response_id": "resp_abc",
            "input": [
                {
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "request_info",
                    "arguments": "{}",
                    "id": "fc_1",
                },
                {"type": "function_call_output", "call_id": "call_1", "output": '{"ok": true}'},
                {
                    "type": "function_call_output",
                    "call_id": "call_2",
                    "output": [{"type": "input_text", "text": "x"}],
                },
                {"type": "item_reference", "id": "msg_old"},
                {"id": "msg_older"},
                {"type": "reasoning", "summary": [], "encrypted_content": "zzz"},
            ],
        }
    )
    fc, out1, out2, ref, ref2, reasoning = req.input_items
    assert fc == {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "request_info",
        "arguments": "{}",
        "status": "completed",
    }
    assert out1 == {
        "type": "function_call_output",
        "id": None,
        "call_id": "call_1",
        "output": '{"ok": true}',
        "status": "completed",
    }
    assert out2["output"] == [{"type": "input_text", "text": "x"}]
    assert ref == {"type": "item_reference", "id": "msg_old"}
    assert ref2 == {"type": "item_reference", "id": "msg_older"}
    assert reasoning == {"type": "reasoning", "id": None, "summary": [], "encrypted_content": "zzz"}
    for item in (fc, out1, out2):
        validate_item({**item, "id": item["id"] or "in_x"})


def test_function_call_output_alone_with_previous_response() -> None:
    req = parse_create_request(
        {
            "previous_response_id": "resp_1",
            "input": [{"type": "function_call_output", "call_id": "c", "output": "y"}],
        }
    )
    assert req.previous_response_id == "resp_1"
    assert req.input_items[0]["call_id"] == "c"


def test_continuations_without_input() -> None:
    assert parse_create_request({"previous_response_id": "caresp_x1"}).input_items == []
    assert parse_create_request({"conversation": "conv_1"}).conversation_id == "conv_1"
    assert parse_create_request({"conversation": {"id": "conv_2"}, "input": []}).conversation_id == "conv_2"


def test_tools_and_tool_choice() -> None:
    req = parse_create_request(
        {
            "input": "hi",
            "tools": [
                {
                    "type": "function",
                    "name": "get_weather",
                    "description": "d",
                    "parameters": {"type": "object", "properties": {}},
                    "strict": True,
                },
                {"type": "function", "name": "f2"},
                {"type": "web_search", "anything": 1},
            ],
            "tool_choice": {"type": "allowed_tools", "tools": [{"type": "function", "name": "f2"}]},
        }
    )
    assert req.tools[1] == {
        "type": "function",
        "name": "f2",
        "description": None,
        "parameters": None,
        "strict": None,
    }
    assert req.tools[2] == {"type": "web_search", "anything": 1}
    assert req.tool_choice["mode"] == "auto"
    for choice in ("none", "auto", "required"):
        assert parse_create_request({"input": "x", "tool_choice": choice}).tool_choice == choice


def test_agent_reference_forms() -> None:
    expected = {"type": "agent_reference", "name": "a", "version": "1"}
    assert parse_create_request(
        {"input": "x", "agent_reference": {"name": "a", "version": "1"}}
    ).agent_reference == (expected)
    assert (
        parse_create_request(
            {"input": "x", "agent": {"type": "agent_reference", "name": "a", "version": "1"}}
        ).agent_reference
        == expected
    )
    assert parse_create_request({"input": "x", "agent": "a"}).agent_reference == {
        "type": "agent_reference",
        "name": "a",
    }
    assert (
        parse_create_request({"input": "x", "agent": {"name": "a", "version": 1}}).agent_reference == expected
    )
    both = parse_create_request({"input": "x", "agent": "old", "agent_reference": {"name": "new"}})
    assert both.agent_reference is not None and both.agent_reference["name"] == "new"


def test_scalars() -> None:
    req = parse_create_request(
        {
            "input": "x",
            "temperature": 0,
            "top_p": 0.5,
            "presence_penalty": -1,
            "frequency_penalty": 2,
            "top_logprobs": 20,
            "max_output_tokens": 16,
            "max_tool_calls": 1,
            "metadata": {"a": "b"},
            "include": ["reasoning.encrypted_content"],
            "service_tier": "auto",
            "safety_identifier": "s",
            "prompt_cache_key": "k",
            "user": "u",
            "instructions": "i",
            "stream": True,
            "stream_options": {"include_obfuscation": False},
            "text": {"format": {"type": "text"}},
            "reasoning": {"effort": "high", "summary": "auto"},
            "prompt_cache_retention": "24h",
        }
    )
    assert req.temperature == 0.0 and isinstance(req.temperature, float)
    assert req.max_output_tokens == 16 and req.top_logprobs == 20
    assert req.stream and req.stream_options == {"include_obfuscation": False}
    assert req.include == ["reasoning.encrypted_content"]


def _full_request() -> CreateRequest:
    return parse_create_request(
        {
            "model": "m",
            "input": [
                {"role": "user", "content": "hi"},
                {"type": "function_call_output", "call_id": "c", "output": "o"},
            ],
            "instructions": "i",
            "metadata": {"k": "v"},
            "background": True,
            "stream": True,
            "stream_options": {"include_obfuscation": True},
            "conversation": "conv_1",
            "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
            "tool_choice": {"type": "function", "name": "f"},
            "max_output_tokens": 100,
            "max_tool_calls": 3,
            "truncation": "auto",
            "parallel_tool_calls": False,
            "include": ["x"],
            "agent": "a",
            "temperature": 0.2,
            "top_p": 0.3,
            "presence_penalty": 0.1,
            "frequency_penalty": 0.4,
            "top_logprobs": 2,
            "text": {"format": {"type": "json_schema", "name": "n", "schema": {"type": "object"}}},
            "reasoning": {"effort": "low"},
            "service_tier": "priority",
            "safety_identifier": "s",
            "prompt_cache_key": "p",
            "user": "u",
        }
    )


@pytest.mark.parametrize("req", [_full_request(), parse_create_request({"input": "x"}), CreateRequest()])
def test_json_round_trip(req: CreateRequest) -> None:
    data = req.to_json_dict()
    # Through real JSON text, as the store persists it.
    again = CreateRequest.from_json_dict(json.loads(json.dumps(data)))
    assert again == req
    assert again.to_json_dict() == data
    assert set(data) == {f.name for f in dataclasses.fields(CreateRequest)}


def test_round_trip_is_a_copy_and_tolerates_new_keys() -> None:
    req = _full_request()
    data = req.to_json_dict()
    data["input_items"][0]["role"] = "assistant"
    assert req.input_items[0]["role"] == "user"
    assert CreateRequest.from_json_dict({**req.to_json_dict(), "added_later": 1}) == req


def test_known_parameters_cover_schema_and_sdk() -> None:
    import inspect

    from openai.resources.responses import Responses
    from openai.types.responses.response_create_params import ResponseCreateParamsBase
    from schema_validator import _document

    schema_props = set(_document()["components"]["schemas"]["CreateResponseBody"]["properties"])
    sdk_props = set(ResponseCreateParamsBase.__annotations__) | {"stream"}
    signature = set(inspect.signature(Responses.create).parameters) - {
        "self",
        "extra_headers",
        "extra_query",
        "extra_body",
        "timeout",
    }
    missing = (schema_props | sdk_props | signature | {"agent_reference", "agent"}) - KNOWN_PARAMETERS
    assert not missing, missing


# -- rejections -------------------------------------------------------------------------------------

BIG = "x" * (10 * 1024 * 1024 + 1)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "x", "bogus": 1}, "bogus"),
        ({"input": "x", "store": "yes"}, "store"),
        ({"input": "x", "stream": 1}, "stream"),
        ({"input": "x", "max_output_tokens": True}, "max_output_tokens"),
        ({"input": "x", "max_output_tokens": 15}, "max_output_tokens"),
        ({"input": "x", "max_output_tokens": 16.0}, "max_output_tokens"),
        ({"input": "x", "max_output_tokens": "100"}, "max_output_tokens"),
        ({"input": "x", "max_tool_calls": 0}, "max_tool_calls"),
        ({"input": "x", "top_logprobs": 21}, "top_logprobs"),
        ({"input": "x", "temperature": True}, "temperature"),
        ({"input": "x", "temperature": 3}, "temperature"),
        ({"input": "x", "top_p": 1.5}, "top_p"),
        ({"input": "x", "background": True, "store": False}, "background"),
        ({"input": "x", "previous_response_id": "resp_1", "conversation": "conv_1"}, "conversation"),
        ({"input": "x", "metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
        ({"input": "x", "metadata": {"k" * 65: "v"}}, "metadata"),
        ({"input": "x", "metadata": {"k": 1}}, "metadata"),
        ({"input": "x", "metadata": {"k": "v" * 513}}, "metadata"),
        ({"input": "x", "metadata": ["k"]}, "metadata"),
        ({"input": BIG}, "input"),
        ({}, "input"),
        ({"input": []}, "input"),
        ({"input": ""}, "input"),
        ({"input": 5}, "input"),
        ({"input": "x", "stream_options": {"include_obfuscation": True}}, "stream_options"),
        ({"input": "x", "stream": False, "stream_options": {}}, "stream_options"),
        ({"input": "x", "truncation": "middle"}, "truncation"),
        ({"input": "x", "tool_choice": "sometimes"}, "tool_choice"),
        ({"input": "x", "tool_choice": 1}, "tool_choice"),
        ({"input": "x", "tool_choice": {}}, "tool_choice.type"),
        ({"input": "x", "tool_choice": {"type": "function"}}, "tool_choice.name"),
        ({"input": "x", "tools": {"type": "function"}}, "tools"),
        ({"input": "x", "tools": ["f"]}, "tools[0]"),
        ({"input": "x", "tools": [{"name": "f"}]}, "tools[0].type"),
        ({"input": "x", "tools": [{"type": 3}]}, "tools[0].type"),
        ({"input": "x", "tools": [{"type": "function"}]}, "tools[0].name"),
        ({"input": "x", "tools": [{"type": "function", "name": "bad name"}]}, "tools[0].name"),
        ({"input": "x", "tools": [{"type": "function", "name": "f" * 65}]}, "tools[0].name"),
        (
            {"input": "x", "tools": [{"type": "function", "name": "f", "parameters": "{}"}]},
            "tools[0].parameters",
        ),
        ({"input": "x", "tools": [{"type": "function", "name": "f", "strict": "yes"}]}, "tools[0].strict"),
        (
            {"input": "x", "tools": [{"type": "function", "name": "f", "description": 1}]},
            "tools[0].description",
        ),
        ({"input": "x", "tools": [{"type": "function", "name": "f", "extra": 1}]}, "tools[0].extra"),
        ({"input": "x", "include": "reasoning"}, "include"),
        ({"input": "x", "include": [1]}, "include[0]"),
        ({"input": "x", "conversation": 5}, "conversation"),
        ({"input": "x", "conversation": "bad id!"}, "conversation"),
        ({"input": "x", "conversation": {"id": "bad id!"}}, "conversation.id"),
        ({"input": "x", "conversation": {}}, "conversation.id"),
        ({"input": "x", "previous_response_id": "msg_1"}, "previous_response_id"),
        ({"input": "x", "previous_response_id": "resp_a b"}, "previous_response_id"),
        ({"input": "x", "previous_response_id": 7}, "previous_response_id"),
        ({"input": "x", "model": 4}, "model"),
        ({"input": "x", "instructions": ["a"]}, "instructions"),
        ({"input": "x", "service_tier": "gold"}, "service_tier"),
        ({"input": "x", "safety_identifier": "s" * 65}, "safety_identifier"),
        ({"input": "x", "text": {"format": {"type": "xml"}}}, "text.format.type"),
        ({"input": "x", "reasoning": "high"}, "reasoning"),
        ({"input": "x", "agent_reference": {"version": "1"}}, "agent_reference.name"),
        ({"input": "x", "agent": 3}, "agent"),
        ({"input": "x", "agent": {"type": "agent_id", "name": "a"}}, "agent.type"),
        # input items
        ({"input": ["hi"]}, "input[0]"),
        ({"input": [{"content": "hi"}]}, "input[0].type"),
        ({"input": [{"type": "computer_call_output"}]}, "input[0].type"),
        ({"input": [{"type": "message", "content": "hi"}]}, "input[0].role"),
        ({"input": [{"role": "tool", "content": "hi"}]}, "input[0].role"),
        ({"input": [{"role": "user"}]}, "input[0].content"),
        ({"input": [{"role": "user", "content": 3}]}, "input[0].content"),
        ({"input": [{"role": "user", "content": "x", "name": "bob"}]}, "input[0].name"),
        ({"input": [{"role": "user", "content": "x", "id": 5}]}, "input[0].id"),
        ({"input": [{"role": "user", "content": "x", "status": "done"}]}, "input[0].status"),
        ({"input": [{"role": "user", "content": ["x"]}]}, "input[0].content[0]"),
        ({"input": [{"role": "user", "content": [{"text": "x"}]}]}, "input[0].content[0].type"),
        ({"input": [{"role": "user", "content": [{"type": "input_audio"}]}]}, "input[0].content[0].type"),
        (
            {"input": [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}]},
            "input[0].content[0].type",
        ),
        (
            {
                "input": [
                    {"role": "assistant", "content": [{"type": "input_image", "image_url": "https://x"}]}
                ]
            },
            "input[0].content[0].type",
        ),
        ({"input": [{"role": "user", "content": [{"type": "input_text"}]}]}, "input[0].content[0].text"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_text", "text": 1}]}]},
            "input[0].content[0].text",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_text", "text": "x", "foo": 1}]}]},
            "input[0].content[0].foo",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image"}]}]},
            "input[0].content[0].image_url",
        ),
        (
            {
                "input": [
                    {"role": "user", "content": [{"type": "input_image", "image_url": "file:///etc/passwd"}]}
                ]
            },
            "input[0].content[0].image_url",
        ),
        (
            {
                "input": [
                    {
                        "role": "user",
                        "content": [{"type": "input_image", "image_url": "https://x", "detail": "max"}],
                    }
                ]
            },
            "input[0].content[0].detail",
        ),
        (
            {"input": [{"role": "user", "content": [{"type": "input_file", "filename": "a"}]}]},
            "input[0].content[0].file_id",
        ),
        (
            {
                "input": [
                    {
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": "x", "annotations": "a"}],
                    }
                ]
            },
            "input[0].content[0].annotations",
        ),
        ({"input": [{"role": "assistant", "content": [{"type": "refusal"}]}]}, "input[0].content[0].refusal"),
        (
            {
                "input": [
                    {"role": "user", "content": "ok"},
                    {"role": "user", "content": [{"type": "input_text", "text": "a"}, {"type": "bogus"}]},
                ]
            },
            "input[1].content[1].type",
        ),
        ({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]}, "input[0].call_id"),
        ({"input": [{"type": "function_call", "call_id": "c", "arguments": "{}"}]}, "input[0].name"),
        (
            {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}]},
            "input[0].arguments",
        ),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "f"}]}, "input[0].arguments"),
        (
            {"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "", "x": 1}]},
            "input[0].x",
        ),
        ({"input": [{"type": "function_call_output", "output": "x"}]}, "input[0].call_id"),
        ({"input": [{"type": "function_call_output", "call_id": "", "output": "x"}]}, "input[0].call_id"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c" * 65, "output": "x"}]},
            "input[0].call_id",
        ),
        ({"input": [{"type": "function_call_output", "call_id": 1, "output": "x"}]}, "input[0].call_id"),
        ({"input": [{"type": "function_call_output", "call_id": "c"}]}, "input[0].output"),
        ({"input": [{"type": "function_call_output", "call_id": "c", "output": 5}]}, "input[0].output"),
        (
            {
                "input": [
                    {
                        "type": "function_call_output",
                        "call_id": "c",
                        "output": [{"type": "refusal", "refusal": "r"}],
                    }
                ]
            },
            "input[0].output[0].type",
        ),
        ({"input": [{"type": "item_reference"}]}, "input[0].id"),
        ({"input": [{"type": "item_reference", "id": "x", "extra": 1}]}, "input[0].extra"),
    ],
)
def test_rejects(body: dict[str, Any], param: str) -> None:
    err = _bad(copy.deepcopy(body))
    assert err.param == param, err
    assert err.body()["error"]["param"] == param


@pytest.mark.parametrize("body", [None, [], "x", 1, True])
def test_rejects_non_object(body: object) -> None:
    _bad(body)


def test_unknown_parameter_message() -> None:
    err = _bad({"input": "x", "temprature": 1})
    assert err.code == "unknown_parameter"
    assert err.message == "Unknown parameter: 'temprature'."


def test_background_error_explains() -> None:
    assert "store" in _bad({"input": "x", "background": True, "store": False}).message


def test_input_required_message() -> None:
    assert "input is required" in _bad({"model": "m"}).message


def test_big_input_string_refused_not_truncated() -> None:
    err = _bad({"input": BIG})
    assert err.code == "string_above_max_length"


@pytest.mark.parametrize(
    "items",
    [
        [],
        [{"id": "msg_1", "type": "message", "role": "user", "content": 'héllo \u2028 "q" \\ 😀'}],
        [
            {"id": "fc_1", "type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"id": "x", "type": "function_call_output", "call_id": "c", "output": [1.5, -0.0, 1e300, None]},
        ],
    ],
)
def test_stored_form_with_items_encoded_once_is_the_same_text(items: list[dict[str, Any]]) -> None:
    req = dataclasses.replace(
        parse_create_request({"input": "x", "metadata": {"k": "v"}, "temperature": 0.5}), input_items=items
    )
    encoded = encode_items(items)
    assert encoded is not None
    assert req.to_json(encoded) == req.to_json()
    assert [e.decode() for e in encoded] == [dumps(i) for i in items]


def test_an_item_orjson_refuses_is_encoded_whole() -> None:
    items = [{"id": "m", "type": "message", "role": "user", "content": "x", "n": 2**70}]
    assert encode_items(items) is None
    req = dataclasses.replace(parse_create_request({"input": "x"}), input_items=items)
    assert json.loads(req.to_json())["input_items"][0]["n"] == 2**70
