"""The outbox writer's speed, before and after a change: paired, interleaved runs.

Not a test (pytest collects only `test_*.py`): a script to run by hand, e.g.

    .venv/bin/python tests/store/perf_writer.py --tree before=/path/to/old/checkout \\
        --tree after=. --rounds 6 --dialect sqlite --dialect postgresql

Each round runs every tree once per dialect, in a rotated order, each run in a fresh
subprocess (`PYTHONPATH` = the tree) on a fresh database; the report gives, per tree, the
median over rounds of each figure, and the median of the paired ratios (tree / first tree),
which cancels most of the machine's drift. `--url NAME=URL` adds PostgreSQL URLs to measure
(a pooler in front of the same server, for instance); they run against the database the URL
names, which must be migrated (`--fresh` is only for the default server).

Figures (one process, uvloop, the store's public API only):
- `superstep_ms`: one response, writes of 3 events + 1 closed item + 1 checkpoint, each awaited
  before the next (what a run pays per superstep): mean ms per write.
- `superstep_cpu_us`: this process's CPU time per such write (SQLite's work included; less
  sensitive to other processes' load than wall time on a shared machine).
- `commits_per_s`, `writes_per_s`: 32 responses writing such supersteps concurrently (each
  batch holds one write of each: commits/s is writes/s over 32); `cpu_us_per_write`: CPU time.
- `create_ms`: plain creations (response, 2 input items, 2 events), one at a time.
- `end_ms`: a response's end (terminal transition, 2 events, 1 item, pruning), one at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ADMIN = os.environ.get("DURABLE_RESPONSES_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
CHUNKS = 5
FIGURES = (
    "superstep_ms",
    "superstep_cpu_us",
    "commits_per_s",
    "writes_per_s",
    "cpu_us_per_write",
    "create_ms",
    "end_ms",
)


# -- one run (in the subprocess) ------------------------------------------------------------


async def _measure(url: str, n_steps: int) -> dict[str, float]:
    from durable_responses.store import (
        CheckpointRow,
        EventRow,
        Finish,
        InputItemRow,
        OutputItemRow,
        ResponseRow,
        Store,
        Write,
    )

    run = uuid.uuid4().hex[:6]  # ids unique per run: a `--url` database is shared by every run

    def row(rid: str, owner: str | None) -> ResponseRow:
        now = time.time()
        return ResponseRow(
            id=run + rid,
            user_id="u",
            status="in_progress",
            background=True,
            stream=False,
            delivery="live",
            created_at=now,
            completed_at=None,
            previous_response_id=None,
            conversation_id=None,
            request='{"input": "hi"}',
            request_hash="0" * 64,
            lease_owner=owner,
            lease_expires_at=None if owner is None else now + 60,
        )

    def ev(seq: int) -> EventRow:
        return EventRow(
            seq, "response.output_text.delta", '{"type":"response.output_text.delta","delta":"tok"}'
        )

    def step(rid: str, k: int) -> Write:
        base = 1 + 3 * k
        rid = run + rid
        return Write(
            rid,
            "p1",
            events=[ev(base), ev(base + 1), ev(base + 2)],
            items=[OutputItemRow(k, f"it_{k}", "completed", True, '{"id": "x"}')],
            checkpoint=CheckpointRow(
                checkpoint_id=f"{rid}_cp{k}",
                user_id="u",
                lineage=rid,
                response_id=rid,
                workflow_name="wf",
                event_seq=base + 2,
                data='{"state": "' + "x" * 800 + '"}',
                created_at=time.time(),
            ),
        )

    store = Store.open(url, lease_seconds=60)
    await store.start()
    try:
        # warm-up: connections, prepared statements, caches
        await store.insert_response(row("warm", "p1"), [], [ev(0)])
        for k in range(20):
            await store.submit(step("warm", k))

        # Each figure is the fastest of CHUNKS slices of its phase: on a shared machine the
        # slowest slices measure the neighbours, the fastest one this code.
        await store.insert_response(row("seq", "p1"), [], [ev(0)])
        walls, cpus = [], []
        chunk = max(n_steps // CHUNKS, 1)
        for c in range(CHUNKS):
            t0, cpu0 = time.perf_counter(), time.process_time()
            for k in range(c * chunk, (c + 1) * chunk):
                await store.submit(step("seq", k))
            walls.append((time.perf_counter() - t0) * 1000 / chunk)
            cpus.append((time.process_time() - cpu0) * 1e6 / chunk)
        superstep_ms, superstep_cpu_us = min(walls), min(cpus)

        rids = [f"c{i}" for i in range(32)]
        for rid in rids:
            await store.insert_response(row(rid, "p1"), [], [ev(0)])
        per = max(n_steps // (8 * CHUNKS), 4)
        best: tuple[float, float, int] | None = None  # (elapsed, cpu, commits) of the fastest slice

        async def drive(rid: str, start: int) -> None:
            for k in range(start, start + per):
                await store.submit(step(rid, k))

        for c in range(CHUNKS):
            c0 = store.outbox.commits
            t0, cpu0 = time.perf_counter(), time.process_time()
            await asyncio.gather(*(drive(r, c * per) for r in rids))
            sample = (time.perf_counter() - t0, time.process_time() - cpu0, store.outbox.commits - c0)
            best = sample if best is None or sample[0] < best[0] else best
        assert best is not None
        elapsed, cpu, commits = best

        inputs = [InputItemRow(0, "in0", '{"type":"message"}'), InputItemRow(1, "in1", '{"type":"message"}')]
        n_create = max(n_steps // 2, 20)
        t0 = time.perf_counter()
        for i in range(n_create):
            await store.insert_response(row(f"n{i}", None), inputs, [ev(0), ev(1)])
        create_ms = (time.perf_counter() - t0) * 1000 / n_create

        n_end = max(n_steps // 4, 20)
        for i in range(n_end):
            await store.insert_response(row(f"e{i}", "p1"), [], [ev(0)])
            await store.submit(step(f"e{i}", 0))
        t0 = time.perf_counter()
        for i in range(n_end):
            await store.submit(
                Write(
                    f"{run}e{i}",
                    "p1",
                    events=[ev(4), ev(5)],
                    items=[OutputItemRow(1, "last", "completed", True, "{}")],
                    finish=Finish(status="completed", completed_at=time.time(), usage="{}"),
                    prune=("u", f"{run}e{i}"),
                )
            )
        end_ms = (time.perf_counter() - t0) * 1000 / n_end
    finally:
        await store.close()
    return {
        "superstep_ms": superstep_ms,
        "commits_per_s": commits / elapsed,
        "writes_per_s": len(rids) * per / elapsed,
        "superstep_cpu_us": superstep_cpu_us,
        "cpu_us_per_write": cpu * 1e6 / (len(rids) * per),
        "create_ms": create_ms,
        "end_ms": end_ms,
    }


def _child(url: str, n_steps: int) -> None:
    import uvloop

    print(json.dumps(uvloop.run(_measure(url, n_steps))))


# -- the driver ---------------------------------------------------------------------------


def _admin(sql: str) -> None:
    import asyncpg

    async def run() -> None:
        conn = await asyncpg.connect(ADMIN)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


def _fresh_url(dialect: str, template: str | None, tmp: Path) -> tuple[str, str | None]:
    if dialect == "sqlite":
        path = tmp / f"perf-{uuid.uuid4().hex[:8]}.db"
        return f"sqlite:///{path}", None
    name = f"dr_perf_{uuid.uuid4().hex[:10]}"
    _admin(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    return ADMIN.rsplit("/", 1)[0] + "/" + name, name


def _importable(tree: Path) -> Path:
    """A directory whose `durable_responses` package is `tree`'s (`server/`, with `migrations/`
    as its `migrations`): on `PYTHONPATH` it comes before the venv's editable install, which
    would otherwise give every tree the installed one's code."""
    root = Path(tempfile.gettempdir()) / f"dr-perf-{hashlib.sha1(str(tree).encode()).hexdigest()[:12]}"
    pkg = root / "durable_responses"
    if not pkg.exists():
        pkg.mkdir(parents=True)
        for entry in (tree / "server").iterdir():
            (pkg / entry.name).symlink_to(entry)
        (pkg / "migrations").symlink_to(tree / "migrations")
    return root


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(_importable(tree))}


