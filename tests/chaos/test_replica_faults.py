"""Replica faults under load on PostgreSQL: `kill -9` of one of three replicas, SIGTERM hand-off.

The responses run on replica A; their clients stream from A and, when A goes away, reconnect
with `Last-Event-ID` to the survivors (a load balancer that drops a dead backend). Each
scenario proves by full replay that nothing was lost or duplicated, measures how soon the
survivors resumed A's work, and who took it.
"""

from __future__ import annotations

import math
import signal
import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

from durable_responses.store.settings import LEASE_SECONDS
from tests.support.pgserver import OwnPostgres
from tests.support.proxy import Proxy
from tests.support.servers import ServerProcess

from .checks import Scenario, fmt_s
from .conftest import Replicas
from .flow import Logs, check_disruption, conclude, start_load, wait_ticking
from .harness import DbWatch, Prober

pytestmark = pytest.mark.chaos

LEASE = 2.0  # ServerProcess's default DURABLE_RESPONSES_LEASE_SECONDS
TAKEOVER_TARGET = 1.0  # issue 15: replica killed -> lease expiry plus under 1 s
# Issue 39: the production default lease; a dead replica's death is known by its liveness lock,
# so nothing waits for it (a takeover long before it expires is the behaviour checked).
DEFAULT_LEASE = LEASE_SECONDS
DEFAULT_ENV = {"DURABLE_RESPONSES_LEASE_SECONDS": f"{DEFAULT_LEASE:g}"}
KILL_TARGET = 2.0  # issue 39: every response of a killed replica resumed within 2 s of the kill


def _pid_of(owner: str | None) -> int | None:
    """Host.owner is `hostname:pid:nonce`."""
    if not owner:
        return None
    try:
        return int(owner.split(":")[-2])
    except (IndexError, ValueError):
        return None


@dataclass
class Takeover:
    """Who took each response over (pid), when it was claimed and when it first committed an
    event after the fault (seconds after `since`)."""

    owners: dict[str, int] = field(default_factory=dict)
    claimed: dict[str, float] = field(default_factory=dict)
    progress: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        c, p = self.claimed.values(), self.progress.values()
        return (
            f"claimed {fmt_s(min(c, default=None))}..{fmt_s(max(c, default=None))}, "
            f"first event {fmt_s(min(p, default=None))}..{fmt_s(max(p, default=None))}"
        )


def _watch_takeover(
    watch: DbWatch, ids: list[str], old_pid: int, *, since: float, timeout: float
) -> Takeover:
    """Poll the responses' `lease_owner` and events every 20 ms until each has a new owner
    (a pid other than `old_pid`) and has committed an event after the call."""
    baseline = watch.max_seqs(ids)
    seen = Takeover()
    owners, claimed, progress = seen.owners, seen.claimed, seen.progress
    deadline = time.monotonic() + timeout
    while (len(owners) < len(ids) or len(progress) < len(ids)) and time.monotonic() < deadline:
        rows = watch.try_query(
            "SELECT r.id, r.lease_owner, (SELECT max(seq) FROM events e WHERE e.response_id = r.id) "
            "FROM responses r WHERE r.id = ANY($1)",
            ids,
        )
        now = time.monotonic()
        for rid, owner, seq in rows or []:
            pid = _pid_of(owner)
            if rid not in owners and pid is not None and pid != old_pid:
                owners[rid] = pid
                claimed[rid] = now - since
            if rid not in progress and seq is not None and seq > baseline[rid]:
                progress[rid] = now - since
        time.sleep(0.02)
    return seen


