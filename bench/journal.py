"""What the journal (issue 37) costs: time per agent superstep with and without it, and bytes
per recorded call, on SQLite and on PostgreSQL.

    python -m bench.journal [--responses 30] [--rounds 1] [--dialects sqlite,postgresql]

The app is a workflow of three chained agent executors, each an agent on agent-framework's real
OpenAI client with one tool, against the fake model with no token delay (so the host's own cost
is what is measured, not the model's). The fake calls a tool named in the user's text once: the
first agent calls it (two model calls and a tool call), the other two answer in one model call
each, so a response records six rows (four model calls, the tool's intent and result).
Two servers run side by side on their own databases, one with `DURABLE_RESPONSES_JOURNAL=off`;
requests (foreground, JSON) alternate between them, so both see the same machine load. The
figure is the median of the paired ratios of wall time per response (three agent supersteps
each; the two of a pair ran back to back);
bytes per recorded call come from the journaling server's `/metrics`
(`durable_responses_journal_record_bytes`). Beside wall time, the CPU each request cost the
server and its database's backends (`cpu.run_seconds`: the scheduler's count, which a loaded
machine inflates far less than wall time) gives a second paired ratio. `--rounds` repeats the
measurement (fresh servers and databases each round, the dialects interleaved) and reports each
round, and the median and range over rounds; the load average is printed beside them.

The PostgreSQL databases are `dr_bench_journal_<pid>_<on|off>`: dropped when a round ends, and
at start those of a bench process that no longer runs (an interrupted run's).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from agent_framework import Agent, Workflow, WorkflowBuilder, tool
from agent_framework_openai import OpenAIChatCompletionClient

from bench.cpu import ProcessCPU, run_seconds
from durable_responses.testing import FakeModel

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
PREFIX = "dr_bench_journal_"


@tool
async def look_up(order_id: str) -> str:
    """Look an order up."""
    return f"order {order_id} is fine"


def chain() -> Workflow:
    """Three chained agent executors, each calling `look_up` (`--app bench.journal:chain`)."""
    url = os.environ["FAKE_MODEL_URL"]

    def agent(name: str) -> Agent:
        client = OpenAIChatCompletionClient(model="fake", api_key="k", base_url=url)
        return Agent(client=client, name=name, instructions=f"You are {name}.", tools=[look_up])

    a, b, c = agent("first"), agent("second"), agent("third")
    return WorkflowBuilder(name="journal_chain", start_executor=a).add_chain([a, b, c]).build()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _admin(*statements: str) -> list[str]:
    """Run `statements` on PostgreSQL's admin database; returns the names of its databases."""
    import asyncio

    import asyncpg  # type: ignore[import-untyped]

    async def execute() -> list[str]:
        conn = await asyncpg.connect(PG_ADMIN.replace("postgresql://", "postgres://"))
        try:
            for statement in statements:
                await conn.execute(statement)
            return [r[0] for r in await conn.fetch("SELECT datname FROM pg_database")]
        finally:
            await conn.close()

    return asyncio.run(execute())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def drop_leftovers() -> list[str]:
    """Drop the databases of bench processes that no longer run (an interrupted run's)."""
    stale = []
    for name in _admin():
        owner = name[len(PREFIX) :].split("_", 1)[0]
        if name.startswith(PREFIX) and owner.isdigit() and not _alive(int(owner)):
            stale.append(name)
    _admin(*(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' for name in stale))
    return stale


def _database(dialect: str, tmp: Path, name: str) -> tuple[str, str | None]:
    """The database URL, and the PostgreSQL database's name (to drop)."""
    if dialect == "sqlite":
        return f"sqlite:///{tmp / name / 'db.sqlite'}", None
    db = f"{PREFIX}{os.getpid()}_{name}"
    _admin(f'DROP DATABASE IF EXISTS "{db}"', f'CREATE DATABASE "{db}"')
    return PG_ADMIN.rsplit("/", 1)[0] + f"/{db}", db


def _serve(url: str, env: dict[str, str], tmp: Path, name: str) -> tuple[subprocess.Popen[bytes], str]:
    (tmp / name).mkdir(parents=True, exist_ok=True)
    port = _port()
    cmd = [sys.executable, "-m", "durable_responses"]
    full = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    subprocess.run([*cmd, "migrate", "--database-url", url], env=full, check=True, cwd=tmp / name)
    proc = subprocess.Popen(
        [*cmd, "serve", "--app", "bench.journal:chain", "--database-url", url, "--port", str(port)],
        env=full,
        cwd=tmp / name,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{base}/readiness", timeout=1).status_code == 200:
                return proc, base
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"the {name} server did not start")
        time.sleep(0.1)


def _one(client: httpx.Client, base: str, i: int, cpu: ProcessCPU | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the server and its database backends) of one response."""
    before = run_seconds(cpu.pids) if cpu is not None else 0.0
    began = time.perf_counter()
    r = client.post(
        f"{base}/v1/responses", json={"model": "m", "input": f"look_up order_id=B{i}"}, timeout=60
    )
    elapsed = time.perf_counter() - began
    spent = run_seconds(cpu.pids) - before if cpu is not None else 0.0
    body = r.json()
    if r.status_code != 200 or body.get("status") != "completed":
        raise RuntimeError(f"response failed: {r.status_code} {str(body)[:300]}")
    return elapsed, spent


def _bytes_per_record(client: httpx.Client, base: str) -> tuple[float, int]:
    text = client.get(f"{base}/metrics").text
    total = re.search(r"^durable_responses_journal_record_bytes_sum (\S+)$", text, re.M)
    count = re.search(r"^durable_responses_journal_record_bytes_count (\S+)$", text, re.M)
    n = int(float(count.group(1))) if count else 0
    return (float(total.group(1)) / n if total and n else 0.0), n


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    v = sorted(values)
    return v[len(v) // 4], statistics.median(v), v[(3 * len(v)) // 4]


def run(dialect: str, responses: int, fake: FakeModel) -> dict[str, Any]:
    dbs: list[str] = []
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory() as d:
            tmp = Path(d)
            env = {**fake.env("chat"), "DURABLE_RESPONSES_LOG_LEVEL": "warning"}
            urls = {}
            for name in ("on", "off"):
                url, db = _database(dialect, tmp, name)
                dbs += [db] if db else []
                extra = {"DURABLE_RESPONSES_JOURNAL": "off"} if name == "off" else {}
                proc, urls[name] = _serve(url, {**env, **extra}, tmp, name)
                procs.append(proc)
            names: list[str | None] = list(dbs) if dbs else [None, None]
            cpus = {name: ProcessCPU(p.pid, db) for name, p, db in zip(urls, procs, names, strict=True)}
            return _measure(urls, cpus, responses)
    finally:
        for p in procs:
            p.terminate()
            p.wait(20)
        if dbs:
            _admin(*(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)' for db in dbs))


def _measure(urls: dict[str, str], cpus: dict[str, ProcessCPU], responses: int) -> dict[str, Any]:
    with httpx.Client() as client:
        for i in range(3):  # warm both (imports, first connections)
            for name in urls:
                _one(client, urls[name], i)
        for cpu in cpus.values():
            cpu.refresh()
        times: dict[str, list[float]] = {"on": [], "off": []}
        spent: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(responses):
            for name in ("on", "off")[:: 1 if i % 2 else -1]:
                wall, cpu_s = _one(client, urls[name], i, cpus[name])
                times[name].append(wall)
                spent[name].append(cpu_s)
        per_call, records = _bytes_per_record(client, urls["on"])
    # Each pair ran back to back: the median of their ratios follows the machine's drifting
    # load less than the ratio of the two medians does.
    pairs = [a / b for a, b in zip(times["on"], times["off"], strict=True)]
    cpu_pairs = [a / b for a, b in zip(spent["on"], spent["off"], strict=True) if b > 0]
    return {
        "superstep_ms_journal": statistics.median(times["on"]) / 3 * 1000,
        "superstep_ms_off": statistics.median(times["off"]) / 3 * 1000,
        "ratio": _quartiles(pairs),
        "cpu_ms_journal": statistics.median(spent["on"]) / 3 * 1000,
        "cpu_ms_off": statistics.median(spent["off"]) / 3 * 1000,
        "cpu_ratio": _quartiles(cpu_pairs),
        "bytes_per_record": per_call,
        "records": records,
    }


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _report(n: int, dialect: str, load: str, r: dict[str, Any]) -> None:
    q, c = r["ratio"], r["cpu_ratio"]
    print(
        f"round {n} {dialect} (load {load} -> {_load()}): per agent superstep "
        f"{r['superstep_ms_journal']:.1f} ms with the journal, {r['superstep_ms_off']:.1f} without "
        f"(medians), paired ratio {q[1]:.3f}x (IQR {q[0]:.2f}-{q[2]:.2f}); CPU "
        f"{r['cpu_ms_journal']:.1f} / {r['cpu_ms_off']:.1f} ms, paired ratio {c[1]:.3f}x "
        f"(IQR {c[0]:.2f}-{c[2]:.2f}); {r['bytes_per_record']:.0f} bytes per record ({r['records']} records)",
        flush=True,
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.journal", description=__doc__.split("\n")[0])
    parser.add_argument("--responses", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--dialects", default="sqlite,postgresql")
    args = parser.parse_args(argv)
    dialects = args.dialects.split(",")
    if "postgresql" in dialects:
        stale = drop_leftovers()
        if stale:
            print(f"dropped the databases of interrupted runs: {', '.join(stale)}", flush=True)
    ratios: dict[str, list[tuple[float, float]]] = {d: [] for d in dialects}
    with FakeModel(token_delay=0.0) as fake:
        for n in range(args.rounds):
            for dialect in dialects[:: 1 if n % 2 == 0 else -1]:
                load = _load()
                r = run(dialect, args.responses, fake)
                ratios[dialect].append((r["ratio"][1], r["cpu_ratio"][1]))
                _report(n + 1, dialect, load, r)
    if args.rounds > 1:
        for dialect, got in ratios.items():
            wall, cpu = [w for w, _ in got], [c for _, c in got]
            print(
                f"{dialect} over {args.rounds} rounds: wall ratio median {statistics.median(wall):.3f}x "
                f"(range {min(wall):.2f}-{max(wall):.2f}), CPU ratio median {statistics.median(cpu):.3f}x "
                f"(range {min(cpu):.2f}-{max(cpu):.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
