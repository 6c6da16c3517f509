"""Workflows for crash and recovery tests: they need no model and record what they did.

Each factory builds a fresh app (the server calls it per run and per recovery). Side effects go to files
named by environment variables, so a test can see from outside the server process which supersteps ran
(and ran again) and how recovery entered the app. Invariant: the outputs are deterministic for a given
input, so a rerun superstep reproduces exactly the outputs it produced before; messages and state are
plain values, so checkpoints decode under the default type allow-list (except where an app says
otherwise: `custom_state` and `unencodable_checkpoint` break that rule on purpose).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Never

from agent_framework import (
    AgentRunInputs,
    ContextProvider,
    Executor,
    Message,
    Workflow,
    WorkflowAgent,
    WorkflowBuilder,
    WorkflowContext,
    handler,
    response_handler,
)

from durable_responses.examples.countdown import countdown, last_user_text, parse_countdown_request

RECORD_RUN_CALLS_ENV = "RECORD_RUN_CALLS"
RECORD_STEPS_ENV = "RECORD_STEPS"
STEP_DELAY_ENV = "STEP_DELAY_SECONDS"


def _append_line(env_name: str, line: str) -> None:
    path = os.environ.get(env_name)
    if path:
        # One small append per call; O_APPEND keeps lines whole across processes.
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def _step_delay() -> float:
    try:
        return max(0.0, float(os.environ.get(STEP_DELAY_ENV, "0.3")))
    except ValueError:
        return 0.3


# region recording_countdown


class RecordingWorkflowAgent(WorkflowAgent):
    """A WorkflowAgent subclass that overrides ``run()``: proves recovery goes through it."""

    def run(self, messages: AgentRunInputs | None = None, **kwargs: Any) -> Any:  # type: ignore[override]
        record = {
            "pid": os.getpid(),
            "checkpoint_id": kwargs.get("checkpoint_id"),
            "has_messages": bool(messages),
        }
        _append_line(RECORD_RUN_CALLS_ENV, json.dumps(record))
        return super().run(messages, **kwargs)


def recording_countdown() -> WorkflowAgent:
    """The countdown workflow wrapped in ``RecordingWorkflowAgent``."""
    return RecordingWorkflowAgent(countdown(), name="recording-countdown")


# endregion

# region silent_prefix


class _SilentStep(Executor):
    """Forwards the text after a pause, yielding nothing: a superstep with no output."""

    @handler
    async def forward_messages(self, messages: list[Message], ctx: WorkflowContext[str]) -> None:
        await self._step(last_user_text(messages), ctx)

    @handler
    async def forward_text(self, text: str, ctx: WorkflowContext[str]) -> None:
        await self._step(text, ctx)

    async def _step(self, text: str, ctx: WorkflowContext[str]) -> None:
        await asyncio.sleep(_step_delay())
        _append_line(RECORD_STEPS_ENV, self.id)
        await ctx.send_message(text)


class _TwoOutputs(Executor):
    """Yields "out 1" and "out 2" in one superstep, pausing between them."""

    def __init__(self) -> None:
        super().__init__(id="outputs")

    @handler
    async def produce(self, text: str, ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output("out 1")
        await asyncio.sleep(_step_delay())
        await ctx.yield_output("out 2")
        await ctx.send_message(text)


class _Done(Executor):
    def __init__(self) -> None:
        super().__init__(id="done")

    @handler
    async def finish(self, text: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output("done")


def silent_prefix() -> Workflow:
    """silent_1 -> silent_2 (no output) -> outputs ("out 1", "out 2") -> done ("done").

    Only the two silent executors append their id to the ``RECORD_STEPS`` file, so a test can tell
    whether recovery reran the silent prefix.
    """
    first = _SilentStep(id="silent_1")
    second = _SilentStep(id="silent_2")
    outputs = _TwoOutputs()
    done = _Done()
    builder = WorkflowBuilder(name="silent_prefix", start_executor=first, output_from=[outputs, done])
    builder.add_edge(first, second)
    builder.add_edge(second, outputs)
    builder.add_edge(outputs, done)
    return builder.build()


# endregion

# region two_outputs


_PAIRS_DELAY_KEY = "two_outputs_delay_seconds"


class _PairStart(Executor):
    def __init__(self) -> None:
        super().__init__(id="pairs_start")

    @handler
    async def start(self, messages: list[Message], ctx: WorkflowContext[int]) -> None:
        request = parse_countdown_request(last_user_text(messages))
        ctx.set_state(_PAIRS_DELAY_KEY, request.delay)
        if request.n > 0:
            await ctx.send_message(request.n)


class _PairTicker(Executor):
    """One superstep per n (N down to 1), each yielding "a{n}" then, after the delay, "b{n}"."""

    def __init__(self) -> None:
        super().__init__(id="pairs")

    @handler
    async def tick(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        delay = float(ctx.get_state(_PAIRS_DELAY_KEY, 0.2))
        await ctx.yield_output(f"a{n}")
        if delay > 0:
            await asyncio.sleep(delay)
        await ctx.yield_output(f"b{n}")
        if n > 1:
            await ctx.send_message(n - 1)


def two_outputs() -> Workflow:
    """Like countdown, but N supersteps (n = N..1) each yielding two outputs with the delay between.

    The input is parsed like countdown's ("N", "countdown N", "N delay=0.2"; the delay defaults to
    ``COUNTDOWN_DELAY_SECONDS``, else 0.2 s).
    """
    start = _PairStart()
    ticker = _PairTicker()
    builder = WorkflowBuilder(name="two_outputs", start_executor=start, output_from=[ticker])
    builder.add_edge(start, ticker)
    builder.add_edge(ticker, ticker)
    return builder.build()


# endregion


class _ContextEcho(Executor):
    """Replies with what `server.request_context()` says about the request that started it."""

    def __init__(self) -> None:
        super().__init__(id="context_echo")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[None, str]) -> None:
        from durable_responses import request_context

        rc = request_context()
        await ctx.yield_output(f"user={rc.user_id} call={rc.foundry_call_id} session={rc.session_id}")


def context_echo() -> Workflow:
    e = _ContextEcho()
    return WorkflowBuilder(name="context_echo", start_executor=e, output_from=[e]).build()


@dataclass
class CustomState:
    """An app type that is not on the framework's checkpoint allow-list by default."""

    value: int


