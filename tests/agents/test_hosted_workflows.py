"""The official agent-framework orchestrations hosted by the real server, on agent-framework's
real OpenAI clients (`chat`, `responses`) against the fake model server, through the unmodified
openai client, on SQLite and PostgreSQL (issue 12): Sequential, Concurrent, Handoff, GroupChat
(selection function and manager agent), Magentic, and their pauses (with_request_info reviews,
handoff's wait for the user, tool approvals inside agents).

Every turn passes `hosted.finish_turn`: each raw event valid against the Open Responses schema
(`mcp_approval_request` against the SDK's own type), the full replay equal to the live stream
payload for payload, no framework internals shown, and usage equal to what the fake billed for
every model call of the response (hidden agents and managers included).
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
    Turn,
    api,
    approval_answer,
    deltas_per_item,
    dialect,
    fake,
    servers,
    stream_turn,
    tool_runs,
)

__all__ = ["api", "dialect", "fake", "servers"]  # fixtures

REJECTED = "Error: Tool call invocation was rejected by user."
QUESTION = "write a haiku about tea"


def _said(agent: str, text: str) -> str:
    return f'{agent}: You said "{text}"'


# What each orchestration surfaces for QUESTION, and the model calls it makes (per agent; the
# order of GroupChat and Magentic turns is pinned by tests/agents/test_apps.py).
ORCHESTRATIONS: dict[str, tuple[list[str], dict[str, int], bool]] = {
    # app: (output texts, calls per agent, whether agents' tokens are streamed as they come)
    "sequential": ([_said("reviewer", QUESTION)], {"writer": 1, "reviewer": 1}, True),
    "sequential_all_outputs": (
        [_said("writer", QUESTION), _said("reviewer", QUESTION)],
        {"writer": 1, "reviewer": 1},
        True,
    ),
    "concurrent": (
        [_said("researcher", QUESTION), _said("marketer", QUESTION), _said("legal", QUESTION)],
        {"researcher": 1, "marketer": 1, "legal": 1},
        False,
    ),
    "group_chat": (
        ["The group chat has reached the maximum number of rounds."],
        {"researcher": 1, "writer": 1},
        False,
    ),
    "group_chat_manager": (
        ["Every participant has spoken; the conversation is complete."],
        {"moderator": 3, "researcher": 1, "writer": 1},
        False,
    ),
    "magentic": (
        [f"Final answer: the team has completed the task: {QUESTION}"],
        {"manager": 6, "researcher": 1, "writer": 1},
        False,
    ),
}


@pytest.mark.parametrize("app", list(ORCHESTRATIONS))
def test_orchestration_completes_streams_what_it_surfaces_and_bills_every_call(
    servers: Servers, dialect: str, api: str, fake: FakeModel, app: str
) -> None:
    """Each orchestration completes with exactly what the workflow surfaces (Sequential: the last
    agent, or every agent with `intermediate_output_from`; Concurrent: each participant's reply;
    GroupChat and Magentic: the orchestrator's final message), the surfaced agents' tokens
    streamed as they come, and usage = every model call's, the agents and managers the stream
    never shows included."""
    texts, calls, streamed = ORCHESTRATIONS[app]
    tee = servers.get(app, dialect)
    turn = stream_turn(tee, fake, input=QUESTION)
    assert turn.response.status == "completed", turn.response.error
    assert turn.types == ["message"] * len(texts)
    assert turn.texts == texts
    assert turn.calls == calls
    assert turn.billed.input_tokens > 0 and turn.billed.output_tokens > 0
    if streamed:
        per_item = deltas_per_item(turn.events)
        assert all(per_item[i.id] > 1 for i in turn.response.output), per_item


def test_sequential_request_info_takes_a_text_answer_and_an_empty_one(
    servers: Servers, dialect: str, api: str, fake: FakeModel
) -> None:
    """`with_request_info()` pauses after each agent with its reply shown as a message (no
    request_info call, no envelope); a text answer reruns that agent with the text as the
    human's message; an empty answer approves ("go on") and the next agent runs; the last
    approval ends the workflow with the reviewer's reply."""
    tee = servers.get("sequential_request_info", dialect)
    first = stream_turn(tee, fake, input="write a poem")
    assert first.texts == [_said("writer", "write a poem")] and first.calls == {"writer": 1}
    revised = stream_turn(tee, fake, input="make it shorter", previous_response_id=first.response.id)
    assert revised.texts == [_said("writer", "make it shorter")] and revised.calls == {"writer": 1}
    assert fake.calls[-1].prompt.latest_user_text == "make it shorter"
    approved = stream_turn(tee, fake, input="", previous_response_id=revised.response.id)
    assert approved.calls == {"reviewer": 1}
    assert [t.split(":")[0] for t in approved.texts] == ["reviewer"]
    done = stream_turn(tee, fake, input="", previous_response_id=approved.response.id)
    assert done.response.status == "completed"
    assert done.texts == approved.texts and done.calls == {}
    for turn in (first, revised, approved, done):
        assert turn.types == ["message"]


def _handoff_turn(tee: Tee, fake: FakeModel, text: str, **link: Any) -> Turn:
    turn = stream_turn(tee, fake, input=text, **link)
    assert turn.response.status == "completed", turn.response.error
    return turn


def _routed(turn: Turn, text: str) -> None:
    assert turn.types == ["mcp_call", "message"], turn.types
    call = turn.response.output[0]
    assert call.name == "handoff_to_billing" and call.status == "completed"
    assert turn.texts == [_said("billing", text)]
    assert turn.calls == {"triage": 1, "billing": 1}


def test_handoff_to_billing_continues_with_plain_user_messages(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path
) -> None:
    """Handoff: triage routes to billing, billing answers and the workflow waits for the user
    (the pause shows billing's reply as a message: no request_info call, no framework
    internals); the user's next plain message continues it (previous_response_id, then the
    same conversation) and billing answers again, and again."""
    conversation = {"conversation": f"conv_{uuid.uuid4().hex}"}
    tee = servers.get("handoff", dialect)
    first = _handoff_turn(tee, fake, "I have a billing question")
    _routed(first, "I have a billing question")
    second = _handoff_turn(tee, fake, "and my invoice?", previous_response_id=first.response.id)
    third = _handoff_turn(tee, fake, "and my receipt?", previous_response_id=second.response.id)
    for turn, text in ((second, "and my invoice?"), (third, "and my receipt?")):
        assert turn.types == ["message"] and turn.texts == [_said("billing", text)]
        assert turn.calls == {"billing": 1}

    c1 = _handoff_turn(tee, fake, "billing please", **conversation)
    _routed(c1, "billing please")
    c2 = _handoff_turn(tee, fake, "thanks", **conversation)
    c3 = _handoff_turn(tee, fake, "bye", **conversation)
    for turn, text in ((c2, "thanks"), (c3, "bye")):
        assert turn.types == ["message"] and turn.texts == [_said("billing", text)]
        assert turn.calls == {"billing": 1}
    assert tool_runs(tmp_path) == []


# app: (what asks for the refund, the agent with the tool, the items shown before the request)
WORKFLOW_APPROVALS = {
    "sequential_approval": ("refund_payment order_id=A1 amount=5", "cashier", []),
    "handoff": (
        "billing: refund_payment order_id=A1 amount=5",
        "billing",
        ["mcp_call"],
    ),
}


@pytest.mark.parametrize("app", list(WORKFLOW_APPROVALS))
def test_tool_approval_inside_a_workflow_approve_and_reject(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path, app: str
) -> None:
    """An approval-gated tool of an agent inside a workflow (Sequential's last agent, Handoff's
    billing) pauses the workflow with an `mcp_approval_request` (server_label = the agent);
    approved, the tool runs exactly once and its result reaches the model; rejected, it never
    runs and the model is told so. An unknown request id is a 400, an answered one a 409. Each
    path once via previous_response_id and once via the same conversation (alternating with the
    client)."""
    ask, agent, before = WORKFLOW_APPROVALS[app]
    conversation = {"conversation": f"conv_{uuid.uuid4().hex}"}
    approve_link, reject_link = (
        ("previous", "conversation") if api == "chat" else ("conversation", "previous")
    )

    def link(kind: str, turn: Turn) -> dict[str, Any]:
        return {"previous_response_id": turn.response.id} if kind == "previous" else conversation

    def asked(tee: Tee, kind: str) -> tuple[Turn, str]:
        turn = stream_turn(tee, fake, input=ask, **(conversation if kind == "conversation" else {}))
        assert turn.types == [*before, "mcp_approval_request"], turn.types
        request = turn.response.output[-1]
        assert request.name == "refund_payment" and request.server_label == agent
        assert json.loads(request.arguments) == {"order_id": "A1", "amount": 5.0}
        return turn, request.id

    tee = servers.get(app, dialect)
    first, request_id = asked(tee, approve_link)
    assert tool_runs(tmp_path) == []
    unknown = tee.post({"model": "m", **link(approve_link, first), "input": approval_answer("nope", True)})
    assert unknown.status_code == 400, unknown.text
    approved = stream_turn(tee, fake, input=approval_answer(request_id, True), **link(approve_link, first))
    assert approved.response.status == "completed", approved.response.error
    assert approved.types == ["mcp_call", "message"]
    call = approved.response.output[0]
    assert call.name == "refund_payment" and call.approval_request_id == request_id
    assert call.output == "refunded 5.00 for order A1" and call.server_label
    assert approved.texts == [f"{agent}: Tool refund_payment returned: refunded 5.00 for order A1"]
    assert approved.calls == {agent: 1}
    assert [r["tool"] for r in tool_runs(tmp_path)] == ["refund_payment"]
    again = tee.post(
        {"model": "m", **link(approve_link, first), "input": approval_answer(request_id, True)},
    )
    assert again.status_code == 409, again.text

    second, request2 = asked(tee, reject_link)
    rejected = stream_turn(tee, fake, input=approval_answer(request2, False), **link(reject_link, second))
    assert rejected.response.status == "completed", rejected.response.error
    assert rejected.texts == [f"{agent}: Tool refund_payment returned: {REJECTED}"]
    prompt = fake.calls[-1].prompt
    assert any(t.role == "tool" and REJECTED in t.text for t in prompt.dialogue), prompt.dialogue
    assert len(tool_runs(tmp_path)) == 1, "a rejected tool ran"
    again2 = tee.post(
        {"model": "m", **link(reject_link, second), "input": approval_answer(request2, False)},
    )
    assert again2.status_code == 409, again2.text


@pytest.mark.parametrize("app", ["sequential_approval", "approval_agent"])
def test_a_server_tool_called_beside_an_approval_waits_unshown_and_runs_named_after_it(
    servers: Servers, dialect: str, api: str, fake: FakeModel, tmp_path: Path, app: str
) -> None:
    """One model turn calls `lookup_order` (the server runs it) and the approval-gated
    `refund_payment`: agent-framework holds the first until the approval is answered. The pause
    shows only the `mcp_approval_request` (the held tool is the server's, never a call for the
    client); the approval alone continues it, and both tools then run once, each an `mcp_call`
    with its name, arguments and output (a workflow's agent, and a plain agent)."""
    tee = servers.get(app, dialect)
    first = stream_turn(tee, fake, input="lookup_order and refund_payment order_id=A1 amount=5")
    assert first.types == ["mcp_approval_request"], first.response.output
    (request,) = first.response.output
    assert request.name == "refund_payment" and tool_runs(tmp_path) == []
    approved = stream_turn(
        tee, fake, input=approval_answer(request.id, True), previous_response_id=first.response.id
    )
    assert approved.response.status == "completed", approved.response.error
    assert approved.types == ["mcp_call", "mcp_call", "message"], approved.response.output
    held, gated = approved.response.output[:2]
    assert (held.name, json.loads(held.arguments), held.output) == (
        "lookup_order",
        {"order_id": "A1"},
        "order A1 shipped on 2026-11-30",
    )
    assert held.approval_request_id is None and held.server_label
    assert (gated.name, gated.output, gated.approval_request_id) == (
        "refund_payment",
        "refunded 5.00 for order A1",
        request.id,
    )
    # (run concurrently: in either order)
    assert sorted(r["tool"] for r in tool_runs(tmp_path)) == ["lookup_order", "refund_payment"]
    assert approved.texts == [
        "cashier: Tool lookup_order returned: order A1 shipped on 2026-11-30; "
        "Tool refund_payment returned: refunded 5.00 for order A1"
    ]
