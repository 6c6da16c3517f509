"""agent-framework's own human-in-the-loop, tool-approval, checkpoint and workflow-as-agent
samples (tests/samples/upstream, SOURCES.json) hosted on the server, their model client pointed at
the fake model, on SQLite and PostgreSQL: each first turn streams a valid event sequence through
the openai client; each pause shows the sample's request as DESIGN.md says; each answer
(`previous_response_id` + the answer item, a background turn read back with GET) resumes the
workflow to the sample's output; a paused one killed -9 and restarted on a wiped disk still takes
the answer and completes with every output once.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from durable_responses.testing import FakeModel
from tests.samples.hitl_cases import FLOWS, approvals, asks, one_text
from tests.samples.hitl_flow import (
    Body,
    Flow,
    Step,
    approve_all,
    background,
    call_output,
    completed,
    items_of,
    run_flow,
    streamed,
    texts,
)
from tests.samples.model import environ, model_env, openai_client
from tests.samples.upstream import (
    checkpoint_with_human_in_the_loop,
    handoff_with_tool_approval_checkpoint_resume,
    sub_workflow_checkpoint,
)
from tests.support.inprocess import InProcessServer
from tests.support.sse import check_sequence, stream_events

APPS = {
    "sequential_request_info": "hitl_apps:sequential_review",
    "concurrent_request_info": "hitl_apps:concurrent_review",
    "group_chat_request_info": "hitl_apps:group_chat_review",
    "agents_with_approval_requests": "hitl_apps:email_approvals",
    "agents_with_declaration_only_tools": "hitl_apps:weather_declaration_only",
    "sequential_builder_tool_approval": "hitl_apps:sequential_tool_approval",
    "concurrent_builder_tool_approval": "hitl_apps:concurrent_tool_approval",
    "group_chat_builder_tool_approval": "hitl_apps:group_chat_tool_approval",
    "checkpoint_with_human_in_the_loop": "agent_apps:release_notes_review",
    "sub_workflow_checkpoint": "agent_apps:sub_workflow_review",
    "handoff_with_tool_approval_checkpoint_resume": "agent_apps:handoff_refunds",
    "workflow_as_agent_checkpoint": "agent_apps:assistant_and_reviewer",
    "workflow_as_agent_checkpoint_thread": "agent_apps:memory_assistant",
    "workflow_as_agent_with_session": "agent_apps:assistant_and_summarizer",
    "workflow_as_agent_reflection_pattern": "agent_apps:reflection",
    "workflow_as_agent_human_in_the_loop": "agent_apps:reflection_with_human_checkpointed",
    "workflow_as_agent_kwargs": "agent_apps:kwargs_tools",
    "workflow_as_agent_kwargs_deployed": "agent_apps:kwargs_tools_deployed",
    "azure_chat_agents_tool_calls_with_feedback": "agent_apps:writer_with_tools_and_feedback",
}

# The samples the crash test runs across a kill -9 -> the answers given before the kill (its
# response then waits for the next): one per kind of request a paused response can wait on
# (the test's docstring says why each); every other pausing sample runs its whole conversation
# on the in-process server (`test_sample_hosted_turn_by_turn`).
CRASHES = {
    "concurrent_request_info": 1,
    "concurrent_builder_tool_approval": 0,
    "agents_with_declaration_only_tools": 0,
    "workflow_as_agent_human_in_the_loop": 0,
    "sub_workflow_checkpoint": 1,
    "handoff_with_tool_approval_checkpoint_resume": 1,
}

# The in-process server hosts the samples the crash test does not run (it runs its own
# servers), and the two of the open bugs' tests.
IN_PROCESS_APPS = ",".join(
    f"{name}=tests.samples.{factory}"
    for name, factory in APPS.items()
    if name not in CRASHES
    or name in ("sequential_builder_tool_approval", "checkpoint_with_human_in_the_loop")
)


@pytest.fixture(scope="module", autouse=True)
def _environment(fake: FakeModel) -> Iterator[None]:
    """The samples' `OpenAIChatClient()` reads the process environment (in-process servers)."""
    with environ(model_env(fake)):
        yield


@pytest.fixture
def hitl_server(shared_servers: Any) -> InProcessServer:
    """This module's in-process server (per dialect); a request's `model` picks the sample."""
    srv: InProcessServer = shared_servers(IN_PROCESS_APPS)
    return srv


# The samples whose whole conversation the crash test below runs (across a kill -9) are left out.
IN_PROCESS = [f for f in FLOWS if f.model not in CRASHES]


@pytest.mark.parametrize("flow", IN_PROCESS, ids=[f.model for f in IN_PROCESS])
def test_sample_hosted_turn_by_turn(hitl_server: InProcessServer, flow: Flow) -> None:
    run_flow(hitl_server.base_url, flow)