class _CustomStateStart(Executor):
    def __init__(self) -> None:
        super().__init__(id="custom_start")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[int]) -> None:
        ctx.set_state("custom", CustomState(42))
        await ctx.send_message(1)


class _CustomStateEnd(Executor):
    def __init__(self) -> None:
        super().__init__(id="custom_end")

    @handler
    async def run(self, n: int, ctx: WorkflowContext[None, str]) -> None:
        state = ctx.get_state("custom")
        await ctx.yield_output(f"state {state.value}")


def custom_state() -> Workflow:
    start, end = _CustomStateStart(), _CustomStateEnd()
    b = WorkflowBuilder(name="custom_state", start_executor=start, output_from=[end])
    b.add_edge(start, end)
    return b.build()


class _Burst(Executor):
    """N outputs (the user's text, default 1000) in ONE superstep, never suspending between them;
    then hands over to `_Marker`."""

    def __init__(self) -> None:
        super().__init__(id="burst")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[str, str]) -> None:
        text = last_user_text(messages).strip()
        for i in range(int(text) if text.isdigit() else 1000):
            await ctx.yield_output(f"burst {i}")
        await ctx.send_message("done")


class _Marker(Executor):
    """The next superstep: one output carrying the wall-clock time it started."""

    def __init__(self) -> None:
        super().__init__(id="marker")

    @handler
    async def run(self, _done: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"marker t={time.time():.6f}")


def burst_then_marker() -> Workflow:
    """A burst the framework hands to the host as fast as the host takes it, then a marker.

    The framework starts the marker's superstep only after the host has taken every update of
    the burst and checkpointed it, so the marker's time is when the host was done with the burst.
    """
    burst, marker = _Burst(), _Marker()
    b = WorkflowBuilder(name="burst_then_marker", start_executor=burst, output_from=[burst, marker])
    b.add_edge(burst, marker)
    return b.build()


# When `burst_then_marker_probed`'s after-run provider ran (time.time()), newest last.
FINAL_RESPONSE_BUILT: list[float] = []


