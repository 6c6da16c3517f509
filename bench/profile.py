"""`python -m bench profile`: where ours spends its CPU in one of the table's live scenarios.

Serves the scenario's app with `python -m durable_responses serve` (live delivery, background
streams, SQLite or PostgreSQL), drives its load for `--rounds` rounds and samples the server with
py-spy (`pip install py-spy`; `py-spy record --pid ... --format raw`: collapsed stacks, idle frames
left out). `--load tokens` (live capacity, the default): `--streams` streams of 100 tokens 20 ms
apart; `concurrent`: `--streams` short responses (`burst` of 3 outputs) at once; `burst`:
`--streams` responses of 1000 outputs in one superstep, one after another; `steps`: `--streams`
countdowns of 1000 supersteps (one output each), one after another. Each sample is charged
to the innermost frame of this repository's `server/` package on its stack (the library work that
module asked for included: a `json.dumps` under `protocol/sse.py` is the SSE encoding's), or, with
no `server/` frame on the stack, to the innermost frame's package (agent-framework's own work, the
event loop, uvicorn's HTTP parsing). Frames that only hand control over (the entry, a run's task,
`Driver.drive`'s pull of the framework's stream, the restorable agent's pass-through) are skipped,
so the framework's own work under them counts as the framework's. Prints the table of shares and
the top functions by own time.

Every thread that is not idle is sampled, the SQLite writer's time in SQLite's C code (which
gives the GIL up) included. `--gil` samples only the thread holding the GIL, which the event loop
and the writer thread share (at 100 concurrent responses on SQLite, the writer thread held it in
~1% of such samples: the loop's own work is what limits the rate there).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.config import ROOT, log
from bench.hosts import postgres
from bench.hosts.ours import ours_env, ours_server
from bench.hosts.process import serving
from bench.httpclient import HttpDriver
from durable_responses.store.settings import LEASE_SECONDS

_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:]+):\d+\)$")


def _bucket(file: str) -> str:
    """py-spy names a frame's file by its path under sys.path (`server/store/write/outbox.py`,
    `agent_framework/_types.py`, `asyncio/tasks.py`): ours by module, the rest by package."""
    root = str(ROOT) + "/"
    file = file[len(root) :] if file.startswith(root) else file
    if file.startswith("server/"):
        return file
    head = file.split("/", 1)[0]
    return head if "/" in file else "other: " + file


# Frames of ours that only hand control to the framework or the event loop (the process's entry,
# a run's task, the stream the driver pulls, the restorable agent's pass-through): what runs
# under them is charged to whoever does the work, not to them.
_PASS_THROUGH = {
    ("server/cli.py", None),
    ("server/__main__.py", None),
    ("server/runtime/run/run.py", None),
    ("server/runtime/_af_private/restore.py", "_RestoreForwardingMixin._run_core"),
    ("server/runtime/run/drive.py", "Driver.drive"),
    # ASGI middleware: the response's bytes go to uvicorn's transport through them.
    ("server/http/telemetry.py", "HttpTelemetry.__call__"),
    ("server/http/platform.py", "PlatformHeaders.__call__"),
}


def _transparent(frame: re.Match[str]) -> bool:
    """A frame of `_PASS_THROUGH` (its function, or one defined inside it: `.<locals>.`)."""
    file, func = _bucket(frame["file"]), frame["func"]
    return any(
        f == file and (fn is None or func == fn or func.startswith(fn + ".<locals>."))
        for f, fn in _PASS_THROUGH
    )


def summarize(raw: Path) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    """(samples, [(bucket, samples)], [(leaf function, own samples)]) of a py-spy raw file."""
    buckets: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        frames = [m for m in (_FRAME.match(f) for f in stack.split(";")) if m]
        if not frames:
            continue
        total += n
        leaf = frames[-1]
        leaves[f"{leaf['func']} ({_bucket(leaf['file'])})"] += n
        ours = [f for f in frames if _bucket(f["file"]).startswith("server/") and not _transparent(f)]
        if ours:
            where = _bucket(ours[-1]["file"])
        else:
            # A standard-library leaf (copy.deepcopy) is charged to the package that called it.
            named = [b for b in (_bucket(f["file"]) for f in frames) if not b.startswith("other: ")]
            where = named[-1] if named else _bucket(leaf["file"])
        buckets[where] += n
    return total, buckets.most_common(), leaves.most_common(25)


# Each load: (app, what one response is asked, what warms a connection).
LOADS = {
    "tokens": ("bench.apps:tokens", "100 interval=20", "3 interval=1"),
    "concurrent": ("bench.apps:burst", "3", "3"),
    "burst": ("bench.apps:burst", "1000", "10"),
    "steps": ("bench.apps:steps", "1000", "10"),
}


async def _drive(base: str, load: str, streams: int, rounds: int) -> int:
    """Drive `rounds` rounds of `load`; the output deltas received."""
    _, text, warm_text = LOADS[load]
    deltas = 0
    for _ in range(rounds):
        d = HttpDriver(base, {"background": True})
        if load in ("burst", "steps"):
            try:
                for _ in range(streams):
                    deltas += (await d.stream(text)).deltas
            finally:
                await d.aclose()
            continue
        many = await d.many(streams, text, warm_text=warm_text)
        deltas += sum(r.deltas for r in many.runs)
    return deltas


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench profile", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--dialect", choices=["sqlite", "postgresql"], default="sqlite")
    ap.add_argument("--load", choices=sorted(LOADS), default="tokens")
    ap.add_argument(
        "--streams", type=int, default=50, help="streams at once (burst, steps: one after another)"
    )
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    ap.add_argument(
        "--gil",
        action="store_true",
        help="sample only the thread that holds the GIL (the time the loop and the writer contend for)",
    )
    ap.add_argument("--out", type=Path, help="keep the raw collapsed stacks here")
    ap.add_argument("--summarize", type=Path, help="only print the tables of saved raw stacks")
    args = ap.parse_args(argv)
    if args.summarize:
        _print(*summarize(args.summarize))
        return
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        work = Path(tmp)
        url = f"sqlite:///{work / 'p.db'}" if args.dialect == "sqlite" else postgres.new_database()
        try:
            srv = ours_server(url, LOADS[args.load][0], "live", work, ours_env(LEASE_SECONDS))
            with serving(srv):
                assert srv.proc is not None
                asyncio.run(_drive(srv.base_url, args.load, args.streams, 1))  # warm
                raw = args.out or work / "stacks.txt"
                rec = subprocess.Popen(
                    [
                        *(spy, "record", "--pid", str(srv.proc.pid), "--rate", str(args.rate)),
                        *("--format", "raw", "--output", str(raw), "--nonblocking"),
                        *(("--gil",) if args.gil else ()),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                time.sleep(1.0)  # py-spy attached
                t0 = time.perf_counter()
                deltas = asyncio.run(_drive(srv.base_url, args.load, args.streams, args.rounds))
                wall = time.perf_counter() - t0
                rec.send_signal(2)  # SIGINT: py-spy writes what it sampled
                _, err = rec.communicate(timeout=60)
                if not raw.exists():
                    raise RuntimeError(f"py-spy wrote nothing: {err.decode(errors='replace')[-2000:]}")
        finally:
            if args.dialect == "postgresql":
                postgres.drop_database(url)
        total, buckets, leaves = summarize(raw)
    log(f"{deltas} output deltas in {wall:.1f} s, {total} samples at {args.rate}/s")
    _print(total, buckets, leaves)


_GROUPS = (
    ("ours (`server/`)", ("server/",)),
    ("agent-framework", ("agent_framework",)),
    ("the event loop and threads (asyncio, concurrent, contextvars)", ("asyncio", "concurrent", "context")),
    ("HTTP (uvicorn, starlette, anyio)", ("uvicorn", "starlette", "anyio")),
    ("the app (bench/apps.py)", ("bench",)),
)


def groups(buckets: list[tuple[str, int]]) -> list[tuple[str, int]]:
    out = {name: 0 for name, _ in _GROUPS}
    out["other"] = 0
    for where, n in buckets:
        name = next((g for g, prefixes in _GROUPS if where.startswith(prefixes)), "other")
        out[name] += n
    return list(out.items())


def _print(total: int, buckets: list[tuple[str, int]], leaves: list[tuple[str, int]]) -> None:
    print("| whose work | share of samples |")
    print("|---|---|")
    for name, n in groups(buckets):
        print(f"| {name} | {100 * n / total:.1f}% |")
    print()
    print("| where (innermost `server/` module on the stack, else the package) | share of samples |")
    print("|---|---|")
    for name, n in buckets[:20]:
        print(f"| {name} | {100 * n / total:.1f}% |")
    print()
    print("| function (own time) | share |")
    print("|---|---|")
    for name, n in leaves:
        print(f"| `{name}` | {100 * n / total:.1f}% |")


if __name__ == "__main__":
    main()
