"""What a scenario drives and what it gets back, the same for every host.

A `Driver` runs one response and returns a `Stream`: the HTTP hosts' drivers POST `/responses` with
`stream=true` (bench/httpclient.py), the framework floor's runs the workflow in-process
(bench/hosts/floor.py). Scenarios only ever see this interface, so a host is measured by the same
scenario code as every other host.

`EventLines` tallies a streamed body cheaply on purpose (the client shares the machine with the
server): no SSE parsing, an event is an `event: ` line and outputs are `response.output_text.delta`
events.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

# The lines a streamed body is tallied by (bench/timeline.py counts them per chunk).
EVENT = b"event: "
DELTA = b"event: response.output_text.delta"
_FIRST_OUTPUT = (DELTA, b"event: response.output_item.added")
COMPLETED = "response.completed"


@dataclass
class Stream:
    """What one streamed response looked like, as the client saw it (every driver)."""

    first_event_ms: float = math.nan
    first_output_ms: float = math.nan
    # When the last output arrived: (last - first) / (outputs - 1) is the time per output inside
    # a superstep, the figure the framework floor is compared on.
    last_output_ms: float = math.nan
    total_ms: float = math.nan
    events: int = 0
    deltas: int = 0
    terminal: str = ""
    status: int = 0
    aborted: bool = False
    error: str = ""
    # CPU the host spent on this response (its server process tree, and its PostgreSQL
    # database's backends; in-process: the run itself), when the driver can tell.
    server_cpu_ms: float = math.nan
    # Sent again once on a fresh connection: the first attempt met a keep-alive connection the
    # server had just closed, before any byte of the response (bench/httpclient.py).
    retried: bool = False
    # With `record` (the live-capacity scenario): when each output arrived, ms after the start
    # (outputs read in one chunk share its time, as a client would see them).
    delta_ms: list[float] | None = None

    @property
    def ok(self) -> bool:
        return not self.error and not self.aborted and self.terminal == COMPLETED

    @property
    def events_per_s(self) -> float:
        return self.events / (self.total_ms / 1000) if self.total_ms else math.nan

    @property
    def per_output_ms(self) -> float:
        if self.deltas < 2:
            return math.nan
        return (self.last_output_ms - self.first_output_ms) / (self.deltas - 1)


class EventLines:
    """Splits a streamed body into lines and tallies its `event: ` lines into a `Stream`."""

    def __init__(self, res: Stream, t0: float) -> None:
        self.res = res
        self.t0 = t0
        self._tail = b""
        self._last = b""

    def feed(self, data: bytes, now: float) -> None:
        res = self.res
        deltas = res.deltas
        lines = (self._tail + data).split(b"\n")
        self._tail = lines.pop()
        for line in lines:
            if not line.startswith(EVENT):
                continue
            line = line.rstrip(b"\r")
            res.events += 1
            self._last = line
            if res.events == 1:
                res.first_event_ms = (now - self.t0) * 1000
            if line == DELTA:
                res.deltas += 1
                if res.delta_ms is not None:
                    res.delta_ms.append((now - self.t0) * 1000)
            if math.isnan(res.first_output_ms) and line in _FIRST_OUTPUT:
                res.first_output_ms = (now - self.t0) * 1000
        if res.deltas != deltas:  # once per chunk: the tally costs what it did before this figure
            res.last_output_ms = (now - self.t0) * 1000

    def finish(self) -> None:
        self.res.terminal = self._last[len(EVENT) :].decode(errors="replace")


@dataclass
class Many:
    """N responses started at once (the concurrent scenario)."""

    runs: list[Stream]
    wall_s: float
    client_cpu_s: float
    # The host's CPU over the timed window, when the driver measures it (`measure_cpu`; the floor:
    # the benchmark process's own, which is then the host's).
    server_cpu_s: float = math.nan


class Driver(Protocol):
    """Runs responses of one host's workflow, as a client would."""

    async def stream(self, text: str, deadline: float | None = None) -> Stream:
        """One streamed response to `text`; cut (`aborted`) at `deadline` (perf_counter)."""
        ...

    async def many(self, n: int, text: str, *, record: bool = False, warm_text: str | None = None) -> Many:
        """n responses to `text` on warm connections (each warmed by one response to `warm_text`,
        default `text`), started at once; with `record`, each `Stream` keeps its outputs' times."""
        ...

    def ready(self) -> None:
        """The warm-up is over: CPU is measured from the next stream on (when asked for)."""
        ...

    async def aclose(self) -> None: ...


async def warm(d: Driver, text: str, times: int = 2) -> None:
    for _ in range(times):
        r = await d.stream(text)
        if not r.ok:
            raise RuntimeError(f"warm-up failed: {r}")
