"""Tests for durable_responses.runtime.apps.messages: Responses items <-> agent_framework messages, request tools."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

import pytest
from agent_framework import FunctionTool, Message

from durable_responses.examples.echo_agent import echo_agent
from durable_responses.runtime.apps.messages import (
    ReplyTypeError,
    declaration_tools,
    function_output_value,
    input_items_to_messages,
    output_items_to_messages,
)

PNG_DATA_URL = "data:image/png;base64,iVBORw0KGgo="


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": list(parts)}


def test_text_messages_keep_roles_and_order() -> None:
    items = [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "be brief"}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev note"}]},
        _user({"type": "input_text", "text": "hello"}, {"type": "input_text", "text": "world"}),
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
        _user({"type": "input_text", "text": "again"}),
        _user({"type": "input_text", "text": "and again"}),
    ]
    messages = input_items_to_messages(items)
    assert [m.role for m in messages] == ["system", "system", "user", "assistant", "user", "user"]
    assert [m.text for m in messages] == ["be brief", "dev note", "hello world", "hi", "again", "and again"]
    # Consecutive user items stay separate messages.
    assert len(messages) == len(items)


def test_string_content_and_refusal() -> None:
    messages = input_items_to_messages(
        [
            {"type": "message", "role": "user", "content": "plain"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "refusal", "refusal": "no can do"}],
            },
        ]
    )
    assert [m.text for m in messages] == ["plain", "no can do"]


def test_images() -> None:
    items = [
        _user(
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": PNG_DATA_URL, "detail": "high"},
            {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "auto"},
            {"type": "input_image", "image_url": "https://example.com/noext"},
            {"type": "input_image", "file_id": "file_123"},
        )
    ]
    (message,) = input_items_to_messages(items)
    text, data, uri, bare, hosted = message.contents
    assert text.type == "text"
    assert data.type == "data" and data.media_type == "image/png" and data.uri == PNG_DATA_URL
    assert data.additional_properties == {"detail": "high"}
    assert uri.type == "uri" and uri.media_type == "image/jpeg" and uri.uri == "https://example.com/cat.jpg"
    assert bare.type == "uri" and bare.media_type == "image/*"
    assert hosted.type == "hosted_file" and hosted.file_id == "file_123"


def test_function_call_and_output() -> None:
    items = [
        _user({"type": "input_text", "text": "weather?"}),
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]
    user, call_msg, result_msg = input_items_to_messages(items)
    assert user.role == "user"
    assert call_msg.role == "assistant"
    (call,) = call_msg.contents
    assert (call.type, call.call_id, call.name, call.arguments) == (
        "function_call",
        "c1",
        "get_weather",
        '{"city":"Oslo"}',
    )
    assert result_msg.role == "tool"
    (result,) = result_msg.contents
    assert (result.type, result.call_id, result.result) == ("function_result", "c1", "sunny")


def test_function_call_output_answers_a_request_info() -> None:
    (message,) = input_items_to_messages(
        [{"type": "function_call_output", "call_id": "req-1", "output": "approve"}]
    )
    assert message.role == "tool"
    assert message.contents[0].call_id == "req-1" and message.contents[0].result == "approve"


def test_function_call_output_with_content_parts() -> None:
    (message,) = input_items_to_messages(
        [{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "part"}]}]
    )
    assert message.contents[0].result == "part"


def test_function_call_arguments_as_object() -> None:
    (message,) = input_items_to_messages(
        [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]
    )
    assert json.loads(message.contents[0].arguments) == {"a": 1}


def test_references_and_reasoning_are_skipped() -> None:
    items = [
        {"type": "item_reference", "id": "msg_1"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        _user({"type": "input_text", "text": "kept"}),
    ]
    assert [m.text for m in input_items_to_messages(items)] == ["kept"]


def test_output_items_to_messages() -> None:
    items = [
        {
            "type": "message",
            "id": "msg_a",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "first", "annotations": []}],
        },
        {"type": "function_call", "id": "fc_1", "call_id": "c9", "name": "request_info", "arguments": "{}"},
        {"type": "reasoning", "id": "rs", "summary": []},
    ]
    text, call = output_items_to_messages(items)
    assert text.role == "assistant" and text.text == "first" and text.message_id == "msg_a"
    assert (
        call.role == "assistant"
        and call.contents[0].type == "function_call"
        and call.contents[0].call_id == "c9"
    )


def test_declaration_tools() -> None:
    tools = [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
            "strict": True,
        },
        {"type": "function", "name": "no_params"},
        {
            "type": "function",
            "function": {"name": "nested", "parameters": {"type": "object", "properties": {}}},
        },
        {"type": "web_search"},
        {"type": "file_search", "vector_store_ids": ["vs"]},
    ]
    declared = declaration_tools(tools)
    assert [t.name for t in declared] == ["get_weather", "no_params", "nested"]
    weather = declared[0]
    assert isinstance(weather, FunctionTool) and weather.declaration_only
    assert weather.description == "Weather for a city"
    assert weather.parameters()["properties"] == {"city": {"type": "string"}}
    assert declared[1].parameters() == {"type": "object", "properties": {}}


async def test_declaration_tools_are_never_executed() -> None:
    (tool,) = declaration_tools(
        [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}]
    )
    with pytest.raises(Exception, match="declaration only"):
        await tool.invoke(arguments={})


async def test_declared_tools_reach_the_chat_client_and_come_back_as_calls() -> None:
    tools = declaration_tools([{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}])
    agent = echo_agent()
    messages = input_items_to_messages([_user({"type": "input_text", "text": "call get_weather please"})])
    updates = [u async for u in agent.run(messages, stream=True, tools=tools)]
    calls = [c for u in updates for c in u.contents if c.type == "function_call"]
    assert calls and {c.name for c in calls} == {"get_weather"}
    assert len({c.call_id for c in calls}) == 1
    assert not any(c.type == "function_result" for u in updates for c in u.contents)
    # Without the tool declared the same text is just echoed.
    plain = [u.text async for u in echo_agent().run(messages, stream=True)]
    assert "".join(plain) == "echo: call get_weather please (turn 1)"


async def test_history_from_items_reaches_the_agent() -> None:
    history = input_items_to_messages(
        [_user({"type": "input_text", "text": "one"})]
    ) + output_items_to_messages(
        [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "echo: one (turn 1)"}],
            }
        ]
    )
    new: list[Message] = input_items_to_messages([_user({"type": "input_text", "text": "two"})])
    response = await echo_agent().run(history + new)
    assert response.text == "echo: two (turn 2)"


# -- typed replies to request_info --------------------------------------------------------------


@dataclasses.dataclass
class _Ticket:
    title: str
    priority: int


class _Color(enum.Enum):
    RED = "red"
    ONE = 1


def test_function_output_value_converts_to_the_declared_type() -> None:
    from pydantic import BaseModel

    class Form(BaseModel):
        name: str
        age: int

    parts = [{"type": "input_text", "text": "a"}, {"type": "output_text", "text": "b"}]
    cases: list[tuple[Any, Any, Any]] = [
        ("text", str, "text"),
        ('"quoted"', str, '"quoted"'),  # a string type takes the text as is, never as JSON
        (parts, str, "ab"),
        ("42", int, 42),
        (" 42 ", int, 42),
        ("2", float, 2.0),
        ("2.5", float, 2.5),
        ("true", bool, True),
        ("false", bool, False),
        ("[1, 2]", list, [1, 2]),
        ('{"a": 1}', dict, {"a": 1}),
        ('{"title": "t", "priority": 2}', _Ticket, _Ticket("t", 2)),
        ('{"name": "n", "age": 3}', Form, Form(name="n", age=3)),
        ("red", _Color, _Color.RED),
        ('"red"', _Color, _Color.RED),
        ("1", _Color, _Color.ONE),
        ("anything", None, "anything"),  # no declared type: as today
    ]
    for output, response_type, expected in cases:
        value = function_output_value(output, response_type)
        assert value == expected and type(value) is type(expected), (output, response_type, value)


def test_function_output_value_says_what_was_expected() -> None:
    from pydantic import BaseModel

    class Form(BaseModel):
        name: str
        age: int

    cases: list[tuple[Any, Any, str]] = [
        ("many", int, "a JSON integer"),
        ("4.5", int, "a JSON integer"),
        ("true", int, "a JSON integer"),
        ("yes", bool, "true or false"),
        ("1", bool, "true or false"),
        ('{"title": "t"}', _Ticket, "the fields title, priority"),
        ('{"name": "n", "age": "old"}', Form, "age"),
        ("blue", _Color, '"red", 1'),
        ([{"type": "input_image", "image_url": "https://x/y.png"}], int, "non-text content parts"),
    ]
    for output, response_type, fragment in cases:
        with pytest.raises(ReplyTypeError) as exc:
            function_output_value(output, response_type)
        assert fragment in str(exc.value), (output, response_type, str(exc.value))


def test_typed_results_reach_the_function_result() -> None:
    items = [
        {"type": "function_call_output", "call_id": "r1", "output": "42"},
        {"type": "function_call_output", "call_id": "r2", "output": "as is"},
    ]
    first, second = input_items_to_messages(items, results={"r1": 42})
    assert first.contents[0].result == 42 and first.contents[0].call_id == "r1"
    assert second.contents[0].result == "as is"
