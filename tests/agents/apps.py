"""Real-agent scenario apps: agent-framework agents and official orchestrations on a fake model.

Every public function here is a zero-argument factory for the host's `--app MODULE:ATTR` (it
returns an `Agent` or a `Workflow`; the host builds a fresh one per run). The model is agent-framework's
real OpenAI client pointed at the fake model server (`durable_responses.testing.FakeModel`):
- `FAKE_MODEL_URL` (required): the fake's base URL, ending in `/v1`;
- `FAKE_MODEL_API`: `chat` (default, `OpenAIChatCompletionClient`) or `responses` (`OpenAIChatClient`);
- `AGENT_TOOL_LOG` (optional): a file each tool appends one JSON line to when it runs, so a test
  outside the server process can count executions (an approved tool runs once, a rejected never).
The fake's rules decide the conversation (see `durable_responses.testing._rules`): a tool runs when its
name is in the user's message (`lookup_order order_id=A1`), `refund_payment` needs approval, a
handoff happens when the message names the target (`billing`, `technical`). Agents are named by
their instructions ("You are <name>."), so replies say who spoke.
Invariant: a factory reads its environment at call time and shares no state between builds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from agent_framework import Agent, FunctionTool, Workflow, tool
from agent_framework_openai import OpenAIChatClient, OpenAIChatCompletionClient
from agent_framework_orchestrations import (
    ConcurrentBuilder,
    GroupChatBuilder,
    GroupChatState,
    HandoffBuilder,
    MagenticBuilder,
    SequentialBuilder,
)

from durable_responses.examples.echo import echo

FAKE_MODEL_URL_ENV = "FAKE_MODEL_URL"
FAKE_MODEL_API_ENV = "FAKE_MODEL_API"
TOOL_LOG_ENV = "AGENT_TOOL_LOG"
MODEL = "fake-model"


def _log_tool(name: str, **args: Any) -> None:
    path = os.environ.get(TOOL_LOG_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": name, "args": args, "pid": os.getpid()}) + "\n")


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    _log_tool("lookup_order", order_id=order_id)
    return f"order {order_id} shipped on 2026-11-30"


@tool
def track_parcel(order_id: str) -> str:
    """Track an order's parcel."""
    _log_tool("track_parcel", order_id=order_id)
    return f"parcel of {order_id} is in Lyon"


@tool(approval_mode="always_require")
def refund_payment(order_id: str, amount: float) -> str:
    """Refund a payment (a person must approve it first)."""
    _log_tool("refund_payment", order_id=order_id, amount=amount)
    return f"refunded {amount:.2f} for order {order_id}"


def chat_client() -> OpenAIChatCompletionClient | OpenAIChatClient:
    """agent-framework's real OpenAI client of the flavour `FAKE_MODEL_API` names."""
    url = os.environ.get(FAKE_MODEL_URL_ENV)
    if not url:
        raise RuntimeError(
            f"{FAKE_MODEL_URL_ENV} must name the fake model server (e.g. http://127.0.0.1:8089/v1)"
        )
    api = os.environ.get(FAKE_MODEL_API_ENV, "chat")
    if api == "chat":
        return OpenAIChatCompletionClient(model=MODEL, api_key="fake-key", base_url=url)
    if api == "responses":
        return OpenAIChatClient(model=MODEL, api_key="fake-key", base_url=url)
    raise RuntimeError(f"{FAKE_MODEL_API_ENV} must be 'chat' or 'responses', not {api!r}")


def _agent(name: str, role: str, tools: Sequence[FunctionTool] = (), **kwargs: Any) -> Agent:
    return Agent(
        client=chat_client(),
        name=name,
        description=role,
        instructions=f"You are {name}, {role}.",
        tools=list(tools),
        **kwargs,
    )


# region plain agents


def tool_agent() -> Agent:
    """An agent with a tool it runs itself: say `lookup_order order_id=A1`."""
    return _agent("assistant", "a shop assistant who looks orders up", [lookup_order])


