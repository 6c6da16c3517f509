"""agent-framework's own human-in-the-loop, tool-approval, checkpoint and workflow-as-agent
samples (tests/samples/upstream, SOURCES.json) hosted on the server, their model client pointed at
the fake model, on SQLite and PostgreSQL: each first turn streams a valid event sequence through
the openai client; each pause shows the sample's request as DESIGN.md says; each answer
(`previous_response_id` + the answer item, a background turn read back with GET) resumes the
workflow to the sample's output; a paused one killed -9 and restarted on a wiped disk still takes
the answer and completes with every output once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from durable_responses.testing import FakeModel
from tests.samples.hitl_flow import (
    Body,
    Flow,
    Step,
    approve_all,
    background,
    call_output,
    client_of,
    completed,
    items_of,
    message,
    request_data,
    run_flow,
    streamed,
    texts,
)
from tests.support.inprocess import InProcessServer

APPS = {
    "sequential_request_info": "sequential_review",
    "concurrent_request_info": "concurrent_review",
    "group_chat_request_info": "group_chat_review",
    "agents_with_approval_requests": "email_approvals",
    "agents_with_declaration_only_tools": "weather_declaration_only",
    "sequential_builder_tool_approval": "sequential_tool_approval",
    "concurrent_builder_tool_approval": "concurrent_tool_approval",
    "group_chat_builder_tool_approval": "group_chat_tool_approval",
    "checkpoint_with_human_in_the_loop": "release_notes_review",
    "sub_workflow_checkpoint": "sub_workflow_review",
    "handoff_with_tool_approval_checkpoint_resume": "handoff_refunds",
    "workflow_as_agent_checkpoint": "assistant_and_reviewer",
    "workflow_as_agent_checkpoint_thread": "memory_assistant",
    "workflow_as_agent_with_session": "assistant_and_summarizer",
    "workflow_as_agent_reflection_pattern": "reflection",
    "workflow_as_agent_human_in_the_loop": "reflection_with_human_checkpointed",
    "workflow_as_agent_kwargs": "kwargs_tools",
    "workflow_as_agent_kwargs_deployed": "kwargs_tools_deployed",
    "azure_chat_agents_tool_calls_with_feedback": "writer_with_tools_and_feedback",
}
ALL_APPS = ",".join(f"{name}=tests.samples.hitl_apps:{factory}" for name, factory in APPS.items())


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeModel]:
    with FakeModel() as server:
        yield server


def model_env(fake: FakeModel) -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake.base_url, "OPENAI_API_KEY": "fake-key", "OPENAI_CHAT_MODEL": "fake"}


@pytest.fixture(scope="module", autouse=True)
def _model_env(fake: FakeModel) -> Iterator[None]:
    """The samples' `OpenAIChatClient()` reads the process environment (in-process servers)."""
    saved = {k: os.environ.get(k) for k in model_env(fake)}
    os.environ.update(model_env(fake))
    yield
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def hitl_server(shared_servers: Any) -> InProcessServer:
    """This module's server (per dialect) hosting every sample; a request's `model` picks one."""
    srv: InProcessServer = shared_servers(ALL_APPS)
    return srv


def one_text(resp: Body) -> str:
    (text,) = texts(resp)
    return text


def no_request(resp: Body) -> None:
    kinds = {o["type"] for o in resp["output"]}
    assert not kinds & {"function_call", "mcp_approval_request"}, resp["output"]


def says(prefix: str, quoted: str | None = None) -> Any:
    """The fake's reply text: `<who>: You said "<quoted>"` (a check on one message)."""

    def check(resp: Body) -> None:
        text = one_text(resp)
        assert text.startswith(prefix), text
        if quoted is not None:
            assert f'You said "{quoted}' in text, text
        no_request(resp)

    return check


def approvals(*names: str, labels: tuple[str, ...] = ()) -> Any:
    def check(resp: Body) -> None:
        shown = items_of(resp, "mcp_approval_request")
        assert sorted(r["name"] for r in shown) == sorted(names), resp["output"]
        if labels:
            assert sorted(r["server_label"] for r in shown) == sorted(labels), shown
        assert not items_of(resp, "function_call"), resp["output"]  # nothing for the client to run

    return check


def ran(name: str, output_has: str) -> Any:
    """The approved tool ran once (its `mcp_call`) and the agent quoted its result."""

    def check(resp: Body) -> None:
        (call,) = [c for c in items_of(resp, "mcp_call") if c["name"] == name]
        assert output_has in call["output"], call
        assert any(f"Tool {name} returned: " in t for t in texts(resp)), texts(resp)
        no_request(resp)

    return check


