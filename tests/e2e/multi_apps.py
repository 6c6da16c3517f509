"""A second long-running app for the several-apps tests: counts up ("up 0" ... "up N"), one
output per superstep, so a response resumed by the wrong app would show in its output."""

from __future__ import annotations

import asyncio

from agent_framework import Executor, Message, Workflow, WorkflowBuilder, WorkflowContext, handler

from durable_responses.examples.countdown import DELAY_STATE_KEY, last_user_text, parse_countdown_request


class _Start(Executor):
    def __init__(self) -> None:
        super().__init__(id="countup_start")

    @handler
    async def start(self, messages: list[Message], ctx: WorkflowContext[list[int]]) -> None:
        request = parse_countdown_request(last_user_text(messages))
        ctx.set_state(DELAY_STATE_KEY, request.delay)
        await ctx.send_message([0, request.n])


class _Up(Executor):
    def __init__(self) -> None:
        super().__init__(id="countup")

    @handler
    async def tick(self, at: list[int], ctx: WorkflowContext[list[int], str]) -> None:
        await asyncio.sleep(float(ctx.get_state(DELAY_STATE_KEY, 0.0)))
        i, n = at
        await ctx.yield_output(f"up {i}")
        if i < n:
            await ctx.send_message([i + 1, n])


def countup() -> Workflow:
    start, up = _Start(), _Up()
    builder = WorkflowBuilder(name="countup", start_executor=start, output_from=[up])
    builder.add_edge(start, up)
    builder.add_edge(up, up)
    return builder.build()
