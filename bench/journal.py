"""What the journal (issue 37) costs: time per agent superstep with and without it, and bytes
per recorded call, on SQLite and on PostgreSQL.

    python -m bench.journal [--responses 30] [--dialects sqlite,postgresql]

The app is a workflow of three chained agent executors, each an agent on agent-framework's real
OpenAI client calling one tool (two model calls and a tool call per superstep), against the
fake model with no token delay (so the host's own cost is what is measured, not the model's).
Two servers run side by side on their own databases, one with `DURABLE_RESPONSES_JOURNAL=off`;
requests (foreground, JSON) alternate between them, so both see the same machine load. The
figure is the median of the paired ratios of wall time per response (three agent supersteps
each; the two of a pair ran back to back);
bytes per recorded call come from the journaling server's `/metrics`
(`durable_responses_journal_record_bytes`).
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

from durable_responses.testing import FakeModel

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN = os.environ.get("BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


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


def _database(dialect: str, tmp: Path, name: str) -> str:
    if dialect == "sqlite":
        return f"sqlite:///{tmp / name / 'db.sqlite'}"
    import asyncio

    import asyncpg  # type: ignore[import-untyped]

    db = f"dr_bench_journal_{os.getpid()}_{name}"

    async def create() -> None:
        conn = await asyncpg.connect(PG_ADMIN.replace("postgresql://", "postgres://"))
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{db}"')
            await conn.execute(f'CREATE DATABASE "{db}"')
        finally:
            await conn.close()

    asyncio.run(create())
    return PG_ADMIN.rsplit("/", 1)[0] + f"/{db}"


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


def _one(client: httpx.Client, base: str, i: int) -> float:
    began = time.perf_counter()
    r = client.post(
        f"{base}/v1/responses", json={"model": "m", "input": f"look_up order_id=B{i}"}, timeout=60
    )
    elapsed = time.perf_counter() - began
    body = r.json()
    if r.status_code != 200 or body.get("status") != "completed":
        raise RuntimeError(f"response failed: {r.status_code} {str(body)[:300]}")
    return elapsed


def _bytes_per_record(client: httpx.Client, base: str) -> tuple[float, int]:
    text = client.get(f"{base}/metrics").text
    total = re.search(r"^durable_responses_journal_record_bytes_sum (\S+)$", text, re.M)
    count = re.search(r"^durable_responses_journal_record_bytes_count (\S+)$", text, re.M)
    n = int(float(count.group(1))) if count else 0
    return (float(total.group(1)) / n if total and n else 0.0), n


def run(dialect: str, responses: int, fake: FakeModel) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        env = {**fake.env("chat"), "DURABLE_RESPONSES_LOG_LEVEL": "warning"}
        on, on_url = _serve(_database(dialect, tmp, "on"), env, tmp, "on")
        off, off_url = _serve(
            _database(dialect, tmp, "off"), {**env, "DURABLE_RESPONSES_JOURNAL": "off"}, tmp, "off"
        )
        try:
            with httpx.Client() as client:
                for i in range(3):  # warm both (imports, first connections)
                    _one(client, on_url, i)
                    _one(client, off_url, i)
                times: dict[str, list[float]] = {"on": [], "off": []}
                for i in range(responses):
                    first, second = (("on", on_url), ("off", off_url))[:: 1 if i % 2 else -1]
                    times[first[0]].append(_one(client, first[1], i))
                    times[second[0]].append(_one(client, second[1], i))
                per_call, records = _bytes_per_record(client, on_url)
        finally:
            for p in (on, off):
                p.terminate()
                p.wait(20)
    on_ms = statistics.median(times["on"]) / 3 * 1000
    off_ms = statistics.median(times["off"]) / 3 * 1000
    # Each pair ran back to back: the median of their ratios follows the machine's drifting
    # load less than the ratio of the two medians does.
    pairs = sorted(a / b for a, b in zip(times["on"], times["off"], strict=True))
    return {
        "superstep_ms_journal": on_ms,
        "superstep_ms_off": off_ms,
        "ratio": statistics.median(pairs),
        "ratio_iqr": (pairs[len(pairs) // 4], pairs[(3 * len(pairs)) // 4]),
        "bytes_per_record": per_call,
        "records": records,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.journal", description=__doc__.split("\n")[0])
    parser.add_argument("--responses", type=int, default=30)
    parser.add_argument("--dialects", default="sqlite,postgresql")
    args = parser.parse_args(argv)
    with FakeModel(token_delay=0.0) as fake:
        for dialect in args.dialects.split(","):
            r = run(dialect, args.responses, fake)
            print(
                f"{dialect}: {r['superstep_ms_journal']:.1f} ms per agent superstep with the journal, "
                f"{r['superstep_ms_off']:.1f} without (medians); paired ratio {r['ratio']:.3f}x "
                f"(IQR {r['ratio_iqr'][0]:.2f}-{r['ratio_iqr'][1]:.2f}); "
                f"{r['bytes_per_record']:.0f} bytes per record ({r['records']} records)",
                flush=True,
            )


if __name__ == "__main__":
    main()
