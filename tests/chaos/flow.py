"""The common shape of a scenario: load, fault, measure, conclude.

A scenario starts a bounded load of background+stream countdowns, waits (on commits, not on
a clock) until every response is ticking, applies its fault while a `Prober` plays other users,
measures the disruption on commits, then `conclude` waits for every response to end (bounded)
and runs every check of `checks` over what the clients, the probes, the database and the logs
saw.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tests.support.servers import ServerProcess

from .checks import (
    LOG_LINE_BUDGET,
    Scenario,
    Window,
    check_client_errors,
    check_logs,
    check_replays,
    check_streams_clean,
    fmt_s,
    wait_terminal,
)
from .harness import Attempt, DbWatch, LogScan, Prober, StreamClient, log_size, start_clients


@dataclass
class Load:
    clients: list[StreamClient]
    n: int
    probe_ids: list[str] = field(default_factory=list)

    @property
    def ids(self) -> list[str]:
        return [c.response_id for c in self.clients if c.response_id]

    def expected_ticks(self) -> dict[str, int]:
        out = {rid: self.n for rid in self.ids}
        out.update({rid: 1 for rid in self.probe_ids})  # probes create "1 delay=0" countdowns
        return out

    def attempts(self) -> list[Attempt]:
        return [a for c in self.clients for a in c.attempts]


def start_load(
    targets: Callable[[], Sequence[str]],
    count: int,
    *,
    n: int,
    delay: float,
    within: float = 90.0,
    label: str = "load",
    follow: Callable[[], Sequence[str]] | None = None,
    stream_create: bool = True,
) -> Load:
    """`count` clients, each creating one `n`-tick countdown (`delay` s per tick) on `targets`
    and following it (on `follow`) to its end; clients give up `within` s from now."""
    deadline = time.monotonic() + within
    clients = [
        StreamClient(
            f"{label}{i}",
            targets,
            n=n,
            delay=delay,
            deadline=deadline,
            follow=follow,
            stream_create=stream_create,
        )
        for i in range(count)
    ]
    start_clients(clients)
    return Load(clients, n)


def wait_ticking(watch: DbWatch, ids: Sequence[str], *, events: int = 6, timeout: float = 20) -> None:
    """Until every response has committed at least `events` events (it is running)."""
    watch.wait_for(
        f"{len(ids)} responses ticking",
        lambda: (s := watch.max_seqs(ids)) and len(s) == len(ids) and min(s.values()) >= events - 1,
        timeout,
    )


class Logs:
    """Where each replica's log stood when the fault began (scans read from there on)."""

    def __init__(self, servers: Sequence[ServerProcess]) -> None:
        self.offsets = {s.log_path: log_size(s.log_path) for s in servers}

    def scans(self) -> list[LogScan]:
        return [LogScan.of(path, offset) for path, offset in self.offsets.items()]


def check_disruption(
    sc: Scenario,
    what: str,
    progress: dict[str, float],
    active: Sequence[str],
    *,
    target: float,
    all_within: float,
) -> None:
    """The first resumed event within `target` s of `what`, every in-flight one within
    `all_within` s (times on commits, measured by `DbWatch.wait_progress`)."""
    first = min(progress.values()) if progress else None
    last = max(progress.values()) if len(progress) == len(active) and progress else None
    sc.metric(
        f"disruption ({what} -> first resumed event)",
        f"{fmt_s(first)} (last of {len(active)} in flight: {fmt_s(last)}; "
        f"{len(active) - len(progress)} never resumed); target < {target:g}s",
    )
    sc.expect(
        len(progress) == len(active),
        f"{len(active) - len(progress)} of {len(active)} in-flight responses never resumed after {what}",
    )
    sc.timing(
        first is not None and first < target,
        f"first resumed event {fmt_s(first)} after {what} (target < {target:g}s)",
    )
    sc.timing(
        last is not None and last < all_within,
        f"every in-flight response resumed within {all_within:g}s of {what}: last {fmt_s(last)}",
    )


def conclude(
    sc: Scenario,
    *,
    load: Load,
    watch: DbWatch,
    servers: Sequence[str],
    logs: Logs,
    prober: Prober | None = None,
    down: Sequence[Window] = (),
    killed: Sequence[tuple[str, float]] = (),
    settle: float = 30.0,
    line_budget: int | None = LOG_LINE_BUDGET,
    fault: tuple[float, float] | None = None,
    extra_ids: dict[str, int] | None = None,
) -> None:
    """Wait (at most `settle` s) for every response to end, then check everything.

    `down`: when replicas were down (killed, restarting, no longer listening after SIGTERM): a
    request they never answered then is no error answer (what they did answer is judged);
    `killed`: when replicas were `kill -9`ed: the streams open on them then break;
    `fault`: when the fault lasted (status codes are reported for it apart)."""
    sc.phase("fault measured")
    expected = load.expected_ticks()
    expected.update(extra_ids or {})
    # The probes go on while the load finishes: they see the server just after recovery too.
    final = wait_terminal(sc, watch, servers, expected, timeout=settle, what="load's responses")
    if prober is not None:
        prober.stop()
        sc.invariant(prober.failure is None, f"prober crashed: {prober.failure}")
        load.probe_ids = [rid for rid in prober.created if rid not in final]
        expected.update({rid: 1 for rid in load.probe_ids})
        final.update(wait_terminal(sc, watch, servers, load.probe_ids, timeout=10, what="probes' responses"))
        load.probe_ids = list(prober.created)
    sc.phase("all terminal")
    for c in load.clients:
        c.join(max(0.1, min(15.0, c.deadline - time.monotonic())))
        sc.invariant(c.failure is None, f"client {c.label} crashed: {c.failure}")
    check_replays(sc, servers[0], final, expected, load.clients)
    sc.phase("replayed")
    attempts = load.attempts() + (prober.results if prober is not None else [])
    check_client_errors(sc, attempts, down=down, fault=fault)
    check_streams_clean(sc, load.clients, killed=killed)
    check_logs(sc, logs.scans(), line_budget=line_budget)
