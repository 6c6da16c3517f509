"""First benchmark: streaming throughput and latency against a real server.

Measures, on SQLite and PostgreSQL, in one run on this machine:
- a workflow that yields 1000 outputs in one superstep, streamed: time to first event, time to
  first output delta, total time, events/s;
- 50 concurrent streaming responses of the echo workflow: responses/s, p50/p99 latency;
- per-superstep time of a countdown at 10, 100 and 1000 supersteps (flat is the goal).

Figures are printed as a table; compare them as ratios within one run, never across machines.
Usage: python -m bench quick [--dialects sqlite,postgresql] [--delivery live,durable]
(`python -m bench` without `quick` runs the side-by-side comparison with the existing host.)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.hosts import postgres
from bench.hosts.ours import ours_server
from bench.hosts.process import ServerProc, kill_leftovers
from durable_responses.store.settings import LEASE_SECONDS

# The server's settings of this benchmark since it was written: its default lease, recovery every 0.5 s.
ENV = {
    "DURABLE_RESPONSES_LEASE_SECONDS": f"{LEASE_SECONDS:g}",
    "DURABLE_RESPONSES_RECOVERY_INTERVAL": "0.5",
    "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS": "3",
}


def _server(url: str, app: str, workdir: Path, delivery: str) -> ServerProc:
    return ours_server(url, app, delivery, workdir, ENV)


async def stream_once(client: httpx.AsyncClient, body: dict[str, object]) -> dict[str, float]:
    t0 = time.perf_counter()
    first = first_output = None
    events = 0
    async with client.stream("POST", "/responses", json={**body, "stream": True}) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if line.startswith("event: "):
                now = time.perf_counter()
                events += 1
                if first is None:
                    first = now - t0
                if first_output is None and ("output_text.delta" in line or "output_item.added" in line):
                    first_output = now - t0
    total = time.perf_counter() - t0
    return {
        "first_event_ms": (first or 0) * 1000,
        "first_output_ms": (first_output or 0) * 1000,
        "total_ms": total * 1000,
        "events": events,
        "events_per_s": events / total,
    }


async def scenario_burst(base: str) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as c:
        await stream_once(c, {"model": "x", "input": "10"})  # warm the connection and the app
        return await stream_once(c, {"model": "x", "input": "1000"})


async def scenario_concurrent(base: str, n: int = 50) -> dict[str, float]:
    limits = httpx.Limits(max_connections=n + 5)
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as c:
        await stream_once(c, {"model": "x", "input": "1"})
        t0 = time.perf_counter()
        results = await asyncio.gather(*(stream_once(c, {"model": "x", "input": "3"}) for _ in range(n)))
        wall = time.perf_counter() - t0
    lat = sorted(r["total_ms"] for r in results)
    return {
        "responses_per_s": n / wall,
        "p50_ms": statistics.median(lat),
        "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
        "first_event_p50_ms": statistics.median(r["first_event_ms"] for r in results),
    }


async def scenario_steps(base: str, n: int) -> float:
    async with httpx.AsyncClient(base_url=base, timeout=600) as c:
        r = await stream_once(c, {"model": "x", "input": str(n)})
    return r["total_ms"] / n


def run_dialect(dialect: str, delivery: str, work: Path) -> dict[str, object]:
    url = f"sqlite:///{work / dialect / 'bench.db'}" if dialect == "sqlite" else postgres.new_database()
    out: dict[str, object] = {}
    try:
        for app, key in (
            ("bench.apps:burst", "burst"),
            ("durable_responses.examples.echo:echo", "concurrent"),
        ):
            srv = _server(url, app, work / f"{dialect}-{delivery}-{key}", delivery)
            srv.start()
            try:
                if key == "burst":
                    out["burst"] = asyncio.run(scenario_burst(srv.base_url))
                else:
                    out["concurrent"] = asyncio.run(scenario_concurrent(srv.base_url))
            finally:
                srv.stop()
        srv = _server(url, "bench.apps:steps", work / f"{dialect}-{delivery}-steps", delivery)
        srv.start()
        try:
            out["per_superstep_ms"] = {
                n: asyncio.run(scenario_steps(srv.base_url, n)) for n in (10, 100, 1000)
            }
        finally:
            srv.stop()
    finally:
        kill_leftovers()
        if dialect == "postgresql":
            postgres.drop_database(url)
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench quick")
    ap.add_argument("--dialects", default="sqlite,postgresql")
    ap.add_argument("--delivery", default="live,durable")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for dialect in args.dialects.split(","):
            for delivery in args.delivery.split(","):
                res = run_dialect(dialect, delivery, Path(tmp))
                rows.append((dialect, delivery, res))
    print()
    print(
        "| dialect | delivery | 1000 outputs: first event ms | first output ms | total ms | events/s "
        "| 50 streams: resp/s | p50 ms | p99 ms | ms/superstep @10 | @100 | @1000 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for dialect, delivery, r in rows:
        b, c, s = r["burst"], r["concurrent"], r["per_superstep_ms"]
        assert isinstance(b, dict) and isinstance(c, dict) and isinstance(s, dict)
        print(
            f"| {dialect} | {delivery} | {b['first_event_ms']:.1f} | {b['first_output_ms']:.1f} | "
            f"{b['total_ms']:.0f} | {b['events_per_s']:.0f} | {c['responses_per_s']:.1f} | {c['p50_ms']:.0f} | "
            f"{c['p99_ms']:.0f} | {s[10]:.2f} | {s[100]:.2f} | {s[1000]:.2f} |"
        )


if __name__ == "__main__":
    main()
