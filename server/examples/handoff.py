"""Handoff: a support desk where triage hands the customer to billing or technical support.

Built with agent-framework-orchestrations' `HandoffBuilder` (install the `agents` extra) on a
deterministic chat client (`durable_responses.testing.RuleChatClient`: no model, no network). Say
`I have a billing question`: triage hands off to billing (a `handoff_to_billing` call and its
output), billing answers and the workflow waits for you. Continue with a plain message and
`previous_response_id` (or the same `conversation`): billing answers again. Billing's
`refund_payment order_id=A1 amount=5` waits for approval (`mcp_approval_request`).
Invariant: each participant is a fresh agent per run, as handoffs require
(`require_per_service_call_history_persistence`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_framework import Agent, FunctionTool, Workflow

from ..testing.chat_client import RuleChatClient
from .tools import lookup_order, refund_payment


def _member(name: str, role: str, tools: Sequence[FunctionTool] = ()) -> Agent:
    return Agent(
        client=RuleChatClient(),
        name=name,
        instructions=f"You are {name}, {role}.",
        tools=list(tools),
        require_per_service_call_history_persistence=True,
    )


def support() -> Workflow:
    """A fresh support desk: triage, billing (with an approval-gated refund), technical."""
    from agent_framework_orchestrations import HandoffBuilder

    triage = _member("triage", "who routes the customer to billing or technical support")
    billing = _member("billing", "who answers billing questions", [lookup_order, refund_payment])
    technical = _member("technical", "who answers technical questions", [lookup_order])
    return (
        HandoffBuilder(name="support", participants=[triage, billing, technical])
        .with_start_agent(triage)
        .build()
    )
