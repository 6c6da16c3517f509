"""Plain agent-framework `Agent`s hosted by the real server, on agent-framework's real OpenAI
clients (`chat`: OpenAIChatCompletionClient, `responses`: OpenAIChatClient) against the fake
model server, through the unmodified openai client, on SQLite and PostgreSQL (issue 12).

Every turn is streamed with the SDK's `responses.stream(...)`, and `finish_turn` proves for each:
every raw event valid against the Open Responses schema (`mcp_approval_request` against the SDK's
own type), the full replay gap-free and equal to the live stream payload for payload, the stored
Response valid, and its usage equal to what the fake model billed for that response's calls.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from durable_responses.testing import FakeModel
from tests.agents.hosted import (
    Servers,
    Tee,
    api,
    approval_answer,
    background_turn,
    check_events,
    dialect,
    fake,
    servers,
    stream_turn,
    tool_runs,
)

__all__ = ["api", "dialect", "fake", "servers"]  # fixtures

LOOKUP_RESULT = "order A1 shipped on 2026-11-30"
REJECTED = "Error: Tool call invocation was rejected by user."


def _order(events: list[dict[str, Any]], kind: str) -> list[tuple[int, str]]:
    return [(e["output_index"], e["item"]["type"]) for e in events if e["type"] == kind]


def test_tool_agent_shows_the_call_then_its_result_then_the_answer(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """A tool the agent runs itself is one `mcp_call` item (name, arguments, output), opened and
    closed before the message quoting its result opens: call, result, then the text, in the
    order they happened. No `function_call` asks the client to run it. The tool ran once; usage
    is both model calls'."""
    tee = servers.get("tool_agent", dialect)
    turn = stream_turn(tee, fake, input="lookup_order order_id=A1")
    assert turn.response.status == "completed"
    assert turn.types == ["mcp_call", "message"]
    call, message = turn.response.output
    assert call.name == "lookup_order" and json.loads(call.arguments) == {"order_id": "A1"}
    assert call.status == "completed" and call.output == LOOKUP_RESULT and call.error is None
    assert call.server_label == "assistant"  # the app's name (its agent's)
    assert message.content[0].text == f"assistant: Tool lookup_order returned: {LOOKUP_RESULT}"
    opened_closed = [
        (e["type"].rsplit(".", 1)[-1], e["output_index"])
        for e in turn.events
        if e["type"] in ("response.output_item.added", "response.output_item.done")
    ]
    assert opened_closed == [("added", 0), ("done", 0), ("added", 1), ("done", 1)]
    added = next(e["item"] for e in turn.events if e["type"] == "response.output_item.added")
    assert added["type"] == "mcp_call" and added["status"] == "in_progress"
    assert turn.calls == {"assistant": 2}
    assert len(tool_runs(tmp_path)) == 1


def test_server_tools_function_call_keeps_the_foundry_representation(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """`DURABLE_RESPONSES_SERVER_TOOLS=function_call`: a tool the agent runs itself is its
    function_call, then its function_call_output (both completed), then the message."""
    tee = servers.get("tool_agent", dialect, {"DURABLE_RESPONSES_SERVER_TOOLS": "function_call"})
    turn = stream_turn(tee, fake, input="lookup_order order_id=A1")
    assert turn.response.status == "completed"
    assert turn.types == ["function_call", "function_call_output", "message"]
    call, result, _ = turn.response.output
    assert call.name == "lookup_order" and json.loads(call.arguments) == {"order_id": "A1"}
    assert call.status == "completed" and result.status == "completed"
    assert result.call_id == call.call_id and result.output == LOOKUP_RESULT
    expected = [(0, "function_call"), (1, "function_call_output"), (2, "message")]
    assert _order(turn.events, "response.output_item.added") == expected
    assert _order(turn.events, "response.output_item.done") == expected
    assert len(tool_runs(tmp_path)) == 1


WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}


