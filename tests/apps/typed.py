"""Typed-input workflows for crash tests (issue 36): no model, deterministic, slow enough to kill.

`tick_countdown` starts with an `int` (the input's text), passes a `Tick` dataclass over a
self-edge (so every checkpoint holds one of the workflow's own types) and yields each `Tick`
(shown as JSON text): `{"n": N}` ... `{"n": 0}`, one per superstep, `STEP_DELAY_SECONDS` apart.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from agent_framework import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler

from tests.apps.workflows import _step_delay


@dataclass
class Tick:
    n: int


class _Start(Executor):
    def __init__(self) -> None:
        super().__init__(id="start")

    @handler
    async def start(self, n: int, ctx: WorkflowContext[Tick]) -> None:
        await ctx.send_message(Tick(n))


class _Ticker(Executor):
    def __init__(self) -> None:
        super().__init__(id="ticker")

    @handler
    async def tick(self, tick: Tick, ctx: WorkflowContext[Tick, Tick]) -> None:
        await asyncio.sleep(_step_delay())
        await ctx.yield_output(tick)
        if tick.n > 0:
            await ctx.send_message(Tick(tick.n - 1))


def tick_countdown() -> Workflow:
    start, ticker = _Start(), _Ticker()
    builder = WorkflowBuilder(name="tick_countdown", start_executor=start, output_from=[ticker])
    builder.add_edge(start, ticker)
    builder.add_edge(ticker, ticker)
    return builder.build()
