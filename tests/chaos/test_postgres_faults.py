"""PostgreSQL faults under load: a restart, a 10 s outage, connections reset, LISTEN cut.

Each scenario runs background+stream countdowns on replicas that reach the suite's own
PostgreSQL through the chaos proxy, breaks the database or the network in one way, and proves
by full replay of every response that nothing was lost, duplicated or left stuck, while
measuring what issue 15 is about: how long recovery took once the database was back, and what
clients and the server's log saw meanwhile.
"""

from __future__ import annotations

import time

import pytest

from tests.support.pgserver import OwnPostgres
from tests.support.proxy import LISTEN_MARKER, Proxy

from .checks import Scenario, check_readiness, fmt_s
from .conftest import Replicas
from .flow import Logs, check_disruption, conclude, start_load, wait_ticking
from .harness import DbWatch, Prober

pytestmark = pytest.mark.chaos

# Issue 15, "Done when": database back -> first resumed event under 1 s.
RESUME_TARGET = 1.0
# A production restart (checkpoint, crash recovery, a bigger cache to warm) takes seconds; ours
# would take 0.2 s, too short for a commit to fail.
DOWN_FOR_RESTART = 2.0


def _lease(seconds: float) -> dict[str, str]:
    """A lease longer than the fault, as in production (15 s lease, faults of seconds): a run
    that stopped on a database error must not wait for its own lease to resume (issue 15
    item 3). Shorter than production to bound what the suite spends waiting today."""
    return {"DURABLE_RESPONSES_LEASE_SECONDS": str(seconds)}


def _url(pg: OwnPostgres, proxy: Proxy, db: str) -> str:
    return pg.url(db, port=proxy.port)


def test_database_restart_under_load(
    chaos_pg: OwnPostgres, pg_db: str, db_proxy: Proxy, pg_watch: DbWatch, replicas: Replicas
) -> None:
    """PostgreSQL restarted (fast shutdown: every backend gets 'terminating connection due to
    administrator command'; down 2 s) while two replicas stream 8 countdowns. Proves: every response
    completes with every tick once and a gap-free replay; clients saw only 503/429 with
    Retry-After; streams ended cleanly; no traceback; first resumed event < 1 s after the
    database accepts connections again."""
    sc = Scenario("database restart under load")
    servers = replicas.start(_url(chaos_pg, db_proxy, pg_db), 2, env=_lease(6))
    load = start_load(replicas.live, 8, n=10, delay=0.2)
    wait_ticking(pg_watch, load.ids)
    logs = Logs(servers)
    prober = Prober(replicas.live, load.ids[0])
    prober.start()
    fault_start = time.monotonic()
    chaos_pg.stop("fast")
    time.sleep(DOWN_FOR_RESTART)  # the fault itself: a restart with crash recovery takes seconds
    chaos_pg.start()
    back = time.monotonic()
    baseline = pg_watch.max_seqs(active := pg_watch.active(load.ids))
    sc.metric("database down", fmt_s(back - fault_start))
    progress = pg_watch.wait_progress(baseline, since=back, timeout=10)
    check_disruption(sc, "database back", progress, active, target=RESUME_TARGET, all_within=2.0)
    # Issue 39: a PostgreSQL shutting down is said as such, not as "too many connections".
    crowded = [ln for scan in logs.scans() for ln in scan.grep(r"too many connections|POOL_SIZE")]
    sc.expect(not crowded, "a shutdown was logged as too many connections", str(crowded[:2]))
    conclude(
        sc,
        load=load,
        watch=pg_watch,
        servers=replicas.live(),
        logs=logs,
        prober=prober,
        fault=(fault_start, back),
    )
    sc.finish()


def test_ten_second_outage_under_load(
    chaos_pg: OwnPostgres, pg_db: str, db_proxy: Proxy, pg_watch: DbWatch, replicas: Replicas
) -> None:
    """The database unreachable for 10 s (the proxy refuses connections and resets the open
    ones) while two replicas stream 8 countdowns and other users keep calling. Proves: nothing
    lost or duplicated; every error a client saw was a 503/429 with Retry-After; `/readiness`
    failed while writes failed; streams ended cleanly (clients resumed with Last-Event-ID);
    one log line per condition change, no traceback; first resumed event < 1 s after the
    network is back, not a lease later."""
    sc = Scenario("10 s outage under load")
    servers = replicas.start(_url(chaos_pg, db_proxy, pg_db), 2, env=_lease(12))
    load = start_load(replicas.live, 8, n=10, delay=0.2)
    wait_ticking(pg_watch, load.ids)
    logs = Logs(servers)
    prober = Prober(replicas.live, load.ids[0])
    prober.start()
    fault_start = time.monotonic()
    db_proxy.cut()
    time.sleep(10.0)  # the fault itself: ten seconds without the database
    baseline = pg_watch.max_seqs(active := pg_watch.active(load.ids))
    db_proxy.restore()
    back = time.monotonic()
    progress = pg_watch.wait_progress(baseline, since=back, timeout=10)
    check_disruption(sc, "network back", progress, active, target=RESUME_TARGET, all_within=2.0)
    check_readiness(sc, prober.results, fault=(fault_start, back), settle=2.0)
    conclude(
        sc,
        load=load,
        watch=pg_watch,
        servers=replicas.live(),
        logs=logs,
        prober=prober,
        fault=(fault_start, back),
    )
    sc.finish()


