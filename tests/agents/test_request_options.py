"""Request options reach the agent, or are refused; never silently dropped (issue 35 item 2).

Real agents on agent-framework's real OpenAI clients (chat completions and Responses) against
the fake model, hosted on SQLite and PostgreSQL, called with the unmodified openai client (and
the Vercel AI SDK's `generateObject`, tests/node/generate_object.mjs). The fake model's request
log is the proof that an option reached the model: what the agent's client sent, as sent.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from durable_responses.testing import FakeCall, FakeModel
from tests.agents.hosted import Servers, api, dialect, fake, servers, stream_turn, tool_runs
from tests.surface import node

__all__ = ["api", "dialect", "fake", "servers"]  # fixtures


class Order(BaseModel):
    order_id: str
    quantity: int
    express: bool


def _sent(call: FakeCall, api: str) -> dict[str, Any]:
    """The options of one model call as the agent's client sent them, in Responses terms."""
    body = call.request
    if api == "responses":
        fmt = (body.get("text") or {}).get("format")
        system = [
            i["content"] if isinstance(i["content"], str) else " ".join(p["text"] for p in i["content"])
            for i in body["input"]
            if isinstance(i, dict) and i.get("role") in ("system", "developer")
        ]
        return {
            "instructions": "\n".join([*filter(None, [body.get("instructions")]), *system]) or None,
            "format": fmt,
            "tool_choice": body.get("tool_choice"),
            "max_tokens": body.get("max_output_tokens"),
            "temperature": body.get("temperature"),
            "top_p": body.get("top_p"),
            "parallel_tool_calls": body.get("parallel_tool_calls"),
            "metadata": body.get("metadata"),
            "reasoning": body.get("reasoning"),
        }
    rf = body.get("response_format")
    fmt = None
    if isinstance(rf, dict) and rf.get("type") == "json_schema":
        fmt = {"type": "json_schema", **rf["json_schema"]}
    elif isinstance(rf, dict):
        fmt = rf
    tool_choice = body.get("tool_choice")
    if isinstance(tool_choice, dict) and "function" in tool_choice:
        tool_choice = {"type": "function", "name": tool_choice["function"]["name"]}
    return {
        "instructions": "\n".join(
            m["content"] if isinstance(m["content"], str) else " ".join(p["text"] for p in m["content"])
            for m in body["messages"]
            if m["role"] == "system"
        )
        or None,
        "format": fmt,
        "tool_choice": tool_choice,
        "max_tokens": body.get("max_completion_tokens", body.get("max_tokens")),
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "parallel_tool_calls": body.get("parallel_tool_calls"),
        "metadata": body.get("metadata"),
        "reasoning": {"effort": body["reasoning_effort"]} if body.get("reasoning_effort") else None,
    }


