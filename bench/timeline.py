"""`python -m bench timeline`: one burst's stream as its client sees it, chunk by chunk.

Serves `bench.apps:burst` with ours (`python -m durable_responses serve`, `--delivery`, background
streams), streams `--runs` responses of `--outputs` outputs in one superstep, one after another,
and records when each chunk of the body arrived and which events it held. Prints per run the time
of the first and the last `response.output_text.delta` (their difference over outputs - 1 is the
table's "ms per output inside the superstep"), of the first `response.output_text.done` and of
the end; their medians; and with `--chunks`, the last run's chunks (arrival in ms, deltas,
closing events, all events).

Why: the table's figure says how long, not where. The chunks show which commit each output went
out with: a last delta that arrives in the same chunk as the first `output_text.done` waited for
the items to be closed; long gaps between chunks are the run's production between commits.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.config import log
from bench.hosts import postgres
from bench.hosts.ours import ours_env, ours_server
from bench.hosts.process import serving
from bench.stream import DELTA, EVENT
from durable_responses.store.settings import LEASE_SECONDS

_DONE = b"event: response.output_text.done"


@dataclass(frozen=True)
class Chunk:
    at_ms: float
    deltas: int
    dones: int
    events: int


@dataclass(frozen=True)
class Run:
    chunks: list[Chunk]

    def _first(self, field: str) -> float:
        return next(c.at_ms for c in self.chunks if getattr(c, field))

    @property
    def first_delta_ms(self) -> float:
        return self._first("deltas")

    @property
    def last_delta_ms(self) -> float:
        return max(c.at_ms for c in self.chunks if c.deltas)

    @property
    def first_done_ms(self) -> float:
        return self._first("dones")

    @property
    def end_ms(self) -> float:
        return self.chunks[-1].at_ms

    @property
    def window_ms(self) -> float:
        return self.last_delta_ms - self.first_delta_ms


async def _one(client: httpx.AsyncClient, outputs: int) -> Run:
    # A chunk's events are counted whole; an event line split across two chunks is counted in
    # neither (rare, and it moves no time: the figures are the chunks' arrival times).
    chunks: list[Chunk] = []
    body = {"model": "bench", "input": str(outputs), "stream": True, "background": True}
    t0 = time.perf_counter()
    async with client.stream("POST", "/responses", json=body) as r:
        r.raise_for_status()
        async for data in r.aiter_raw():
            at = (time.perf_counter() - t0) * 1000
            chunks.append(Chunk(at, data.count(DELTA), data.count(_DONE), data.count(EVENT)))
    return Run(chunks)


async def _drive(base: str, outputs: int, runs: int) -> list[Run]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        for _ in range(3):  # warm: the server's first responses are slower
            await _one(client, 10)
        return [await _one(client, outputs) for _ in range(runs)]


def _print(runs: list[Run], outputs: int, chunks: bool) -> None:
    print(
        "| run | first delta, ms | last delta, ms | ms per output | first output_text.done, ms | end, ms | chunks |"
    )
    print("|---|---|---|---|---|---|---|")
    for i, r in enumerate(runs, 1):
        per = r.window_ms / max(outputs - 1, 1)
        print(
            f"| {i} | {r.first_delta_ms:.1f} | {r.last_delta_ms:.1f} | {per:.3f} | "
            f"{r.first_done_ms:.1f} | {r.end_ms:.1f} | {len(r.chunks)} |"
        )
    window = statistics.median(r.window_ms for r in runs)
    print(
        f"\nmedian: first to last delta {window:.1f} ms ({window / max(outputs - 1, 1):.3f} ms per output), "
        f"end {statistics.median(r.end_ms for r in runs):.1f} ms"
    )
    if chunks:
        print("\n| arrived, ms | deltas | output_text.done | events |")
        print("|---|---|---|---|")
        for c in runs[-1].chunks:
            print(f"| {c.at_ms:.1f} | {c.deltas} | {c.dones} | {c.events} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench timeline", description=(__doc__ or "").split("\n\n")[0]
    )
    ap.add_argument("--dialect", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--delivery", choices=["live", "durable"], default="live")
    ap.add_argument("--outputs", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--chunks", action="store_true", help="also print the last run's chunks")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-timeline-") as tmp:
        work = Path(tmp)
        url = f"sqlite:///{work / 't.db'}" if args.dialect == "sqlite" else postgres.new_database()
        try:
            srv = ours_server(url, "bench.apps:burst", args.delivery, work, ours_env(LEASE_SECONDS))
            with serving(srv):
                runs = asyncio.run(_drive(srv.base_url, args.outputs, args.runs))
        finally:
            if args.dialect == "postgresql":
                postgres.drop_database(url)
    log(f"{args.runs} bursts of {args.outputs} outputs, ours, {args.dialect} {args.delivery}")
    _print(runs, args.outputs, args.chunks)


if __name__ == "__main__":
    main()
