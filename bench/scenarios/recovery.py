"""Recovery after `kill -9`: 100 background responses of `ticks` "3 delay=0.5" are created (no
stream), 0.3 s later the server gets `kill -9`, and the same server (same database or state
directory, same port) is started again.

Times are from the restart: until `/readiness` answers; until all resumed = the latest, over the
responses, of the start time of the first superstep that ran after the kill (read from the
outputs' own timestamps, so it does not depend on polling); until all complete = when polling first
saw each one `completed`. Polling is load on the server being measured: `GET /responses/{id}` of the
unfinished ones, 4 at a time, 0.25 s between rounds. A response that does not complete within the
timeout, or ends otherwise, is lost; a completed one whose output is not exactly "tick 3, tick 2,
tick 1" (a duplicate or a missing tick) has wrong output. Our figure includes the wait for the dead
process's lease to expire (default 15 s). Hosts that are not durable are not run (`recovery_skip`).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from typing import Any, cast

import httpx

from bench.config import Sizes
from bench.hosts.base import Host, ServerSession, Session
from bench.httpclient import client
from bench.stats import median

NAMES = ("recovery",)
APP = "ticks"

# The protocol's terminal statuses (a response in one of them is done).
TERMINAL_STATUSES = {"completed", "failed", "cancelled", "incomplete"}
POLL_CONCURRENCY = int(os.environ.get("BENCH_POLL_CONCURRENCY", "4"))
POLL_PAUSE_S = float(os.environ.get("BENCH_POLL_PAUSE", "0.25"))
_TICK = re.compile(r"tick (\d+) t=([0-9.]+)")
_TICK_COUNT = re.compile(r"\s*(\d+)")


def output_ticks(response: dict[str, Any]) -> list[tuple[int, float]]:
    ticks = []
    for item in response.get("output") or []:
        for part in item.get("content") or []:
            m = _TICK.fullmatch((part.get("text") or "").strip())
            if m:
                ticks.append((int(m.group(1)), float(m.group(2))))
    return ticks


async def poll_until_terminal(
    base: str, ids: list[str], t0: float, timeout: float
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """GET every unfinished response (POLL_CONCURRENCY at a time, POLL_PAUSE_S between rounds).

    Returns when each was first seen terminal (seconds after t0) and the last body of each.
    """
    done_at: dict[str, float] = {}
    last: dict[str, dict[str, Any]] = {}
    sem = asyncio.Semaphore(POLL_CONCURRENCY)
    async with client(base, connections=POLL_CONCURRENCY, timeout=30) as c:

        async def get(rid: str) -> None:
            async with sem:
                try:
                    r = await c.get(f"/responses/{rid}")
                except httpx.HTTPError as exc:
                    last[rid] = {"status": f"{type(exc).__name__}"}
                    return
                body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
                if r.status_code != 200:
                    body = {"status": f"HTTP {r.status_code}", **body}
                last[rid] = body
                if body.get("status") in TERMINAL_STATUSES:
                    done_at[rid] = time.time() - t0

        while time.time() - t0 < timeout:
            pending = [i for i in ids if i not in done_at]
            if not pending:
                break
            await asyncio.gather(*(get(i) for i in pending))
            await asyncio.sleep(POLL_PAUSE_S)
    return done_at, last


async def create_background(base: str, text: str, n: int) -> tuple[list[str], list[str]]:
    async with client(base, connections=n + 5, timeout=120) as c:

        async def one() -> str:
            r = await c.post("/responses", json={"model": "bench", "input": text, "background": True})
            if r.status_code != 200:
                raise RuntimeError(f"HTTP {r.status_code}: {r.text[:200]}")
            return str(r.json()["id"])

        results = await asyncio.gather(*(one() for _ in range(n)), return_exceptions=True)
    ids = [r for r in results if isinstance(r, str)]
    errors = [f"{type(r).__name__}: {r}"[:200] for r in results if not isinstance(r, str)]
    return ids, errors


def run(session: Session, host: Host, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    """N in-flight background responses, kill -9, restart: ready, all resumed, all complete."""
    srv = cast(ServerSession, session)
    base = srv.base_url
    # Warm: one short background response to completion (imports, first connection, first commit).
    ids, errs = asyncio.run(create_background(base, "1 delay=0", 1))
    if errs:
        raise RuntimeError(f"warm-up failed: {errs}")
    done, _ = asyncio.run(poll_until_terminal(base, ids, time.time(), 30))
    if len(done) != 1:
        raise RuntimeError("warm-up response did not finish")

    t_create = time.time()
    ids, create_errors = asyncio.run(create_background(base, sizes.recovery_input, sizes.recovery))
    created_s = time.time() - t_create
    time.sleep(sizes.recovery_kill_after_s)
    t_kill = time.time()
    srv.kill()
    t0 = time.time()
    srv.start()
    ready_s = time.time() - t0
    done_at, last = asyncio.run(poll_until_terminal(base, ids, t0, sizes.recovery_timeout_s))

    count = _TICK_COUNT.match(sizes.recovery_input)
    assert count is not None
    expected = list(range(int(count.group(1)), 0, -1))
    resumed: list[float] = []
    in_flight = lost = wrong = finished_before_kill = 0
    statuses: dict[str, int] = {}
    for rid in ids:
        body = last.get(rid, {})
        status = str(body.get("status"))
        statuses[status] = statuses.get(status, 0) + 1
        ticks = output_ticks(body)
        after = [t for _, t in ticks if t > t_kill]
        if status != "completed":
            lost += 1
            in_flight += 1
            continue
        if [n for n, _ in ticks] != expected:
            wrong += 1
        if after:
            in_flight += 1
            resumed.append(min(after) - t0)
        else:
            finished_before_kill += 1
    complete_times = [done_at[i] for i in ids if i in done_at and last[i].get("status") == "completed"]
    return {
        "recovery": {
            "created": len(ids),
            "create_errors": len(create_errors),
            "create_error_detail": create_errors[:3],
            "create_s": created_s,
            "in_flight": in_flight,
            "finished_before_kill": finished_before_kill,
            "ready_s": ready_s,
            "all_resumed_s": max(resumed) if resumed and not lost else float("nan"),
            "resumed": len(resumed),
            "last_resumed_s": max(resumed) if resumed else float("nan"),
            "completed": len(complete_times),
            "last_complete_s": max(complete_times) if complete_times else float("nan"),
            "timeout_s": sizes.recovery_timeout_s,
            "p50_resumed_s": median(resumed),
            "all_complete_s": max(complete_times) if complete_times and not lost else float("nan"),
            "lost": lost,
            "wrong_output": wrong,
            "statuses": statuses,
        }
    }