def test_parse_with_a_pydantic_model_returns_it_and_every_option_reaches_the_model(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """`responses.parse(text_format=Order)` returns a parsed `Order`; the model call shows the
    instructions, the JSON schema, tool_choice, the token limit, temperature, top_p,
    parallel_tool_calls, metadata and reasoning as the request gave them; the response echoes
    them."""
    tee = servers.get("tool_agent", dialect)
    mark = fake.mark()
    parsed = tee.client.responses.parse(
        model="fake-model",
        input="an order please",
        instructions="Answer as JSON.",
        text_format=Order,
        tool_choice="none",
        max_output_tokens=200,
        temperature=0.25,
        top_p=0.5,
        parallel_tool_calls=False,
        metadata={"ticket": "T-1"},
        reasoning={"effort": "low"},
    )
    assert parsed.status == "completed", parsed.error
    assert isinstance(parsed.output_parsed, Order), parsed.output_text
    assert parsed.output_parsed == Order(order_id="order_id_value", quantity=1, express=True)
    (call,) = fake.calls_since(mark)
    sent = _sent(call, api)
    assert sent["instructions"] and "Answer as JSON." in sent["instructions"]
    assert sent["format"]["type"] == "json_schema" and sent["format"]["name"] == "Order"
    assert sent["format"]["schema"]["properties"].keys() == {"order_id", "quantity", "express"}
    assert sent["tool_choice"] == "none"
    assert sent["max_tokens"] == 200
    assert sent["temperature"] == 0.25 and sent["top_p"] == 0.5
    # (OpenAI's chat completions take metadata only for stored completions: not sent there.)
    assert sent["metadata"] == ({"ticket": "T-1"} if api == "responses" else None)
    assert sent["reasoning"] == {"effort": "low"}
    # (Without tools in the call, a client leaves parallel_tool_calls out: tool_choice none.)
    echoed = tee.http.get(f"/v1/responses/{parsed.id}").json()
    assert echoed["temperature"] == 0.25 and echoed["top_p"] == 0.5 and echoed["max_output_tokens"] == 200
    assert echoed["tool_choice"] == "none" and echoed["text"]["format"]["name"] == "Order"
    assert echoed["instructions"] == "Answer as JSON." and echoed["reasoning"]["effort"] == "low"


def test_tool_choice_none_calls_no_tool_and_required_forces_one(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """The user names the tool, `tool_choice: "none"`: no tool is called (the model was told);
    `{"type": "function", "name": ...}` with a text that names no tool: that tool is called."""
    tee = servers.get("tool_agent", dialect)
    none = stream_turn(tee, fake, input="lookup_order order_id=A1", tool_choice="none")
    assert none.types == ["message"] and none.calls == {"assistant": 1}
    assert tool_runs(tmp_path) == []
    assert fake.calls[-1].request.get("tool_choice") == "none"
    forced = stream_turn(
        tee, fake, input="where is my parcel?", tool_choice={"type": "function", "name": "lookup_order"}
    )
    assert forced.types == ["mcp_call", "message"], forced.types
    assert [r["tool"] for r in tool_runs(tmp_path)] == ["lookup_order"]


def test_max_output_tokens_truncation_is_incomplete(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """A reply the model cut at the token limit: the response is `incomplete`, reason
    `max_output_tokens` (streamed as `response.incomplete`), its text the 16 tokens it got."""
    tee = servers.get("tool_agent", dialect)
    turn = stream_turn(tee, fake, input="tell me a long story tokens=60", max_output_tokens=16)
    assert turn.response.status == "incomplete"
    assert turn.response.incomplete_details is not None
    assert turn.response.incomplete_details.reason == "max_output_tokens"
    assert turn.events[-1]["type"] == "response.incomplete"
    sent = _sent(fake.calls[-1], api)
    assert sent["max_tokens"] == 16
    assert turn.texts and len(turn.texts[0].split()) <= 16
    short = stream_turn(tee, fake, input="short", max_output_tokens=64)
    assert short.response.status == "completed" and short.response.incomplete_details is None
    # The same without a stream (JSON), and with store=false (nothing written).
    for store in (True, False):
        cut = tee.client.responses.create(
            model="fake-model", input="tell me a long story tokens=60", max_output_tokens=16, store=store
        )
        assert cut.status == "incomplete", (store, cut.status)
        assert cut.incomplete_details is not None and cut.incomplete_details.reason == "max_output_tokens"
        assert cut.output_text


def test_max_tool_calls_holds_the_tools_run(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """`max_tool_calls: 1` and a model that calls two tools at once: one runs, the other does not
    (its `mcp_call` output says why, and so does what the model was told)."""
    tee = servers.get("shop_agent", dialect)
    turn = stream_turn(tee, fake, input="lookup_order and track_parcel order_id=A1", max_tool_calls=1)
    assert turn.response.status == "completed", turn.response.error
    assert turn.types == ["mcp_call", "mcp_call", "message"], turn.types
    outputs = sorted(i.output for i in turn.items("mcp_call"))
    assert len(tool_runs(tmp_path)) == 1
    assert sum("max_tool_calls" in o for o in outputs) == 1, outputs
    assert "max_tool_calls" in turn.texts[0]
    assert turn.response.max_tool_calls == 1


def test_an_app_without_a_model_refuses_what_it_cannot_honour_and_echoes_nothing_it_ignored(
    servers: Servers, dialect: str, api: str, fake: FakeModel
) -> None:
    """A workflow with no agent (nothing takes model options): a structured format or a forced
    tool is a 400 `unsupported_parameter` naming it; sampling options are ignored and echoed as
    not applied (null, or the schema's default where it requires a number)."""
    tee = servers.get("no_agents", dialect)
    refused = tee.post(
        {
            "model": "m",
            "input": "hi",
            "text": {"format": {"type": "json_schema", "name": "X", "schema": {"type": "object"}}},
        }
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "unsupported_parameter"
    assert refused.json()["error"]["param"] == "text.format"
    forced = tee.post({"model": "m", "input": "hi", "tool_choice": "required"})
    assert forced.status_code == 400 and forced.json()["error"]["param"] == "tool_choice"
    ok = tee.client.responses.create(
        model="m", input="hi", temperature=0.3, max_output_tokens=50, instructions="x"
    )
    assert ok.status == "completed"
    assert ok.temperature == 1.0 and ok.max_output_tokens is None and ok.instructions is None


def test_workflow_agents_get_the_options_and_the_final_output_is_structured(
    servers: Servers, dialect: str, api: str, fake: FakeModel
) -> None:
    """Sequential(writer, reviewer): every agent's model call gets the request's options (the
    instructions added to the agent's own), and with `text.format` the final output parses."""
    tee = servers.get("sequential", dialect)
    mark = fake.mark()
    parsed = tee.client.responses.parse(
        model="fake-model",
        input="an order please",
        instructions="Be brief.",
        text_format=Order,
        temperature=0.5,
        max_output_tokens=300,
    )
    assert parsed.status == "completed", parsed.error
    assert isinstance(parsed.output_parsed, Order), parsed.output_text
    calls = fake.calls_since(mark)
    assert {c.agent for c in calls} == {"writer", "reviewer"}
    for call in calls:
        sent = _sent(call, api)
        assert sent["temperature"] == 0.5 and sent["max_tokens"] == 300
        assert sent["format"]["name"] == "Order"
        assert "Be brief." in sent["instructions"] and "You are" in sent["instructions"]
    # The next turn without options: none of the first turn's options are applied again.
    conversation = f"conv_{uuid.uuid4().hex}"
    tee.client.responses.create(model="fake-model", input="one", temperature=0.5, conversation=conversation)
    mark = fake.mark()
    again = tee.client.responses.create(model="fake-model", input="two", conversation=conversation)
    assert again.status == "completed", again.error
    for call in fake.calls_since(mark):
        assert _sent(call, api)["temperature"] is None


def test_vercel_generate_object_returns_the_object(
    servers: Servers, dialect: str, api: str, fake: FakeModel
) -> None:
    """The Vercel AI SDK's `generateObject` (zod schema) against a hosted agent returns the object;
    the model got the schema."""
    tee = servers.get("tool_agent", dialect)
    mark = fake.mark()
    out = node.run("generate_object.mjs", {"BASE_URL": tee.base_url + "/v1"})
    assert json.loads(out.strip().splitlines()[-1]) == {"city": "city_value", "days": 1}
    (call,) = fake.calls_since(mark)
    sent = _sent(call, api)
    assert sent["format"]["type"] == "json_schema"
    assert sent["format"]["schema"]["properties"].keys() == {"city", "days"}
