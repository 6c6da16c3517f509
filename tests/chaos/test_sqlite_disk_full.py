"""SQLite (the embedded default) on a small volume that fills up under load, then is freed.

The database lives on its own 8 MB tmpfs; once four countdowns are ticking, a filler file
takes every free byte, so SQLite's next write that needs space fails with "database or disk
is full". After the fault has bitten for 3 s the filler is deleted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .checks import Scenario, check_readiness, fmt_s
from .conftest import Replicas, SmallVolume
from .flow import Logs, check_disruption, conclude, start_load, wait_ticking
from .harness import DbWatch, LogScan, Prober

pytestmark = pytest.mark.chaos

HOLD = 3.0  # seconds the disk stays full once writes fail


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def test_sqlite_disk_full_then_freed(small_volume: Callable[[str], SmallVolume], replicas: Replicas) -> None:
    """Proves: nothing lost or duplicated, every response completes once space is back (first
    resumed event within 1 s, none stuck or failed); while the disk is full every error is a
    503/429 with Retry-After and `/readiness` fails; streams end cleanly; no traceback."""
    sc = Scenario("SQLite disk full, then freed")
    vol = small_volume("8m")
    db = vol.path / "durable-responses.db"
    wal = Path(f"{db}-wal")
    (srv,) = replicas.start(f"sqlite:///{db}", 1)
    watch = DbWatch(sqlite_path=db)
    load = start_load(replicas.live, 4, n=20, delay=0.15)
    wait_ticking(watch, load.ids)
    logs = Logs([srv])
    prober = Prober(replicas.live, load.ids[0])
    prober.start()
    wal_before = _size(wal)
    filler = vol.fill()
    filled = time.monotonic()

    def bitten() -> bool:
        failed = any(
            a.status not in (None, 200) for a in prober.results if a.t >= filled and a.kind == "post"
        )
        return failed or bool(LogScan.of(srv.log_path, logs.offsets[srv.log_path]).grep("full"))

    bit = watch.wait_for("a write refused for lack of space", bitten, timeout=15)
    sc.metric(
        "disk full", f"writes failed {fmt_s(bit - filled)} after the volume filled (WAL {wal_before} bytes)"
    )
    time.sleep(HOLD)  # the fault itself: the disk stays full
    active = watch.active(load.ids)
    baseline = watch.max_seqs(active)
    filler.unlink()
    back = time.monotonic()
    progress = watch.wait_progress(baseline, since=back, timeout=10)
    check_disruption(sc, "space freed", progress, active, target=1.0, all_within=2.0)
    check_readiness(sc, prober.results, fault=(bit, back), settle=0.5)
    conclude(
        sc,
        load=load,
        watch=watch,
        servers=replicas.live(),
        logs=logs,
        prober=prober,
        settle=15,
        fault=(bit, back),
    )
    sc.metric("WAL bytes", f"{wal_before} before the fault, {_size(wal)} at the end (volume 8 MB)")
    watch.close()
    sc.finish()
