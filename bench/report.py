"""The report of a run: the side-by-side table, the table of multiples of the framework floor, the
notes, the targets, and the README section (between `<!-- results:start -->` and
`<!-- results:end -->`, rewritten only by a full run, or by `--render ... --render-readme`).

Cells of ours in the side-by-side table: value (ax / bx) against the existing host plain /
resilient, above 1x ours is better. The floor table gives every host's figure as a multiple of the
framework floor's (through `WorkflowAgent`): kx = costs k times what the framework alone costs.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from bench import checks
from bench.checks import DASH, FLOOR, TIMES, fmt_ratio
from bench.config import README, Sizes
from bench.hosts import columns
from bench.hosts.base import Host
from bench.rows import Row, cut_off_slowest, num, ratio, rows


def _partial_note(row: Row, res: dict[str, Any]) -> str | None:
    m = re.search(r"at (\d+)$", row.label)
    if not m:
        return None
    g = (res.get("growth") or {}).get(int(m.group(1)))
    return g and g.get("partial")


def cell(
    row: Row, res: dict[str, Any], host: Host, plain: dict[str, Any] | None, resil: dict[str, Any] | None
) -> str:
    if host.kind == "floor" and not row.floor:
        return "n/a"
    v = row.get(res)
    rec = res.get("recovery") or {}
    if row.label.startswith("recovery") and "skipped" in rec:
        return "n/a"
    if v is None or (isinstance(v, float) and math.isnan(v)):
        if row.label.startswith("recovery") and row.better and rec:
            # Some response did not complete in time: there is no time for "all"; say how far it got.
            which = "resumed" if "resumed" in row.label else "complete"
            count, last = rec.get(which + "d" if which == "complete" else which), rec.get(f"last_{which}_s")
            done = f"; {count} by {last:.1f}" if count and num(last) is not None else ""
            return f"> {rec.get('timeout_s', 0):.0f} ({count or 0} of {rec.get('created')}{done})"
        return DASH
    text = row.fmt.format(v) if num(v) is not None else str(v)
    if row.label.startswith("cost growth") and num(v) is not None:
        if _partial_note(row, res):
            text = f"{text}*"
        elif row.label.startswith("cost growth: slowest") and cut_off_slowest(res):
            text = f"≥ {text}"
    if host.kind == "ours" and row.better:
        rp = ratio(row, v, row.get(plain) if plain else None)
        rr = ratio(row, v, row.get(resil) if resil else None)
        text += f" ({fmt_ratio(rp)} / {fmt_ratio(rr)})"
    return text


def table(hosts: list[Host], results: dict[str, dict[str, Any]], sizes: Sizes) -> str:
    plain = results.get("existing-plain")
    resil = results.get("existing-resilient")
    lines = [
        "| figure | better | " + " | ".join(h.label for h in hosts) + " |",
        "|" + "---|" * (len(hosts) + 2),
    ]
    for row in rows(sizes):
        better = {"high": "higher", "low": "lower", "": ""}[row.better]
        cells = [cell(row, results[h.key], h, plain, resil) for h in hosts]
        if all(c in (DASH, "n/a") for c in cells):
            continue
        lines.append(f"| {row.label} | {better} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def floor_table(hosts: list[Host], results: dict[str, dict[str, Any]], sizes: Sizes) -> str:
    """Each host's figure as a multiple of the framework floor's (`floor-agent`), where both have it."""
    floor = results.get(FLOOR)
    others = [h for h in hosts if h.key != FLOOR]
    if not floor or not others:
        return ""
    lines = [
        "| figure | framework floor, WorkflowAgent | "
        + " | ".join(f"{h.label}, {TIMES} floor" for h in others)
        + " |",
        "|" + "---|" * (len(others) + 2),
    ]
    for row in rows(sizes):
        fv = row.get(floor)
        if not row.floor or not row.better or num(fv) is None:
            continue
        cells = [fmt_ratio(checks.floor_multiple(row, row.get(results[h.key]), fv)) for h in others]
        if all(c == DASH for c in cells):
            continue
        lines.append(f"| {row.label} | {row.fmt.format(fv)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def footnotes(hosts: list[Host], results: dict[str, dict[str, Any]]) -> list[str]:
    notes = []
    for t in hosts:
        r = results[t.key]
        load = r.get("other_load") or {}
        if load.get("other_cpu_s", 0) > 0.05 * load.get("wall_s", 1e9):
            top = ", ".join(f"{name} {cpu:.0f} s" for name, cpu in load.get("top", []))
            notes.append(
                f"{t.label}: other processes used {load['other_cpu_s']:.0f} CPU-s during its "
                f"{load['wall_s']:.0f} s" + (f" ({top})" if top else "") + ": its figures are noisier."
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
            if d.get("retried"):
                notes.append(
                    f"{t.label}: {key}: {d['retried']} request(s) sent again: the server had closed the "
                    "idle keep-alive connection as it went out"
                )
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


def render(
    hosts: list[Host],
    results: dict[str, dict[str, Any]],
    sizes: Sizes,
    cmd: str,
    elapsed: float,
    info: dict[str, str],
    ours_foreground: bool,
) -> str:
    out = [
        table(hosts, results, sizes),
        "",
        f"Cells of ours: value (a{TIMES} / b{TIMES}) = ours against the existing host plain / resilient; "
        f"above 1{TIMES} ours is better "
        "(ours/theirs where higher is better, theirs/ours where lower is better).",
    ]
    ft = floor_table(hosts, results, sizes)
    if ft:
        out += [
            "",
            "Against the framework floor (the same workflows driven in-process by agent-framework "
            "through `WorkflowAgent.run(stream=True)`, in-memory checkpoints, no HTTP, no database), "
            f"every host's figure as a multiple of the floor's: k{TIMES} = costs k times what the "
            "framework alone costs (lower is better):",
            "",
            ft,
        ]
    notes = footnotes(hosts, results)
    if notes:
        out += ["", *[f"- {n}" for n in notes]]
    out += ["", "Targets (issue 5):", "", *[f"- {line}" for line in checks.issue5(hosts, results, sizes)]]
    floor_checks = checks.issue17(hosts, results, sizes)
    if floor_checks:
        out += ["", "Targets (issue 17, against the framework floor):", "", *[f"- {x}" for x in floor_checks]]
    write_path = checks.issue40(hosts, results, sizes)
    if write_path:
        out += [
            "",
            "Targets (issue 40, one write path and compact rows):",
            "",
            *[f"- {x}" for x in write_path],
        ]
    mode = "foreground" if ours_foreground else "background=true"
    out += [
        "",
        f"Command: `{cmd}` ({elapsed / 60:.1f} min), ours with {mode} streams.",
        "",
        "Machine: " + "; ".join(f"{k}: {v}" for k, v in info.items() if v) + ".",
    ]
    return "\n".join(out)


def write_readme(report: str, readme: Path = README) -> None:
    start, end = "<!-- results:start -->", "<!-- results:end -->"
    text = readme.read_text() if readme.exists() else f"# Benchmarks\n\n{start}\n{end}\n"
    if start not in text:
        text += f"\n{start}\n{end}\n"
    before, rest = text.split(start, 1)
    after = rest.split(end, 1)[1]
    readme.write_text(f"{before}{start}\n{report}\n{end}{after}")


def render_saved(path: Path, update_readme: bool) -> None:
    """Print (and with update_readme, put in bench/README.md) the report of a saved run."""
    raw = json.loads(path.read_text())
    sizes = Sizes(**{**raw["sizes"], "growth": tuple(raw["sizes"]["growth"])})
    results = raw["results"]
    for r in results.values():
        if isinstance(r.get("growth"), dict):
            r["growth"] = {int(k): v for k, v in r["growth"].items()}
    hosts = [h for h in columns(raw.get("ours_foreground", False)) if h.key in results]
    report = render(
        hosts,
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