def asks(key: str, value_start: str) -> Any:
    def check(resp: Body) -> None:
        data = request_data(resp)
        assert str(data[key]).startswith(value_start), data

    return check


EMAIL = {
    "sender": "mike@contoso.com",
    "subject": "Important: Project Update",
    "body": "Please read_historical_email_data email_address=alice@contoso.com start_date=2025-11-01 "
    "end_date=2025-11-07 and reply.",
}
KWARGS_ASK = "Please get_user_data query=profile and then call_api endpoint_name=users"
DEPLOY = "Deploy 2.4.0: run_tests test_suite=integration, then deploy_to_production version=2.4.0 components=api,web"


def _review_response(call: Body) -> str:
    """workflow_as_agent_human_in_the_loop's answer: its `ReviewResponse`, approving the draft."""
    data = json.loads(call["arguments"])["data"]
    return json.dumps({"request_id": data["agent_request"]["request_id"], "feedback": "", "approved": True})


FLOWS = [
    Flow(
        "sequential_request_info",
        "Write a brief introduction to artificial intelligence.",
        says("editor: ", "Write a brief introduction"),  # the editor's reply, held for review
        [
            Step(message("Add a historical note."), says("editor: ", "Add a historical note.")),
            Step(message(""), says("finalizer: ")),
        ],
    ),
    Flow(
        "concurrent_request_info",
        "Analyze the impact of large language models on software development.",
        says("technical: "),
        [
            Step(message("Focus on security."), says("technical: ", "Focus on security.")),
            Step(message(""), says("synthesis: ", "technical_analyst:")),
        ],
    ),
    Flow(
        "group_chat_request_info",
        "Discuss how our team should approach adopting AI tools for productivity.",
        says("pragmatic: "),
        [
            Step(
                message(""),
                lambda r: texts(r) == ["Every participant has spoken; the conversation is complete."],
            )
        ],
    ),
    Flow(
        "agents_with_approval_requests",
        json.dumps(EMAIL),
        approvals("read_historical_email_data", labels=("EmailWriter",)),
        # output_from=[conclude_workflow]: the agent's tool calls are not outputs, its reply is.
        [
            Step(
                approve_all,
                lambda r: (
                    one_text(r).startswith("excellent: Tool read_historical_email_data returned: ")
                    and "Bug Bash Results" in one_text(r)
                ),
            )
        ],
    ),
    Flow(
        "sequential_builder_tool_approval",
        "Run execute_database_query query=\"UPDATE orders SET status='processing'\"",
        approvals("execute_database_query", labels=("DatabaseAgent",)),
        [Step(approve_all, ran("execute_database_query", "3 rows affected"))],
    ),
    Flow(
        "concurrent_builder_tool_approval",
        "Manage my portfolio: execute_trade symbol=MSFT action=buy quantity=13",
        approvals("execute_trade", "execute_trade", labels=("GoogleAgent", "MicrosoftAgent")),
        [
            Step(
                approve_all,
                lambda r: (
                    texts(r)
                    == ["personal: Tool execute_trade returned: Trade executed: BUY 13 shares of MSFT"] * 2
                ),
            )
        ],
    ),
    Flow(
        "group_chat_builder_tool_approval",
        DEPLOY,
        approvals("deploy_to_production", labels=("DevOpsEngineer",)),
        [
            Step(
                approve_all,
                lambda r: texts(r) == ["The group chat has reached the maximum number of rounds."],
            )
        ],
    ),
    Flow(
        "checkpoint_with_human_in_the_loop",
        "Introduce our limited edition smart coffee grinder. Mention the $249 price.",
        asks("prompt", "Review the draft. Reply 'approve'"),
        [
            Step(
                call_output("approve"), lambda r: texts(r) == [texts(r)[0]] and "release notes" in texts(r)[0]
            )
        ],
    ),
    Flow(
        "sub_workflow_checkpoint",
        "Contoso Gadget Launch",
        asks("draft_excerpt", "Launch plan for Contoso Gadget Launch."),
        [
            Step(call_output("revise"), asks("iteration", "2")),
            Step(
                call_output("approve"),
                lambda r: (
                    json.loads(one_text(r))["content"]
                    == "Approved launch narrative for Contoso Gadget Launch (iteration 2)."
                ),
            ),
        ],
    ),
    Flow(
        "handoff_with_tool_approval_checkpoint_resume",
        "Hi, my order 12345 arrived damaged. I need the refund_agent.",
        lambda r: (
            [c["name"] for c in items_of(r, "mcp_call")] == ["handoff_to_refund_agent"]
            and texts(r)[-1].startswith("refund: ")
        ),
        [
            Step(message("Please submit_refund order_id=12345 amount=89.99"), approvals("submit_refund")),
            Step(approve_all, ran("submit_refund", "refund recorded for order 12345")),
            Step(message("That's everything."), says("refund: ", "That's everything.")),
        ],
    ),
    Flow(
        "workflow_as_agent_human_in_the_loop",
        "Write code for parallel reading 1 million files on disk.",
        lambda r: request_data(r)["agent_request"]["agent_messages"],
        [Step(call_output(_review_response), says("helpful: ", "Write code for parallel reading"))],
    ),
    Flow(
        "azure_chat_agents_tool_calls_with_feedback",
        "Create a short launch blurb for the LumenX desk lamp.",
        asks("prompt", "Review the draft from the writer"),
        [
            Step(call_output("Make it warmer."), asks("prompt", "Review the draft from the writer")),
            # The editor's streamed reply, then the coordinator's output of it (both the
            # workflow's outputs: the sample sets no output_from).
            Step(
                call_output("approve"),
                lambda r: texts(r) == ['editor: You said "The draft is approved as-is."'] * 2,
            ),
        ],
    ),
    Flow(
        "workflow_as_agent_checkpoint",
        "What are the benefits of renewable energy?",
        says("reviewer: ", "What are the benefits of renewable energy?"),
    ),
    Flow(
        "workflow_as_agent_reflection_pattern",
        "Write code for parallel reading 1 million files on disk.",
        says("helpful: ", "Write code for parallel reading"),  # approved by the reviewer agent
    ),
    Flow(  # as written: the tools see no context (the sample's caller passes it per call)
        "workflow_as_agent_kwargs",
        KWARGS_ASK,
        lambda r: (
            [c["output"] for c in items_of(r, "mcp_call")]
            == [
                "Retrieved data for user anonymous with none access: profile",
                "Endpoint 'users' not found in configuration",
            ]
        ),
    ),
    Flow(  # the context given by the agent's own run(), as a deployer would
        "workflow_as_agent_kwargs_deployed",
        KWARGS_ASK,
        lambda r: (
            [c["output"] for c in items_of(r, "mcp_call")]
            == [
                "Retrieved data for user bob@contoso.com with admin access: profile",
                "Called https://api.example.com/v1/users successfully",
            ]
        ),
    ),
]