class FinalResponseProbe(ContextProvider):
    """Calls `seen()` when the agent's after-run providers run: 1.23.0's `WorkflowAgent` stream has
    then built its final response from every update (after a 1000-output burst, tens of ms)."""

    def __init__(self, seen: Callable[[], None]) -> None:
        super().__init__("final_response_probe")
        self._seen = seen

    async def after_run(self, **_: Any) -> None:
        self._seen()


def burst_then_marker_probed() -> WorkflowAgent:
    """`burst_then_marker` as an agent whose after-run provider records its time
    (`FINAL_RESPONSE_BUILT`): in-process servers only."""
    probe = FinalResponseProbe(lambda: FINAL_RESPONSE_BUILT.append(time.time()))
    return burst_then_marker().as_agent(name="burst_then_marker", context_providers=[probe])


class _BusyBurst(Executor):
    """N outputs (the user's text, default 200) in ONE handler that never suspends except to
    yield them, each made with ~1.5 ms of CPU work; the last carries the time it was made."""

    def __init__(self) -> None:
        super().__init__(id="busy_burst")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[Never, str]) -> None:
        text = last_user_text(messages).strip()
        n = int(text) if text.isdigit() else 200
        for i in range(n):
            until = time.perf_counter() + 0.0015
            while time.perf_counter() < until:
                pass
            await ctx.yield_output(f"last t={time.time():.6f}" if i == n - 1 else f"busy {i}")


def busy_burst() -> Workflow:
    """One superstep whose handler takes ~0.3 s of CPU and yields as it goes."""
    b = _BusyBurst()
    return WorkflowBuilder(name="busy_burst", start_executor=b, output_from=[b]).build()


class _AskAndTickStart(Executor):
    def __init__(self) -> None:
        super().__init__(id="ask_and_tick_start")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[int]) -> None:
        text = last_user_text(messages).strip()
        await ctx.send_message(int(text) if text.isdigit() else 4)


class _Ask(Executor):
    """Pauses with a request for approval, then yields the decision."""

    def __init__(self) -> None:
        super().__init__(id="ask")

    @handler
    async def request(self, _n: int, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.request_info(request_data="Approve the deployment?", response_type=str)

    @response_handler
    async def respond(self, _original: str, answer: str, ctx: WorkflowContext[Never, str]) -> None:
        await ctx.yield_output(f"decision: {answer}")


class _Tick(Executor):
    """Meanwhile, one output per superstep (`STEP_DELAY_SECONDS` apart) from N down to 1."""

    def __init__(self) -> None:
        super().__init__(id="tick")

    @handler
    async def run(self, n: int, ctx: WorkflowContext[int, str]) -> None:
        await asyncio.sleep(_step_delay())
        await ctx.yield_output(f"tick {n}")
        if n > 1:
            await ctx.send_message(n - 1)


def ask_and_tick() -> Workflow:
    """A pending request (announced in superstep 1) while N more supersteps make outputs."""
    start, ask, tick = _AskAndTickStart(), _Ask(), _Tick()
    b = WorkflowBuilder(name="ask_and_tick", start_executor=start, output_from=[ask, tick])
    b.add_edge(start, ask)
    b.add_edge(start, tick)
    b.add_edge(tick, tick)
    return b.build()


class _SavedOutput(Executor):
    """Superstep 1: an output that its checkpoint commits."""

    def __init__(self) -> None:
        super().__init__(id="saved_output")

    @handler
    async def run(self, messages: list[Message], ctx: WorkflowContext[str, str]) -> None:
        await ctx.yield_output("saved")
        await ctx.send_message("next")


class _UnpicklableState(Executor):
    """Superstep 2: puts a callback (a lambda: copied as is, but not picklable) in the workflow
    state, then an output."""

    def __init__(self) -> None:
        super().__init__(id="unpicklable_state")

    @handler
    async def run(self, _text: str, ctx: WorkflowContext[Never, str]) -> None:
        ctx.set_state("callback", lambda: None)
        await ctx.yield_output("never checkpointed")


def unencodable_checkpoint() -> Workflow:
    """A workflow whose second checkpoint cannot be encoded (its state holds a lambda)."""
    first, second = _SavedOutput(), _UnpicklableState()
    b = WorkflowBuilder(name="unencodable_checkpoint", start_executor=first, output_from=[first, second])
    b.add_edge(first, second)
    return b.build()
