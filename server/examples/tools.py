"""Tools: an agent that runs a tool itself and has one that waits for a person's approval.

On a deterministic chat client (`durable_responses.testing.RuleChatClient`: no model, no network), so the
conversation is scripted by what you say:
- `lookup_order order_id=A1`: the agent calls `lookup_order` and runs it itself; the response
  shows one `mcp_call` item (name, arguments, output), then the agent's message
  (`DURABLE_RESPONSES_SERVER_TOOLS=function_call`: a `function_call` and a `function_call_output`
  item instead).
- `refund_payment order_id=A1 amount=5`: `refund_payment` needs approval, so the response ends
  with an `mcp_approval_request` item; answer it with an `mcp_approval_response` input item
  (`approval_request_id`, `approve`) and `previous_response_id`: approved, the refund runs and its
  result reaches the agent (an `mcp_call` item naming the approval request); rejected, it never
  runs and the agent is told so.
Invariant: the reply is a pure function of the conversation (see `RuleChatClient`).
"""

from __future__ import annotations

from agent_framework import Agent, tool

from ..testing.chat_client import RuleChatClient


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return f"order {order_id} shipped on 2026-11-30"


@tool(approval_mode="always_require")
def refund_payment(order_id: str, amount: float) -> str:
    """Refund a payment (a person must approve it first)."""
    return f"refunded {amount:.2f} for order {order_id}"


def tools_agent() -> Agent:
    """A fresh cashier agent with `lookup_order` (runs at once) and `refund_payment` (approval)."""
    return Agent(
        client=RuleChatClient(),
        name="cashier",
        instructions="You are cashier, who looks orders up and refunds payments.",
        tools=[lookup_order, refund_payment],
    )
