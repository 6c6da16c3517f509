"""Side-by-side benchmark: the existing host (agent-framework-foundry-hosting) against this server.

One run, one machine, one client, one host at a time:

1. installs the existing host into bench/.venv-existing (reused when its pins match) and serves the
   benchmark's workflows with its `ResponsesHostServer` (bench/existing_host.py), once plain and
   once with `ResponsesServerOptions(resilient_background=True)`;
2. serves the same workflows with `python -m server serve` on SQLite and PostgreSQL, in `live` and
   `durable` delivery;
3. measures each with the same httpx client code (warm client, streaming);
4. prints one markdown table with every figure and the ratios, then checks the targets of issue 5.

Usage: python -m bench [--quick] [--only burst,countdown,...,existing-resilient,sqlite-live,...]
       python -m bench quick        (the first, ours-only benchmark)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench.rawclient import EventLines, RawConnection, Stream  # noqa: E402
from tests import conftest  # noqa: E402
from tests.conftest import (  # noqa: E402
    PG_ADMIN,
    ServerProcess,
    _pg_reachable,
    drop_pg_database,
    new_pg_database,
)

EXISTING_VENV = BENCH / ".venv-existing"
# FACTS.md: the existing host as measured there.
EXISTING_PINS = (
    "agent-framework-foundry-hosting==1.0.0b261022",
    "azure-ai-agentserver-responses==2.3.0",
    "agent-framework-core==1.23.0",
)
README = BENCH / "README.md"
RESULTS_DIR = BENCH / "results"
TERMINAL_EVENTS = {"response.completed", "response.failed", "response.incomplete", "error"}
TERMINAL_STATUSES = {"completed", "failed", "cancelled", "incomplete"}
TIMES, DASH = "\u00d7", "\u2013"
SCENARIOS = ("burst", "countdown", "concurrent", "growth", "recovery")


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@dataclass
class Sizes:
    burst_outputs: int = 1000
    burst_reps: int = 5
    countdown: int = 100
    countdown_reps: int = 5
    concurrent: int = 100
    concurrent_input: str = "3"
    growth: tuple[int, ...] = (10, 100, 1000)
    # Runs at N=10 (each paired with an N=1 run, the fixed cost subtracted): at 10 supersteps
    # the difference is a few ms, so the medians need many runs to be stable.
    base_reps: int = 40
    # Ours runs 10, 100 and 1000 supersteps in ~10 ms, ~0.1 s and ~1 s, the existing hosts in
    # 0.1-1 s, 0.5-8 s and 37-120 s: ours repeats its pairs this many times more (its medians
    # would otherwise be as noisy as a few short runs; theirs would take many minutes).
    ours_reps_factor: int = 3
    # A longer stream is cut and reported as partial (ms per superstep over what ran): the
    # existing hosts' 1000-superstep runs took 85 s (plain) and more than 120 s (resilient) on a
    # slow day, and a full run must stay within 15 minutes.
    growth_deadline_s: float = 60.0
    recovery: int = 100
    recovery_input: str = "3 delay=0.5"
    recovery_kill_after_s: float = 0.3
    recovery_timeout_s: float = 60.0  # ours finish in ~20 s (15 s of it the dead lease)

    @classmethod
    def quick(cls) -> Sizes:
        return cls(
            burst_reps=1,
            countdown_reps=1,
            concurrent=20,
            growth=(10, 100),
            base_reps=3,
            growth_deadline_s=30.0,
            recovery=20,
        )


@dataclass
class Target:
    """One column of the table: a host in one configuration."""

    key: str
    label: str
    kind: str  # "existing" | "ours"
    resilient: bool = False
    dialect: str = ""
    delivery: str = ""
    # Extra fields of every POST /responses body for this column.
    body: dict[str, Any] = field(default_factory=dict)

    @property
    def tags(self) -> set[str]:
        tags = {self.key, self.kind}
        if self.kind == "ours":
            tags |= {self.dialect, self.delivery}
        return tags


def targets(ours_foreground: bool) -> list[Target]:
    ours_body: dict[str, Any] = {} if ours_foreground else {"background": True}
    out = [
        # Its fastest configuration: a plain foreground stream, nothing made durable on purpose.
        Target("existing-plain", "existing host, plain", "existing"),
        # Its durable path: resilient_background only covers background responses.
        Target(
            "existing-resilient",
            "existing host, resilient",
            "existing",
            resilient=True,
            body={"background": True},
        ),
    ]
    for dialect in ("sqlite", "postgresql"):
        for delivery in ("live", "durable"):
            out.append(
                Target(
                    f"{dialect}-{delivery}",
                    f"ours, {'SQLite' if dialect == 'sqlite' else 'PostgreSQL'} {delivery}",
                    "ours",
                    dialect=dialect,
                    delivery=delivery,
                    body=dict(ours_body),
                )
            )
    return out


# --------------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------------

STARTED: list[Any] = []  # every server process this run started (killed at exit if still alive)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ensure_existing_venv() -> Path:
    """bench/.venv-existing with the existing host's pinned packages (reused when already there)."""
    py = EXISTING_VENV / "bin" / "python"
    stamp = EXISTING_VENV / ".bench-pins"
    wanted = "\n".join(EXISTING_PINS)
    if py.exists() and stamp.exists() and stamp.read_text() == wanted:
        return py
    log(f"installing the existing host into {EXISTING_VENV} ({', '.join(EXISTING_PINS)})")
    if not py.exists():
        subprocess.run(
            [shutil.which("python3") or sys.executable, "-m", "venv", str(EXISTING_VENV)], check=True
        )
    subprocess.run([str(py), "-m", "pip", "install", "--quiet", *EXISTING_PINS], check=True)
    subprocess.run(
        [str(py), "-c", "import agent_framework_foundry_hosting, azure.ai.agentserver.responses"], check=True
    )
    stamp.write_text(wanted)
    return py


