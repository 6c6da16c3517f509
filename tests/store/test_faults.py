"""Issue 15 in the store: health (one log line per condition change), leases after an outage
(own stranded responses, the next expiry, dead owners on an SQLite file), commits in doubt."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from durable_responses.store import DatabaseUnavailable, Store, Unavailable, Write
from durable_responses.store.db._lockfile import LockFile
from durable_responses.store.ops.health import DatabaseHealth, Op
from durable_responses.store.write._in_doubt import committed_anyway
from durable_responses.store.write._pg_writer import PgWriter

from .helpers import checkpoint, event, owned, response

# -- health --------------------------------------------------------------------------------


def test_health_logs_each_condition_change_once(caplog: pytest.LogCaptureFixture) -> None:
    health = DatabaseHealth(reminder_seconds=3600)
    down = DatabaseUnavailable(Unavailable.UNREACHABLE, "ConnectionRefusedError: refused")
    with caplog.at_level(logging.INFO, logger="durable_responses.database"):
        for _ in range(50):
            health.failed(down, Op.READ)
        assert health.down is not None and not health.writes_failing
        health.failed(down, Op.WRITE)  # a new condition: writes fail too
        for _ in range(50):
            health.failed(down, Op.WRITE)
        assert health.writes_failing
        health.succeeded(Op.READ)  # reads work again: writes must prove themselves
        assert health.writes_failing
        health.succeeded(Op.WRITE)
        assert health.down is None and not health.writes_failing
        for _ in range(10):
            health.succeeded(Op.WRITE)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert "unavailable" in lines[0] and "still unavailable" in lines[1] and "is back" in lines[2]


def test_health_reminds_while_down(caplog: pytest.LogCaptureFixture) -> None:
    health = DatabaseHealth(reminder_seconds=0.05)
    full = DatabaseUnavailable(Unavailable.FULL, "OperationalError: database or disk is full")
    with caplog.at_level(logging.INFO, logger="durable_responses.database"):
        health.failed(full, Op.WRITE)
        time.sleep(0.06)
        health.failed(full, Op.WRITE)
        health.failed(full, Op.WRITE)
    assert [("still" in r.getMessage()) for r in caplog.records] == [False, True]


# -- leases --------------------------------------------------------------------------------


async def test_claim_own_stranded_responses_without_waiting_for_the_lease(store: Store) -> None:
    """A process whose run stopped on a database error takes its own response back at once
    (its lease, still valid, proves nobody else has it), without spending a recovery."""
    await store.insert_response(owned("resp_mine", "p1"), [], [])
    await store.insert_response(owned("resp_other", "p2"), [], [])
    assert await store.claim_expired("p1") == []
    claimed = await store.claim_expired("p1", own={"resp_mine", "resp_other"})
    assert [r.id for r in claimed] == ["resp_mine"]  # another owner's live lease is no one's to take
    assert claimed[0].recovery_count == 0
    assert await store.claim_expired("p1", own={"resp_other"}) == []


async def test_a_lapsed_lease_of_a_run_still_going_here_is_not_claimed(store: Store) -> None:
    """A process whose lease lapsed while it was busy (its run still going) does not take the
    response over from itself: no recovery counted, no second run; others' expired ones it does."""
    now = time.time()
    await store.insert_response(response("resp_busy", lease_owner="p1", lease_expires_at=now - 5), [], [])
    await store.insert_response(response("resp_dead", lease_owner="p2", lease_expires_at=now - 5), [], [])
    claimed, left = await store.claim_some("p1", busy=["resp_busy"])
    assert [r.id for r in claimed] == ["resp_dead"] and left == 0
    row = await store.get_response("resp_busy", None)
    assert (
        row is not None
        and row.recovery_count == 0
        and row.lease_expires_at is not None
        and row.lease_expires_at < now
    )
    # Once its run is over (no longer busy), a lapsed lease is claimed as any other.
    claimed, _ = await store.claim_some("p3")
    assert [r.id for r in claimed] == ["resp_busy"] and claimed[0].recovery_count == 1


