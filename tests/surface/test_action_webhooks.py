"""A webhook when a background response waits for a person: `agent.session.action_required`.

A real receiver on loopback verifies every delivery with the openai SDK's `webhooks.unwrap`
(OpenAI's own event type for "an agent needs an action"). Covered, on both databases: a
`request_info` workflow that pauses sends its end's `response.completed` and the action event
carrying the call to answer; an approval-gated tool sends the action event carrying the
`mcp_approval_request`; the answering turn, which waits for nobody, sends only its end's event.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import db
from tests.support.inprocess import InProcessServer
from tests.support.responses import wait_terminal

from .receiver import Delivery, Receiver, wait_settled

APPROVAL = "durable_responses.examples.approval:approval"
TOOLS = "durable_responses.examples.tools:tools_agent"
ACTION = "agent.session.action_required"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver().start()
    yield r
    r.stop()


def _of(got: list[Delivery], rid: str) -> dict[str, Delivery]:
    mine = [d for d in got if d.event.data.id == rid]
    by_type = {d.event.type: d for d in mine}
    assert len(by_type) == len(mine), [d.body for d in mine]  # each type once
    return by_type


def test_a_paused_workflow_sends_the_call_to_answer(database_url: str, receiver: Receiver) -> None:
    with InProcessServer(database_url, APPROVAL, env=receiver.env()) as srv:
        client = srv.client()
        paused = client.responses.create(model="any", input="ship order 7", background=True)
        done = wait_terminal(client, paused.id)
        (call,) = [i for i in done.output if i.type == "function_call"]
        got = _of(receiver.wait_for(2), paused.id)
        assert set(got) == {"response.completed", ACTION}
        action = got[ACTION].event
        assert action.object == "event" and action.id.startswith("evt_")
        assert action.data.required_action.type == "function_call"
        (item,) = action.data.required_action.items
        assert item["call_id"] == call.call_id and item["type"] == "function_call"
        assert item["name"] == call.name and item["arguments"] == call.arguments

        answer = client.responses.create(
            model="any",
            previous_response_id=paused.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "approve"}],
            background=True,
        )
        final = wait_terminal(client, answer.id)
        assert final.status == "completed", final.error
        assert "Completed with decision: approve" in final.output_text
        # Three webhook events in all, none pending: no fourth delivery can come.
        settled = wait_settled(database_url, 3)
        receiver.wait_for(3)
    assert [kind for _r, kind, _s, _a in settled] == ["response.completed", ACTION, "response.completed"]
    assert set(_of(receiver.deliveries, answer.id)) == {"response.completed"}
    assert len(receiver.deliveries) == 3 and not receiver.refused


def test_an_approval_gated_tool_sends_the_request_to_approve(database_url: str, receiver: Receiver) -> None:
    with InProcessServer(database_url, TOOLS, env=receiver.env()) as srv:
        client = srv.client()
        r = client.responses.create(model="any", input="refund_payment order_id=A1 amount=5", background=True)
        done = wait_terminal(client, r.id)
        (request,) = [i for i in done.output if i.type == "mcp_approval_request"]
        got = _of(receiver.wait_for(2), r.id)
        assert set(got) == {"response.completed", ACTION}
        required = got[ACTION].event.data.required_action
        assert required.type == "mcp_approval_request"
        (item,) = required.items
        assert item["id"] == request.id and item["name"] == "refund_payment"
        assert item["server_label"] == request.server_label


def test_a_foreground_pause_sends_nothing(database_url: str, receiver: Receiver) -> None:
    with InProcessServer(database_url, APPROVAL, env=receiver.env()) as srv:
        client = srv.client()
        paused = client.responses.create(model="any", input="ship order 8")
        assert any(i.type == "function_call" for i in paused.output)
        # Its end committed before the answer, with no webhook event: nothing can be delivered.
        assert db.query(database_url, "SELECT id FROM webhook_events") == []
    assert receiver.attempts == 0
