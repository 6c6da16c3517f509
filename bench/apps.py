"""Workflows the benchmarks host: no model, no network, deterministic."""

from __future__ import annotations

import asyncio
import time
import uuid

from agent_framework import (
    AgentResponseUpdate,
    Content,
    Executor,
    Message,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

# agent-framework stops a workflow after 100 supersteps by default: the cost-growth benchmark runs 1001.
MAX_SUPERSTEPS = 100_000


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
    b = WorkflowBuilder(name="steps", start_executor=start, output_from=[step], max_iterations=MAX_SUPERSTEPS)
    b.add_edge(start, step)
    b.add_edge(step, step)
    return b.build()


_DELAY_KEY = "ticks_delay_seconds"


def _count_and_delay(messages: list[Message]) -> tuple[int, float]:
    """Parse "N" or "N delay=D" (seconds) from the last message."""
    text = messages[-1].text.strip() if messages else ""
    count, delay = 3, 0.5
    for part in text.split():
        if part.startswith("delay="):
            delay = float(part[len("delay=") :])
        elif part.isdigit():
            count = int(part)
    return count, delay


class _TicksStart(Executor):
    def __init__(self) -> None:
        super().__init__(id="ticks_start")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[int]) -> None:
        count, delay = _count_and_delay(messages)
        ctx.set_state(_DELAY_KEY, delay)  # checkpointed: a resumed run keeps its pace
        await ctx.send_message(count)


class _Tick(Executor):
    """Like `steps` but sleeps before each output (the recovery benchmark: runs stay in flight).

    Each output carries the wall-clock time its superstep started ("tick 2 t=1795960281.123"), so the
    benchmark can tell from the final output which supersteps ran after a restart, on any host.
    """

    def __init__(self) -> None:
        super().__init__(id="tick")

    @handler
    async def run(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        started = time.time()
        await asyncio.sleep(float(ctx.get_state(_DELAY_KEY, 0.5)))
        await ctx.yield_output(f"tick {n} t={started:.3f}")
        if n > 1:
            await ctx.send_message(n - 1)


def ticks() -> Workflow:
    """N supersteps ("N delay=D"), one output each, D seconds apart."""
    start, tick = _TicksStart(), _Tick()
    b = WorkflowBuilder(name="ticks", start_executor=start, output_from=[tick], max_iterations=MAX_SUPERSTEPS)
    b.add_edge(start, tick)
    b.add_edge(tick, tick)
    return b.build()


def _tokens_and_interval(messages: list[Message]) -> tuple[int, float]:
    """Parse "N" or "N interval=MS" from the last message (default 100 tokens, 20 ms apart)."""
    text = messages[-1].text.strip() if messages else ""
    count, interval_ms = 100, 20.0
    for part in text.split():
        if part.startswith("interval="):
            interval_ms = float(part[len("interval=") :])
        elif part.isdigit():
            count = int(part)
    return count, interval_ms / 1000


class _Model(Executor):
    """A one-agent workflow's agent with a fake model: N tokens of one assistant message, one every
    20 ms, as streaming `AgentResponseUpdate`s (what an `AgentExecutor` yields when streaming), so
    every host maps them as it maps a real agent's tokens: one message item, one delta per token.
    The sleep between tokens is the model's own time; it also lets the loop turn, so every host
    sees each token as it is made."""

    def __init__(self) -> None:
        super().__init__(id="model")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[None, AgentResponseUpdate]) -> None:
        count, interval = _tokens_and_interval(messages)
        message_id = f"msg_{uuid.uuid4().hex}"
        for i in range(count):
            await asyncio.sleep(interval)
            update = AgentResponseUpdate(
                contents=[Content.from_text(f"tok{i} ")], role="assistant", message_id=message_id
            )
            await ctx.yield_output(update)


def tokens() -> Workflow:
    """The live-capacity workflow: one agent streaming "N interval=MS" tokens (100, 20 ms)."""
    m = _Model()
    return WorkflowBuilder(name="tokens", start_executor=m, output_from=[m]).build()


class _Ask(Executor):
    """Pauses at once on a request for input (the footprint of a response awaiting a human)."""

    def __init__(self) -> None:
        super().__init__(id="ask")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[None, str]) -> None:
        await ctx.request_info(
            request_data=f"Approve: {messages[-1].text if messages else ''}", response_type=str
        )

    @response_handler
    async def answered(self, original: str, answer: str, ctx: WorkflowContext[None, str]) -> None:
        await ctx.yield_output(f"decision: {answer}")


def asks() -> Workflow:
    """One executor that asks for approval before it answers (human-in-the-loop)."""
    a = _Ask()
    return WorkflowBuilder(name="asks", start_executor=a, output_from=[a]).build()
