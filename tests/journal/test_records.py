"""What a model call's record holds (issue 37): the updates of a real stream (agent-framework's
OpenAI chat client against the fake model), coalesced into few small updates, replay as the
same response: the same messages and message ids, text, tool calls, usage and finish reason."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agent_framework import ChatResponse, ChatResponseUpdate, Message, tool
from agent_framework_openai import OpenAIChatCompletionClient

from durable_responses.runtime.journal import recorded_call_ids
from durable_responses.runtime.journal.codec import decode_stream, encode_content, encode_stream
from durable_responses.store import JournalRow
from durable_responses.testing import FakeModel


@tool
async def look_up(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id} is fine"


def _stream(url: str, text: str) -> list[ChatResponseUpdate]:
    # One model call, as the journal's chat middleware sees it: the client does not run the tool.
    client = OpenAIChatCompletionClient(
        model="fake", api_key="k", base_url=url, function_invocation_configuration={"enabled": False}
    )

    async def run() -> list[ChatResponseUpdate]:
        stream = client.get_response([Message("user", [text])], stream=True, options={"tools": [look_up]})
        return [u async for u in stream]

    return asyncio.run(run())


def _seen(response: ChatResponse[Any]) -> dict[str, Any]:
    """What a replay must give again: each message's id, role, author, text and tool calls, the
    usage, the finish reason, the ids."""
    return {
        "messages": [
            {
                "id": m.message_id,
                "role": str(m.role),
                "author": m.author_name,
                "text": m.text,
                "calls": [(c.call_id, c.name, c.arguments) for c in m.contents if c.type == "function_call"],
                "types": [c.type for c in m.contents],
            }
            for m in response.messages
        ],
        "usage": response.usage_details,
        "finish_reason": str(response.finish_reason),
        "response_id": response.response_id,
        "model": response.model,
    }


@pytest.mark.parametrize("text", ["look_up order_id=B1", "tell me about order B1 please, in some detail"])
def test_a_recorded_stream_replays_as_the_same_response_in_few_small_updates(text: str) -> None:
    with FakeModel(token_delay=0.0) as fake:
        live = _stream(fake.env("chat")["FAKE_MODEL_URL"], text)
    data = encode_stream(live)
    replayed = decode_stream(data)
    assert _seen(ChatResponse.from_updates(replayed)) == _seen(ChatResponse.from_updates(live))
    assert len(replayed) <= 3 < len(live), (len(replayed), len(live))
    # The envelope (ids, model, time) once, not once per token.
    first = live[0]
    assert first.message_id and data.count(first.message_id) == 2  # its message id and response id
    one_by_one = json.dumps([[encode_content(c) for c in u.contents] for u in live], separators=(",", ":"))
    assert len(data) < len(one_by_one) + 300, (len(data), len(one_by_one))


def test_a_record_of_the_first_encoding_still_replays() -> None:
    """A record written before the coalescing encoding (one entry per streamed update)."""
    body = {
        "updates": [
            {"c": ["Hel"], "role": "assistant", "message_id": "m1", "response_id": "r1"},
            {"c": [{"f": {"type": "text", "text": "lo"}}], "role": "assistant", "message_id": "m1"},
            {
                "d": ChatResponseUpdate(
                    contents=[], role="assistant", message_id="m1", finish_reason="stop"
                ).to_dict()
            },
        ]
    }
    response = ChatResponse.from_updates(decode_stream(json.dumps(body)))
    assert [(m.message_id, m.text) for m in response.messages] == [("m1", "Hello")]
    assert str(response.finish_reason) == "stop" and response.response_id == "r1"


def test_a_recorded_tool_call_is_known_by_its_call_id() -> None:
    """Recovery keeps open a function call item the client saw when the journal recorded the
    model call that made it (its replay announces the same call id): `recorded_call_ids`."""
    with FakeModel(token_delay=0.0) as fake:
        live = _stream(fake.env("chat")["FAKE_MODEL_URL"], "look_up order_id=B1")
    [call_id] = {c.call_id for u in live for c in u.contents if c.type == "function_call" and c.call_id}
    row = JournalRow("", "agent", "model:1", "done", "d" * 64, encode_stream(live), 0.0)
    assert recorded_call_ids([row]) == {call_id}
    assert recorded_call_ids([JournalRow("", "agent", "tool:x", "intent", "d" * 64, "null", 0.0)]) == set()
