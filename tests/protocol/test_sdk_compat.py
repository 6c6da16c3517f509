"""What the openai SDK really sends is accepted, and what we build it really parses.

The SDK talks to an in-process httpx transport that runs the protocol layer: parse the body,
build the Response (or frame the events as SSE), so both directions are checked end to end.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest
from schema_validator import validate_event, validate_response

from durable_responses.protocol import events, ids, items, sse
from durable_responses.protocol.errors import ProtocolError
from durable_responses.protocol.request import parse_create_request
from durable_responses.protocol.response import build_response, usage

REPLY = "Hello there"


def _stream_frames(response_id: str, resp_args: dict[str, Any]) -> bytes:
    req = resp_args["req"]
    item_id = ids.output_item_id(response_id, 0, "message")
    final_item = items.message_item(item_id, status="completed", text=REPLY)
    done = build_response(
        req,
        response_id=response_id,
        status="completed",
        created_at=1,
        completed_at=2,
        output=[final_item],
        usage=usage(1, 2),
    )
    seq = [
        events.response_created(build_response(req, response_id=response_id, status="queued", created_at=1)),
        events.response_in_progress(
            build_response(req, response_id=response_id, status="in_progress", created_at=1)
        ),
        events.output_item_added(0, items.message_item(item_id, status="in_progress")),
        events.content_part_added(item_id, 0, 0, items.output_text_part()),
        events.output_text_delta(item_id, 0, 0, REPLY[:5]),
        events.output_text_delta(item_id, 0, 0, REPLY[5:]),
        events.output_text_done(item_id, 0, 0, REPLY),
        events.content_part_done(item_id, 0, 0, items.output_text_part(REPLY)),
        events.output_item_done(0, final_item),
        events.response_completed(done),
    ]
    out = b""
    for n, event in enumerate(seq):
        event["sequence_number"] = n
        validate_event(event)
        out += sse.frame(event["type"], n, sse.dumps(event))
    return out


class FakeServer:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        try:
            req = parse_create_request(body)
        except ProtocolError as exc:
            return httpx.Response(exc.status, json=exc.body(), headers={"x-should-retry": "false"})
        response_id = ids.new_response_id()
        if req.stream:
            return httpx.Response(
                200,
                content=_stream_frames(response_id, {"req": req}),
                headers={"content-type": "text/event-stream"},
            )
        item = items.message_item(
            ids.output_item_id(response_id, 0, "message"), status="completed", text=REPLY
        )
        resp = build_response(
            req, response_id=response_id, status="completed", created_at=1, completed_at=2, output=[item]
        )
        validate_response(resp)
        return httpx.Response(200, json=resp)


@pytest.fixture
def server() -> FakeServer:
    return FakeServer()


@pytest.fixture
def client(server: FakeServer) -> openai.OpenAI:
    http = httpx.Client(transport=httpx.MockTransport(server.handle))
    return openai.OpenAI(api_key="test", base_url="http://test/v1", http_client=http, max_retries=0)


def test_string_input(client: openai.OpenAI, server: FakeServer) -> None:
    resp = client.responses.create(model="m", input="hi", metadata={"a": "b"})
    assert resp.output_text == REPLY
    assert resp.metadata == {"a": "b"}
    assert server.bodies[-1] == {"model": "m", "input": "hi", "metadata": {"a": "b"}}


def test_message_list_and_tools(client: openai.OpenAI) -> None:
    resp = client.responses.create(
        model="m",
        input=[
            {"role": "developer", "content": "be brief"},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "hi"},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": "low"},
                ],
            },
            {"role": "assistant", "content": "hello"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]},
        ],
        tools=[
            {
                "type": "function",
                "name": "get_weather",
                "description": "weather",
                "strict": True,
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        tool_choice="auto",
        instructions="sys",
        temperature=0.3,
        max_output_tokens=64,
        parallel_tool_calls=False,
        store=True,
        include=["message.output_text.logprobs"],
    )
    assert resp.tools[0].name == "get_weather"  # type: ignore[union-attr]
    assert resp.temperature == 0.3


def test_function_call_output_continuation(client: openai.OpenAI, server: FakeServer) -> None:
    resp = client.responses.create(
        model="m",
        previous_response_id="resp_" + "a" * 48,
        input=[{"type": "function_call_output", "call_id": "call_1", "output": '{"approved": true}'}],
    )
    assert resp.previous_response_id == "resp_" + "a" * 48
    assert server.bodies[-1]["input"][0]["type"] == "function_call_output"


def test_background_and_agent_reference(client: openai.OpenAI) -> None:
    resp = client.responses.create(
        input="hi",
        background=True,
        extra_body={"agent_reference": {"type": "agent_reference", "name": "my-agent", "version": "3"}},
    )
    assert resp.background is True


def test_conversation(client: openai.OpenAI) -> None:
    resp = client.responses.create(input="hi", conversation="conv_abc")
    assert resp.conversation is not None and resp.conversation.id == "conv_abc"


def test_stream_iteration(client: openai.OpenAI) -> None:
    stream = client.responses.create(model="m", input="hi", stream=True)
    types = [event.type for event in stream]
    assert types[0] == "response.created" and types[-1] == "response.completed"


def test_stream_helper_accepts_our_events(client: openai.OpenAI) -> None:
    # The helper enforces the ordering rules (created first, items opened before content, closed at the end).
    with client.responses.stream(model="m", input="hi") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert text == REPLY
    assert final.output_text == REPLY
    assert final.usage is not None and final.usage.total_tokens == 3


def test_sdk_sees_our_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(model="m", input="hi", background=True, store=False)
    assert info.value.param == "background"
    assert info.value.status_code == 400