@pytest.mark.parametrize("flow", FLOWS, ids=[f.model for f in FLOWS])
def test_sample_hosted_turn_by_turn(hitl_server: InProcessServer, flow: Flow) -> None:
    run_flow(hitl_server.base_url, flow)


CRASHES = {  # flow -> the answers given before the kill (the response then waits for the next)
    "sequential_request_info": 0,
    "sub_workflow_checkpoint": 1,
    "workflow_as_agent_human_in_the_loop": 0,
    "handoff_with_tool_approval_checkpoint_resume": 1,
}


@pytest.mark.crash
def test_paused_samples_killed_and_restarted_on_a_wiped_disk_take_their_answers(
    server_factory: Any, database_url: str, fake: FakeModel
) -> None:
    """Each sample paused on its request (an agent's reply under review, a sub-workflow's
    request, a typed request of a workflow agent, a tool approval after a handoff), the server
    is killed -9; another starts in a fresh working directory (the compute recreated) on the
    same database: every answer is taken and each sample completes, each output once (the
    checks compare whole output lists)."""
    flows = [f for f in FLOWS if f.model in CRASHES]
    apps = ",".join(f"{f.model}=tests.samples.hitl_apps:{APPS[f.model]}" for f in flows)
    first = server_factory(database_url, app=apps, env=model_env(fake)).start()
    paused = [run_flow(first.base_url, f, stop=CRASHES[f.model]) for f in flows]
    first.kill()
    second = server_factory(database_url, app=apps, env=model_env(fake)).start()
    assert second.workdir != first.workdir
    for flow, resp in zip(flows, paused, strict=True):
        run_flow(second.base_url, flow, resp=resp, start=CRASHES[flow.model])


def _turns(base_url: str, model: str, inputs: list[str]) -> list[Body]:
    client = client_of(base_url)
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
