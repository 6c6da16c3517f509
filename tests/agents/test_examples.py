"""The shipped examples of tools, approvals and handoffs (deterministic chat clients: no model,
no network) work end to end through the openai client, on both dialects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from openai.types.responses import Response
from pydantic import BaseModel

from tests.schema_validator import validate_response
from tests.support.inprocess import InProcessServer


def _types(response: Any) -> list[str]:
    return [item.type for item in response.output]


def _validate(srv: InProcessServer, response: Any) -> None:
    body = httpx.get(f"{srv.base_url}/v1/responses/{response.id}", timeout=30).json()
    # The openai SDK's own type, strictly (its usage type requires fields the schema does not list).
    Response.model_validate(body)
    # `mcp_approval_request` and `mcp_call` are OpenAI's items, not in the Open Responses schema:
    # the SDK's own model parsed them (above); the rest is checked against the schema.
    body["output"] = [i for i in body["output"] if i.get("type") not in ("mcp_approval_request", "mcp_call")]
    validate_response(body)


def test_tools_example_runs_a_tool_and_waits_for_approval(database_url: str, tmp_path: Path) -> None:
    with InProcessServer(database_url, app="durable_responses.examples.tools:tools_agent") as srv:
        c = srv.client()
        r1 = c.responses.create(model="m", input="lookup_order order_id=A1")
        assert _types(r1) == ["mcp_call", "message"]
        assert r1.output[0].output == "order A1 shipped on 2026-11-30"
        assert "order A1 shipped" in r1.output_text
        _validate(srv, r1)
        r2 = c.responses.create(
            model="m", input="refund_payment order_id=A1 amount=5", previous_response_id=r1.id
        )
        assert _types(r2) == ["mcp_approval_request"]
        request = r2.output[0]
        assert request.name == "refund_payment" and request.server_label == "cashier"
        r3 = c.responses.create(
            model="m",
            previous_response_id=r2.id,
            input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
        )
        assert _types(r3) == ["mcp_call", "message"]
        assert r3.output[0].output == "refunded 5.00 for order A1"
        assert r3.output[0].approval_request_id == request.id
        _validate(srv, r3)


def test_handoff_example_continues_with_plain_messages(database_url: str) -> None:
    with InProcessServer(database_url, app="durable_responses.examples.handoff:support") as srv:
        c = srv.client()
        r1 = c.responses.create(model="m", input="I have a billing question")
        assert _types(r1) == ["mcp_call", "message"]
        assert r1.output[0].name == "handoff_to_billing"
        assert r1.output_text.startswith("billing:")
        r2 = c.responses.create(model="m", input="and my invoice?", previous_response_id=r1.id)
        assert _types(r2) == ["message"] and r2.output_text == 'billing: You said "and my invoice?"'
        _validate(srv, r2)
        conv = "conv_example_handoff"
        r3 = c.responses.create(model="m", input="billing please", conversation=conv)
        r4 = c.responses.create(model="m", input="thanks", conversation=conv)
        assert r3.output_text.startswith("billing:") and r4.output_text == 'billing: You said "thanks"'


def test_handoff_example_names_the_tool_it_ran_after_an_approval(database_url: str) -> None:
    """A handoff participant sends the model only what is new: after an approval, the tool's
    result without its call. The reply still names the tool (it read "Tool tool returned")."""
    with InProcessServer(database_url, app="durable_responses.examples.handoff:support") as srv:
        c = srv.client()
        r1 = c.responses.create(model="m", input="I have a billing question")
        r2 = c.responses.create(
            model="m", input="refund_payment order_id=A1 amount=5", previous_response_id=r1.id
        )
        request = next(i for i in r2.output if i.type == "mcp_approval_request")
        r3 = c.responses.create(
            model="m",
            previous_response_id=r2.id,
            input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
        )
        assert r3.output_text == "billing: Tool refund_payment returned: refunded 5.00 for order A1"


class _Refund(BaseModel):
    order_id: str
    amount: float


def test_tools_example_honours_request_options(database_url: str) -> None:
    """The example's deterministic client takes the run's options as a model would:
    `tool_choice: "none"` runs no tool, `text_format` gives the parsed object, a token limit cuts
    the reply and the response is `incomplete`."""
    with InProcessServer(database_url, app="durable_responses.examples.tools:tools_agent") as srv:
        c = srv.client()
        none = c.responses.create(model="m", input="lookup_order order_id=A1", tool_choice="none")
        assert _types(none) == ["message"]
        parsed = c.responses.parse(model="m", input="a refund", text_format=_Refund)
        assert parsed.output_parsed == _Refund(order_id="order_id_value", amount=1.5)
        cut = c.responses.create(model="m", input="a story tokens=60", max_output_tokens=16)
        assert cut.status == "incomplete" and cut.incomplete_details is not None
        assert cut.incomplete_details.reason == "max_output_tokens"
        _validate(srv, cut)
