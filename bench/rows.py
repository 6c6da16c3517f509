"""The figures of the table: one `Row` per figure, what it reads from a column's results, which way
is better, and whether the framework floor has it.

Ratios are oriented so that above 1x means ours is better: ours/theirs where higher is better
(events/s, responses/s), theirs/ours where lower is better (times). Against the framework floor the
report gives the other orientation, a cost multiple (ours costs k times the floor; bench/report.py).
Rows without a direction (events per output, errors, counts) have no ratio.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.config import Sizes


@dataclass
class Row:
    label: str
    better: str  # "high" | "low" | "" (no ratio)
    get: Callable[[dict[str, Any]], Any]
    fmt: str = "{:.1f}"
    # The framework floor has this figure (it has no SSE events, no response.created, no recovery).
    floor: bool = True
    # The issue whose targets the row was made for: "at least as fast as the plain existing host
    # on every figure" (issue 5) reads the rows of issue 5 only.
    since: int = 5


def dig(*path: Any) -> Callable[[dict[str, Any]], Any]:
    def get(r: dict[str, Any]) -> Any:
        cur: Any = r
        for p in path:
            if not isinstance(cur, dict) or p not in cur:
                return None
            cur = cur[p]
        return cur

    return get


def growth_ms(n: int) -> Callable[[dict[str, Any]], Any]:
    def get(r: dict[str, Any]) -> Any:
        g = (r.get("growth") or {}).get(n) or (r.get("growth") or {}).get(str(n))
        return g and g["ms"]

    return get


def capacity_n(r: dict[str, Any]) -> int | None:
    """The most streams of a step that passed (bench/scenarios/live.py); 0 when none did."""
    steps = (r.get("capacity") or {}).get("steps")
    if not steps:
        return None
    return max((int(n) for n, s in steps.items() if s.get("passed")), default=0)


def num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v):
        return None
    return float(v)


def flatness(r: dict[str, Any]) -> Any:
    """slowest / fastest; with a cut-off length in it, over what ran (see `report.cell`: "≥")."""
    g = r.get("growth") or {}
    vals = [v["ms"] for v in g.values() if v and num(v["ms"]) is not None and v["ms"] > 0]
    if len(vals) < 2 or len(vals) != len(g):
        return None
    return max(vals) / min(vals)


def cut_off_slowest(res: dict[str, Any]) -> bool:
    """Whether the slowest length was cut off: its figure, and so the flatness, is a lower bound
    (a cut-off run's cost grew with its length; it was cut for taking long)."""
    g = [v for v in (res.get("growth") or {}).values() if v and num(v["ms"]) is not None]
    return bool(g) and bool(max(g, key=lambda v: v["ms"]).get("partial"))


def rows(sizes: Sizes) -> list[Row]:
    n, c, r = sizes.burst_outputs, sizes.concurrent, sizes.recovery
    g = sizes.growth
    out = [
        Row(
            f"{n} outputs in 1 superstep: first event, ms",
            "low",
            dig("burst", "first_event_ms"),
            floor=False,
        ),
        Row(f"{n} outputs: first output, ms", "low", dig("burst", "first_output_ms")),
        Row(
            f"{n} outputs: ms per output inside the superstep",
            "low",
            dig("burst", "per_output_ms"),
            "{:.3f}",
            since=17,
        ),
        Row(f"{n} outputs: total, ms", "low", dig("burst", "total_ms"), "{:.0f}"),
        Row(f"{n} outputs: events/s", "high", dig("burst", "events_per_s"), "{:,.0f}", floor=False),
        Row(
            f"{n} outputs: SSE events per output",
            "",
            dig("burst", "events_per_output"),
            "{:.2f}",
            floor=False,
        ),
        Row(
            f"{n} outputs: host CPU per 1,000 outputs, ms",
            "low",
            dig("burst", "server_cpu_per_1000_ms"),
            "{:.0f}",
            since=17,
        ),
        Row(
            f"countdown of {sizes.countdown} supersteps: ms per superstep",
            "low",
            dig("countdown", "ms"),
            "{:.2f}",
        ),
        Row(
            f"countdown of {sizes.countdown}, interleaved with the floor: ms per superstep",
            "low",
            dig("countdown_interleaved", "ms"),
            "{:.2f}",
            since=17,
        ),
        Row(f"{c} concurrent streams: responses/s", "high", dig("concurrent", "responses_per_s")),
        Row(f"{c} concurrent streams: p50 latency, ms", "low", dig("concurrent", "p50_ms"), "{:.0f}"),
        Row(f"{c} concurrent streams: p99 latency, ms", "low", dig("concurrent", "p99_ms"), "{:.0f}"),
        Row(f"{c} concurrent streams: errors", "", dig("concurrent", "errors"), "{}"),
    ]
    out += [Row(f"cost growth: ms per superstep at {k}", "low", growth_ms(k), "{:.2f}") for k in g]
    out += [
        Row(f"cost growth: slowest / fastest of {', '.join(map(str, g))}", "low", flatness, "{:.2f}"),
        Row(f"recovery, {r} background: in flight at kill -9", "", dig("recovery", "in_flight"), "{}"),
        Row("recovery: restart until ready, s", "low", dig("recovery", "ready_s"), "{:.2f}"),
        Row("recovery: restart until all resumed, s", "low", dig("recovery", "all_resumed_s"), "{:.2f}"),
        Row("recovery: restart until all complete, s", "low", dig("recovery", "all_complete_s"), "{:.2f}"),
        Row(
            f"recovery: not completed within {sizes.recovery_timeout_s:.0f} s (lost or stuck)",
            "",
            dig("recovery", "lost"),
            "{}",
        ),
        Row("recovery: completed with wrong output", "", dig("recovery", "wrong_output"), "{}"),
    ]
    b, k = sizes.live_bound_ms, sizes.live_cpu_n
    out += [
        Row(
            f"live capacity: most streams with p99 added inter-token delay < {b:.0f} ms",
            "high",
            capacity_n,
            "{}",
            since=17,
        ),
        Row(
            f"live capacity: CPU per 1,000 tokens at {k} streams, ms",
            "low",
            dig("capacity", "cpu_per_1000_tokens_ms"),
            "{:.0f}",
            since=17,
        ),
        Row(
            f"live capacity, interleaved with the floor: CPU per 1,000 tokens at {k} streams, ms",
            "low",
            dig("capacity_interleaved", "cpu_per_1000_tokens_ms"),
            "{:.0f}",
            since=17,
        ),
        Row(
            f"live capacity: p99 added inter-token delay at {k} streams, ms",
            "low",
            dig("capacity", "p99_added_at_cpu_n_ms"),
            "{:.1f}",
            since=17,
        ),
    ]
    top = max(sizes.long_events)
    lens = ", ".join(f"{n:,}" for n in sizes.long_events)

    def length(what: str, key: str) -> Callable[[dict[str, Any]], Any]:
        def get(r: dict[str, Any]) -> Any:
            ls = (r.get("long") or {}).get("lengths") or {}
            v = ls.get(top) or ls.get(str(top)) or {}
            return (v.get(what) or {}).get(key)

        return get

    def length_value(key: str) -> Callable[[dict[str, Any]], Any]:
        def get(r: dict[str, Any]) -> Any:
            ls = (r.get("long") or {}).get("lengths") or {}
            return (ls.get(top) or ls.get(str(top)) or {}).get(key)

        return get

    long_rows = [
        Row(
            f"long response, {top:,} events: create, ms per event",
            "low",
            length_value("create_ms_per_event"),
            "{:.4f}",
        ),
        Row(
            f"long response: create, ms per event, slowest / fastest of {lens}",
            "low",
            dig("long", "create_flatness"),
            "{:.2f}",
        ),
        Row(
            f"long response: full replay of {top:,}: time to first byte, ms", "low", length("full", "ttfb_ms")
        ),
        Row("long response: full replay, ms per event", "low", length_value("replay_ms_per_event"), "{:.4f}"),
        Row(
            f"long response: full replay, slowest / fastest per event of {lens}",
            "low",
            dig("long", "replay_flatness"),
            "{:.2f}",
        ),
        Row(
            "long response: full replay, server CPU per event (with its database backends), us",
            "low",
            length_value("replay_cpu_us_per_event"),
            "{:.2f}",
            since=17,
        ),
        Row(
            f"long response: full replay, server CPU per event, slowest / fastest of {lens}",
            "low",
            dig("long", "replay_cpu_flatness"),
            "{:.2f}",
            since=17,
        ),
        Row(
            "long response: full replay, server memory above before, MB",
            "low",
            length("full", "rss_above_mb"),
        ),
        Row(
            "long response: starting_after the last - 100: time to first byte, ms",
            "low",
            length("tail", "ttfb_ms"),
        ),
        Row(
            "long response: starting_after, slowest / fastest total of the lengths",
            "low",
            dig("long", "tail_flatness"),
            "{:.2f}",
        ),
        Row(
            "long response: starting_after, server memory above before, MB",
            "low",
            length("tail", "rss_above_mb"),
        ),
        Row(
            f"footprint: memory per idle in-flight response ({sizes.footprint_idle:,} at once), KB",
            "low",
            dig("footprint", "idle", "kb_per_response"),
            "{:.0f}",
        ),
        Row(
            f"footprint: memory per response paused awaiting input ({sizes.footprint_paused:,}), KB",
            "low",
            dig("footprint", "paused", "kb_per_response"),
            "{:.0f}",
        ),
        Row(
            "footprint: database bytes per paused response, KB",
            "low",
            lambda r: _kb(dig("footprint", "paused", "db_bytes_per_response")(r)),
            "{:.1f}",
        ),
        Row(
            f"footprint: database bytes per {n}-output response, MB",
            "low",
            lambda r: _mb(dig("footprint", "burst", "bytes_per_response")(r)),
            "{:.2f}",
        ),
        Row(
            f"footprint: database bytes per countdown of {sizes.countdown}, MB",
            "low",
            lambda r: _mb(dig("footprint", "countdown", "bytes_per_response")(r)),
            "{:.2f}",
        ),
        Row(
            "footprint: checkpoint bytes per superstep (countdown, mean)",
            "low",
            dig("footprint", "countdown", "checkpoint_bytes_mean"),
            "{:,.0f}",
        ),
        Row("footprint: checkpoint bytes, first / last superstep", "", lambda r: _pair(r), "{}"),
    ]
    for row in long_rows:
        row.since, row.floor = 17, False
    out += long_rows
    for row in out:
        if row.label.startswith("recovery"):
            row.floor = False
    return out


def _kb(v: Any) -> float | None:
    return None if num(v) is None else v / 1e3


def _mb(v: Any) -> float | None:
    return None if num(v) is None else v / 1e6


def _pair(r: dict[str, Any]) -> str | None:
    c = (r.get("footprint") or {}).get("countdown") or {}
    a, b = num(c.get("checkpoint_bytes_first")), num(c.get("checkpoint_bytes_last"))
    return None if a is None or b is None else f"{a:,.0f} / {b:,.0f}"


def ratio(row: Row, ours: Any, theirs: Any) -> float | None:
    """Ours against theirs, above 1 when ours is better (module docstring)."""
    a, b = num(ours), num(theirs)
    if not row.better or a is None or b is None or a <= 0 or b <= 0:
        return None
    return a / b if row.better == "high" else b / a