@pytest.mark.crash
def test_paused_samples_killed_and_restarted_on_a_wiped_disk_take_their_answers(
    server_factory: Any, database_url: str, fake: FakeModel
) -> None:
    """One sample per kind of request a response pauses on, paused (after the answers CRASHES
    gives), the server killed -9; another starts in a fresh working directory (the compute
    recreated) on the same database: every answer is taken and each sample completes, each
    output once (the checks compare whole output lists). Every sample is run to its end; the
    failures are reported together. The kinds (server/runtime/pauses/requests.py), one sample each:
    - an agent's reply held for review (`with_request_info`, AGENT_REVIEW), killed after one
      answer: concurrent_request_info, a fan-out's replies held and one re-held after revision;
    - a tool approval (TOOL_APPROVAL): concurrent_builder_tool_approval, two approvals pending
      at once from parallel agents, both answered on the new server in one turn;
    - a declaration-only tool's call, answered by its call_id: agents_with_declaration_only_tools;
    - an executor's own `request_info` (GENERIC), answered with its typed response, beside an
      executor's own state restored from the checkpoint (the worker's pending reviews):
      workflow_as_agent_human_in_the_loop, a workflow agent;
    - a sub-workflow's request, killed after one answer: sub_workflow_checkpoint;
    - a handoff (USER_INPUT turns, then a tool approval), killed while the approval waits:
      handoff_with_tool_approval_checkpoint_resume.
    The others (sequential and group-chat request_info and tool approval, the email approvals,
    checkpoint_with_human_in_the_loop, azure_chat_agents_tool_calls_with_feedback) pause on the
    same kinds through the same restore and run their whole conversations in-process."""
    flows = [f for f in FLOWS if f.model in CRASHES]
    apps = ",".join(f"{f.model}=tests.samples.{APPS[f.model]}" for f in flows)
    first = server_factory(database_url, app=apps, env=model_env(fake)).start()
    paused = [run_flow(first.base_url, f, stop=CRASHES[f.model]) for f in flows]
    first.kill()
    second = server_factory(database_url, app=apps, env=model_env(fake)).start()
    assert second.workdir != first.workdir
    failures = []
    for flow, resp in zip(flows, paused, strict=True):
        try:
            run_flow(second.base_url, flow, resp=resp, start=CRASHES[flow.model])
        except Exception as exc:  # every sample runs; all failures are reported below
            failures.append(f"{flow.model}: {exc!r}"[:3000])
    assert not failures, "\n".join(failures)
    # The samples' own FileCheckpointStorage (in the repository, not wiped) was never used, by
    # this test's servers or the in-process one: the host's storage is the run's.
    for directory in (
        checkpoint_with_human_in_the_loop.TEMP_DIR,
        sub_workflow_checkpoint.CHECKPOINT_DIR,
        handoff_with_tool_approval_checkpoint_resume.CHECKPOINT_DIR,
    ):
        assert not list(directory.glob("*")), directory


def _turns(base_url: str, model: str, inputs: list[str]) -> list[Body]:
    client = openai_client(base_url)
    out = [completed(streamed(client, model, inputs[0]))]
    for text in inputs[1:]:
        out.append(completed(background(client, base_url, model, text, previous_response_id=out[-1]["id"])))
    return out


@pytest.mark.parametrize(
    ("model", "inputs", "remembered", "speaker"),
    [
        (
            "workflow_as_agent_checkpoint_thread",
            ["My favorite color is blue. Remember that.", "What's my favorite color?"],
            "My favorite color is blue.",
            "helpful: ",
        ),
        (
            "workflow_as_agent_with_session",
            [
                "My name is Alex and I'm learning about machine learning.",
                "What was my name again, and what am I learning about?",
                "Can you suggest a good first project for me to try?",
            ],
            "My name is Alex",
            "summarizer: ",
        ),
    ],
    ids=["checkpointing_with_thread", "with_session"],
)
def test_workflow_agent_sample_remembers_earlier_turns(
    hitl_server: InProcessServer,
    fake: FakeModel,
    model: str,
    inputs: list[str],
    remembered: str,
    speaker: str,
) -> None:
    """A session's history reaches the workflow's agents on later turns (`previous_response_id`
    stands for the sample's `session`): the last turn's model calls see the first turn."""
    mark = fake.mark()
    turns = _turns(hitl_server.base_url, model, inputs)
    for turn, text in zip(turns, inputs, strict=True):
        assert one_text(turn).startswith(speaker) and f'You said "{text[:20]}' in one_text(turn), turn[
            "output"
        ]
    last = [c for c in fake.calls_since(mark) if c.prompt.latest_user_text == inputs[-1]]
    assert last and all(any(remembered in t.text for t in c.prompt.dialogue) for c in last), [
        [t.text for t in c.prompt.dialogue] for c in last
    ]


