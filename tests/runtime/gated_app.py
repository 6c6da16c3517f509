"""A countdown from 3 whose tick 1 waits for `GATE` (set by the test): its superstep does not
end in a first life, so a replica stopped meanwhile leaves it to recovery (`test_recovery`)."""

from __future__ import annotations

import asyncio

from agent_framework import Executor, Message, Workflow, WorkflowBuilder, WorkflowContext, handler

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
