"""100 concurrent streams of a short workflow (`burst` with 3 outputs): responses/s, p50 and p99
(nearest rank) of each response's own total time, errors (HTTP errors, broken streams, or a last
event other than `response.completed`).

After a warm-up and 100 warm connections (one response each), the 100 responses start at once;
`concurrent_reps` such rounds, each on fresh connections: responses/s is the median of the rounds'
(one round lasts a fraction of a second, and a single one moved by up to 2x between runs on this
VM), p50 and p99 are over every response of every round.
Over HTTP they use bench/rawclient.py, not httpx: at 100 streams httpx used a whole core and capped
every host at the same ~60 responses/s. The client's CPU time is recorded with the result (the raw
client's is ~0.2 ms per response). The framework floor runs 100 tasks on its one event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.config import Sizes
from bench.hosts.base import Host, Session
from bench.stats import median, nearest_rank
from bench.stream import warm

NAMES = ("concurrent",)
APP = "burst"


async def _concurrent(session: Session, sizes: Sizes) -> dict[str, Any]:
    n = sizes.concurrent
    d = session.driver()
    try:
        await warm(d, sizes.concurrent_input)
    finally:
        await d.aclose()
    driver = session.driver(measure_cpu=True)  # `many` opens its own connections each round
    rounds = [await driver.many(n, sizes.concurrent_input) for _ in range(sizes.concurrent_reps)]
    runs = [r for many in rounds for r in many.runs]
    good = sorted(r.total_ms for r in runs if r.ok)
    bad = [r for r in runs if not r.ok]
    rates = [sum(r.ok for r in many.runs) / many.wall_s for many in rounds]
    return {
        "responses_per_s": median(rates),
        "responses_per_s_rounds": rates,
        "p50_ms": nearest_rank(good, 0.50),
        "p99_ms": nearest_rank(good, 0.99),
        "first_event_p50_ms": median([r.first_event_ms for r in runs if r.ok]),
        "wall_s": median([many.wall_s for many in rounds]),
        "client_cpu_s": median([many.client_cpu_s for many in rounds]),
        # The server's CPU (its processes and database backends) per response over a round, beside
        # the round's wall time per response: whether a round waits or computes.
        "server_cpu_ms_per_response": median([many.server_cpu_s * 1000 / n for many in rounds]),
        "errors": len(bad),
        "error_detail": sorted({(r.error or r.terminal)[:160] for r in bad})[:3],
    }


def run(session: Session, host: Host, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    return {"concurrent": asyncio.run(_concurrent(session, sizes))}