SLOGAN_BRIEF = '{"topic": "electric SUV", "style": "playful", "audience": "young families"}'


def test_local_responses_workflow_sample_driven_by_its_own_call_server(
    server_factory: Any, database_url: str, fake: FakeModel, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """af-hosting/local_responses_workflow: its workflow (`workflow_builder`, built at import, so
    served by `durable-responses serve --app`) driven by its own call_server.py, pointed at this
    server: two turns, the second continuing the first with previous_response_id."""
    from tests.samples.upstream import local_responses_workflow_call_server as call_server

    srv = server_factory(database_url, app="tests.samples.hosting_apps:workflow_builder", env=model_env(fake))
    srv.start()
    monkeypatch.setattr(call_server, "BASE_URL", srv.base_url)
    monkeypatch.setattr("sys.argv", ["call_server.py"])
    call_server.main()
    lines = capsys.readouterr().out.splitlines()
    workflow = [line for line in lines if line.startswith("Workflow: ")]
    ids = [line.removeprefix("Response ID: ") for line in lines if line.startswith("Response ID: ")]
    # The writer's reply (the fake quotes the turn's input), formatted by TerminalFormatter.
    assert len(workflow) == 2, lines
    assert workflow[0].startswith('Workflow: Slogan: "excellent: You said "{"topic": "electric SUV"'), lines
    assert workflow[1] == f'Workflow: Slogan: "excellent: You said "{call_server.FOLLOW_UP}"', lines
    assert len(ids) == 2 and len(set(ids)) == 2, lines
    for rid in ids:
        check_sequence(stream_events(srv.base_url, rid), label=rid)


def test_foundry_hosted_workflow_sample_answers_as_foundry_calls_it(
    shared_servers: Any, fake: FakeModel
) -> None:
    """foundry-hosted-agents/responses/workflows: its workflow agent (writer -> legal reviewer ->
    formatter, only the formatter's output selected) answers the README's call (`{"input": ...}`,
    no model), then a streamed call as a Foundry client makes it (agent_reference, its headers)."""
    srv: InProcessServer = shared_servers("tests.samples.hosting_apps:slogan_pipeline")
    ask = "Create a slogan for a new electric SUV that is affordable and fun to drive."
    mark = fake.mark()
    r = httpx.post(srv.base_url + "/responses", json={"input": ask}, timeout=60)
    assert r.status_code == 200, r.text
    body = completed(r.json())
    (text,) = texts(body)
    # Each agent saw only the previous one's reply, as an assistant message (context_mode=
    # "last_agent": its README asks for a model that continues from one; the fake quotes no user).
    calls = fake.calls_since(mark)
    assert [c.prompt.system_text.split(".")[0] for c in calls] == [
        "You are an excellent slogan writer",
        "You are an excellent legal reviewer",
        "You are an excellent content formatter",
    ], [c.prompt.system_text for c in calls]
    for before, after in itertools.pairwise(calls):
        assert [(t.role, t.text) for t in after.prompt.dialogue] == [("assistant", before.reply.text)], (
            after.prompt
        )
    assert text == calls[2].reply.text, text
    final = streamed(
        openai_client(srv.base_url),
        "agent-framework-workflows-responses",
        ask,
        extra_body={
            "agent_reference": {"type": "agent_reference", "name": "agent-framework-workflows-responses"}
        },
        extra_headers={"x-agent-session-id": "session-1", "x-agent-foundry-call-id": "call-1"},
    )
    assert texts(final) == [text], final["output"]


def test_a_server_tool_beside_an_approval_is_not_shown_as_the_clients_call(
    hitl_server: InProcessServer,
) -> None:
    """sequential_builder_tool_approval as its own prompt asks ("Check the schema and then
    update ..."): get_database_schema (never_require) and execute_database_query (always_require)
    in one model turn. agent-framework holds the first until the approval is answered."""
    flow = Flow(
        "sequential_builder_tool_approval",
        "Check the schema with get_database_schema, then execute_database_query query=x",
        approvals("execute_database_query"),  # nothing else: the schema tool is the server's
        [Step(approve_all, lambda r: [c["name"] for c in items_of(r, "mcp_call")] == list(RAN))],
    )
    run_flow(hitl_server.base_url, flow)


RAN = ("get_database_schema", "execute_database_query")


def test_checkpoint_with_human_in_the_loop_sample_takes_a_revision(hitl_server: InProcessServer) -> None:
    """The sample's revision: agent-framework alone (one instance, or a fresh one resumed with
    run(checkpoint_id=..., responses=...)) asks for review again after the writer revises."""
    flow = Flow(
        "checkpoint_with_human_in_the_loop",
        "Introduce our limited edition smart coffee grinder.",
        asks("prompt", "Review the draft."),
        [Step(call_output("Mention the price."), asks("iteration", "2"))],
    )
    run_flow(hitl_server.base_url, flow)
