"""The conversations of the human-in-the-loop samples (tests/samples/test_hitl_samples.py): each
sample's first input, then each answer a client gives, with what each response must show (the
fake model's replies are a pure function of the prompt: `<who>: You said "<text>"`, tool calls
for the tools the user text names, `key=value` arguments)."""

from __future__ import annotations

import json
from typing import Any

from tests.samples.hitl_flow import (
    Body,
    Flow,
    Step,
    approve_all,
    call_output,
    items_of,
    message,
    request_data,
    texts,
)


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


def ran_all(*calls: tuple[str, str]) -> Any:
    """Each of these tools ran once, in this order, each its named `mcp_call` (`ran`)."""

    def check(resp: Body) -> None:
        assert [c["name"] for c in items_of(resp, "mcp_call")] == [name for name, _ in calls], resp["output"]
        for name, output_has in calls:
            ran(name, output_has)(resp)

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
    Flow(  # the client runs the tool: the call it is shown, answered by its call_id
        "agents_with_declaration_only_tools",
        "What's the weather like today? Call get_user_location.",
        lambda r: (
            [(c["name"], c["arguments"]) for c in items_of(r, "function_call")]
            == [("get_user_location", '{"reason":"reason_value"}')]
        ),
        [Step(call_output("Seattle, WA"), says("helpful: Tool get_user_location returned: Seattle, WA"))],
    ),
    Flow(
        # The sample's own ask: the schema tool (the server's, no approval) and the gated query in
        # one model turn; agent-framework holds the first until the approval is answered.
        "sequential_builder_tool_approval",
        "Check the schema with get_database_schema, then run execute_database_query "
        "query=\"UPDATE orders SET status='processing'\"",
        approvals("execute_database_query", labels=("DatabaseAgent",)),
        [
            Step(
                approve_all,
                ran_all(("get_database_schema", "Tables:"), ("execute_database_query", "3 rows affected")),
            )
        ],
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