def test_kill_one_of_three_replicas(
    chaos_pg: OwnPostgres, pg_db: str, db_proxy: Proxy, pg_watch: DbWatch, replicas: Replicas
) -> None:
    """`kill -9` of replica A, which runs 12 countdowns, with B and C alive. Proves: nothing
    lost or duplicated; each response resumed within lease expiry + 1 s; the survivors split
    A's responses (neither takes more than two thirds); clients of the survivors saw no error."""
    sc = Scenario("kill -9 one of three replicas (default lease)")
    a, b, c = replicas.start(chaos_pg.url(pg_db, port=db_proxy.port), 3, env=DEFAULT_ENV)
    survivors = {b.proc.pid: b, c.proc.pid: c}  # type: ignore[union-attr]
    sc.phase("replicas up")
    load = start_load(lambda: [a.base_url], 12, n=12, delay=0.15, follow=replicas.live)
    wait_ticking(pg_watch, load.ids)
    logs = Logs([b, c])
    prober = Prober(lambda: [s.base_url for s in (b, c)], load.ids[0])
    prober.start()
    killed_wall = time.time()
    killed = time.monotonic()  # before the signal: its victims see the reset at once
    replicas.kill(a)
    rows = pg_watch.responses(load.ids)
    in_flight = [rid for rid, (status, _o, _e) in rows.items() if status in ("queued", "in_progress")]
    # When each lease would expire, on our clock: A renewed it last, just before it died.
    expiry = {rid: killed + (rows[rid][2] or killed_wall) - killed_wall for rid in in_flight}
    seen = _watch_takeover(pg_watch, in_flight, a.proc.pid, since=killed, timeout=DEFAULT_LEASE + 8)  # type: ignore[union-attr]
    owners, progress = seen.owners, seen.progress
    late = {rid: progress[rid] - (expiry[rid] - killed) for rid in progress}
    # Issue 39: the death is known at once; nothing waited for the lease (bounded: half of it).
    waited = {rid: t for rid, t in progress.items() if t >= DEFAULT_LEASE / 2}
    sc.expect(
        not waited, f"{len(waited)} response(s) resumed only after half the lease: the lease was waited"
    )
    sc.timing(
        bool(progress) and max(progress.values()) < KILL_TARGET,
        f"all resumed {fmt_s(max(progress.values()) if progress else None)} after the kill (target < {KILL_TARGET:g}s)",
    )
    share = Counter(owners.values())
    sc.metric("takeover after the kill", seen.summary())
    sc.metric("responses in flight at the kill", len(in_flight))
    sc.metric(
        "disruption (kill -> first resumed event)",
        f"{fmt_s(min(progress.values()) if progress else None)}..{fmt_s(max(progress.values(), default=None))}"
        f"; lease {DEFAULT_LEASE:g}s",
    )
    sc.metric(
        "resumed after lease expiry",
        f"max {fmt_s(max(late.values()) if late else None)} (negative: before it expired)",
    )
    sc.metric("taken over by", {f"replica {survivors[p].port}": share[p] for p in survivors})
    sc.expect(
        len(progress) == len(in_flight),
        f"{len(in_flight) - len(progress)} of {len(in_flight)} responses never resumed",
    )
    sc.timing(
        bool(late) and max(late.values()) < TAKEOVER_TARGET,
        f"resumed {fmt_s(max(late.values()) if late else None)} after lease expiry (target < {TAKEOVER_TARGET:g}s)",
    )
    # Issue 39: the survivors' shares come from their membership (6 and 6 of 12; within 7/5).
    fair = math.ceil(len(in_flight) / 2) + 1
    sc.expect(
        max(share.values(), default=0) <= fair,
        f"unfair takeover: {dict(share)} of {len(in_flight)} (at most {fair} each)",
    )
    conclude(
        sc,
        load=load,
        watch=pg_watch,
        servers=replicas.live(),
        logs=logs,
        prober=prober,
        down=[(a.base_url, killed, math.inf)],
        killed=[(a.base_url, killed)],
        fault=(killed, killed + min(progress.values(), default=DEFAULT_LEASE)),
    )
    sc.finish()


def test_sigterm_hands_off_to_another_replica(
    chaos_pg: OwnPostgres, pg_db: str, db_proxy: Proxy, pg_watch: DbWatch, replicas: Replicas
) -> None:
    """SIGTERM to replica A, which runs 8 countdowns, with B alive. Proves: A ends its
    background streams cleanly (their clients resume on B with Last-Event-ID) and exits
    within its grace period; B resumes A's responses within 1 s of A's exit (A released its
    leases: no lease wait); nothing lost or duplicated; every error a client saw (A draining)
    was a 503/429 with Retry-After.

    Passes today. A draining replica's 503 (`Host.create`) carries no Retry-After, but uvicorn
    stops listening at once, so clients see refused connections rather than that 503."""
    sc = Scenario("SIGTERM hand-off (default lease)")
    a, b = replicas.start(chaos_pg.url(pg_db, port=db_proxy.port), 2, env=DEFAULT_ENV)
    assert a.proc is not None
    load = start_load(lambda: [a.base_url], 8, n=12, delay=0.15, follow=replicas.live)
    wait_ticking(pg_watch, load.ids)
    logs = Logs([a, b])
    # Other users keep calling A too until it exits: a load balancer notices a drain late.
    prober = Prober(replicas.live, load.ids[0])
    prober.start()
    active = pg_watch.active(load.ids)
    counts_before = dict(
        pg_watch.query("SELECT id, recovery_count FROM responses WHERE id = ANY($1)", active)
    )
    term = time.monotonic()
    a.proc.send_signal(signal.SIGTERM)
    code = a.proc.wait(30)
    exited = time.monotonic()
    seen = _watch_takeover(pg_watch, active, a.proc.pid, since=exited, timeout=DEFAULT_LEASE + 8)
    progress = seen.progress
    sc.metric("takeover after A's exit", seen.summary())
    # uvicorn re-raises the SIGTERM it handled once it has shut down: -15 is a clean exit.
    sc.metric("replica A drain", f"exit code {code} {fmt_s(exited - term)} after SIGTERM (grace 3 s)")
    sc.expect(exited - term < 3 + 5, f"replica A took {fmt_s(exited - term)} to exit")
    check_disruption(sc, "replica A exit", progress, active, target=TAKEOVER_TARGET, all_within=2.0)
    sc.timing(
        bool(progress) and max(progress.values()) < 0.5,
        f"taken over {fmt_s(max(progress.values(), default=None))} after A's exit (issue 39 target < 0.5s)",
    )
    # Issue 39: a hand-off is no crash: it does not count toward DURABLE_RESPONSES_MAX_RECOVERIES.
    counts_after = dict(pg_watch.query("SELECT id, recovery_count FROM responses WHERE id = ANY($1)", active))
    sc.metric(
        "recovery counts before/after the hand-off",
        f"{sorted(set(counts_before.values()))} / {sorted(set(counts_after.values()))}",
    )
    counted = sorted(rid for rid, n in counts_after.items() if n != counts_before.get(rid))
    sc.expect(
        not counted, "the hand-off counted as a recovery", f"{counts_after}{_lines_of([a, b], counted)}"
    )
    # A stops listening when the drain begins: refused connections to it are no error answer.
    conclude(
        sc,
        load=load,
        watch=pg_watch,
        servers=[b.base_url],
        logs=logs,
        prober=prober,
        down=[(a.base_url, term, math.inf)],
        fault=(term, exited + min(progress.values(), default=0.0)),
    )
    sc.finish()


