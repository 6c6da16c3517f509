"""One run: the interleaved 1000-output burst, then every column alone, scenario by scenario.

Order and why:
- The burst of the plain existing host, the plain-HTTP reference, ours and the framework floor
  runs first, all of them serving at once (bench/scenarios/burst.py `paired`), then the
  countdown of the floor and ours, interleaved the same way (bench/scenarios/steps.py
  `paired`), and the live streams' CPU per token of the floor, the plain-HTTP reference, the
  plain existing host and ours (bench/scenarios/live.py `paired`).
- Then each column alone, in the table's order except that the resilient existing host runs last:
  in runs where it ran second, whichever configuration followed it was up to 2x slower for a while
  (its first-event and per-superstep figures), though no process of it was left and the disk was
  synced; in isolation the same configuration was not.
- Every server session starts on a quiet machine (`quiesce`: `os.sync()` and a 1 s pause): the
  resilient existing host writes many files, and their write-back slowed the fsyncs of whatever ran
  next.
A scenario that fails is logged and noted under the table; the others still run.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import scenarios
from bench.config import Sizes, log
from bench.cpu import OtherLoad
from bench.hosts.base import Host
from bench.scenarios import burst, live, steps


def quiesce() -> None:
    """Start every session on a quiet machine: the previous host's dirty pages written out and a
    moment for its processes to be gone."""
    os.sync()
    time.sleep(1.0)


def run_column(host: Host, want: set[str], sizes: Sizes) -> dict[str, Any]:
    """Every wanted scenario of one column, one server session per group of scenarios."""
    res: dict[str, Any] = {"errors": {}}

    def guarded(name: str, fn: Callable[[], None]) -> None:
        quiesce()
        t = time.perf_counter()
        try:
            fn()
        except Exception as exc:
            log(f"{host.key} {name}: FAILED {type(exc).__name__}: {str(exc)[:2000]}")
            res["errors"][name] = f"{type(exc).__name__}: {str(exc)[:300]}"
        log(f"{host.key} {name}: {time.perf_counter() - t:.1f} s")

    for app, label, wanted in scenarios.sessions(want):
        skipped = {n: why for s in wanted for n in s.names if (why := host.skip(n))}
        for name, why in skipped.items():
            # The report reads a skipped recovery as n/a; the other figures are simply absent.
            if name == "recovery":
                res[name] = {"skipped": why}
            else:
                res.setdefault("skipped", {})[name] = why
        group = [s for s in wanted if not set(s.names) & set(skipped)]
        if not group:
            continue

        def session(app: str = app, label: str = label, group: list[scenarios.Scenario] = group) -> None:
            with host.session(app, label) as s:
                for scenario in group:
                    res.update(scenario.run(s, host, sizes, want))

        guarded(label, session)
    return res


def _interleaved(
    measure: Callable[[list[Host], Sizes], dict[str, Any]],
    hosts: list[Host],
    sizes: Sizes,
    what: str,
    how: str,
    fallback: str = "",
) -> dict[str, Any]:
    """One scenario with every column in `hosts` serving at once (its module's `paired`); on a
    failure, logged, the columns' own runs are what the table gets."""
    log(f"--- {what}, " + ", ".join(h.label for h in hosts) + f": {how}")
    quiesce()
    try:
        return measure(hosts, sizes)
    except Exception as exc:
        log(f"interleaved {what}: FAILED {type(exc).__name__}: {str(exc)[:2000]}{fallback}")
        return {}


def run_all(hosts: list[Host], want: set[str], sizes: Sizes, work: Path) -> dict[str, dict[str, Any]]:
    for h in hosts:
        h.prepare(work)
    # A column restricted to other scenarios (`Host.only`: the `--workers 2` one) stays out.
    paired = [
        h
        for h in hosts
        if (h.kind in ("ours", "floor", "reference") or h.key == "existing-plain") and h.skip("burst") is None
    ]
    paired_burst: dict[str, Any] = {}
    if "burst" in want and len(paired) > 1:
        paired_burst = _interleaved(
            burst.paired, paired, sizes, "1000-output burst", "requests alternating", "; one host at a time"
        )
    # The floor's countdown against ours, interleaved (the per-column countdowns still run).
    with_floor = [h for h in hosts if h.kind in ("ours", "floor") and h.skip("countdown") is None]
    paired_steps: dict[str, Any] = {}
    if "countdown" in want and {h.kind for h in with_floor} == {"ours", "floor"}:
        paired_steps = _interleaved(steps.paired, with_floor, sizes, "countdown", "pairs alternating")
    # CPU per token at live_cpu_n streams: the floor, the plain-HTTP reference, the plain existing
    # host and ours, interleaved. (Not the `--workers 2` column: a check of its own, against one
    # process's N. Not the resilient existing host: its steps take several times as long.)
    with_live = [
        h
        for h in hosts
        if (h.kind in ("ours", "floor", "reference") or h.key == "existing-plain")
        and h.skip("capacity") is None
        and not (h.kind == "ours" and h.only is not None)
    ]
    paired_live: dict[str, Any] = {}
    if "capacity" in want and {"ours", "floor"} <= {h.kind for h in with_live}:
        paired_live = _interleaved(
            live.paired, with_live, sizes, "live capacity at one load", "steps alternating"
        )
    results: dict[str, dict[str, Any]] = {}
    for h in sorted(hosts, key=lambda h: h.resilient):
        log(f"--- {h.label}")
        load = OtherLoad()
        own = want - {"burst"} if h.key in paired_burst else want
        results[h.key] = run_column(h, own, sizes)
        if h.key in paired_burst:
            results[h.key]["burst"] = paired_burst[h.key]
        results[h.key].update(paired_steps.get(h.key, {}))
        results[h.key].update(paired_live.get(h.key, {}))
        results[h.key]["other_load"] = load.done()
    return results
