"""`python -m bench`: the side-by-side benchmark of the framework floor, the existing host
(agent-framework-foundry-hosting) and this server, in one run on this machine.

1. runs the benchmark's workflows (bench/apps.py) in-process with agent-framework alone (the
   floor), serves them with the existing host, installed into bench/.venv-existing, plain and
   resilient, and with `python -m durable_responses serve` on SQLite and PostgreSQL, `live` and `durable`;
2. measures each with the same scenario code and the same client (bench/scenarios/);
3. prints the table with every figure and the ratios, the multiples of the floor and the targets,
   writes the raw results to bench/results/, and (full runs only) rewrites bench/README.md's table.

Usage: python -m bench [--quick] [--only burst,countdown,...,floor,existing-resilient,sqlite-live,...]
       python -m bench quick        (the first, ours-only benchmark: bench/quick.py)
       python -m bench ops          (tracing off/on, bytes per response, retention: bench/ops.py)
       python -m bench profile      (py-spy of ours in a live scenario: bench/profile.py)
       python -m bench timeline     (a burst's stream as its client sees it: bench/timeline.py)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import report, scenarios
from bench.config import README, RESULTS_DIR, ROOT, Sizes, log
from bench.hosts import columns, postgres
from bench.hosts.process import kill_leftovers
from bench.machine import git_state, machine
from bench.run import run_all
from durable_responses.store.settings import LEASE_SECONDS


def parse(argv: list[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    ap = argparse.ArgumentParser(prog="python -m bench", description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--quick", action="store_true", help="smaller sizes and fewer repetitions (a partial run)"
    )
    ap.add_argument(
        "--only",
        default="",
        help="comma-separated scenarios (" + ", ".join(scenarios.NAMES) + ") and/or columns (floor-agent, "
        "floor-workflow, plain-http, existing-plain, existing-resilient, sqlite-live, sqlite-durable, "
        "postgresql-live, postgresql-durable, postgresql-live-w2, or floor, reference, existing, ours, sqlite, "
        "postgresql, live, durable)",
    )
    ap.add_argument(
        "--ours-foreground",
        action="store_true",
        help="send ours plain foreground streams (default: background=true, like the resilient existing host)",
    )
    ap.add_argument(
        "--lease-seconds",
        type=float,
        default=LEASE_SECONDS,
        help=f"our lease (the server's default, {LEASE_SECONDS:g} s)",
    )
    ap.add_argument("--no-readme", action="store_true", help="do not update bench/README.md")
    ap.add_argument("--json", type=Path, help="also write the raw results here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (server logs, databases)")
    ap.add_argument("--recovery-timeout", type=float, help="seconds to wait for recovered responses (45)")
    ap.add_argument("--render", type=Path, help="only print the report of a saved run (bench/results/*.json)")
    ap.add_argument(
        "--render-readme", action="store_true", help="with --render: also put it in bench/README.md"
    )
    return ap, ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    ap, args = parse(argv)
    if args.render:
        report.render_saved(args.render, args.render_readme)
        return

    t_start = time.time()
    load_at_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    commit_at_start = git_state()
    sizes = Sizes.quick() if args.quick else Sizes()
    if args.recovery_timeout:
        sizes.recovery_timeout_s = args.recovery_timeout
    tokens = {t.strip() for t in args.only.split(",") if t.strip()}
    hosts = columns(args.ours_foreground, args.lease_seconds)
    known_tags = set().union(*(h.tags for h in hosts))
    unknown = tokens - set(scenarios.NAMES) - known_tags
    if unknown:
        ap.error(f"unknown --only entries: {', '.join(sorted(unknown))}")
    want = (tokens & set(scenarios.NAMES)) or set(scenarios.NAMES)
    tag_tokens = tokens & known_tags
    if tag_tokens:
        hosts = [h for h in hosts if h.tags & tag_tokens]

    pg_problem = postgres.unreachable() if any(h.dialect == "postgresql" for h in hosts) else None
    if pg_problem:
        log(f"PostgreSQL not reachable at {postgres.PG_ADMIN} ({pg_problem}): its columns are skipped")
        hosts = [h for h in hosts if h.dialect != "postgresql"]

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)

    try:
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            work = Path(tempfile.mkdtemp(prefix="bench-")) if args.keep else Path(tmp)
            if args.keep:
                log(f"work directory (kept): {work}")
            results = run_all(hosts, want, sizes, work)
    finally:
        kill_leftovers()
    elapsed = time.time() - t_start

    cmd = "python -m bench" + (" " + " ".join(sys.argv[1:]) if argv is None and sys.argv[1:] else "")
    info = {**machine(hosts), "load average at the start": load_at_start}
    if info["commit"] != commit_at_start:
        info["commit"] = (
            f"{commit_at_start} at the start, {info['commit']} at the end (the code changed during the run)"
        )
    # The raw results first: a report that fails must not lose a run (`--render` reads them back).
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
    text = report.render(hosts, results, sizes, cmd, elapsed, info, args.ours_foreground)
    print()
    print(text)
    full = not (
        args.quick
        or tokens
        or args.ours_foreground
        or args.recovery_timeout
        or args.lease_seconds != LEASE_SECONDS
    )
    if full and not args.no_readme:
        report.write_readme(text)
        log(f"updated {README.relative_to(ROOT)}")
    log(f"done in {elapsed / 60:.1f} min")


if __name__ == "__main__":
    if sys.argv[1:2] == ["ops"]:
        from bench.ops import main as ops_main

        ops_main(sys.argv[2:])
    elif sys.argv[1:2] == ["profile"]:
        from bench.profile import main as profile_main

        profile_main(sys.argv[2:])
    elif sys.argv[1:2] == ["quick"]:
        from bench.quick import main as quick_main

        quick_main(sys.argv[2:])
    elif sys.argv[1:2] == ["timeline"]:
        from bench.timeline import main as timeline_main

        timeline_main(sys.argv[2:])
    else:
        main()
