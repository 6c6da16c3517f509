"""agent-framework's orchestration samples (03-workflows/orchestrations and 03-workflows/agents,
vendored in tests/samples/upstream, SOURCES.json; built by `orchestration_apps`) hosted on the
fake model, on SQLite and PostgreSQL: each streams a turn through the openai client (a valid
sequence, its agents' words in the output) and runs in the background to completion; the handoff
and Magentic plan-review samples take their human turns; `kill -9` mid-run and a restart
complete with every output once. One server per dialect hosts every sample (`model` picks it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from durable_responses.testing import FakeModel
from tests.samples.model import environ, http, model_env, openai_client
from tests.support import db
from tests.support.inprocess import InProcessServer
from tests.support.responses import output_texts, wait_terminal
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_until

APPS = "tests.samples.orchestration_apps"
ONE_TURN = [
    "sequential_agents",
    "sequential_with_summarizer",
    "sequential_chain_only",
    "concurrent_agents",
    "concurrent_custom_aggregator",
    "concurrent_executors",
    "group_chat_round_robin",
    "group_chat_with_manager",
    "magentic",
    "sequential_as_agent",
    "concurrent_as_agent",
    "group_chat_as_agent",
    "magentic_as_agent",
    "custom_agent_executors_workflow",
]
HUMAN_TURNS = [
    "handoff_simple_workflow",
    "handoff_as_agent",
    "handoff_autonomous_workflow",
    "magentic_plan_review",
]
EVERY_APP = ",".join(f"{name}={APPS}:{name}" for name in ONE_TURN + HUMAN_TURNS)
TASK = "Write a tagline for a budget-friendly eBike."
SAID = f'You said "{TASK}"'


def _magentic(task: str) -> list[str]:
    return [
        f'Researcher: You said "ResearcherAgent, please do your part of the task: {task}"',
        f'assistant: You said "CoderAgent, please do your part of the task: {task}"',
        f"Final answer: the team has completed the task: {task}",
    ]


# What each sample's output says, message by message (the fake names an agent by the word after
# "You are" in its instructions, "assistant" when there is none, and quotes the latest user text).
EXPECTED: dict[str, list[str]] = {
    # output_from="all": the writer's and the reviewer's responses.
    "sequential_agents": [f"concise: {SAID}", f"thoughtful: {SAID}"],
    "sequential_with_summarizer": ["Summary -> users:1 assistants:1"],
    "concurrent_agents": [f"assistant: {SAID}"] * 3,
    "concurrent_executors": [f"assistant: {SAID}"] * 3,
    # Round robin over four agents until the conversation holds six messages, then the
    # orchestrator's closing line.
    "group_chat_round_robin": [
        f"{who}: {SAID}" for who in ("expert", "programming", "accessibility", "devil", "expert")
    ]
    + ["The group chat has reached its termination condition."],
    "group_chat_with_manager": [f"assistant: {SAID}"] * 2
    + ["Every participant has spoken; the conversation is complete."],
    "magentic": _magentic(TASK),
    # as_agent() answers with the last agent's response only (the sample says so).
    "sequential_as_agent": [f"thoughtful: {SAID}"],
    "concurrent_as_agent": [f"assistant: {SAID}"] * 3,
    "group_chat_as_agent": [f"assistant: {SAID}"] * 2
    + ["Every participant has spoken; the conversation is complete."],
    "magentic_as_agent": _magentic(TASK),
    # The Reviewer executor's agent yields its text; the Writer's is passed on, not output.
    "custom_agent_executors_workflow": [f"excellent: {SAID}"],
}


@pytest.fixture(scope="module", autouse=True)
def _environment(fake: FakeModel) -> Iterator[None]:
    """The samples' `OpenAIChatClient()` reads the process environment (in-process servers)."""
    with environ(model_env(fake)):
        yield


# Each dialect's tests share one worker under `--dist loadgroup` (`make test`), so each worker
# builds one server of every sample, not two.
DIALECT = [
    pytest.param(d, id=d, marks=pytest.mark.xdist_group(f"orchestration-samples-{d}"))
    for d in ("sqlite", "postgresql")
]


@pytest.fixture(params=DIALECT)
def samples(request: pytest.FixtureRequest, _server_pool: Any) -> InProcessServer:
    """This module's in-process server of the test's dialect, hosting every sample."""
    srv: InProcessServer = _server_pool.get(
        request.param, EVERY_APP, env={"DURABLE_RESPONSES_RECOVERY_INTERVAL": "5"}
    )
    return srv


def _replay(srv: Any, response_id: str) -> list[dict[str, Any]]:
    """The response's full event stream (`GET ?stream=true`)."""
    return stream_events(srv.base_url, response_id, client=http())


