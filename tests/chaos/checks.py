"""The verdict of a chaos scenario: core invariants, issue-15 behaviours, and a printed summary.

Two kinds of check, raised differently on purpose:
- **Core invariants** (DESIGN.md 1 and 4, "none lost or duplicated"): full replay gap-free
  from 0, one `response.created`, one terminal event, every output exactly once, what a client
  saw live equal to the replay, nothing missed on a `Last-Event-ID` resume. They hold today; a
  violation raises a plain `AssertionError`, which an `xfail(raises=Issue15Gap)` does not
  absorb: a scenario marked as failing today still fails loudly if the core promise breaks.
- **Issue-15 behaviours** (what a user and an operator see around it): every error a client
  sees is a 503/429 with `Retry-After`, streams end cleanly, zero tracebacks, recovery within
  the target, fair takeover, `Idempotency-Key`, nothing stuck. Violations are collected and
  raised together as `Issue15Gap`, so the report names every one that fails, not the first.

Disruption times (fault to first resumed event) are measured and printed for every scenario, and
a response that never resumes is a gap; but a time over its target is reported, not failed
(`Scenario.timing`): speed targets are the benchmarks' business, and on a shared two-core machine
the same code resumes in 0.7 s or 1.4 s. `DURABLE_RESPONSES_CHAOS_STRICT_TIMING=1` makes a missed
target a gap again.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.sse import TERMINAL_STATUSES, check_sequence, stream_events

from .harness import OK_ERROR_STATUSES, Attempt, DbWatch, LogScan, StreamClient, ticks

STRICT_TIMING = os.environ.get("DURABLE_RESPONSES_CHAOS_STRICT_TIMING", "") not in ("", "0", "false")

# Every scenario's summary, printed at the end of the run (conftest's terminal summary hook).
SUMMARIES: list[Scenario] = []


class Issue15Gap(AssertionError):
    """A behaviour issue 15 demands that the server does not show (yet)."""


@dataclass
class Scenario:
    name: str
    started: float = field(default_factory=time.monotonic)
    gaps: list[str] = field(default_factory=list)
    core: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    outcome: str = "running"

    def expect(self, ok: bool, what: str, detail: str = "") -> bool:
        """An issue-15 behaviour: recorded as a gap when `ok` is false."""
        if not ok:
            self.gaps.append(f"{what}" + (f": {detail}" if detail else ""))
        return ok

    def timing(self, ok: bool, what: str) -> bool:
        """A disruption time against its target: printed when missed, a gap only with
        DURABLE_RESPONSES_CHAOS_STRICT_TIMING=1 (see the module docstring)."""
        if not ok:
            if STRICT_TIMING:
                self.gaps.append(what)
            else:
                self.notes.append(f"timing target missed (reported, not failed): {what}")
        return ok

    def invariant(self, ok: bool, what: str) -> bool:
        if not ok:
            self.core.append(what)
        return ok

    def metric(self, key: str, value: Any) -> None:
        self.metrics[key] = value

    def phase(self, name: str) -> None:
        """Mark the end of a phase (seconds since the scenario began), for the time budget."""
        self.metrics.setdefault("phases", {})[name] = round(time.monotonic() - self.started, 1)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def finish(self) -> None:
        """Raise what was found: core violations first (AssertionError), then Issue15Gap."""
        self.metric("scenario seconds", round(time.monotonic() - self.started, 1))
        SUMMARIES.append(self)
        if self.core:
            self.outcome = "CORE INVARIANT BROKEN"
            raise AssertionError(f"{self.name}: core invariants broken:\n- " + "\n- ".join(self.core))
        if self.gaps:
            self.outcome = f"{len(self.gaps)} issue-15 gap(s)"
            raise Issue15Gap(f"{self.name}: issue-15 behaviours missing:\n- " + "\n- ".join(self.gaps))
        self.outcome = "all checks pass"

    def render(self) -> str:
        out = [f"[{self.name}] {self.outcome}"]
        out += [f"    {k}: {v}" for k, v in self.metrics.items()]
        out += [f"    note: {n}" for n in self.notes]
        out += [f"    CORE: {c}" for c in self.core]
        out += [f"    gap: {g}" for g in self.gaps]
        return "\n".join(out)


def fmt_s(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}s"


# region responses ---------------------------------------------------------------------------


def wait_terminal(
    sc: Scenario,
    watch: DbWatch,
    base_urls: Sequence[str],
    ids: Iterable[str],
    *,
    timeout: float,
    what: str = "responses",
) -> dict[str, dict[str, Any]]:
    """Wait (on the database: one query per 50 ms, not a GET per response) until every
    response is terminal, then GET each through the servers. An error answer is never taken
    for 'not yet': every non-200 is a gap (the fault is over). Returns the final JSON bodies;
    responses still active once none of them has made progress (a new event or an end) for
    `timeout` seconds are 'stuck' (a gap). Progress extends the wait up to 4 x `timeout` in
    all: a slow machine's backlog of ticks is not stuck (seen: 100 responses of 30 ticks each
    still going 30 s after a restart at load ~9 on two cores)."""
    wanted = list(dict.fromkeys(ids))
    now = time.monotonic()
    deadline, cap = now + timeout, now + 4 * timeout
    pending = wanted
    last: tuple[int, int] | None = None
    while pending and time.monotonic() < deadline:
        rows = watch.try_query(
            "SELECT r.id, r.status, (SELECT max(e.seq) FROM events AS e WHERE e.response_id = r.id)"
            " FROM responses AS r WHERE r.id = ANY($1)",
            pending,
        )
        if rows is not None:
            done = {rid for rid, status, _ in rows if status in TERMINAL_STATUSES}
            pending = [rid for rid in pending if rid not in done]
            seen = (len(pending), sum(seq or 0 for _, _, seq in rows))
            if last is not None and seen != last:
                deadline = min(time.monotonic() + timeout, cap)
            last = seen
        if pending:
            time.sleep(0.05)
    final: dict[str, dict[str, Any]] = {}
    errors: Counter[str] = Counter()
    with httpx.Client(timeout=5, headers={"authorization": "Bearer test-key"}) as http:
        for turn, rid in enumerate(r for r in wanted if r not in pending):
            try:
                r = http.get(f"{base_urls[turn % len(base_urls)]}/responses/{rid}")
            except httpx.HTTPError as exc:
                errors[f"{type(exc).__name__}"] += 1
                continue
            if r.status_code != 200:
                errors[f"{r.status_code} retry-after={r.headers.get('retry-after')}"] += 1
                continue
            final[rid] = r.json()
            sc.invariant(
                final[rid]["status"] in TERMINAL_STATUSES,
                f"{rid} is {final[rid]['status']} over HTTP but terminal in the database",
            )
    sc.expect(
        not errors, f"GET /responses/{{id}} of the {what} after the fault answered errors", str(dict(errors))
    )
    if pending:
        sc.expect(
            False,
            f"{len(pending)} of the {what} stuck (not terminal; no progress for {timeout:.0f}s, or "
            f"still going {4 * timeout:.0f}s after the fault)",
        )
    sc.metric(f"{what} terminal", f"{len(wanted) - len(pending)} of {len(wanted)}")
    return final


def output_texts(body: dict[str, Any]) -> list[str]:
    return [
        part.get("text", "")
        for item in body.get("output", [])
        if item.get("type") == "message"
        for part in item.get("content", []) or []
        if part.get("type") == "output_text"
    ]


def check_replays(
    sc: Scenario,
    base_url: str,
    final: dict[str, dict[str, Any]],
    expected_ticks: dict[str, int],
    clients: Sequence[StreamClient] = (),
) -> None:
    """Full replay of every terminal response: the core invariants, and `completed` with every
    tick exactly once (a failed response is a gap: it lost what it had left to do)."""
    by_id = {c.response_id: c for c in clients if c.response_id}
    not_completed: dict[str, Any] = {}
    with httpx.Client() as http, ThreadPoolExecutor(4) as pool:  # replays are independent reads
        replays = dict(
            zip(
                final,
                pool.map(lambda rid: stream_events(base_url, rid, timeout=30, client=http), final),
                strict=True,
            )
        )
    for rid, body in final.items():
        n = expected_ticks[rid]
        replay = replays[rid]
        try:
            check_sequence(replay, label=rid)
        except AssertionError as exc:
            sc.invariant(False, f"replay of {rid}: {exc}")
            continue
        done_texts = [
            part.get("text", "")
            for e in replay
            if e["type"] == "response.output_item.done" and e["item"].get("status") != "incomplete"
            for part in e["item"].get("content", []) or []
        ]
        dupes = [t for t, k in Counter(done_texts).items() if k > 1]
        sc.invariant(not dupes, f"{rid}: outputs produced twice: {dupes}")
        terminal = replay[-1]
        if body["status"] != "completed" or terminal["type"] != "response.completed":
            not_completed[rid] = (body["status"], (body.get("error") or {}).get("message", "")[:160])
        else:
            sc.invariant(output_texts(body) == ticks(n), f"{rid}: output {output_texts(body)} != {ticks(n)}")
            sc.invariant(done_texts == ticks(n), f"{rid}: replayed outputs {done_texts} != {ticks(n)}")
        client = by_id.get(rid)
        if client is not None:
            _check_client_view(sc, client, replay)
    if not_completed:
        sc.expect(False, f"{len(not_completed)} response(s) not completed", json.dumps(not_completed)[:600])
    unseen = [c.response_id for c in clients if c.response_id in final and not c.terminal]
    sc.expect(not unseen, f"{len(unseen)} client(s) never received the terminal event of a finished response")


def _check_client_view(sc: Scenario, client: StreamClient, replay: list[dict[str, Any]]) -> None:
    """What the client saw live, across its reconnects, is the replay: same payloads, nothing
    missed, nothing sent twice after a `Last-Event-ID`."""
    rid = client.response_id
    by_seq = {e["sequence_number"]: e for e in replay}
    mismatched = [s for s, (_t, e) in client.events.items() if by_seq.get(s) != e]
    sc.invariant(not mismatched, f"{rid}: live events differ from the replay at seqs {mismatched[:10]}")
    if client.terminal:
        missing = sorted(set(by_seq) - set(client.events))
        sc.invariant(not missing, f"{rid}: the client never received seqs {missing[:10]} (resume lost them)")
    sc.invariant(
        not client.duplicates, f"{rid}: seqs sent again after Last-Event-ID: {client.duplicates[:10]}"
    )


# endregion

# region what clients saw --------------------------------------------------------------------


# Lines one process may write during a scenario: issue 15 wants one line per condition change
# (down, still down every N s, back), not one (or a traceback) per request.
LOG_LINE_BUDGET = 40

Window = tuple[str, float, float]
"""(base URL, start, end) in monotonic seconds: a replica known to be down (killed, restarting,
stopped listening after SIGTERM)."""


def _in_window(a: Attempt, windows: Iterable[Window]) -> bool:
    return any(a.base_url == url and a.t <= end and a.ended_at >= start for url, start, end in windows)


def check_client_errors(
    sc: Scenario,
    attempts: Iterable[Attempt],
    *,
    down: Iterable[Window] = (),
    fault: tuple[float, float] | None = None,
) -> None:
    """Every error answer a client got is a 503/429 with `Retry-After`; no request went
    unanswered (a reset, a timeout), except by a replica while it was down (`down`). The
    status codes are reported apart for the requests made during the `fault` and the rest."""
    windows = list(down)
    statuses: dict[str, Counter[str]] = {"during the fault": Counter(), "before/after": Counter()}
    bad: Counter[str] = Counter()
    unanswered: Counter[str] = Counter()
    for a in attempts:
        if a.kind == "readiness":
            continue  # readiness is judged by check_readiness
        when = "during the fault" if fault and a.t <= fault[1] and a.ended_at >= fault[0] else "before/after"
        if a.status is not None:
            statuses[when][f"{a.kind} {a.status}"] += 1
            if a.status != 200 and not (a.status in OK_ERROR_STATUSES and a.retry_after):
                bad[
                    f"{a.kind} {a.status} code={a.error_code} retry-after={a.retry_after} "
                    f"x-should-retry={a.should_retry}"
                ] += 1
        elif not _in_window(a, windows):
            # "error: ConnectError: ..." -> "ConnectError"; "timeout" stays "timeout".
            unanswered[f"{a.kind} {a.end.split(': ')[1] if a.end.startswith('error') else a.end}"] += 1
            statuses[when][f"{a.kind} no answer"] += 1
    if fault is None:
        sc.metric("client status codes", dict(sorted(statuses["before/after"].items())))
    else:
        for when, counts in statuses.items():
            sc.metric(f"client status codes {when}", dict(sorted(counts.items())))
    sc.expect(not bad, "errors other than 503/429 with Retry-After", str(dict(bad)))
    sc.expect(not unanswered, "requests left unanswered (connection error or timeout)", str(dict(unanswered)))


def check_streams_clean(
    sc: Scenario, clients: Sequence[StreamClient], *, killed: Iterable[tuple[str, float]] = ()
) -> None:
    """Every SSE stream that ended before its terminal event ended cleanly (a complete chunked
    body), not with a reset or an incomplete read; except streams open on a replica when it was
    `kill -9`ed (`killed`: base URL, time)."""
    kills = list(killed)
    ends: Counter[str] = Counter()
    broken: list[str] = []
    for c in clients:
        for a in c.attempts:
            if a.status != 200 or a.end == "json":  # a JSON create is no stream
                continue
            kind = a.end.split(":")[0] if a.end.startswith("error") else a.end
            ends[kind] += 1
            died_under_it = any(a.base_url == url and a.t <= t <= a.ended_at for url, t in kills)
            if a.end.startswith("error") and not died_under_it:
                broken.append(f"{c.response_id}: {a.end[:140]}")
    sc.metric("stream endings", dict(ends))
    sc.expect(not broken, f"{len(broken)} stream(s) broken instead of ending cleanly", "; ".join(broken[:3]))


def check_readiness(
    sc: Scenario, attempts: Iterable[Attempt], *, fault: tuple[float, float], settle: float
) -> None:
    """`/readiness` fails (non-200) for every probe from `settle` s into the fault to its end."""
    start, end = fault
    during = [a for a in attempts if a.kind == "readiness" and start + settle <= a.t and a.ended_at <= end]
    ready = [a for a in during if a.status == 200]
    sc.metric("readiness during the fault", dict(Counter(str(a.status) for a in during)))
    sc.expect(
        bool(during) and not ready,
        f"/readiness answered 200 {len(ready)} of {len(during)} times while writes failed",
    )


def check_logs(sc: Scenario, scans: Sequence[LogScan], *, line_budget: int | None = LOG_LINE_BUDGET) -> None:
    """Zero tracebacks / ASGI exceptions / never-retrieved tasks; at most `line_budget` lines
    per process during the scenario (one line per condition change, not one per request)."""
    total: Counter[str] = Counter()
    for scan in scans:
        total.update(scan.counts)
    sc.metric("server log", {"lines": [s.lines for s in scans], **{k: v for k, v in total.items() if v}})
    top: Counter[str] = Counter()
    for scan in scans:
        for rec in scan.top_records():
            n, _, what = rec.partition("x ")
            top[what] += int(n)
    if top:
        sc.metric("server log records", [f"{n}x {w}" for w, n in top.most_common(6)])
    bad = sum(total.values())
    excerpt = next((s.excerpts[0] for s in scans if s.excerpts), "")
    sc.expect(bad == 0, f"server logged {dict((k, v) for k, v in total.items() if v)}", excerpt[-700:])
    if line_budget is not None:
        worst = max((s.lines for s in scans), default=0)
        sc.expect(worst <= line_budget, f"server wrote {worst} log lines (budget {line_budget})")


# endregion