def _run(tree: Path, url: str, n_steps: int) -> dict[str, float]:
    env = _env(tree)
    if url.startswith("sqlite"):
        subprocess.run(
            [sys.executable, "-m", "durable_responses", "migrate", "--database-url", url],
            cwd=tree,
            env=env,
            check=True,
            capture_output=True,
        )
    out = subprocess.run(
        [sys.executable, __file__, "--child", url, "--steps", str(n_steps)],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _ratios(runs: list[dict[str, float]], base: list[dict[str, float]]) -> dict[str, str]:
    """Per figure: the median of the paired ratios run / base, with their interquartile range."""
    out: dict[str, str] = {}
    for f in FIGURES:
        ratios = sorted(r[f] / b[f] for r, b in zip(runs, base, strict=True))
        q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        out[f"{f}_ratio"] = f"{statistics.median(ratios):.3f} (IQR {q[0]:.2f}-{q[2]:.2f})"
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--child")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--tree", action="append", default=[], help="NAME=PATH")
    p.add_argument("--dialect", action="append", default=[])
    p.add_argument("--url", action="append", default=[], help="NAME=URL (a migrated PostgreSQL database)")
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    if args.child:
        _child(args.child, args.steps)
        return
    trees = [(n, Path(v).resolve()) for n, v in (t.split("=", 1) for t in args.tree)]
    targets: list[tuple[str, str | None]] = [(d, None) for d in args.dialect]
    targets += [(n, v) for n, v in (u.split("=", 1) for u in args.url)]
    template = None
    tmp = Path(tempfile.mkdtemp(prefix="dr-perf-"))
    if any(d == "postgresql" for d, u in targets if u is None):
        template = f"dr_perf_template_{os.getpid()}"
        _admin(f'CREATE DATABASE "{template}"')
        subprocess.run(
            [
                sys.executable,
                "-m",
                "durable_responses",
                "migrate",
                "--database-url",
                ADMIN.rsplit("/", 1)[0] + "/" + template,
            ],
            cwd=trees[0][1],
            env=_env(trees[0][1]),
            check=True,
            capture_output=True,
        )
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    try:
        for rnd in range(args.rounds):
            order = trees[rnd % len(trees) :] + trees[: rnd % len(trees)]
            for target, fixed in targets:
                for name, tree in order:
                    url, made = (fixed, None) if fixed else _fresh_url(target, template, tmp)
                    try:
                        results.setdefault((target, name), []).append(_run(tree, url, args.steps))
                    finally:
                        if made:
                            _admin(f'DROP DATABASE IF EXISTS "{made}" WITH (FORCE)')
            print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        if template:
            _admin(f'DROP DATABASE IF EXISTS "{template}" WITH (FORCE)')
    report: dict[str, Any] = {}
    if len(trees) == 1 and len(targets) > 1:
        # One tree: the paired ratios are between targets instead (a pooler / the direct URL).
        name = trees[0][0]
        base = results[(targets[0][0], name)]
        for target, _ in targets:
            runs = results[(target, name)]
            entry = {f: round(statistics.median(r[f] for r in runs), 3) for f in FIGURES}
            report[f"{target}/{name}"] = entry | _ratios(runs, base)
        print(json.dumps(report, indent=1))
        return
    for target, _ in targets:
        base = results[(target, trees[0][0])]
        for name, _tree in trees:
            runs = results[(target, name)]
            entry = {f: round(statistics.median(r[f] for r in runs), 3) for f in FIGURES}
            if name != trees[0][0]:
                entry.update(_ratios(runs, base))
            report[f"{target}/{name}"] = entry
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