def _stream(srv: Any, app: str, text: Any, **kwargs: Any) -> Any:
    """One streamed turn through the openai SDK's stream helper; its replay is a valid sequence."""
    with openai_client(srv.base_url).responses.stream(model=app, input=text, store=True, **kwargs) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    assert final.status == "completed", final.error
    check_sequence(_replay(srv, final.id), label=f"{app} {final.id}")
    return final


def _background(srv: Any, app: str, text: Any, **kwargs: Any) -> Any:
    """One background turn, read back with GET until it ends."""
    client = openai_client(srv.base_url)
    created = client.responses.create(model=app, input=text, background=True, **kwargs)
    final = wait_terminal(client, created.id, timeout=60)
    assert final.status == "completed", final.error
    return final


def _kinds(final: Any) -> list[tuple[str, str]]:
    return [(o.type, getattr(o, "name", None) or "") for o in final.output]


@pytest.mark.parametrize("app", sorted(EXPECTED))
def test_a_sample_streams_a_turn_and_runs_one_in_the_background(samples: InProcessServer, app: str) -> None:
    assert output_texts(_stream(samples, app, TASK)) == EXPECTED[app]
    assert output_texts(_background(samples, app, TASK)) == EXPECTED[app]


def test_chain_only_sample_passes_each_agent_only_the_previous_reply(
    samples: InProcessServer, fake: FakeModel
) -> None:
    mark = fake.mark()
    texts = output_texts(_stream(samples, "sequential_chain_only", TASK))
    # Writer and translator are intermediate outputs, the reviewer's the final one.
    assert [t.split(":", 1)[0] for t in texts] == ["concise", "translator", "reviewer"], texts
    assert texts[0] == f"concise: {SAID}"
    prompts = {c.agent: c.prompt for c in fake.calls_since(mark)}
    assert [t.text for t in prompts["translator"].dialogue] == [texts[0]]
    assert [t.text for t in prompts["reviewer"].dialogue] == [texts[1]]


def test_custom_aggregator_sample_summarizes_the_three_experts(
    samples: InProcessServer, fake: FakeModel
) -> None:
    mark = fake.mark()
    (summary,) = output_texts(_stream(samples, "concurrent_custom_aggregator", TASK))
    assert summary.startswith('helpful: You said "researcher: assistant: You said'), summary
    (aggregation,) = [c for c in fake.calls_since(mark) if c.agent == "helpful"]
    asked = aggregation.prompt.latest_user_text
    assert [line for line in asked.split("\n") if line.endswith(":")] == [
        "researcher:",
        "marketer:",
        "legal:",
    ]


@pytest.mark.parametrize("app", ["handoff_simple_workflow", "handoff_as_agent"])
def test_handoff_sample_takes_its_user_turns_with_tools_and_handoffs(
    samples: InProcessServer, app: str
) -> None:
    """The sample's scripted conversation, in words the fake acts on: triage asks, hands off to
    the return agent (who runs process_return), then to the refund agent; a closing "welcome"
    meets the sample's termination condition."""
    first = _background(samples, app, "Hello, I need assistance with my recent purchase.")
    assert output_texts(first) == ['frontline: You said "Hello, I need assistance with my recent purchase."']
    returned = _stream(
        samples,
        app,
        "My order 1234 arrived damaged, please ask the return_agent to process_return order_number=1234",
        previous_response_id=first.id,
    )
    assert _kinds(returned) == [
        ("mcp_call", "handoff_to_return_agent"),
        ("mcp_call", "process_return"),
        ("message", ""),
    ]
    assert returned.output[1].output.startswith("Return initiated successfully for order 1234.")
    refunded = _stream(
        samples,
        app,
        "Please also process_refund order_number=1234 with the refund_agent",
        previous_response_id=returned.id,
    )
    assert _kinds(refunded) == [
        ("mcp_call", "handoff_to_refund_agent"),
        ("mcp_call", "process_refund"),
        ("message", ""),
    ]
    assert output_texts(refunded) == [
        "assistant: Tool process_refund returned: Refund processed successfully for order 1234."
    ]
    ended = _stream(
        samples, app, "Thanks for resolving this, you are welcome.", previous_response_id=refunded.id
    )
    assert ended.output == [], ended.output  # terminated before any agent runs again


def test_autonomous_handoff_sample_shows_each_reply_as_its_own_message(samples: InProcessServer) -> None:
    """The coordinator hands off to the research agent, which hands back; in autonomous mode the
    coordinator then runs on its own until its fifth reply meets the termination condition: five
    model responses in one superstep, five message items (not one text run together)."""
    final = _stream(
        samples,
        "handoff_autonomous_workflow",
        "Research Microsoft Agent Framework with the research_agent, then report to the coordinator.",
    )
    assert _kinds(final)[:2] == [
        ("mcp_call", "handoff_to_research_agent"),
        ("mcp_call", "handoff_to_coordinator"),
    ]
    texts = output_texts(final)
    assert (
        texts[0] == 'coordinator: Tool handoff_to_research_agent returned: {"handoff_to": "research_agent"}'
    )
    assert texts[1:] == ['coordinator: You said "User did not respond. Continue assisting autonomously."'] * 4


