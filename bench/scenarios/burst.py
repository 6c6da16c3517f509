"""1000 outputs in ONE superstep (`burst`), streamed: first event, first output, time per output
inside the superstep, total, events/s, and the host's CPU per 1,000 outputs.

The plain existing host, the plain-HTTP reference, ours and the framework floor are measured with
all of them serving at once, requests alternating in balanced orders (`paired`; bench/stats.py
`balanced_orders`): the first event and the first output are a few ms, and minutes of drift
between sessions were larger than the differences; what a host still does after its stream
ended weighs on every host alike.
The resilient existing host runs alone (`run`, median of `burst_reps`), like every other scenario.

Time per output inside the superstep = (last output - first output) / (outputs - 1), as the client
sees them (over HTTP: `response.output_text.delta` events, six protocol events per output). CPU per
1,000 outputs = the host's CPU over the timed runs (server process tree and, on PostgreSQL, its
database's backends; the floor: its run) / outputs received.
"""

from __future__ import annotations

import asyncio
import math
from contextlib import ExitStack
from typing import Any

from bench.config import Sizes
from bench.hosts.base import Host, Session
from bench.stats import balanced_orders, balanced_rounds, median
from bench.stream import Driver, Stream, warm

NAMES = ("burst",)
APP = "burst"


def summary(runs: list[Stream], n: int) -> dict[str, Any]:
    bad = [r for r in runs if not r.ok]
    good = [r for r in runs if r.ok] or runs
    cpu = [r for r in good if not math.isnan(r.server_cpu_ms) and r.deltas]
    return {
        "first_event_ms": median([r.first_event_ms for r in good]),
        "first_output_ms": median([r.first_output_ms for r in good]),
        "per_output_ms": median([r.per_output_ms for r in good]),
        "total_ms": median([r.total_ms for r in good]),
        "events_per_s": median([r.events_per_s for r in good]),
        "events": median([float(r.events) for r in good]),
        "events_per_output": median([r.events / n for r in good]),
        "outputs_seen": median([float(r.deltas) for r in good]),
        "server_cpu_per_1000_ms": (
            1000 * sum(r.server_cpu_ms for r in cpu) / sum(r.deltas for r in cpu) if cpu else math.nan
        ),
        "errors": len(bad),
        "error_detail": [r.error or r.terminal for r in bad][:3],
        "retried": sum(r.retried for r in runs),
        "runs": [r.__dict__ for r in runs],
    }


async def _alone(session: Session, sizes: Sizes) -> dict[str, Any]:
    n = sizes.burst_outputs
    d = session.driver(measure_cpu=True)
    try:
        await warm(d, "10")
        d.ready()
        runs = [await d.stream(str(n)) for _ in range(sizes.burst_reps)]
    finally:
        await d.aclose()
    return summary(runs, n)


def run(session: Session, host: Host, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    """One host alone: warm, then `burst_reps` streams of N outputs."""
    return {"burst": asyncio.run(_alone(session, sizes))}


async def _interleaved(drivers: dict[str, Driver], sizes: Sizes) -> dict[str, Any]:
    n = sizes.burst_outputs
    keys = list(drivers)
    runs: dict[str, list[Stream]] = {k: [] for k in keys}
    try:
        for k in keys:
            await warm(drivers[k], "10")
        for k in keys:
            drivers[k].ready()
        for order in balanced_orders(len(keys), balanced_rounds(len(keys), sizes.burst_reps * 2)):
            for i in order:
                runs[keys[i]].append(await drivers[keys[i]].stream(str(n)))
    finally:
        for d in drivers.values():
            await d.aclose()
    return {k: summary(rs, n) for k, rs in runs.items()}


def paired(hosts: list[Host], sizes: Sizes) -> dict[str, Any]:
    """Every host in `hosts` serving the burst at once, requests alternating between them."""
    with ExitStack() as stack:
        sessions = {h.key: stack.enter_context(h.session(APP, "paired")) for h in hosts}
        drivers = {k: s.driver(measure_cpu=True) for k, s in sessions.items()}
        return asyncio.run(_interleaved(drivers, sizes))