async def test_next_lease_expiry_and_claims_counting_those_left(store: Store) -> None:
    now = time.time()
    assert await store.next_lease_expiry("p1") is None
    await store.insert_response(response("resp_a", lease_owner="p2", lease_expires_at=now + 30), [], [])
    await store.insert_response(response("resp_b", lease_owner="p2", lease_expires_at=now + 10), [], [])
    await store.insert_response(response("resp_c", lease_owner="p1", lease_expires_at=now + 5), [], [])
    await store.insert_response(response("resp_d", lease_owner="dead", lease_expires_at=now - 5), [], [])
    expiry = await store.next_lease_expiry("p1")  # not our own leases
    assert expiry is not None and abs(expiry - (now - 5)) < 0.01
    await store.insert_response(response("resp_e", lease_owner="dead", lease_expires_at=now - 4), [], [])
    claimed, left = await store.claim_some("p1", limit=1)
    assert [r.id for r in claimed] == ["resp_d"] and left == 1


async def test_a_store_alone_on_an_sqlite_file_expires_dead_owners_leases(sqlite_url: str) -> None:
    first = Store.open(sqlite_url)
    await first.start("p1")
    await first.insert_response(owned("resp_1", "p1"), [], [])
    # A second store on the same file is not alone: it must not touch p1's lease.
    second = Store.open(sqlite_url)
    await second.start("p2")
    row = await second.get_response("resp_1", None)
    assert row is not None and row.lease_expires_at is not None and row.lease_expires_at > time.time()
    await second.close()
    # p1 dies (its lock goes with it); its successor is alone and proves p1 dead.
    await first.close()
    successor = Store.open(sqlite_url)
    await successor.start("p3")
    try:
        row = await successor.get_response("resp_1", None)
        assert row is not None and row.lease_expires_at == 0.0
        assert [r.id for r in await successor.claim_expired("p3")] == ["resp_1"]
    finally:
        await successor.close()


def test_lock_file_exclusive_only_when_alone(tmp_path: Path) -> None:
    path = str(tmp_path / "x.db")
    a, b = LockFile(path), LockFile(path)
    assert a.acquire() is True
    assert b.acquire() is False  # a holds it exclusively: b cannot share yet
    assert b.share() is False
    assert a.share() is True  # a converts to shared once it has used its proof
    assert b.share() is True
    c = LockFile(path)
    assert c.acquire() is False  # two alive
    for lock in (a, b, c):
        lock.release()
    d = LockFile(path)
    assert d.acquire() is True
    d.release()


# -- commits in doubt ----------------------------------------------------------------------


async def test_committed_anyway_reads_back_what_committed(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [])
    committed = Write("resp_1", "p1", events=[event(0), event(1)])
    await store.submit(committed)
    lost = Write("resp_1", "p1", events=[event(2)])
    unknowable = Write("resp_1", "p1")
    assert await committed_anyway(store.db, [committed, lost]) == [committed]
    assert await committed_anyway(store.db, [unknowable]) is None


@pytest.mark.parametrize("db_url", ["postgresql", "postgresql-unprepared"], indirect=True)
async def test_the_postgresql_writer_reads_back_on_its_own_connection(store: Store) -> None:
    """On PostgreSQL a commit in doubt is read back by the writer, on its own (new) connection:
    events by their last sequence number (the key of the row that holds it), checkpoints by id,
    nothing for a write without rows."""
    await store.insert_response(owned("resp_1", "p1"), [], [])
    committed = Write("resp_1", "p1", events=[event(0), event(1)])
    await store.submit(committed)
    await store.submit(Write("resp_1", "p1", checkpoint=checkpoint("cp_kept", "resp_1")))
    lost = Write("resp_1", "p1", events=[event(2)])
    kept = Write("resp_1", "p1", checkpoint=checkpoint("cp_kept", "resp_1"))
    gone = Write("resp_1", "p1", checkpoint=checkpoint("cp_gone", "resp_1"))
    assert store.db.connect_raw is not None
    writer = PgWriter(store.db.connect_raw, lease_seconds=store.lease_seconds)
    try:
        assert await writer.committed([committed, lost, kept, gone]) == [committed, kept]
        assert await writer.committed([lost, gone]) == []
        assert await writer.committed([Write("resp_1", "p1")]) is None
    finally:
        await writer.close()
