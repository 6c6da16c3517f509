"""The operations benchmark (`python -m bench ops`): what tracing costs, what a response stores,
and whether retention keeps the database bounded. Ours only, SQLite (and PostgreSQL for bytes).

1. Tracing off and on against the code without observability (a checkout of `--baseline-ref`,
   default the last commit before observability landed): three servers serving at once, requests alternating in
   balanced orders (Williams squares), so the machine's drift weighs on each alike. Figures:
   the 1000-output burst's total and first output, and the countdown's time per superstep
   ((T(101) - T(1)) / 100 over pairs), each also as the server's CPU time. Tracing on exports
   every span over OTLP/HTTP to a receiver in this process that discards them (sampler always on).
2. Bytes stored per response: N finished responses of each kind on a fresh database, its used
   bytes before and after (SQLite: pages in use after a WAL checkpoint; PostgreSQL: the tables'
   and indexes' relation sizes), divided by N.
3. The database under steady load with retention on (`DURABLE_RESPONSES_RETENTION=20s`, a sweep
   every 2 s): its used and file sizes every 5 s; with retention off for contrast.

Compare figures only as ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import json
import sqlite3
import subprocess
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from bench.config import ROOT
from bench.cpu import ProcessCPU
from bench.hosts import postgres
from bench.hosts.ours import ours_server
from bench.hosts.process import ServerProc, kill_leftovers
from bench.stats import balanced_orders, median
from durable_responses.store.settings import LEASE_SECONDS

ENV = {
    "DURABLE_RESPONSES_LEASE_SECONDS": f"{LEASE_SECONDS:g}",
    "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS": "3",
}
# The last commit before observability landed (the tracing comparison's "code without it").
BASELINE_REF = "7486c09"
BURST, STEPS = "bench.apps:burst", "bench.apps:steps"


class Sink:
    """An OTLP/HTTP endpoint that takes and discards (counts) what it is sent."""

    def __init__(self) -> None:
        self.requests = 0
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                sink.requests += 1
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def checkout(ref: str, where: Path) -> Path:
    """The server package at `ref` (its merge base with HEAD), unpacked under `where`."""
    base = subprocess.run(
        ["git", "merge-base", "HEAD", ref], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = where / "baseline.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "archive", base, "server", "migrations"], cwd=ROOT, stdout=out, check=True)
    dest = where / "baseline"
    dest.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    # `bench.apps` comes from this checkout.
    (dest / "bench").symlink_to(ROOT / "bench")
    return dest


def server(url: str, app: str, work: Path, env: dict[str, str], root: Path | None = None) -> ServerProc:
    srv = ours_server(url, app, "live", work, {**ENV, **env})
    if root is not None:
        srv.env["PYTHONPATH"] = str(root)
        srv.cwd = root
    return srv


async def stream(c: httpx.AsyncClient, text: str) -> tuple[float, float]:
    """(total, first output) in ms of one background stream."""
    t0 = time.perf_counter()
    first = 0.0
    async with c.stream(
        "POST", "/responses", json={"model": "x", "input": text, "stream": True, "background": True}
    ) as r:
        r.raise_for_status()
        async for line in r.aiter_lines():
            if not first and line.startswith("event: response.output_"):
                first = time.perf_counter() - t0
    return (time.perf_counter() - t0) * 1000, first * 1000


def tracing_costs(work: Path, ref: str, rounds: int) -> dict[str, Any]:
    sink = Sink()
    root = checkout(ref, work)
    traced = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint,
        "OTEL_TRACES_SAMPLER": "always_on",
        "OTEL_METRICS_EXPORTER": "none",
    }
    configs: list[tuple[str, dict[str, str], Path | None]] = [
        ("baseline", {}, root),
        ("tracing off", {}, None),
        ("tracing on", traced, None),
    ]
    out: dict[str, Any] = {}
    try:
        for app, key in ((BURST, "burst"), (STEPS, "countdown")):
            servers = [
                server(
                    f"sqlite:///{work / key / name.replace(' ', '-') / 'b.db'}",
                    app,
                    work / key / name.replace(" ", "-"),
                    env,
                    r,
                )
                for name, env, r in configs
            ]
            for s in servers:
                s.cwd.mkdir(parents=True, exist_ok=True)
                s.start()
            try:
                cpus = [ProcessCPU(s.proc.pid) for s in servers if s.proc is not None]
                out[key] = asyncio.run(_interleaved(key, [s.base_url for s in servers], cpus, rounds))
            finally:
                for s in servers:
                    s.stop()
    finally:
        sink.close()
        kill_leftovers()
    names = [n for n, _, _ in configs]
    burst, steps = out["burst"], out["countdown"]
    rows = {
        name: {
            "burst_total_ms": median(burst[i]["total"]),
            "burst_first_output_ms": median(burst[i]["first"]),
            "countdown_ms_per_superstep": median(steps[i]["per_step"]),
            # Server CPU (mean: a batch export lands in whichever request runs when it fires).
            "burst_server_cpu_ms": sum(burst[i]["cpu"]) / len(burst[i]["cpu"]),
            "countdown_server_cpu_ms_per_superstep": sum(steps[i]["cpu"]) / len(steps[i]["cpu"]),
        }
        for i, name in enumerate(names)
    }
    ratios = {
        f"{a} / {b}": {k: rows[a][k] / rows[b][k] for k in rows[a]}
        for a, b in (("tracing off", "baseline"), ("tracing on", "tracing off"), ("tracing on", "baseline"))
    }
    return {"rows": rows, "ratios": ratios, "otlp_requests": sink.requests, "rounds": rounds}


async def _interleaved(
    key: str, bases: list[str], cpus: list[ProcessCPU], rounds: int
) -> dict[int, dict[str, list[float]]]:
    """Wall times and the server's CPU per request. CPU time is what a loaded machine disturbs
    least: other processes delay a request (its wall time) but do not run on its account."""
    clients = [httpx.AsyncClient(base_url=b, timeout=300) for b in bases]
    got: dict[int, dict[str, list[float]]] = {
        i: {"total": [], "first": [], "per_step": [], "cpu": []} for i in range(len(bases))
    }

    async def timed(i: int, text: str) -> tuple[float, float, float]:
        cpus[i].refresh()
        c0 = cpus[i].seconds()
        total, first = await stream(clients[i], text)
        return total, first, (cpus[i].seconds() - c0) * 1000

    try:
        for c in clients:  # warm-up: connections, imports, the first supersteps
            for _ in range(3):
                await stream(c, "1000" if key == "burst" else "30")
        for order in balanced_orders(len(bases), rounds):
            for i in order:
                if key == "burst":
                    total, first, cpu = await timed(i, "1000")
                    got[i]["total"].append(total)
                    got[i]["first"].append(first)
                    got[i]["cpu"].append(cpu)
                else:
                    one, _, cpu_one = await timed(i, "1")
                    many, _, cpu_many = await timed(i, "101")
                    got[i]["per_step"].append((many - one) / 100)
                    got[i]["cpu"].append((cpu_many - cpu_one) / 100)
    finally:
        for c in clients:
            await c.aclose()
    return got


def used_bytes(url: str) -> int:
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages = conn.execute("PRAGMA page_count").fetchone()[0]
            free = conn.execute("PRAGMA freelist_count").fetchone()[0]
            size = conn.execute("PRAGMA page_size").fetchone()[0]
            return int((pages - free) * size)
        finally:
            conn.close()
    import asyncpg  # type: ignore[import-untyped]

    async def measure() -> int:
        conn = await asyncpg.connect(url.replace("postgresql://", "postgres://"))
        try:
            await conn.execute("VACUUM")
            return int(
                await conn.fetchval(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = 'public' AND c.relkind = 'r'"
                )
            )
        finally:
            await conn.close()

    return asyncio.run(measure())


async def _responses(base: str, text: str, n: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=300) as c:
        for _ in range(n):
            await stream(c, text)


def bytes_per_response(work: Path, n: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for dialect in ("sqlite", "postgresql"):
        for app, key, text in (
            (BURST, "1000 outputs", "1000"),
            (STEPS, "countdown of 100 supersteps", "100"),
        ):
            where = work / f"bytes-{dialect}-{key.split()[0]}"
            where.mkdir(parents=True, exist_ok=True)
            url = f"sqlite:///{where / 'b.db'}" if dialect == "sqlite" else postgres.new_database()
            srv = server(url, app, where, {"DURABLE_RESPONSES_RETENTION": "off"})
            srv.start()
            try:
                asyncio.run(_responses(srv.base_url, text, 1))  # the schema's first pages
                before = used_bytes(url)
                asyncio.run(_responses(srv.base_url, text, n))
                out.setdefault(dialect, {})[key] = (used_bytes(url) - before) / n
            finally:
                srv.stop()
                if dialect == "postgresql":
                    postgres.drop_database(url)
    return out


def steady_load(work: Path, seconds: float, retention: str) -> list[dict[str, float]]:
    where = work / f"load-{retention}"
    where.mkdir(parents=True, exist_ok=True)
    url = f"sqlite:///{where / 'b.db'}"
    env = {"DURABLE_RESPONSES_RETENTION": retention, "DURABLE_RESPONSES_RETENTION_INTERVAL": "2"}
    srv = server(url, STEPS, where, env)
    srv.start()
    samples: list[dict[str, float]] = []
    try:

        async def load() -> None:
            async with httpx.AsyncClient(base_url=srv.base_url, timeout=300) as c:
                t0 = time.monotonic()
                next_sample = 0.0
                done = 0
                while (now := time.monotonic() - t0) < seconds:
                    await stream(c, "20")
                    done += 1
                    if now >= next_sample:
                        path = Path(url[len("sqlite:///") :])
                        file_bytes = path.stat().st_size + (
                            Path(str(path) + "-wal").stat().st_size
                            if Path(str(path) + "-wal").exists()
                            else 0
                        )
                        samples.append(
                            {
                                "t": round(now, 1),
                                "responses": done,
                                "used": used_bytes(url),
                                "file": file_bytes,
                            }
                        )
                        next_sample += 5.0

        asyncio.run(load())
    finally:
        srv.stop()
    return samples


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench ops")
    ap.add_argument("--only", default="tracing,bytes,retention")
    ap.add_argument("--baseline-ref", default=BASELINE_REF)
    ap.add_argument("--rounds", type=int, default=12, help="balanced rounds of the tracing comparison")
    ap.add_argument("--responses", type=int, default=20, help="responses per bytes-per-response figure")
    ap.add_argument("--load-seconds", type=float, default=90)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "tracing" in only:
            results["tracing"] = tracing_costs(work, args.baseline_ref, args.rounds)
        if "bytes" in only:
            results["bytes_per_response"] = bytes_per_response(work, args.responses)
        if "retention" in only:
            results["retention_on"] = steady_load(work, args.load_seconds, "20s")
            results["retention_off"] = steady_load(work, args.load_seconds / 2, "off")
    print(json.dumps(results, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
