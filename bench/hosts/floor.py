"""The framework floor: the bench workflows driven by agent-framework alone, in the benchmark's own
process, with `InMemoryCheckpointStorage`: no HTTP, no database, no host. What any host of these
workflows pays at least; every figure of ours is also reported as a multiple of it.

Two columns:
- `floor-agent`: `workflow.as_agent().run(text, stream=True, checkpoint_storage=...)`, the way our
  host drives an app (a `WorkflowAgent` over a fresh workflow per response, updates pulled one by
  one). This is the floor the ratios use.
- `floor-workflow`: `workflow.run([Message], stream=True, checkpoint_storage=...)`, for reference:
  the workflow's own event stream, without `WorkflowAgent`'s mapping of events to updates (and its
  end-of-stream work: on the 1000-output superstep most of the run's time comes after the last
  output, ~65 ms of ~95 ms here).

A driver times a response from before the workflow is built (any host builds one per response) to
the end of its stream, fills the same `Stream` record as the HTTP clients (an output is an update
with text, or an `output` event; the first event is the first update or event), and records the
run's CPU time (`time.process_time`, the benchmark's process does nothing else meanwhile). The
scenarios, repetitions and orders are the HTTP hosts' own (bench/scenarios/); the floor joins the
interleaved 1000-output burst like any other column. Runs of `n` at once (the concurrent scenario)
are `n` tasks on the one event loop.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench import apps
from bench.config import Sizes
from bench.hosts.base import Host
from bench.stream import COMPLETED, Many, Stream

MODES = ("agent", "workflow")


class FloorDriver:
    def __init__(self, factory: Callable[[], Any], mode: str) -> None:
        assert mode in MODES
        self.factory = factory
        self.mode = mode

    def _run(self, text: str) -> Any:
        from agent_framework import InMemoryCheckpointStorage, Message

        workflow = self.factory()
        storage = InMemoryCheckpointStorage()
        if self.mode == "agent":
            return workflow.as_agent(name=workflow.name).run(text, stream=True, checkpoint_storage=storage)
        return workflow.run([Message(role="user", contents=[text])], stream=True, checkpoint_storage=storage)

    async def stream(self, text: str, deadline: float | None = None, record: bool = False) -> Stream:
        res = Stream(delta_ms=[] if record else None)
        agent = self.mode == "agent"
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        try:
            async for item in self._run(text):
                now = time.perf_counter()
                res.events += 1
                if res.events == 1:
                    res.first_event_ms = (now - t0) * 1000
                if item.text if agent else item.type == "output":
                    res.deltas += 1
                    res.last_output_ms = (now - t0) * 1000
                    if res.delta_ms is not None:
                        res.delta_ms.append(res.last_output_ms)
                    if res.deltas == 1:
                        res.first_output_ms = res.last_output_ms
                if deadline is not None and now > deadline:
                    res.aborted = True
                    break
            else:
                res.terminal = COMPLETED
        except Exception as exc:
            res.error = f"{type(exc).__name__}: {exc}"
        res.total_ms = (time.perf_counter() - t0) * 1000
        res.server_cpu_ms = (time.process_time() - cpu0) * 1000
        return res

    async def many(self, n: int, text: str, *, record: bool = False, warm_text: str | None = None) -> Many:
        warm = text if warm_text is None else warm_text
        warmups = await asyncio.gather(*(self.stream(warm) for _ in range(n)))
        if not all(r.ok for r in warmups):
            raise RuntimeError(f"warm-up failed: {[r.error or r.terminal for r in warmups if not r.ok][:3]}")
        # The benchmark's own objects (every figure so far, the clients of the other columns)
        # are frozen for the window, as our server freezes what it loaded at start: a full
        # collection of the default thresholds (700, 10, 10) then walks the framework's objects
        # only. Walking the benchmark's too, it stopped the floor's streams for up to 104 ms.
        gc.collect()
        gc.freeze()
        try:
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            runs = await asyncio.gather(*(self.stream(text, record=record) for _ in range(n)))
            wall = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
        finally:
            gc.unfreeze()
        # In-process, the benchmark's CPU over the window is the framework's (and its driver's).
        return Many(list(runs), wall, cpu, cpu)

    def ready(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class FloorSession:
    def __init__(self, factory: Callable[[], Any], mode: str) -> None:
        self.factory = factory
        self.mode = mode

    def driver(
        self, *, connections: int = 10, timeout: float = 300, measure_cpu: bool = False
    ) -> FloorDriver:
        return FloorDriver(self.factory, self.mode)


@dataclass
class FloorHost(Host):
    mode: str = "agent"  # one of MODES

    def rounds(self, sizes: Sizes) -> int:
        return sizes.ours_reps_factor

    @property
    def recovery_skip(self) -> str | None:
        return "in memory: nothing survives a kill"

    def skip(self, scenario: str) -> str | None:
        if scenario == "capacity" and self.mode != "agent":
            return "the floor of live capacity is the WorkflowAgent column's"
        return super().skip(scenario)

    @contextmanager
    def session(self, app: str, name: str) -> Iterator[FloorSession]:
        yield FloorSession(getattr(apps, app), self.mode)

    def versions(self) -> dict[str, str]:
        import importlib.metadata as m

        return {"framework floor": f"agent-framework-core {m.version('agent-framework-core')}, in-process"}


def floor_hosts() -> list[Host]:
    return [
        FloorHost("floor-agent", "framework floor, WorkflowAgent", "floor", mode="agent"),
        FloorHost("floor-workflow", "framework floor, Workflow.run", "floor", mode="workflow"),
    ]