def _lines_of(servers: list[ServerProcess], ids: list[str]) -> str:
    """The replicas' log lines that name one of `ids` (the last 40), to tell how they changed
    hands."""
    lines = [
        f"{s.base_url}: {line}"
        for s in servers
        for line in s.log_path.read_text(errors="replace").splitlines()
        if any(rid in line for rid in ids)
    ]
    return "".join(f"\n  {line}" for line in lines[-40:])


@pytest.mark.parametrize("count", [20, 100])
def test_kill_the_only_replica_and_restart(
    chaos_pg: OwnPostgres, pg_db: str, pg_watch: DbWatch, replicas: Replicas, count: int
) -> None:
    """Issue 39: 20 (100: more than one batch of recovery's reads) background responses on the
    only replica, `kill -9`, a new replica started on the same database with the default lease.
    Proves: the new one resumes every response long before the dead one's leases expire (its
    liveness lock is gone), nothing lost or duplicated. Measured: first new event of each after
    the new replica's readiness (targets: within 1 s for 20, 2 s for 100; bench/takeover.py)."""
    sc = Scenario(f"kill -9 the only replica running {count}, restart (default lease)")
    url = chaos_pg.url(pg_db)
    (a,) = replicas.start(url, 1, env=DEFAULT_ENV)
    load = start_load(lambda: [a.base_url], count, n=30, delay=0.15, follow=replicas.live)
    wait_ticking(pg_watch, load.ids)
    killed = time.monotonic()
    replicas.kill(a)
    in_flight = pg_watch.active(load.ids)
    baseline = pg_watch.max_seqs(in_flight)
    (b,) = replicas.start(url, 1, env=DEFAULT_ENV, port=a.port)  # a restart: same port
    ready = time.monotonic()
    logs = Logs([b])
    progress = pg_watch.wait_progress(baseline, since=ready, timeout=DEFAULT_LEASE + 8)
    sc.metric("restarted replica ready after the kill", fmt_s(ready - killed))
    sc.metric("responses in flight at the kill", len(in_flight))
    sc.metric(
        "first new event after readiness",
        f"{fmt_s(min(progress.values(), default=None))}..{fmt_s(max(progress.values(), default=None))}",
    )
    sc.expect(len(progress) == len(in_flight), f"{len(in_flight) - len(progress)} response(s) never resumed")
    waited = {rid: t for rid, t in progress.items() if t >= DEFAULT_LEASE / 2}
    sc.expect(
        not waited, f"{len(waited)} response(s) resumed only after half the lease: the lease was waited"
    )
    target = 1.0 if count <= 20 else 2.0
    sc.timing(
        bool(progress) and max(progress.values()) < target,
        f"all resumed {fmt_s(max(progress.values(), default=None))} after readiness (target < {target:g}s)",
    )
    conclude(
        sc,
        load=load,
        watch=pg_watch,
        servers=[b.base_url],
        logs=logs,
        down=[(a.base_url, killed, ready)],
        killed=[(a.base_url, killed)],
        fault=(killed, ready + min(progress.values(), default=0.0)),
    )
    sc.finish()