def test_connections_reset_under_load(
    chaos_pg: OwnPostgres, pg_db: str, db_proxy: Proxy, pg_watch: DbWatch, replicas: Replicas
) -> None:
    """Every database connection of two replicas reset (RST) three times, 1 s apart, as when a
    NAT, a load balancer or a failover drops them, while the replicas stream 8 countdowns over a
    slowed network (50 ms each way, so that statements are in flight when the resets land: an
    idle pooled connection is simply replaced by the pool's pre-ping, a failed outbox commit is
    retried on a new connection). Proves: nothing lost or duplicated; clients saw only 503/429
    with Retry-After, clean stream ends; no traceback; after each reset the first resumed event
    within 1 s."""
    sc = Scenario("connections reset (x3) under load")
    servers = replicas.start(_url(chaos_pg, db_proxy, pg_db), 2, env=_lease(6))
    load = start_load(replicas.live, 8, n=10, delay=0.2)
    wait_ticking(pg_watch, load.ids)
    logs = Logs(servers)
    prober = Prober(replicas.live, load.ids[0])
    prober.start()
    db_proxy.slow(0.05)
    firsts: list[float | None] = []
    resets: list[int] = []
    fault_start = time.monotonic()
    for _ in range(3):
        resets.append(db_proxy.reset())
        at = time.monotonic()
        baseline = pg_watch.max_seqs(pg_watch.active(load.ids))
        progress = pg_watch.wait_progress(baseline, since=at, timeout=5, until_all=False)
        firsts.append(min(progress.values()) if progress else None)
        time.sleep(max(0.0, at + 1.0 - time.monotonic()))
    db_proxy.restore()
    sc.metric(
        "connections reset", f"{resets} ({db_proxy.stats.reset_in_flight} in the middle of a statement)"
    )
    if not db_proxy.stats.reset_in_flight:
        raise RuntimeError("no reset landed on a statement in flight: the scenario tested nothing")
    sc.metric(
        "disruption (reset -> first resumed event)",
        ", ".join(fmt_s(f) for f in firsts) + f"; target < {RESUME_TARGET:g}s",
    )
    sc.expect(all(f is not None for f in firsts), "a reset after which no response resumed")
    sc.timing(
        all(f is not None and f < RESUME_TARGET for f in firsts),
        f"first resumed event after each reset: {[fmt_s(f) for f in firsts]} (target < {RESUME_TARGET:g}s)",
    )
    fault = (fault_start, time.monotonic())
    conclude(sc, load=load, watch=pg_watch, servers=replicas.live(), logs=logs, prober=prober, fault=fault)
    sc.finish()


# What the fixer's log lines must look like (any wording with these words, case-insensitive).
LISTEN_DOWN_LOG = r"listen\w*\b.*\b(lost|dropped|closed|failed|down|reset)"
LISTEN_BACK_LOG = r"listen\w*\b.*\b(re-?established|reconnected|restored|is back|back up|resumed)"


def test_listen_connection_cut(
    chaos_pg: OwnPostgres, pg_db: str, db_proxy: Proxy, pg_watch: DbWatch, replicas: Replicas
) -> None:
    """Only the LISTEN connections are reset (the proxy tells them by the `LISTEN` they sent;
    queries and commits go on) while replica A runs 6 countdowns and their clients stream them
    from replica B, whose relays are woken by NOTIFY. Proves: nothing lost or duplicated; B's
    streams go on (first event after the cut within 1 s, not the relays' 5 s fallback timer);
    the drop and the re-established LISTEN are each logged."""
    sc = Scenario("LISTEN connection cut")
    url = _url(chaos_pg, db_proxy, pg_db)
    a, b = replicas.start(url, 2)
    db_proxy.wait_open(2, LISTEN_MARKER)
    load = start_load(
        lambda: [a.base_url], 6, n=12, delay=0.2, follow=lambda: [b.base_url], stream_create=False
    )
    wait_ticking(pg_watch, load.ids)
    logs = Logs([a, b])
    cut = time.monotonic()
    sc.metric("LISTEN connections reset", db_proxy.reset(LISTEN_MARKER))
    # Events committed from here on can reach B's relays only once its LISTEN is back (or by
    # the relays' fallback timer).
    baseline = pg_watch.max_seqs(pg_watch.active(load.ids))
    relisten = db_proxy.wait_open(2, LISTEN_MARKER, timeout=15)
    sc.metric("LISTEN re-established after", fmt_s(relisten - cut))
    deadline = cut + 8
    first: float | None = None
    while first is None and time.monotonic() < deadline:
        arrivals = [
            t
            for c in load.clients
            for s, (t, _e) in list(c.events.items())
            if s > baseline.get(c.response_id or "", 1 << 30)
        ]
        first = min(arrivals) - cut if arrivals else None
        time.sleep(0.02)
    sc.metric(
        "disruption (LISTEN cut -> first new event on the other replica's streams)",
        f"{fmt_s(first)}; target < {RESUME_TARGET:g}s",
    )
    sc.expect(first is not None, "no new event reached replica B's streams after the cut")
    sc.timing(
        first is not None and first < RESUME_TARGET,
        f"first event through replica B {fmt_s(first)} after the cut (target < {RESUME_TARGET:g}s)",
    )
    conclude(sc, load=load, watch=pg_watch, servers=replicas.live(), logs=logs, fault=(cut, relisten))
    scan_b = logs.scans()[1]
    dropped = scan_b.grep(LISTEN_DOWN_LOG)
    back = [ln for ln in scan_b.grep(LISTEN_BACK_LOG) if ln not in dropped]
    sc.metric("replica B's LISTEN log lines", dropped + back)
    sc.expect(bool(dropped), "replica B logged nothing when its LISTEN connection dropped")
    sc.expect(bool(back), "replica B logged nothing when its LISTEN connection was re-established")
    sc.finish()
