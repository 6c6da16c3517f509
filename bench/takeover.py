"""`python -m bench.takeover`: how soon a restarted server resumes the responses of the one it
replaces (issue 39: "every response has a new event within 1 s of readiness, 100 within 2 s").

Per round, on a fresh database: `serve` the countdown example with the default lease, create N
background countdowns (`40 delay=0.15`), wait until every one has committed a few events, `kill -9`
the server, start it again on the same database and port (an ordinary start: the interpreter's
own start-up is in "ready after the kill", not in the figures), and read the database directly
(every 20 ms, never through the server) until every response in flight at the kill has
committed an event after it. Figures, per round: when the restarted server answered
`/readiness` after the kill, and the first new event of the first, median and last response
after that readiness (the last is the Done-when figure). Every response must also complete
with its 41 ticks (none lost, none twice): checked by the server's own replay afterwards.

The rounds of the configurations take turns (SQLite and PostgreSQL, 20 and 100, one after
the other, `--rounds` times), so that the machine's drift spreads over all of them; the
report gives each configuration's median over its rounds, and the load (`uptime`) of every
round, since this machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.hosts import postgres
from bench.hosts.ours import fresh_database, ours_server
from bench.hosts.process import kill_leftovers
from durable_responses.store.settings import LEASE_SECONDS

APP = "durable_responses.examples.countdown:countdown"
TICKS, DELAY = 40, 0.15
ENV = {
    "DURABLE_RESPONSES_LEASE_SECONDS": f"{LEASE_SECONDS:g}",
    "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS": "3",
}
TERMINAL = {"completed", "failed", "cancelled", "incomplete"}


class Watch:
    """The newest event sequence number of each response, read from the database itself."""

    def __init__(self, url: str) -> None:
        self.url = url

    def max_seqs(self, ids: list[str]) -> dict[str, int]:
        sql = "SELECT response_id, max(seq) FROM events WHERE response_id IN ({}) GROUP BY response_id"
        if self.url.startswith("sqlite"):
            path = self.url.split("///", 1)[1]
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
            try:
                rows = con.execute(sql.format(",".join("?" * len(ids))), ids).fetchall()
            finally:
                con.close()
            return {r[0]: int(r[1]) for r in rows}
        return asyncio.run(self._pg(sql.format("SELECT unnest($1::text[])"), ids))

    async def _pg(self, sql: str, ids: list[str]) -> dict[str, int]:
        import asyncpg  # type: ignore[import-untyped]

        conn = await asyncpg.connect(self.url.replace("postgresql://", "postgres://"), timeout=5)
        try:
            return {r[0]: int(r[1]) for r in await conn.fetch(sql, ids)}
        finally:
            await conn.close()

    def active(self, ids: list[str]) -> list[str]:
        seqs = self.max_seqs(ids)
        return [rid for rid in ids if rid in seqs]


async def _create(base: str, n: int) -> list[str]:
    limits = httpx.Limits(max_connections=20)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as c:

        async def one(i: int) -> str:
            body = {"model": "countdown", "input": f"{TICKS} delay={DELAY} r{i}", "background": True}
            r = await c.post("/responses", json=body)
            r.raise_for_status()
            return str(r.json()["id"])

        return list(await asyncio.gather(*(one(i) for i in range(n))))


def _statuses(base: str, ids: list[str], timeout: float) -> dict[str, dict[str, Any]]:
    """Poll until every response is terminal; the last body of each."""
    last: dict[str, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=base, timeout=30) as c:
        while time.monotonic() < deadline:
            for rid in ids:
                if last.get(rid, {}).get("status") not in TERMINAL:
                    last[rid] = c.get(f"/responses/{rid}").json()
            if all(b.get("status") in TERMINAL for b in last.values()):
                break
            time.sleep(0.5)
    return last


def _ticks_right(body: dict[str, Any]) -> bool:
    texts = [p.get("text", "") for item in body.get("output") or [] for p in item.get("content") or []]
    return body.get("status") == "completed" and [t.split(" t=")[0].strip() for t in texts] == [
        f"tick {i}" for i in range(TICKS, -1, -1)
    ]


def one_round(dialect: str, n: int, work: Path) -> dict[str, Any]:
    with fresh_database(dialect, work) as url:
        srv = ours_server(url, APP, "live", work, ENV)
        watch = Watch(url)
        try:
            srv.start()
            ids = asyncio.run(_create(srv.base_url, n))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                seqs = watch.max_seqs(ids)
                if len(seqs) == n and min(seqs.values()) >= 6:
                    break
                time.sleep(0.05)
            killed = time.monotonic()
            srv.kill()
            baseline = watch.max_seqs(ids)
            load = os.getloadavg()[0]
            srv.start()
            ready = time.monotonic()
            resumed: dict[str, float] = {}
            while len(resumed) < len(baseline) and time.monotonic() < ready + 30:
                for rid, seq in watch.max_seqs(list(baseline)).items():
                    if rid not in resumed and seq > baseline[rid]:
                        resumed[rid] = time.monotonic() - ready
                time.sleep(0.02)
            bodies = _statuses(srv.base_url, ids, 120)
        finally:
            srv.kill()
    times = sorted(resumed.values())
    return {
        "dialect": dialect,
        "n": n,
        "load": round(load, 1),
        "ready_after_kill_s": round(ready - killed, 2),
        "resumed": len(times),
        "first_s": round(times[0], 3) if times else None,
        "median_s": round(statistics.median(times), 3) if times else None,
        "last_s": round(times[-1], 3) if times else None,
        "wrong_or_lost": sum(1 for rid in ids if not _ticks_right(bodies.get(rid, {}))),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m bench.takeover", description=(__doc__ or "").split("\n\n")[0]
    )
    ap.add_argument("--dialects", default="postgresql,sqlite")
    ap.add_argument("--sizes", default="20,100")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    configs = [(d, int(n)) for d in args.dialects.split(",") for n in args.sizes.split(",")]
    if any(d == "postgresql" for d, _ in configs) and (problem := postgres.unreachable()):
        raise SystemExit(f"PostgreSQL not reachable: {problem}")
    rows: list[dict[str, Any]] = []

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt  # the servers and databases are cleaned up on the way out

    signal.signal(signal.SIGTERM, on_term)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-takeover-") as tmp:
            for r in range(args.rounds):
                for i, (dialect, n) in enumerate(configs):
                    row = one_round(dialect, n, Path(tmp) / f"{r}-{i}")
                    print(json.dumps(row), flush=True)
                    rows.append(row)
    finally:
        kill_leftovers()
    print("\nmedians over rounds (seconds after the restarted server's readiness):")
    print("| database | responses | ready after kill | first | median | last | loads | wrong or lost |")
    print("|---|---|---|---|---|---|---|---|")
    for dialect, n in configs:
        mine = [x for x in rows if x["dialect"] == dialect and x["n"] == n]

        def med(key: str, rows: list[dict[str, Any]] = mine) -> str:
            values = [x[key] for x in rows if x[key] is not None]
            return f"{statistics.median(values):.2f}" if values else "n/a"

        loads = ", ".join(f"{x['load']:g}" for x in mine)
        lost = sum(x["wrong_or_lost"] for x in mine)
        print(
            f"| {dialect} | {n} | {med('ready_after_kill_s')} | {med('first_s')} | {med('median_s')} "
            f"| {med('last_s')} (rounds: {', '.join(str(x['last_s']) for x in mine)}) | {loads} | {lost} |"
        )


if __name__ == "__main__":
    main()
