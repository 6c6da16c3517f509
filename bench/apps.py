"""Workflows the benchmarks host: no model, no network, deterministic."""

from __future__ import annotations

from agent_framework import Executor, Message, Workflow, WorkflowBuilder, WorkflowContext, handler


def _count(messages: list[Message], default: int) -> int:
    text = messages[-1].text.strip() if messages else ""
    return int(text) if text.isdigit() else default


class _Burst(Executor):
    """Yields N outputs in ONE superstep (the 1000-output benchmark)."""

    def __init__(self) -> None:
        super().__init__(id="burst")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[None, str]) -> None:
        for i in range(_count(messages, 1000)):
            await ctx.yield_output(f"output {i}")


def burst() -> Workflow:
    b = _Burst()
    return WorkflowBuilder(name="burst", start_executor=b, output_from=[b]).build()


class _Start(Executor):
    def __init__(self) -> None:
        super().__init__(id="steps_start")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[int]) -> None:
        await ctx.send_message(_count(messages, 100))


class _Step(Executor):
    """One output per superstep over a self-edge, no delay (per-superstep overhead)."""

    def __init__(self) -> None:
        super().__init__(id="step")

    @handler
    async def run(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        await ctx.yield_output(f"step {n}")
        if n > 1:
            await ctx.send_message(n - 1)


def steps() -> Workflow:
    start, step = _Start(), _Step()
    b = WorkflowBuilder(name="steps", start_executor=start, output_from=[step])
    b.add_edge(start, step)
    b.add_edge(step, step)
    return b.build()
