"""The scenario apps run in-process on agent-framework's real OpenAI clients and the fake model.

These pin what agent-framework 1.23 and agent-framework-orchestrations 1.4 emit and accept, the facts
a host of these agents builds on (see /work/notes/agents-findings.md): which agents' outputs a
workflow surfaces, where usage appears, what each pause asks for and how a fresh workflow instance
restored from the pause checkpoint takes the answer, and which types their checkpoints hold.
A test here fails loudly when a framework upgrade changes one of them.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from agent_framework import AgentSession, Content, FileCheckpointStorage, Message, WorkflowAgent
from agent_framework._workflows._checkpoint_encoding import decode_checkpoint_value, encode_checkpoint_value
from agent_framework.exceptions import AgentInvalidResponseException, ChatClientException
from agent_framework_orchestrations import AgentRequestInfoResponse, HandoffAgentUserRequest

from durable_responses.runtime._af_private import make_restorable
from durable_responses.testing import FakeModel
from tests.agents import apps
from tests.agents.trace import (
    GENERIC_ALIAS,
    as_agent,
    describe,
    runs,
    scan_checkpoints,
    stream,
    texts,
    usage_in,
)
from tests.support.framework import WORKFLOW_AGENT_HIDES_TOOL_CALLS

APIS = ["chat", "responses"]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


@pytest.fixture(params=APIS)
def api(
    request: pytest.FixtureRequest, fake: FakeModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> str:
    for key, value in fake.env(str(request.param)).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv(apps.TOOL_LOG_ENV, str(tmp_path / "tools.jsonl"))
    return str(request.param)


def tool_runs(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "tools.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def requests_in(updates: list[Any], kind: str) -> list[Content]:
    found = [c for u in updates for c in u.contents]
    if kind == "request_info":
        return [c for c in found if c.type == "function_call" and c.name == "request_info"]
    return [c for c in found if c.type == kind]


async def pause_checkpoint(storage: FileCheckpointStorage, workflow_name: str) -> Any:
    checkpoint = await storage.get_latest(workflow_name=workflow_name)
    assert checkpoint is not None and checkpoint.pending_request_info_events
    return checkpoint


# region plain agents


async def test_tool_agent_runs_its_tool_and_the_last_usage_is_the_run_total(
    api: str, fake: FakeModel, tmp_path: Path
) -> None:
    mark = fake.mark()
    updates = await stream(apps.tool_agent(), "lookup_order order_id=A1")
    kinds = ["function_call", "usage", "function_result", "text", "usage"]
    assert runs(updates) == [("assistant", k) for k in kinds]
    assert texts(updates)[-1] == (
        "assistant",
        "assistant: Tool lookup_order returned: order A1 shipped on 2026-11-30",
    )
    assert [r["args"] for r in tool_runs(tmp_path)] == [{"order_id": "A1"}]
    # The function-invocation loop rewrites every usage after the first model call as the running
    # total (merge_mode="replace"): the last one is the run's usage, the sum of all overcounts.
    usages = [c for u in updates for c in u.contents if c.type == "usage"]
    assert all(c.merge_mode == "replace" for c in usages)
    total = fake.usage_total(since=mark)
    last: Any = usages[-1].usage_details
    assert (last["input_token_count"], last["output_token_count"]) == (
        total.input_tokens,
        total.output_tokens,
    )
    assert usage_in(updates)[0] > total.input_tokens


async def test_approval_agent_resumes_only_with_its_session(
    api: str, fake: FakeModel, tmp_path: Path
) -> None:
    agent = apps.approval_agent()
    session = agent.create_session()
    first = await stream(agent, "refund_payment order_id=A1 amount=5", session=session)
    (request,) = requests_in(first, "function_approval_request")
    assert request.function_call is not None and request.id == request.function_call.id
    assert request.user_input_request and tool_runs(tmp_path) == []
    saved = json.loads(json.dumps(session.to_dict()))  # what a host would store
    answer = Message(role="user", contents=[request.to_function_approval_response(True)])

    # without the session the framework ignores the approval and the model asks again
    again = await stream(apps.approval_agent(), [Message(role="user", contents=["hi"]), answer])
    assert tool_runs(tmp_path) == [] and not requests_in(again, "function_result")

    mark = fake.mark()
    resumed = await stream(apps.approval_agent(), answer, session=AgentSession.from_dict(saved))
    assert [r["args"] for r in tool_runs(tmp_path)] == [{"order_id": "A1", "amount": 5.0}]
    assert fake.calls_since(mark)[0].prompt.dialogue[-1].text == "refunded 5.00 for order A1"
    assert texts(resumed)[-1][1] == "cashier: Tool refund_payment returned: refunded 5.00 for order A1"

    rejected = await stream(
        apps.approval_agent(),
        Message(role="user", contents=[request.to_function_approval_response(False)]),
        session=AgentSession.from_dict(saved),
    )
    assert len(tool_runs(tmp_path)) == 1
    assert texts(rejected)[-1][1].endswith("returned: Error: Tool call invocation was rejected by user.")


async def test_a_model_error_raises_chat_client_exception_with_the_openai_error(api: str) -> None:
    for name in ("tool_agent", "sequential"):
        with pytest.raises(ChatClientException) as caught:
            await stream(as_agent(name), "hello model_error:rate_limit_exceeded")
        cause = caught.value.__cause__
        assert isinstance(cause, openai.RateLimitError)
        assert (cause.status_code, cause.code) == (429, "rate_limit_exceeded")
        assert isinstance(cause.body, dict) and cause.body["message"].startswith("Rate limit reached")


# region orchestrations without pauses


async def test_sequential_surfaces_only_the_last_agent_and_its_usage(api: str, fake: FakeModel) -> None:
    mark = fake.mark()
    updates = await stream(as_agent("sequential"), "Write a haiku about tea")
    assert {u.author_name for u in updates} == {"reviewer"}
    assert [c.agent for c in fake.calls_since(mark)] == ["writer", "reviewer"]
    reviewer = fake.calls_since(mark)[1].usage
    assert reviewer is not None and usage_in(updates) == (reviewer.input_tokens, reviewer.output_tokens)

    mark = fake.mark()
    updates = await stream(as_agent("sequential_all_outputs"), "Write a haiku about tea")
    assert [a for a, _ in texts(updates)] == ["writer", "reviewer"]
    total = fake.usage_total(since=mark)
    assert usage_in(updates) == (total.input_tokens, total.output_tokens)


async def test_concurrent_surfaces_whole_replies_and_no_usage(api: str, fake: FakeModel) -> None:
    mark = fake.mark()
    updates = await stream(as_agent("concurrent"), "Write a haiku about tea")
    assert describe(updates) == [
        f"{name}|{updates[i].message_id[:8]}|text"
        for i, name in enumerate(["researcher", "marketer", "legal"])
    ]
    assert usage_in(updates) == (0, 0) and fake.usage_total(since=mark).input_tokens > 0


async def test_group_chats_and_magentic_surface_only_the_orchestrators_message(
    api: str, fake: FakeModel
) -> None:
    expected = {
        "group_chat": ("group_chat_orchestrator", ["researcher", "writer"]),
        "group_chat_manager": ("moderator", ["moderator", "researcher", "moderator", "writer", "moderator"]),
        "magentic": ("manager", ["manager"] * 3 + ["researcher", "manager", "writer", "manager", "manager"]),
    }
    for name, (author, calls) in expected.items():
        mark = fake.mark()
        updates = await stream(as_agent(name), "Write a haiku about tea")
        assert [a for a, _ in texts(updates)] == [author], name
        assert [c.agent for c in fake.calls_since(mark)] == calls, name
        assert usage_in(updates) == (0, 0), name  # manager and participant calls report nothing


# region pauses answered on a fresh instance restored from the pause checkpoint


async def test_handoff_billing_scenario(api: str, fake: FakeModel, tmp_path: Path) -> None:
    # The default allow-list refuses HandoffBuilder's pause checkpoint (its response type is
    # list[Message], a types.GenericAlias): save() fails, is swallowed, and nothing is resumable.
    plain = FileCheckpointStorage(str(tmp_path / "plain"))
    await stream(as_agent("handoff"), "I have a billing question about order A1", checkpoint_storage=plain)
    latest = await plain.get_latest(workflow_name="support")
    assert latest is not None and not latest.pending_request_info_events

    storage = FileCheckpointStorage(str(tmp_path / "cp"), allowed_checkpoint_types=[GENERIC_ALIAS])
    first = await stream(
        as_agent("handoff"), "I have a billing question about order A1", checkpoint_storage=storage
    )
    shown = [
        ("triage", "function_call"),
        ("triage", "usage"),
        ("triage", "function_result"),
        ("billing", "text"),
        ("billing", "usage"),
        ("handoff", "request_info"),
    ]
    if WORKFLOW_AGENT_HIDES_TOOL_CALLS:
        assert runs(first) == [r for r in shown if r[1] not in ("function_call", "function_result")]
    else:
        assert runs(first) == shown
    # The host's agent (made restorable) shows triage's tool call and its result on every release.
    storage_host = FileCheckpointStorage(str(tmp_path / "host"), allowed_checkpoint_types=[GENERIC_ALIAS])
    hosted = await stream(
        make_restorable(as_agent("handoff")),
        "I have a billing question about order A1",
        checkpoint_storage=storage_host,
    )
    assert runs(hosted) == shown
    assert texts(first) == [("billing", 'billing: You said "I have a billing question about order A1"')]
    (call,) = requests_in(first, "request_info")
    event = call.arguments["request_event"] if isinstance(call.arguments, dict) else {}
    assert event["request_type"] == "agent_framework_orchestrations._handoff.HandoffAgentUserRequest"
    assert event["response_type"] == "builtins.list" and event["source_executor_id"] == "billing"
    checkpoint = await pause_checkpoint(storage, "support")
    pending = checkpoint.pending_request_info_events[call.call_id]
    assert isinstance(pending.data, HandoffAgentUserRequest) and pending.response_type == list[Message]
    assert sorted(scan_checkpoints(str(tmp_path / "cp")).refused) == [GENERIC_ALIAS]

    # WorkflowAgent.run cannot deliver the user's next message: a user message is refused and a
    # function result arrives as a str, which list[Message] does not accept.
    with pytest.raises(AgentInvalidResponseException):
        await stream(
            as_agent("handoff"),
            Message(role="user", contents=["Thanks, one more billing question"]),
            checkpoint_id=checkpoint.checkpoint_id,
            checkpoint_storage=storage,
        )
    with pytest.raises(ValueError, match="Response type mismatch"):
        result = Content.from_function_result(
            call_id=call.call_id, result="Thanks, one more billing question"
        )
        await stream(
            as_agent("handoff"),
            Message(role="tool", contents=[result]),
            checkpoint_id=checkpoint.checkpoint_id,
            checkpoint_storage=storage,
        )

    # Workflow.run(responses=...) on a fresh instance takes it: billing answers again, then waits.
    mark = fake.mark()
    answer = HandoffAgentUserRequest.create_response("Thanks, one more billing question")
    events = [
        e
        async for e in apps.handoff().run(
            responses={call.call_id: answer},
            checkpoint_id=checkpoint.checkpoint_id,
            checkpoint_storage=storage,
            stream=True,
        )
    ]
    assert [c.agent for c in fake.calls_since(mark)] == ["billing"]
    text = "".join(e.data.text for e in events if e.type == "output" and e.executor_id == "billing")
    assert 'billing: You said "Thanks, one more billing question"' in text
    assert [e.type for e in events if e.type == "request_info"] == ["request_info"]

    # third turn through WorkflowAgent.run: a function result whose `result` is replaced by the
    # typed value (the framework hands `result` to the request as is); it asks for billing's
    # approval-gated tool, which is then approved through WorkflowAgent.run as well.
    checkpoint = await pause_checkpoint(storage, "support")
    (rid,) = checkpoint.pending_request_info_events
    typed = Content.from_function_result(call_id=rid, result="please refund_payment order_id=A1 amount=5")
    typed.result = HandoffAgentUserRequest.create_response("please refund_payment order_id=A1 amount=5")
    third = await stream(
        as_agent("handoff"),
        Message(role="tool", contents=[typed]),
        checkpoint_id=checkpoint.checkpoint_id,
        checkpoint_storage=storage,
    )
    assert requests_in(third, "function_approval_request") and tool_runs(tmp_path) == []
    checkpoint = await pause_checkpoint(storage, "support")
    (approval,) = checkpoint.pending_request_info_events.values()
    assert approval.data.type == "function_approval_request" and approval.response_type is Content
    approved = Message(role="user", contents=[approval.data.to_function_approval_response(True)])
    last = await stream(
        as_agent("handoff"), approved, checkpoint_id=checkpoint.checkpoint_id, checkpoint_storage=storage
    )
    assert [r["tool"] for r in tool_runs(tmp_path)] == ["refund_payment"]
    assert texts(last)[-1] == ("billing", "billing: Tool refund_payment returned: refunded 5.00 for order A1")
    assert requests_in(last, "request_info")  # and billing waits for the user again


async def test_sequential_request_info_takes_agent_request_info_responses(
    api: str, fake: FakeModel, tmp_path: Path
) -> None:
    storage = FileCheckpointStorage(str(tmp_path / "cp"))
    first = await stream(
        as_agent("sequential_request_info"), "Write a haiku about tea", checkpoint_storage=storage
    )
    assert describe(first) == [f"sequential_request_info|{first[0].message_id[:8]}|request_info"]
    checkpoint = await pause_checkpoint(storage, "Sequential")
    (pending,) = checkpoint.pending_request_info_events.values()
    assert pending.source_executor_id == "writer" and pending.response_type is AgentRequestInfoResponse
    assert type(pending.data).__name__ == "AgentExecutorResponse" and pending.data.agent_response.text

    with pytest.raises(ValueError, match="Response type mismatch"):
        result = Content.from_function_result(call_id=pending.request_id, result="make it shorter")
        await stream(
            as_agent("sequential_request_info"),
            Message(role="tool", contents=[result]),
            checkpoint_id=checkpoint.checkpoint_id,
            checkpoint_storage=storage,
        )

    seen: list[tuple[str, list[str | None]]] = []
    for answer in [AgentRequestInfoResponse.from_strings(["make it shorter"])] + [
        AgentRequestInfoResponse.approve()
    ] * 2:
        mark = fake.mark()
        events = [
            e
            async for e in apps.sequential_request_info().run(
                responses={pending.request_id: answer},
                checkpoint_id=checkpoint.checkpoint_id,
                checkpoint_storage=storage,
                stream=True,
            )
        ]
        outputs = [e for e in events if e.type == "output"]
        seen.append(([c.agent for c in fake.calls_since(mark)], [e.executor_id for e in outputs]))
        if outputs:
            assert outputs[0].data.text == 'reviewer: You said "make it shorter"'
            break
        checkpoint = await pause_checkpoint(storage, "Sequential")
        (pending,) = checkpoint.pending_request_info_events.values()
    assert seen == [(["writer"], []), (["reviewer"], []), ([], ["reviewer"])]


async def test_sequential_approval_takes_a_function_approval_response(
    api: str, fake: FakeModel, tmp_path: Path
) -> None:
    storage = FileCheckpointStorage(str(tmp_path / "cp"))
    first = await stream(
        as_agent("sequential_approval"), "refund_payment order_id=A1 amount=5", checkpoint_storage=storage
    )
    (request,) = requests_in(first, "function_approval_request")
    assert [u.author_name for u in first if request in u.contents] == ["sequential_approval"]
    checkpoint = await pause_checkpoint(storage, "Sequential")
    assert list(checkpoint.pending_request_info_events) == [request.id]

    for approved, expected in [
        (False, "Error: Tool call invocation was rejected by user."),
        (True, "refunded 5.00"),
    ]:
        mark = fake.mark()
        answer = Message(role="user", contents=[request.to_function_approval_response(approved)])
        updates = await stream(
            as_agent("sequential_approval"),
            answer,
            checkpoint_id=checkpoint.checkpoint_id,
            checkpoint_storage=storage,
        )
        assert fake.calls_since(mark)[0].prompt.dialogue[-1].text.startswith(expected)
        assert texts(updates)[-1][0] == "cashier"
    assert [r["tool"] for r in tool_runs(tmp_path)] == ["refund_payment"]

    # A function result is not an approval: the tool does not run; the agent gets "approved" as
    # the user's text (chat completions), or the model refuses the open call (Responses API).
    mark = fake.mark()
    result = Content.from_function_result(call_id=request.id or "", result="approved")
    fabricated = stream(
        as_agent("sequential_approval"),
        Message(role="tool", contents=[result]),
        checkpoint_id=checkpoint.checkpoint_id,
        checkpoint_storage=storage,
    )
    if api == "chat":
        await fabricated
        assert fake.calls_since(mark)[0].prompt.dialogue[-1].text == "approved"
    else:
        with pytest.raises(ChatClientException, match="No tool output found for function call"):
            await fabricated
    assert len(tool_runs(tmp_path)) == 1


# region checkpoint types


class _AppState:
    """An application class: the default allow-list must keep refusing it."""


def test_the_only_foreign_checkpoint_type_is_generic_alias() -> None:
    encoded = encode_checkpoint_value({"response_type": list[Message], "mine": _AppState()})
    with pytest.raises(Exception, match=r"types:GenericAlias|test_apps:_AppState"):
        decode_checkpoint_value(encoded, allowed_types=frozenset())
    decoded = decode_checkpoint_value(
        {"t": encoded["response_type"]}, allowed_types=frozenset({GENERIC_ALIAS})
    )
    assert decoded["t"] == list[Message]
    with pytest.raises(Exception, match="_AppState"):
        decode_checkpoint_value({"m": encoded["mine"]}, allowed_types=frozenset({GENERIC_ALIAS}))
    # allowed_types admits classes only: a callable named there is still refused
    gadget = {"__pickled__": __import__("base64").b64encode(pickle.dumps(print)).decode(), "__type__": "x"}
    with pytest.raises(Exception, match="non-type global"):
        decode_checkpoint_value(gadget, allowed_types=frozenset({"builtins:print"}))


async def test_no_scenario_checkpoints_anything_else(api: str, tmp_path: Path) -> None:
    for name in ["sequential", "sequential_request_info", "sequential_approval", "concurrent", "handoff"]:
        directory = str(tmp_path / name)
        storage = FileCheckpointStorage(directory, allowed_checkpoint_types=[GENERIC_ALIAS])
        agent = as_agent(name)
        assert isinstance(agent, WorkflowAgent)
        await stream(agent, "refund_payment order_id=A1 amount=5 and billing", checkpoint_storage=storage)
        scan = scan_checkpoints(directory)
        assert set(scan.refused) <= {GENERIC_ALIAS}, name
        assert all(t.startswith("agent_framework.") for t in scan.pickled), (name, scan.pickled)
