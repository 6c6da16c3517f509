"""Countdown: a self-driving workflow that needs no model, for demos and crash tests.

The start executor parses the user's text ("N", "countdown N", "N delay=0.2") and hands the number to a
countdown executor that loops over a self-edge: one superstep per tick, each yielding exactly one output
("tick N" ... "tick 0"). Invariant: every superstep of the countdown yields exactly one output, so a
checkpoint taken after superstep k always pairs with exactly the ticks produced before it. Messages and
state are plain ints and floats, so its checkpoints decode under the default type allow-list.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass

from agent_framework import (
    Executor,
    Message,
    Workflow,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)

DEFAULT_COUNT = 5
DEFAULT_DELAY_SECONDS = 0.2
DELAY_ENV = "COUNTDOWN_DELAY_SECONDS"

DELAY_STATE_KEY = "countdown_delay_seconds"

_DELAY_RE = re.compile(r"delay\s*=\s*([0-9]*\.?[0-9]+)", re.IGNORECASE)
_NUMBER_RE = re.compile(r"-?\d+")


@dataclass(frozen=True)
class CountdownRequest:
    """A parsed request: the number to count down from and the pause before each tick."""

    n: int
    delay: float


def default_delay() -> float:
    """The delay per tick from the environment, falling back to 0.2 s on absent or bad values."""
    raw = os.environ.get(DELAY_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_DELAY_SECONDS
    try:
        return max(0.0, float(raw))
    except ValueError:
        return DEFAULT_DELAY_SECONDS


def parse_countdown_request(text: str) -> CountdownRequest:
    """Parse "N", "countdown N" or "N delay=0.2"; missing parts take their defaults."""
    delay = default_delay()
    match = _DELAY_RE.search(text)
    if match:
        delay = float(match.group(1))
        # Remove the delay clause so its digits are not read as the count.
        text = text[: match.start()] + text[match.end() :]
    number = _NUMBER_RE.search(text)
    count = int(number.group(0)) if number else DEFAULT_COUNT
    return CountdownRequest(n=max(0, count), delay=delay)


def last_user_text(messages: list[Message]) -> str:
    """The text of the newest user message, or "" when there is none."""
    for message in reversed(messages):
        if message.role == "user":
            return message.text or ""
    return ""


class CountdownStart(Executor):
    """Entry executor: parses the user's text, keeps the delay in workflow state, sends the count."""

    def __init__(self) -> None:
        super().__init__(id="countdown_start")

    @handler
    async def start(self, messages: list[Message], ctx: WorkflowContext[int]) -> None:
        request = parse_countdown_request(last_user_text(messages))
        # Workflow state is checkpointed, so a restored run keeps the requested pace.
        ctx.set_state(DELAY_STATE_KEY, request.delay)
        await ctx.send_message(request.n)


class Countdown(Executor):
    """One tick per superstep over a self-edge, ending after "tick 0"."""

    def __init__(self) -> None:
        super().__init__(id="countdown")

    @handler
    async def tick(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        delay = float(ctx.get_state(DELAY_STATE_KEY, default_delay()))
        if delay > 0:
            await asyncio.sleep(delay)
        await ctx.yield_output(f"tick {n}")
        if n > 0:
            await ctx.send_message(n - 1)


def countdown() -> Workflow:
    """A fresh countdown workflow (the host builds one per run)."""
    start = CountdownStart()
    ticker = Countdown()
    builder = WorkflowBuilder(name="countdown", start_executor=start, output_from=[ticker])
    builder.add_edge(start, ticker)
    builder.add_edge(ticker, ticker)
    return builder.build()


def countdown_agent() -> WorkflowAgent:
    """The countdown workflow wrapped as an agent."""
    return countdown().as_agent(name="countdown")