def shop_agent() -> Agent:
    """An agent with two tools it runs itself: say `lookup_order and track_parcel order_id=A1`."""
    return _agent("assistant", "a shop assistant", [lookup_order, track_parcel])


def no_agents() -> Workflow:
    """A workflow without agents (the echo example): no model takes request options."""
    return echo()


def approval_agent() -> Agent:
    """An agent whose `refund_payment` tool waits for approval: say `refund_payment order_id=A1 amount=5`."""
    return _agent("cashier", "a cashier who refunds payments", [lookup_order, refund_payment])


# region orchestrations


def _writer_and_reviewer() -> list[Agent]:
    return [_agent("writer", "who drafts the answer"), _agent("reviewer", "who reviews the draft")]


def sequential() -> Workflow:
    """writer then reviewer; only the reviewer's output is surfaced (the builder's default)."""
    return SequentialBuilder(participants=_writer_and_reviewer()).build()


def sequential_all_outputs() -> Workflow:
    """writer then reviewer; the writer's output is surfaced too, as intermediate output."""
    return SequentialBuilder(
        participants=_writer_and_reviewer(), intermediate_output_from="all_other"
    ).build()


def sequential_request_info() -> Workflow:
    """writer then reviewer, pausing after each for a person's review (`with_request_info`)."""
    return SequentialBuilder(participants=_writer_and_reviewer()).with_request_info().build()


def sequential_approval() -> Workflow:
    """clerk then cashier (with the approval-gated `refund_payment`): an approval inside a workflow.

    The approving agent is the last one: agent-framework 1.23 hands the agent after an approved
    call a conversation that starts with the orphan tool result, which OpenAI refuses.
    """
    clerk = _agent("clerk", "who takes the customer's request")
    cashier = _agent("cashier", "a cashier who refunds payments", [lookup_order, refund_payment])
    return SequentialBuilder(participants=[clerk, cashier]).build()


def concurrent() -> Workflow:
    """Three agents answer the same question at once; the default aggregator joins their replies."""
    agents = [
        _agent("researcher", "who finds facts"),
        _agent("marketer", "who writes copy"),
        _agent("legal", "who checks the rules"),
    ]
    return ConcurrentBuilder(participants=agents).build()


def _support_team() -> tuple[Agent, Agent, Agent]:
    def member(name: str, role: str, tools: Sequence[FunctionTool] = ()) -> Agent:
        return _agent(name, role, tools, require_per_service_call_history_persistence=True)

    return (
        member("triage", "who routes the customer to billing or technical support"),
        member("billing", "who answers billing questions", [lookup_order, refund_payment]),
        member("technical", "who answers technical questions", [lookup_order]),
    )


def handoff() -> Workflow:
    """triage hands off to billing or technical; the agent that answered waits for the user's next message."""
    triage, billing, technical = _support_team()
    return (
        HandoffBuilder(name="support", participants=[triage, billing, technical])
        .with_start_agent(triage)
        .build()
    )


def round_robin(state: GroupChatState) -> str:
    """The group chat's selection function: each participant in turn."""
    names = list(state.participants)
    return names[state.current_round % len(names)]


def group_chat() -> Workflow:
    """researcher and writer speak in turn (a selection function) for two rounds."""
    participants = [_agent("researcher", "who finds facts"), _agent("writer", "who writes the answer")]
    return GroupChatBuilder(participants=participants, selection_func=round_robin, max_rounds=2).build()


def group_chat_manager() -> Workflow:
    """researcher and writer, chosen by a manager agent that ends the chat when both have spoken."""
    participants = [_agent("researcher", "who finds facts"), _agent("writer", "who writes the answer")]
    manager = _agent("moderator", "who picks the next speaker")
    return GroupChatBuilder(participants=participants, orchestrator_agent=manager, max_rounds=6).build()


def magentic() -> Workflow:
    """A StandardMagenticManager plans, asks researcher then writer, and gives the final answer."""
    participants = [_agent("researcher", "who finds facts"), _agent("writer", "who writes the answer")]
    manager = _agent("manager", "who plans and coordinates the team")
    return MagenticBuilder(participants=participants, manager_agent=manager, max_round_count=6).build()