def test_magentic_plan_review_sample_revises_then_approves_its_plan(samples: InProcessServer) -> None:
    """The plan is shown as a message; a text answer revises it (shown again), an empty one
    approves it and the team runs to the manager's final answer."""
    app, task = "magentic_plan_review", "Draft a concise internal brief for a beta launch."
    planned = _background(samples, app, task)
    (plan,) = output_texts(planned)
    assert f"address the following user request:\n\n{task}" in plan and "- WriterAgent:" in plan, plan
    revised = _stream(samples, app, "Add a risk section.", previous_response_id=planned.id)
    (again,) = output_texts(revised)
    assert f"address the following user request:\n\n{task}" in again, again
    approved = _stream(samples, app, "", previous_response_id=revised.id)
    assert output_texts(approved) == [f"Final answer: the team has completed the task: {task}"]


def _killed_mid_run(
    server_factory: Any, database_url: str, fake: FakeModel, app: str, start: Any, held: str
) -> tuple[Any, str]:
    """Start `app` in a subprocess server, make the background request `start(client)` there
    (which holds the replies of agent `held`: `FakeModel.hold`), `kill -9` the server while a
    call of that agent is held before its last frame, then restart it; returns the restarted
    server and the request's response id."""
    env = {**model_env(fake), "DURABLE_RESPONSES_RECOVERY_INTERVAL": "1"}
    first = server_factory(database_url, app=f"{APPS}:{app}", env=env).start()
    try:
        response_id = start(first.client())
        wait_until(
            lambda: any(c.agent == held and not c.finished for c in fake.calls),
            timeout=30,
            message=f"no held call of {held}",
        )
        first.kill()
        status = db.scalar(database_url, f"SELECT status FROM responses WHERE id = {db.quote(response_id)}")
        assert status in ("queued", "in_progress"), "killed too late"
    finally:
        fake.hold()
    return server_factory(database_url, app=f"{APPS}:{app}", env=env).start(), response_id


@pytest.mark.crash
def test_magentic_sample_killed_mid_run_completes_with_every_output_once(
    server_factory: Any, database_url: str, fake: FakeModel
) -> None:
    """Killed in the researcher's call, after the manager's plan (8 model calls in all)."""

    def start(client: openai.OpenAI) -> str:
        fake.hold({"Researcher"})
        return client.responses.create(model="m", input=TASK, background=True).id

    second, rid = _killed_mid_run(server_factory, database_url, fake, "magentic", start, held="Researcher")
    final = wait_terminal(second.client(), rid, timeout=90)
    assert final.status == "completed", (final.error, second.log())
    check_sequence(_replay(second, rid), label=rid)
    assert output_texts(final) == EXPECTED["magentic"]


@pytest.mark.crash
def test_handoff_sample_killed_mid_user_turn_completes_it_once(
    server_factory: Any, database_url: str, fake: FakeModel
) -> None:
    """The user's second turn (handoff to the return agent, which runs process_return) killed
    in the triage agent's model call; the restarted server finishes it with each call and
    message once, and the conversation goes on from it."""

    def start(client: openai.OpenAI) -> str:
        greeted = client.responses.create(model="m", input="Hello, I need help.", store=True)
        assert greeted.status == "completed", greeted.error
        fake.hold({"frontline"})  # the triage agent's call that hands off
        return client.responses.create(
            model="m",
            input="Order 1234 arrived damaged, please ask the return_agent to process_return order_number=1234",
            previous_response_id=greeted.id,
            background=True,
        ).id

    second, rid = _killed_mid_run(
        server_factory, database_url, fake, "handoff_simple_workflow", start, held="frontline"
    )
    client = second.client()
    final = wait_terminal(client, rid, timeout=90)
    assert final.status == "completed", (final.error, second.log())
    check_sequence(_replay(second, rid), label=rid)
    assert _kinds(final) == [
        ("mcp_call", "handoff_to_return_agent"),
        ("mcp_call", "process_return"),
        ("message", ""),
    ]
    after = client.responses.create(
        model="m",
        input="Please process_refund order_number=1234 with the refund_agent",
        previous_response_id=rid,
    )
    assert after.status == "completed", after.error
    assert output_texts(after) == [
        "assistant: Tool process_refund returned: Refund processed successfully for order 1234."
    ]