def test_request_declared_tool_stays_a_call_the_client_answers(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """A tool declared by the request (`tools`) is a bare function_call the server does not run;
    the client's function_call_output (with previous_response_id) reaches the model."""
    tee = servers.get("tool_agent", dialect)
    first = stream_turn(tee, fake, input="get_weather city=Paris", tools=[WEATHER_TOOL])
    assert first.types == ["function_call"]
    call = first.response.output[0]
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Paris"}
    assert call.status == "completed"
    second = stream_turn(
        tee,
        fake,
        previous_response_id=first.response.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}],
        tools=[WEATHER_TOOL],
    )
    assert second.types == ["message"]
    assert second.texts == ["assistant: Tool get_weather returned: sunny, 21 C"]
    assert first.calls == second.calls == {"assistant": 1}
    assert tool_runs(tmp_path) == []


def test_a_server_tool_called_beside_a_request_declared_tool_is_not_the_clients_call(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """One model turn calls the request's `get_weather` (the client's) and `lookup_order` (the
    server's): agent-framework holds the second until the first is answered. The pause shows
    only the client's function_call; its function_call_output alone continues the turn, and
    `lookup_order` then runs once, an `mcp_call` with its name, arguments and output."""
    tee = servers.get("tool_agent", dialect)
    first = stream_turn(
        tee, fake, input="get_weather city=Paris and lookup_order order_id=A1", tools=[WEATHER_TOOL]
    )
    assert first.types == ["function_call"], first.response.output
    call = first.response.output[0]
    assert call.name == "get_weather" and tool_runs(tmp_path) == []
    answer = [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}]
    second = stream_turn(
        tee, fake, previous_response_id=first.response.id, input=answer, tools=[WEATHER_TOOL]
    )
    assert second.types == ["mcp_call", "message"], second.response.output
    ran = second.response.output[0]
    assert (ran.name, json.loads(ran.arguments), ran.output) == (
        "lookup_order",
        {"order_id": "A1"},
        "order A1 shipped on 2026-11-30",
    )
    assert [r["tool"] for r in tool_runs(tmp_path)] == ["lookup_order"]


def _ask_refund(tee: Tee, fake: FakeModel, **link: Any) -> Any:
    turn = stream_turn(tee, fake, input="refund_payment order_id=A1 amount=5", **link)
    assert turn.types == ["mcp_approval_request"], turn.types
    request = turn.response.output[0]
    assert request.name == "refund_payment" and request.server_label == "cashier"
    assert json.loads(request.arguments) == {"order_id": "A1", "amount": 5.0}
    return turn


