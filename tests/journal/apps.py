"""Apps for the journal's crash tests: agents on agent-framework's real OpenAI client against the
fake model (`FAKE_MODEL_URL`, `FAKE_MODEL_API` as in tests/agents/apps.py), with tools that log
each execution to a file, so a test outside the server process counts them.

- `JOURNAL_TOOL_LOG`: the file each tool appends a JSON line to when it starts and when it
  finishes (`event`: "start" / "done", the tool, its arguments, its idempotency key, the pid).
- `JOURNAL_TOOL_HOLD`: a path; while a file exists there, a tool that started waits (up to a
  minute) before it finishes, so a test can kill the server while a tool runs.

Apps (zero-argument factories for `--app`; a workflow is named: an unnamed one gets a fresh
random name per build, so a new process would take it for another app): `shop_agent` (one agent, one tool),
`shop_sequential` (a Sequential of three agents with a tool each), `shop_chain` (a workflow of
three chained agent executors with a tool each), `shop_fanout` (an agent, then two agents in
one superstep: one without a tool, one with). Each agent calls its tool when the tool's name
is in the user's text (the fake's rule), so the input names the tools to call.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from agent_framework import Agent, FunctionTool, Workflow, WorkflowBuilder, tool
from agent_framework_orchestrations import SequentialBuilder

from durable_responses import tool_idempotency_key
from tests.agents.apps import chat_client

TOOL_LOG_ENV = "JOURNAL_TOOL_LOG"
TOOL_HOLD_ENV = "JOURNAL_TOOL_HOLD"


def _log(event: str, name: str, args: dict[str, Any]) -> None:
    path = os.environ.get(TOOL_LOG_ENV)
    if path:
        line = {
            "event": event,
            "tool": name,
            "args": args,
            "key": tool_idempotency_key(),
            "pid": os.getpid(),
            "t": time.time(),
        }
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line) + "\n")


async def _run(name: str, **args: Any) -> str:
    _log("start", name, args)
    hold = os.environ.get(TOOL_HOLD_ENV)
    deadline = time.monotonic() + 60
    while hold and os.path.exists(hold) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    _log("done", name, args)
    return f"{name} did {args.get('order_id')}"


@tool
async def check_stock(order_id: str) -> str:
    """Check the stock of an order's items."""
    return await _run("check_stock", order_id=order_id)


@tool
async def reserve_items(order_id: str) -> str:
    """Reserve an order's items."""
    return await _run("reserve_items", order_id=order_id)


@tool
async def send_receipt(order_id: str) -> str:
    """Send the receipt of an order (an email: once only)."""
    return await _run("send_receipt", order_id=order_id)


def _agent(name: str, role: str, tools: list[FunctionTool]) -> Agent:
    return Agent(client=chat_client(), name=name, instructions=f"You are {name}, {role}.", tools=tools)


def shop_agent() -> Agent:
    """One agent, one tool: say `send_receipt order_id=X`."""
    return _agent("clerk", "who sends receipts", [send_receipt])


def _three() -> list[Agent]:
    return [
        _agent("stocker", "who checks the stock", [check_stock]),
        _agent("reserver", "who reserves items", [reserve_items]),
        _agent("cashier", "who sends receipts", [send_receipt]),
    ]


def shop_sequential() -> Workflow:
    """stocker, reserver, cashier in turn, each calling its tool: say
    `check_stock reserve_items send_receipt order_id=X`."""
    return SequentialBuilder(participants=_three()).build()


def shop_fanout() -> Workflow:
    """An intake agent, then two agents in one superstep: a talker (no tool) and the cashier
    (`send_receipt`): the talker's reply is streamed and its call finished while the cashier's
    tool may still run (the hold file)."""
    intake = _agent("intake", "who takes the order", [])
    talker = _agent("talker", "who chats with the customer", [])
    cashier = _agent("cashier", "who sends receipts", [send_receipt])
    builder = WorkflowBuilder(name="shop_fanout", start_executor=intake)
    return builder.add_fan_out_edges(intake, [talker, cashier]).build()


def shop_chain() -> Workflow:
    """The same three agents as a chain of agent executors in a plain workflow."""
    a, b, c = _three()
    return WorkflowBuilder(name="shop_chain", start_executor=a).add_chain([a, b, c]).build()
