"""Workflows whose step waits for `GATE` (set by the test): its superstep does not end in a first
life, so a replica stopped meanwhile leaves it to recovery (`test_recovery`). A countdown from 3
whose tick 1 waits, and a review whose answer's superstep waits."""

from __future__ import annotations

import asyncio
from typing import Never

from agent_framework import (
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

# The tick that waits for `GATE` (its superstep never ends in the first life).
HELD_TICK = 1
GATE: list[asyncio.Event] = []


class _Start(Executor):
    def __init__(self) -> None:
        super().__init__(id="start")

    @handler
    async def start(self, messages: list[Message], ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(3)


class _Tick(Executor):
    def __init__(self) -> None:
        super().__init__(id="tick")

    @handler
    async def tick(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        if n == HELD_TICK:
            await GATE[0].wait()
        await ctx.yield_output(f"tick {n}")
        if n > 0:
            await ctx.send_message(n - 1)


def gated_countdown() -> Workflow:
    start, tick = _Start(), _Tick()
    builder = WorkflowBuilder(name="gated", start_executor=start, output_from=[tick])
    builder.add_edge(start, tick)
    builder.add_edge(tick, tick)
    return builder.build()


# The review's supersteps, its limit: the request, the answer, the publication.
REVIEW_SUPERSTEPS = 3


class _Review(Executor):
    def __init__(self) -> None:
        super().__init__(id="review")

    @handler
    async def draft(self, messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(request_data="Review the draft.", response_type=str)

    @response_handler
    async def reviewed(self, original: str, answer: str, ctx: WorkflowContext[str, str]) -> None:
        if GATE:
            await GATE[0].wait()
        await ctx.yield_output(f"review: {answer}")
        await ctx.send_message(answer)


class _Publish(Executor):
    def __init__(self) -> None:
        super().__init__(id="publish")

    @handler
    async def publish(self, answer: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output("published")


def gated_review() -> Workflow:
    """Asks for a review (superstep 1), takes the answer (2: it waits for `GATE` when a test set
    one) and publishes (3): exactly its `max_iterations`, so a continuation that spends a
    superstep of its own before delivering the answer does not converge."""
    review, publish = _Review(), _Publish()
    builder = WorkflowBuilder(
        REVIEW_SUPERSTEPS, name="gated_review", start_executor=review, output_from=[review, publish]
    )
    builder.add_edge(review, publish)
    return builder.build()