def existing_versions(py: Path) -> str:
    code = (
        "import importlib.metadata as m, sys;"
        "print(sys.version.split()[0], *(p + ' ' + m.version(p) for p in "
        "('agent-framework-foundry-hosting', 'azure-ai-agentserver-responses', 'agent-framework-core')), sep=', ')"
    )
    return subprocess.run([str(py), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


class ExistingServer:
    """bench/existing_host.py under bench/.venv-existing's python, state in its own directory."""

    def __init__(self, python: Path, app: str, resilient: bool, state_root: Path, log_dir: Path) -> None:
        self.python = python
        self.app = app
        self.resilient = resilient
        self.state_root = state_root
        self.log_dir = log_dir
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90) -> ExistingServer:
        self.state_root.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["AGENTSERVER_STATE_ROOT"] = str(self.state_root)
        cmd = [str(self.python), str(BENCH / "existing_host.py"), "--app", self.app, "--port", str(self.port)]
        if self.resilient:
            cmd.append("--resilient")
        logf = open(self.log_dir / f"existing-{self.app}-{self.port}.log", "ab")
        self.proc = subprocess.Popen(cmd, cwd=self.state_root, env=env, stdout=logf, stderr=subprocess.STDOUT)
        STARTED.append(self)
        wait_ready(self.base_url, self.proc, timeout, self.log)
        return self

    def log(self) -> str:
        try:
            text = (self.log_dir / f"existing-{self.app}-{self.port}.log").read_text(errors="replace")
        except OSError:
            return ""
        return text[-4000:]

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()


def wait_ready(base_url: str, proc: subprocess.Popen[bytes], timeout: float, logs: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{logs()}")
        try:
            if httpx.get(base_url + "/readiness", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"server did not become ready in {timeout}s:\n{logs()}")


class _FastPollTime:
    """`time` for tests/conftest.py with sleeps capped at 20 ms."""

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def sleep(seconds: float) -> None:
        time.sleep(min(seconds, 0.02))


class OursServer:
    """`python -m server serve` through tests/conftest.py's ServerProcess."""

    def __init__(self, url: str, app: str, delivery: str, workdir: Path, env: dict[str, str]) -> None:
        self.url = url
        self.app = app
        self.delivery = delivery
        self.workdir = workdir
        self.env = env
        self.port = free_port()
        self.sp: ServerProcess | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90) -> OursServer:
        # A new ServerProcess per start (same port, same database): a restart after kill -9.
        self.sp = ServerProcess(
            database_url=self.url,
            app=self.app,
            workdir=self.workdir,
            delivery=self.delivery,
            env=self.env,
            port=self.port,
        )
        STARTED.append(self)
        # ServerProcess.start polls readiness every 100 ms; poll every 20 ms (the restart figure).
        saved = conftest.time
        conftest.time = _FastPollTime()  # type: ignore[assignment]
        try:
            self.sp.start(timeout)
        finally:
            conftest.time = saved
        return self

    def kill(self) -> None:
        if self.sp is not None:
            self.sp.kill()

    def stop(self) -> None:
        if self.sp is None or self.sp.proc is None or self.sp.proc.poll() is not None:
            return
        try:
            self.sp.terminate(timeout=10)
        except subprocess.TimeoutExpired:
            self.sp.kill()

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return None if self.sp is None else self.sp.proc


def _cpu_by_pid() -> dict[int, tuple[int, str, float]]:
    """pid -> (ppid, command name, CPU seconds incl. reaped children) from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[int, str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        comm = raw[raw.index("(") + 1 : raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2 :].split()
        out[int(entry)] = (int(fields[1]), comm, sum(int(x) for x in fields[11:15]) / tick)
    return out


class OtherLoad:
    """CPU seconds used during a window by processes that are not this benchmark's (nor PostgreSQL's)."""

    def __init__(self) -> None:
        self.before = _cpu_by_pid()
        self.t0 = time.monotonic()

    def done(self) -> dict[str, Any]:
        after = _cpu_by_pid()
        mine = {os.getpid()}
        changed = True
        while changed:
            changed = False
            for pid, (ppid, _, _) in after.items():
                if ppid in mine and pid not in mine:
                    mine.add(pid)
                    changed = True
        other: dict[str, float] = {}
        for pid, (_, comm, cpu) in after.items():
            if pid in mine or comm.startswith("postgres"):
                continue
            used = cpu - (self.before[pid][2] if pid in self.before else 0.0)
            if used > 0.05:
                other[comm] = other.get(comm, 0.0) + used
        return {
            "wall_s": time.monotonic() - self.t0,
            "other_cpu_s": sum(other.values()),
            "top": sorted(other.items(), key=lambda kv: -kv[1])[:3],
        }


def kill_leftovers() -> None:
    for srv in STARTED:
        proc = srv.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass


class Database:
    """A fresh database per server session: a SQLite file, or a migrated PostgreSQL database."""

    def __init__(self, dialect: str, work: Path) -> None:
        self.dialect = dialect
        self.work = work
        self.urls: list[str] = []

    def new(self, name: str) -> str:
        if self.dialect == "sqlite":
            path = self.work / name / "bench.db"
            path.parent.mkdir(parents=True, exist_ok=True)
            return f"sqlite:///{path}"
        url = new_pg_database()
        self.urls.append(url)
        subprocess.run(
            [sys.executable, "-m", "server", "migrate", "--database-url", url],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=120,
        )
        return url

    def drop_all(self) -> None:
        for url in self.urls:
            try:
                drop_pg_database(url)
            except Exception as exc:
                log(f"could not drop {url}: {exc}")
        self.urls.clear()


@contextmanager
def serving(srv: Any) -> Iterator[Any]:
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        srv.kill()


# --------------------------------------------------------------------------------------------
# Client (the same for every host)
# --------------------------------------------------------------------------------------------


async def stream_once(
    client: httpx.AsyncClient, body: dict[str, Any], deadline: float | None = None
) -> Stream:
    """POST /responses with stream=true; time the first event, the first output and the end
    (raw bytes, tallied by `rawclient.EventLines`)."""
    res = Stream()
    t0 = time.perf_counter()
    lines = EventLines(res, t0)
    try:
        async with client.stream("POST", "/responses", json={**body, "stream": True}) as r:
            res.status = r.status_code
            if r.status_code != 200:
                res.error = f"HTTP {r.status_code}: {(await r.aread())[:200]!r}"
                return res
            async for chunk in r.aiter_raw():
                now = time.perf_counter()
                lines.feed(chunk, now)
                if deadline is not None and now > deadline:
                    res.aborted = True
                    break
    except httpx.HTTPError as exc:
        res.error = f"{type(exc).__name__}: {exc}"
    res.total_ms = (time.perf_counter() - t0) * 1000
    lines.finish()
    return res


def request(text: str, target: Target) -> dict[str, Any]:
    return {"model": "bench", "input": text, **target.body}


def median(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def nearest_rank(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return math.nan
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def client(base_url: str, connections: int = 10, timeout: float = 300) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits)


async def warm(c: httpx.AsyncClient, target: Target, text: str, times: int = 2) -> None:
    for _ in range(times):
        r = await stream_once(c, request(text, target))
        if not r.ok:
            raise RuntimeError(f"warm-up failed: {r}")


# --------------------------------------------------------------------------------------------
# Scenarios
# --------------------------------------------------------------------------------------------


async def scenario_burst(base: str, target: Target, sizes: Sizes) -> dict[str, Any]:
    """(a) one superstep yielding N outputs, streamed: first event, first output, total, events/s."""
    n = sizes.burst_outputs
    async with client(base) as c:
        await warm(c, target, "10")
        runs = [await stream_once(c, request(str(n), target)) for _ in range(sizes.burst_reps)]
    return burst_summary(runs, n)


def burst_summary(runs: list[Stream], n: int) -> dict[str, Any]:
    bad = [r for r in runs if not r.ok]
    good = [r for r in runs if r.ok] or runs
    return {
        "first_event_ms": median([r.first_event_ms for r in good]),
        "first_output_ms": median([r.first_output_ms for r in good]),
        "total_ms": median([r.total_ms for r in good]),
        "events_per_s": median([r.events_per_s for r in good]),
        "events": median([float(r.events) for r in good]),
        "events_per_output": median([r.events / n for r in good]),
        "outputs_seen": median([float(r.deltas) for r in good]),
        "errors": len(bad),
        "error_detail": [r.error or r.terminal for r in bad][:3],
        "runs": [r.__dict__ for r in runs],
    }


def balanced_orders(n: int, rounds: int) -> list[list[int]]:
    """`rounds` orders of n hosts in which every host comes right after every other host
    equally often (Williams' balanced Latin squares: n rows, and their mirror images when n is
    odd). What a host still does after its stream ended weighs on whichever host comes next;
    a plain rotation always puts the same hosts after the same hosts."""
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    square = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        square += [row[::-1] for row in square]
    return [square[r % len(square)] for r in range(rounds)]


async def scenario_burst_paired(bases: dict[str, str], targets: list[Target], sizes: Sizes) -> dict[str, Any]:
    """(a) for several hosts serving at once: requests alternate between them, in balanced
    order (`balanced_orders`), so drift in the machine's speed over minutes and what the previous
    host still does after its stream weigh on every host alike."""
    n = sizes.burst_outputs
    clients = {t.key: client(bases[t.key]) for t in targets}
    runs: dict[str, list[Stream]] = {t.key: [] for t in targets}
    try:
        for t in targets:
            await warm(clients[t.key], t, "10")
        for order in balanced_orders(len(targets), sizes.burst_reps * 4):
            for i in order:
                t = targets[i]
                runs[t.key].append(await stream_once(clients[t.key], request(str(n), t)))
    finally:
        for c in clients.values():
            await c.aclose()
    return {key: burst_summary(rs, n) for key, rs in runs.items()}


@dataclass
class _Pairs:
    """Runs of one N: each N+1 run's time minus the N=1 run's just before it, divided by N."""

    n: int
    pairs: list[float] = field(default_factory=list)
    base: list[float] = field(default_factory=list)
    errors: int = 0
    partial: str | None = None

    def result(self) -> dict[str, Any]:
        return {
            "ms": median(self.pairs) if self.pairs else math.nan,
            "base_ms": median(self.base),
            "partial": self.partial,
            "errors": self.errors,
        }


async def superstep_pairs(
    c: httpx.AsyncClient, target: Target, acc: _Pairs, reps: int, deadline_s: float
) -> None:
    """Add `reps` pairs of (T(N+1 steps) - T(1 step)) / N to `acc`.

    Each N+1 run is paired with the N=1 run just before it, so slow drift on the machine (a
    database checkpoint, the previous run's write-back) weighs on both runs of a pair alike;
    the median of the pairs' differences is robust to a pair that drift or a pause did hit.
    """
    n = acc.n
    for _ in range(reps):
        one = await stream_once(c, request("1", target))
        if not one.ok:
            raise RuntimeError(f"N=1 run failed: {one.error or one.terminal}")
        acc.base.append(one.total_ms)
        r = await stream_once(c, request(str(n + 1), target), deadline=time.perf_counter() + deadline_s)
        if r.ok:
            acc.pairs.append((r.total_ms - one.total_ms) / n)
            continue
        acc.errors += 1
        if r.aborted or not acc.pairs:
            # Cut off (or never complete): what it did in the time is the figure.
            done = max(0, r.deltas - 1)  # supersteps beyond the one in the N=1 baseline
            if not acc.pairs:
                acc.pairs.append((r.total_ms - median(acc.base)) / done if done else math.nan)
            acc.partial = f"{r.deltas} of {n + 1} supersteps in {r.total_ms / 1000:.0f} s" + (
                "" if r.aborted else f", ended {r.error or r.terminal}"
            )
            return


async def scenario_steps(base: str, target: Target, sizes: Sizes, want: set[str]) -> dict[str, Any]:
    """(b) countdown of N supersteps and (d) cost growth at 10/100/1000, fixed cost subtracted.

    Ours repeats its pairs in `ours_reps_factor` rounds, each round measuring every N once (in
    a rotated order): the machine's speed drifts by tens of percent over tens of seconds here,
    and measuring all of N=10 first, then 100, then 1000 let that drift pass for a difference
    between the lengths (the "flat within 20%" figure moved from 1.07 to 1.55 between two runs
    of the same code, each length flat within itself).
    """
    out: dict[str, Any] = {}
    lengths: list[int] = []
    if "countdown" in want:
        lengths.append(sizes.countdown)
    if "growth" in want:
        lengths += [n for n in sizes.growth if n not in lengths]

    def reps_per_round(n: int) -> int:
        if n == sizes.countdown:
            return sizes.countdown_reps
        return sizes.base_reps if n <= 10 else sizes.countdown_reps if n <= 100 else 1

    rounds = sizes.ours_reps_factor if target.kind == "ours" else 1
    acc = {n: _Pairs(n) for n in lengths}
    async with client(base) as c:
        # Warm up on runs of some length: a server's first supersteps after start are slower
        # (caches, the database's first pages), and would weigh on whichever N is measured first.
        await warm(c, target, "3")
        await warm(c, target, "30")
        cut = False
        for k in range(rounds):
            for n in lengths[k % len(lengths) :] + lengths[: k % len(lengths)]:
                if cut:
                    break
                await superstep_pairs(c, target, acc[n], reps_per_round(n), sizes.growth_deadline_s)
                # A cut-off stream is still running on the server: measure no more here.
                cut = acc[n].partial is not None
    if "countdown" in want:
        out["countdown"] = acc[sizes.countdown].result()
    if "growth" in want:
        out["growth"] = {n: acc[n].result() for n in sizes.growth if acc[n].pairs or acc[n].partial}
    return out


async def scenario_concurrent(base: str, target: Target, sizes: Sizes) -> dict[str, Any]:
    """(c) N concurrent streaming responses of a short workflow: responses/s, p50, p99, errors.

    Uses bench/rawclient.py (not httpx): at 100 streams httpx used a whole core and capped
    every host at the same figure. The client's CPU time is recorded with the result.
    """
    n = sizes.concurrent
    async with client(base) as c:
        await warm(c, target, sizes.concurrent_input)
    conns = [RawConnection(base) for _ in range(n)]
    try:
        request_bytes = conns[0].request_bytes(request(sizes.concurrent_input, target))
        # Open the connections first and use each once (a warm client), then fire all N at once.
        await asyncio.gather(*(conn.open() for conn in conns))
        warmups = await asyncio.gather(*(conn.stream(request_bytes) for conn in conns))
        if not all(r.ok for r in warmups):
            raise RuntimeError(f"warm-up failed: {[r.error or r.terminal for r in warmups if not r.ok][:3]}")
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        runs = await asyncio.gather(*(conn.stream(request_bytes) for conn in conns))
        wall = time.perf_counter() - t0
        client_cpu = time.process_time() - cpu0
    finally:
        for conn in conns:
            conn.close()
    good = sorted(r.total_ms for r in runs if r.ok)
    bad = [r for r in runs if not r.ok]
    return {
        "responses_per_s": len(good) / wall,
        "p50_ms": nearest_rank(good, 0.50),
        "p99_ms": nearest_rank(good, 0.99),
        "first_event_p50_ms": median([r.first_event_ms for r in runs if r.ok]),
        "wall_s": wall,
        "client_cpu_s": client_cpu,
        "errors": len(bad),
        "error_detail": sorted({(r.error or r.terminal)[:160] for r in bad})[:3],
    }


# Polling is load on the server being measured: a few connections, a pause between rounds.
POLL_CONCURRENCY = int(os.environ.get("BENCH_POLL_CONCURRENCY", "4"))
POLL_PAUSE_S = float(os.environ.get("BENCH_POLL_PAUSE", "0.25"))
_TICK = re.compile(r"tick (\d+) t=([0-9.]+)")


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


def scenario_recovery(srv: Any, target: Target, sizes: Sizes) -> dict[str, Any]:
    """(e) N in-flight background responses, kill -9, restart: ready, all resumed, all complete."""
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

    expected = list(range(int(_TICK_COUNT.match(sizes.recovery_input).group(1)), 0, -1))  # type: ignore[union-attr]
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
        "created": len(ids),
        "create_errors": len(create_errors),
        "create_error_detail": create_errors[:3],
        "create_s": created_s,
        "in_flight": in_flight,
        "finished_before_kill": finished_before_kill,
        "ready_s": ready_s,
        "all_resumed_s": max(resumed) if resumed and not lost else math.nan,
        "resumed": len(resumed),
        "last_resumed_s": max(resumed) if resumed else math.nan,
        "completed": len(complete_times),
        "last_complete_s": max(complete_times) if complete_times else math.nan,
        "timeout_s": sizes.recovery_timeout_s,
        "p50_resumed_s": median(resumed),
        "all_complete_s": max(complete_times) if complete_times and not lost else math.nan,
        "lost": lost,
        "wrong_output": wrong,
        "statuses": statuses,
    }


_TICK_COUNT = re.compile(r"\s*(\d+)")


# --------------------------------------------------------------------------------------------
# Running one target
# --------------------------------------------------------------------------------------------


def quiesce() -> None:
    """Start every session on a quiet machine: the previous host's dirty pages written out
    (the resilient existing host writes many files; its write-back slowed the fsyncs of whatever
    ran next) and a moment for its processes to be gone."""
    os.sync()
    time.sleep(1.0)


def ours_env(lease_s: float) -> dict[str, str]:
    return {
        "DURABLE_RESPONSES_LEASE_SECONDS": str(lease_s),
        "DURABLE_RESPONSES_RECOVERY_INTERVAL": "2",  # the server's default
        "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS": "3",
    }


def run_paired_burst(
    targets: list[Target], sizes: Sizes, work: Path, existing_py: Path | None, lease_s: float
) -> dict[str, Any]:
    """The burst scenario with the plain existing host and ours serving at once (see
    `scenario_burst_paired`); the other scenarios still run one host at a time."""
    dbs: list[Database] = []
    try:
        with contextlib.ExitStack() as stack:
            bases: dict[str, str] = {}
            for t in targets:
                srv: Any
                if t.kind == "existing":
                    assert existing_py is not None
                    srv = ExistingServer(
                        existing_py,
                        "burst",
                        t.resilient,
                        work / t.key / "paired" / "state",
                        work / t.key / "logs",
                    )
                else:
                    db = Database(t.dialect, work / t.key / "paired-db")
                    dbs.append(db)
                    srv = OursServer(
                        db.new("paired"),
                        "bench.apps:burst",
                        t.delivery,
                        work / t.key / "paired",
                        ours_env(lease_s),
                    )
                stack.enter_context(serving(srv))
                bases[t.key] = srv.base_url
            return asyncio.run(scenario_burst_paired(bases, targets, sizes))
    finally:
        for db in dbs:
            db.drop_all()


def run_target(
    target: Target, want: set[str], sizes: Sizes, work: Path, existing_py: Path | None, lease_s: float
) -> dict[str, Any]:
    res: dict[str, Any] = {"errors": {}}
    env = ours_env(lease_s)
    db = Database(target.dialect, work / target.key) if target.kind == "ours" else None

    def server(app: str, session: str) -> Any:
        if target.kind == "existing":
            assert existing_py is not None
            return ExistingServer(
                existing_py,
                app,
                target.resilient,
                work / target.key / session / "state",
                work / target.key / "logs",
            )
        assert db is not None
        url = db.new(session)
        return OursServer(url, f"bench.apps:{app}", target.delivery, work / target.key / session, env)

    def guarded(name: str, fn: Callable[[], None]) -> None:
        quiesce()
        t = time.perf_counter()
        try:
            fn()
        except Exception as exc:
            log(f"{target.key} {name}: FAILED {type(exc).__name__}: {str(exc)[:2000]}")
            res["errors"][name] = f"{type(exc).__name__}: {str(exc)[:300]}"
        log(f"{target.key} {name}: {time.perf_counter() - t:.1f} s")

    try:
        if want & {"burst", "concurrent"}:

            def burst_session() -> None:
                with serving(server("burst", "burst")) as srv:
                    if "burst" in want:
                        res["burst"] = asyncio.run(scenario_burst(srv.base_url, target, sizes))
                    if "concurrent" in want:
                        res["concurrent"] = asyncio.run(scenario_concurrent(srv.base_url, target, sizes))

            guarded("burst+concurrent", burst_session)
        if want & {"countdown", "growth"}:

            def steps_session() -> None:
                with serving(server("steps", "steps")) as srv:
                    res.update(asyncio.run(scenario_steps(srv.base_url, target, sizes, want)))

            guarded("countdown+growth", steps_session)
        if "recovery" in want:
            if target.kind == "existing" and not target.resilient:
                res["recovery"] = {
                    "skipped": "not durable: in-flight responses stay in_progress after kill -9"
                }
            else:

                def recovery_session() -> None:
                    with serving(server("ticks", "recovery")) as srv:
                        res["recovery"] = scenario_recovery(srv, target, sizes)

                guarded("recovery", recovery_session)
    finally:
        if db is not None:
            db.drop_all()
    return res


# --------------------------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------------------------


@dataclass
class Row:
    label: str
    better: str  # "high" | "low" | "" (no ratio)
    get: Callable[[dict[str, Any]], Any]
    fmt: str = "{:.1f}"


def _dig(*path: Any) -> Callable[[dict[str, Any]], Any]:
    def get(r: dict[str, Any]) -> Any:
        cur: Any = r
        for p in path:
            if not isinstance(cur, dict) or p not in cur:
                return None
            cur = cur[p]
        return cur

    return get


def _growth_ms(n: int) -> Callable[[dict[str, Any]], Any]:
    def get(r: dict[str, Any]) -> Any:
        g = (r.get("growth") or {}).get(n) or (r.get("growth") or {}).get(str(n))
        return g and g["ms"]

    return get


def _flatness(r: dict[str, Any]) -> Any:
    """slowest / fastest; with a cut-off length in it, over what ran (see `_cell`: "≥")."""
    g = r.get("growth") or {}
    vals = [v["ms"] for v in g.values() if v and _num(v["ms"]) is not None and v["ms"] > 0]
    if len(vals) < 2 or len(vals) != len(g):
        return None
    return max(vals) / min(vals)


def _cut_off_slowest(res: dict[str, Any]) -> bool:
    """Whether the slowest length was cut off: its figure, and so the flatness, is a lower bound
    (a cut-off run's cost grew with its length; it was cut for taking long)."""
    g = [v for v in (res.get("growth") or {}).values() if v and _num(v["ms"]) is not None]
    return bool(g) and bool(max(g, key=lambda v: v["ms"]).get("partial"))


def rows(sizes: Sizes) -> list[Row]:
    n, c, r = sizes.burst_outputs, sizes.concurrent, sizes.recovery
    g = sizes.growth
    out = [
        Row(f"{n} outputs in 1 superstep: first event, ms", "low", _dig("burst", "first_event_ms")),
        Row(f"{n} outputs: first output, ms", "low", _dig("burst", "first_output_ms")),
        Row(f"{n} outputs: total, ms", "low", _dig("burst", "total_ms"), "{:.0f}"),
        Row(f"{n} outputs: events/s", "high", _dig("burst", "events_per_s"), "{:,.0f}"),
        Row(f"{n} outputs: SSE events per output", "", _dig("burst", "events_per_output"), "{:.2f}"),
        Row(
            f"countdown of {sizes.countdown} supersteps: ms per superstep",
            "low",
            _dig("countdown", "ms"),
            "{:.2f}",
        ),
        Row(f"{c} concurrent streams: responses/s", "high", _dig("concurrent", "responses_per_s")),
        Row(f"{c} concurrent streams: p50 latency, ms", "low", _dig("concurrent", "p50_ms"), "{:.0f}"),
        Row(f"{c} concurrent streams: p99 latency, ms", "low", _dig("concurrent", "p99_ms"), "{:.0f}"),
        Row(f"{c} concurrent streams: errors", "", _dig("concurrent", "errors"), "{}"),
    ]
    out += [Row(f"cost growth: ms per superstep at {k}", "low", _growth_ms(k), "{:.2f}") for k in g]
    out += [
        Row(f"cost growth: slowest / fastest of {', '.join(map(str, g))}", "low", _flatness, "{:.2f}"),
        Row(f"recovery, {r} background: in flight at kill -9", "", _dig("recovery", "in_flight"), "{}"),
        Row("recovery: restart until ready, s", "low", _dig("recovery", "ready_s"), "{:.2f}"),
        Row("recovery: restart until all resumed, s", "low", _dig("recovery", "all_resumed_s"), "{:.2f}"),
        Row("recovery: restart until all complete, s", "low", _dig("recovery", "all_complete_s"), "{:.2f}"),
        Row(
            f"recovery: not completed within {sizes.recovery_timeout_s:.0f} s (lost or stuck)",
            "",
            _dig("recovery", "lost"),
            "{}",
        ),
        Row("recovery: completed with wrong output", "", _dig("recovery", "wrong_output"), "{}"),
    ]
    return out


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        return None
    return float(v)


def ratio(row: Row, ours: Any, theirs: Any) -> float | None:
    a, b = _num(ours), _num(theirs)
    if not row.better or a is None or b is None or a <= 0 or b <= 0:
        return None
    return a / b if row.better == "high" else b / a


def cell(
    row: Row, res: dict[str, Any], target: Target, plain: dict[str, Any] | None, resil: dict[str, Any] | None
) -> str:
    v = row.get(res)
    rec = res.get("recovery") or {}
    if row.label.startswith("recovery") and "skipped" in rec:
        return "n/a"
    if v is None or (isinstance(v, float) and math.isnan(v)):
        if row.label.startswith("recovery") and row.better and rec:
            # Some response did not complete in time: there is no time for "all"; say how far it got.
            which = "resumed" if "resumed" in row.label else "complete"
            count, last = rec.get(which + "d" if which == "complete" else which), rec.get(f"last_{which}_s")
            done = f"; {count} by {last:.1f}" if count and _num(last) is not None else ""
            return f"> {rec.get('timeout_s', 0):.0f} ({count or 0} of {rec.get('created')}{done})"
        return DASH
    text = row.fmt.format(v) if _num(v) is not None else str(v)
    if row.label.startswith("cost growth") and _num(v) is not None:
        partial = _partial_note(row, res)
        if partial:
            text = f"{text}*"
        elif row.label.startswith("cost growth: slowest") and _cut_off_slowest(res):
            text = f"≥ {text}"
    if target.kind == "ours" and row.better:
        rp = ratio(row, v, row.get(plain) if plain else None)
        rr = ratio(row, v, row.get(resil) if resil else None)
        text += f" ({_fmt_ratio(rp)} / {_fmt_ratio(rr)})"
    return text


def _partial_note(row: Row, res: dict[str, Any]) -> str | None:
    m = re.search(r"at (\d+)$", row.label)
    if not m:
        return None
    g = (res.get("growth") or {}).get(int(m.group(1)))
    return g and g.get("partial")


def _fmt_ratio(x: float | None) -> str:
    if x is None:
        return DASH
    if x < 10:
        return f"{x:.2f}{TIMES}"
    return f"{x:.1f}{TIMES}" if x < 100 else f"{x:,.0f}{TIMES}"


def table(tlist: list[Target], results: dict[str, dict[str, Any]], sizes: Sizes) -> str:
    plain = results.get("existing-plain")
    resil = results.get("existing-resilient")
    head = "| figure | better | " + " | ".join(t.label for t in tlist) + " |"
    lines = [head, "|" + "---|" * (len(tlist) + 2)]
    for row in rows(sizes):
        better = {"high": "higher", "low": "lower", "": ""}[row.better]
        cells = [cell(row, results[t.key], t, plain, resil) for t in tlist]
        if all(c in (DASH, "n/a") for c in cells):
            continue
        lines.append(f"| {row.label} | {better} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def footnotes(tlist: list[Target], results: dict[str, dict[str, Any]]) -> list[str]:
    notes = []
    for t in tlist:
        r = results[t.key]
        load = r.get("other_load") or {}
        if load.get("other_cpu_s", 0) > 0.05 * load.get("wall_s", 1e9):
            top = ", ".join(f"{name} {cpu:.0f} s" for name, cpu in load.get("top", []))
            notes.append(
                f"{t.label}: other processes used {load['other_cpu_s']:.0f} CPU-s during its "
                f"{load['wall_s']:.0f} s ({top}): its figures are noisier."
            )
        for k, g in (r.get("growth") or {}).items():
            if g and g.get("partial"):
                notes.append(
                    f"\\* {t.label}, {k} supersteps: cut off ({g['partial']}); ms/superstep over what ran."
                )
        for name, err in (r.get("errors") or {}).items():
            notes.append(f"{t.label}: {name} failed: {err}")
        for key in ("burst", "concurrent"):
            d = r.get(key) or {}
            if d.get("errors"):
                notes.append(f"{t.label}: {key}: {d['errors']} error(s): {d.get('error_detail')}")
        rec = r.get("recovery") or {}
        if rec.get("create_errors"):
            notes.append(
                f"{t.label}: recovery: {rec['create_errors']} POST error(s): {rec['create_error_detail']}"
            )
        if rec.get("lost") or rec.get("wrong_output"):
            notes.append(f"{t.label}: recovery: statuses at the end {rec.get('statuses')}")
        if rec.get("lost") and t.kind == "existing":
            notes.append(
                f"{t.label}: recovery: its task manager's start-up scan reclaims one page (20) of in-progress "
                "tasks; the rest wait for its periodic scan, every 300 s (azure.ai.agentserver.core.tasks: "
                "_manager.py `_recover_stale_tasks`, _local_provider.py `list`, page size 20)."
            )
        if rec and rec.get("finished_before_kill"):
            notes.append(
                f"{t.label}: recovery: {rec['finished_before_kill']} response(s) had finished before the kill"
            )
    return notes


def check_targets(tlist: list[Target], results: dict[str, dict[str, Any]], sizes: Sizes) -> list[str]:
    """The 'Done when' of issue 5, one line per check and configuration."""
    plain = results.get("existing-plain") or {}
    resil = results.get("existing-resilient") or {}
    out = []

    def mark(ok: bool | None) -> str:
        return "n/a " if ok is None else ("PASS" if ok else "MISS")

    allrows = rows(sizes)
    by = {r.label: r for r in allrows}
    eps = by[f"{sizes.burst_outputs} outputs: events/s"]
    cd = by[f"countdown of {sizes.countdown} supersteps: ms per superstep"]
    fo = by[f"{sizes.burst_outputs} outputs: first output, ms"]
    for t in tlist:
        if t.kind != "ours":
            continue
        r = results[t.key]
        x = ratio(eps, eps.get(r), eps.get(resil))
        out.append(
            f"{mark(None if x is None else x >= 10)} {t.label}: events/s >= 10x resilient ({_fmt_ratio(x)})"
        )
        x = ratio(cd, cd.get(r), cd.get(resil))
        out.append(
            f"{mark(None if x is None else x >= 20)} {t.label}: ms/superstep ≤ resilient / 20 ({_fmt_ratio(x)})"
        )
        if t.delivery == "live":
            v = _num(fo.get(r))
            out.append(
                f"{mark(None if v is None else v <= 20)} {t.label}: first output ≤ 20 ms ({_fmt(v)} ms)"
            )
        f = _num(_flatness(r))
        out.append(
            f"{mark(None if f is None else f <= 1.2)} {t.label}: ms/superstep flat within 20% over "
            f"{', '.join(map(str, sizes.growth))} (slowest/fastest {_fmt(f, '{:.2f}')})"
        )
        worse = []
        for row in allrows:
            x = ratio(row, row.get(r), row.get(plain))
            if x is not None and x < 1:
                worse.append(f"{row.label} ({_fmt_ratio(x)})")
        compared = any(ratio(row, row.get(r), row.get(plain)) is not None for row in allrows)
        out.append(
            f"{mark(None if not compared else not worse)} {t.label}: at least as fast as the plain existing host on "
            f"every figure" + (f"; slower on: {'; '.join(worse)}" if worse else "")
        )
        if t.delivery == "durable" and any("first output" in w for w in worse):
            out.append(
                f"BY DESIGN {t.label}: durable delivery shows a superstep's events only once its "
                "checkpoint commits (DESIGN.md), so the first of 1000 outputs made in ONE superstep "
                "is visible when that superstep ends; live delivery is the mode for token streaming"
            )
    return out


def _fmt(v: float | None, f: str = "{:.1f}") -> str:
    return DASH if v is None else f.format(v)


def git_state() -> str:
    """The commit of the code measured, and whether server/ had uncommitted changes."""
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "server"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return git.strip() + (" + uncommitted changes in server/" if dirty else "")


def machine(existing_py: Path | None) -> dict[str, str]:
    mem = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = git_state()
    pg = ""
    try:
        pg = subprocess.run(["postgres", "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    import sqlite3

    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "load average at the end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "nproc": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "os": platform.platform(),
        "python (ours)": platform.python_version(),
        "existing host": existing_versions(existing_py) if existing_py else "",
        "sqlite": sqlite3.sqlite_version,
        "postgresql": pg,
        "commit": commit,
    }


def write_readme(report: str) -> None:
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    text = README.read_text() if README.exists() else f"# Benchmarks\n\n{start}\n{end}\n"
    if start not in text:
        text += f"\n{start}\n{end}\n"
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    README.write_text(f"{before}{start}\n{report}\n{end}{after}")


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------


def render(
    tlist: list[Target],
    results: dict[str, dict[str, Any]],
    sizes: Sizes,
    cmd: str,
    elapsed: float,
    info: dict[str, str],
    ours_foreground: bool,
) -> str:
    out = [
        table(tlist, results, sizes),
        "",
        f"Cells of ours: value (a{TIMES} / b{TIMES}) = ours against the existing host plain / resilient; "
        f"above 1{TIMES} ours is better "
        "(ours/theirs where higher is better, theirs/ours where lower is better).",
    ]
    notes = footnotes(tlist, results)
    if notes:
        out += ["", *[f"- {n}" for n in notes]]
    out += ["", "Targets (issue 5):", "", *[f"- {line}" for line in check_targets(tlist, results, sizes)]]
    mode = "foreground" if ours_foreground else "background=true"
    out += [
        "",
        f"Command: `{cmd}` ({elapsed / 60:.1f} min), ours with {mode} streams.",
        "",
        "Machine: " + "; ".join(f"{k}: {v}" for k, v in info.items() if v) + ".",
    ]
    return "\n".join(out)


def render_saved(path: Path, update_readme: bool) -> None:
    """Print (and with update_readme, put in bench/README.md) the report of a saved run."""
    raw = json.loads(path.read_text())
    sizes = Sizes(**{**raw["sizes"], "growth": tuple(raw["sizes"]["growth"])})
    results = raw["results"]
    for r in results.values():
        if isinstance(r.get("growth"), dict):
            r["growth"] = {int(k): v for k, v in r["growth"].items()}
    tlist = [t for t in targets(raw.get("ours_foreground", False)) if t.key in results]
    report = render(
        tlist,
        results,
        sizes,
        raw["command"],
        raw["elapsed_s"],
        raw["machine"],
        raw.get("ours_foreground", False),
    )
    print(report)
    if update_readme:
        write_readme(report)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="smaller sizes and fewer repetitions (a partial run)"
    )
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated scenarios (" + ", ".join(SCENARIOS) + ") and/or columns (existing-plain, "
        "existing-resilient, sqlite-live, sqlite-durable, postgresql-live, postgresql-durable, or existing, ours, "
        "sqlite, postgresql, live, durable)",
    )
    ap.add_argument(
        "--ours-foreground",
        action="store_true",
        help="send ours plain foreground streams (default: background=true, like the resilient existing host)",
    )
    ap.add_argument("--lease-seconds", type=float, default=15.0, help="our lease (server default 15 s)")
    ap.add_argument("--no-readme", action="store_true", help="do not update bench/README.md")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (server logs, databases)")
    ap.add_argument("--recovery-timeout", type=float, help="seconds to wait for recovered responses (60)")
    ap.add_argument("--render", type=Path, help="only print the report of a saved run (bench/results/*.json)")
    ap.add_argument(
        "--render-readme", action="store_true", help="with --render: also put it in bench/README.md"
    )
    args = ap.parse_args(argv)
    if args.render:
        render_saved(args.render, args.render_readme)
        return

    t_start = time.time()
    load_at_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    commit_at_start = git_state()
    sizes = Sizes.quick() if args.quick else Sizes()
    if args.recovery_timeout:
        sizes.recovery_timeout_s = args.recovery_timeout
    tokens = {t.strip() for t in args.only.split(",") if t.strip()}
    tlist = targets(args.ours_foreground)
    known_tags = set().union(*(t.tags for t in tlist))
    unknown = tokens - set(SCENARIOS) - known_tags
    if unknown:
        ap.error(f"unknown --only entries: {', '.join(sorted(unknown))}")
    want = (tokens & set(SCENARIOS)) or set(SCENARIOS)
    tag_tokens = tokens & known_tags
    if tag_tokens:
        tlist = [t for t in tlist if t.tags & tag_tokens]

    pg_problem = _pg_reachable() if any(t.dialect == "postgresql" for t in tlist) else None
    if pg_problem:
        log(f"PostgreSQL not reachable at {PG_ADMIN} ({pg_problem}): its columns are skipped")
        tlist = [t for t in tlist if t.dialect != "postgresql"]

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)

    existing_py = ensure_existing_venv() if any(t.kind == "existing" for t in tlist) else None
    results: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            work = Path(tempfile.mkdtemp(prefix="bench-")) if args.keep else Path(tmp)
            if args.keep:
                log(f"work directory (kept): {work}")
            # The resilient existing host runs last (the table keeps its column order): in runs
            # where it ran second, whichever configuration followed it was up to 2x slower for
            # a while (its first-event and per-superstep figures), though no process of it was
            # left and the disk was synced; in isolation the same configuration was not.
            # The 1000-output burst of the plain existing host and of ours is measured with all of
            # them serving at once, requests alternating (first event and first output are a few
            # ms: minutes of drift between sessions were larger than the differences).
            paired = [t for t in tlist if t.kind == "ours" or t.key == "existing-plain"]
            paired_burst: dict[str, Any] = {}
            if "burst" in want and len(paired) > 1:
                log("--- 1000-output burst, " + ", ".join(t.label for t in paired) + ": requests alternating")
                quiesce()
                try:
                    paired_burst = run_paired_burst(paired, sizes, work, existing_py, args.lease_seconds)
                except Exception as exc:
                    log(f"paired burst: FAILED {type(exc).__name__}: {str(exc)[:2000]}; one host at a time")
            for t in sorted(tlist, key=lambda t: t.resilient):
                log(f"--- {t.label}")
                load = OtherLoad()
                own = want - {"burst"} if t.key in paired_burst else want
                results[t.key] = run_target(t, own, sizes, work, existing_py, args.lease_seconds)
                if t.key in paired_burst:
                    results[t.key]["burst"] = paired_burst[t.key]
                results[t.key]["other_load"] = load.done()
    finally:
        kill_leftovers()
    elapsed = time.time() - t_start

    cmd = "python -m bench" + (" " + " ".join(sys.argv[1:]) if argv is None and sys.argv[1:] else "")
    info = machine(existing_py)
    info = {**info, "load average at the start": load_at_start}
    if info["commit"] != commit_at_start:
        info["commit"] = (
            f"{commit_at_start} at the start, {info['commit']} at the end (the code changed during the run)"
        )
    report = render(tlist, results, sizes, cmd, elapsed, info, args.ours_foreground)
    print()
    print(report)

    RESULTS_DIR.mkdir(exist_ok=True)
    raw = {
        "command": cmd,
        "elapsed_s": elapsed,
        "machine": info,
        "ours_foreground": args.ours_foreground,
        "sizes": sizes.__dict__,
        "results": results,
    }
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    (RESULTS_DIR / f"side-by-side-{stamp}.json").write_text(json.dumps(raw, indent=1, default=str))
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1, default=str))
    full = not (
        args.quick or tokens or args.ours_foreground or args.recovery_timeout or args.lease_seconds != 15.0
    )
    if full and not args.no_readme:
        write_readme(report)
        log(f"updated {README.relative_to(ROOT)}")
    log(f"done in {elapsed / 60:.1f} min")