def test_approval_agent_approve_and_reject(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """A plain Agent's approval-gated tool is an `mcp_approval_request`; approved (its
    `mcp_approval_response`), the tool runs exactly once and its result reaches the model;
    rejected, the tool never runs and the model is told it was rejected. An unknown request id
    is a 400, an answered one a 409. Each path is taken once via previous_response_id and once
    via the same conversation (which link takes which path alternates with the client)."""
    conversation = {"conversation": f"conv_{uuid.uuid4().hex}"}
    approve_link, reject_link = (
        ("previous", "conversation") if api == "chat" else ("conversation", "previous")
    )
    tee = servers.get("approval_agent", dialect)

    def link(kind: str, turn: Any) -> dict[str, Any]:
        return {"previous_response_id": turn.response.id} if kind == "previous" else conversation

    # Approve.
    asked = _ask_refund(tee, fake, **(conversation if approve_link == "conversation" else {}))
    request_id = asked.response.output[0].id
    assert tool_runs(tmp_path) == [], "the tool ran before its approval"
    unknown = tee.post(
        {"model": "m", **link(approve_link, asked), "input": approval_answer("af-call-unknown", True)},
    )
    assert unknown.status_code == 400, unknown.text
    assert unknown.json()["error"]["code"] == "unknown_approval_request"
    approved = stream_turn(tee, fake, input=approval_answer(request_id, True), **link(approve_link, asked))
    assert approved.response.status == "completed", approved.response.error
    assert approved.types == ["mcp_call", "message"]
    call = approved.response.output[0]
    assert call.name == "refund_payment" and call.approval_request_id == request_id
    assert json.loads(call.arguments) == {"order_id": "A1", "amount": 5.0}
    assert call.output == "refunded 5.00 for order A1"
    assert approved.texts == ["cashier: Tool refund_payment returned: refunded 5.00 for order A1"]
    assert [r["tool"] for r in tool_runs(tmp_path)] == ["refund_payment"]
    again = tee.post(
        {"model": "m", **link(approve_link, asked), "input": approval_answer(request_id, True)},
    )
    assert again.status_code == 409, again.text
    assert again.json()["error"]["code"] == "approval_already_answered"

    # Reject (a new request, on a new chain or the next turn of the conversation).
    asked2 = _ask_refund(tee, fake, **(conversation if reject_link == "conversation" else {}))
    request2 = asked2.response.output[0].id
    assert request2 != request_id
    rejected = stream_turn(
        tee,
        fake,
        input=approval_answer(request2, False, reason="not this one"),
        **link(reject_link, asked2),
    )
    assert rejected.response.status == "completed", rejected.response.error
    assert rejected.types[-1] == "message"
    assert "mcp_call" not in rejected.types, rejected.types  # it never ran (as OpenAI's MCP shows)
    assert rejected.texts[-1].startswith(f"cashier: Tool refund_payment returned: {REJECTED}")
    # The model was told, in the tool result it got.
    last_prompt = fake.calls[-1].prompt
    assert any(t.role == "tool" and REJECTED in t.text for t in last_prompt.dialogue), last_prompt.dialogue
    assert len(tool_runs(tmp_path)) == 1, "a rejected tool ran"
    again2 = tee.post(
        {"model": "m", **link(reject_link, asked2), "input": approval_answer(request2, True)},
    )
    assert again2.status_code == 409, again2.text
    assert again2.json()["error"]["code"] == "approval_already_answered"


def test_reasoning_becomes_reasoning_items_and_usage_details(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """A model that reasons (the fake reasons when the user says "think"): over the Responses
    API each model call's reasoning summary is a `reasoning` item with its summary events, before
    the call's output; over chat completions reasoning is opaque (no text is invented). Either
    way the reasoning and cached tokens of every call are in the usage."""
    tee = servers.get("tool_agent", dialect)
    turn = stream_turn(tee, fake, input="lookup_order order_id=A1 and think")
    assert turn.billed.reasoning_tokens > 0 and turn.billed.cached_tokens > 0
    assert turn.response.usage.output_tokens_details.reasoning_tokens == turn.billed.reasoning_tokens
    kinds = [i for i in turn.types if i != "reasoning"]
    assert kinds == ["mcp_call", "message"]
    reasoning = turn.items("reasoning")
    if api == "responses":
        assert turn.types == ["reasoning", "mcp_call", "reasoning", "message"]
        summary = 'Thinking about "lookup_order order_id=A1 and think" step by step.'
        assert [[s.text for s in r.summary] for r in reasoning] == [[summary], [summary]]
        kinds_seen = {e["type"] for e in turn.events}
        assert {
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
        } <= kinds_seen
    else:
        assert all(not r.summary for r in reasoning), "reasoning text invented over chat completions"


@pytest.mark.parametrize("app", ["tool_agent", "sequential"])
def test_model_error_fails_the_response_with_the_models_code(
    servers: Servers, dialect: str, api: str, fake: FakeModel, app: str
) -> None:
    """A model error (the fake's `model_error:<code>`) ends the response `failed` with that code
    and a message naming the model's error, streamed (a plain agent) and in the background (a
    workflow too); the replay of each is a valid, complete sequence."""
    tee = servers.get(app, dialect)
    streamed = stream_turn(tee, fake, input="hello model_error:rate_limit_exceeded")
    background = background_turn(tee, fake, input="hello model_error:context_length_exceeded")
    for turn, code, words in (
        (streamed, "rate_limit_exceeded", "Rate limit reached"),
        (background, "context_length_exceeded", "maximum context length"),
    ):
        assert turn.response.status == "failed"
        assert turn.events[-1]["type"] == "response.failed"
        error = turn.response.error
        assert error is not None and error.code == code, error
        assert words in error.message and "model" in error.message, error.message
        check_events(turn.events)
