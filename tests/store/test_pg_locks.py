"""How the store's transactions share response rows on PostgreSQL (the machine's server,
directly): every transaction that takes several response rows takes them in id order (two that
take the same rows in different orders deadlock, and PostgreSQL breaks that only after its
`deadlock_timeout`, a second in which the writes wait), and a lease renewal that PostgreSQL
aborts to break a deadlock all the same runs again instead of failing (the lease keeper logged
it as an error, with a traceback); and a superstep's write rewrites its response's row only
when something of it changes (a fresh lease is locked and checked, as on SQLite)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import pytest
from sqlalchemy import text

from durable_responses.store import LeaseLost, Store, Write

from .helpers import events, owned

A, B = "resp_lock_a", "resp_lock_b"


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[Store]:
    """A started store on the machine's PostgreSQL; the rows of A and B go at the end."""
    store = Store.open(pg_url)
    await store.start()
    try:
        yield store
    finally:
        async with store.db.writer.begin() as conn:
            await conn.execute(text("DELETE FROM events WHERE response_id IN (:a, :b)"), {"a": A, "b": B})
            await conn.execute(text("DELETE FROM responses WHERE id IN (:a, :b)"), {"a": A, "b": B})
        await store.close()


async def _deadlocks(store: Store) -> int:
    async with store.db.reader.connect() as conn:
        q = text("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return int((await conn.execute(q)).scalar() or 0)


async def _wait_blocked_by(conn: Any, pid: int, timeout: float = 10) -> None:
    """Wait until another backend waits for a lock that backend `pid` holds."""
    query = "SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await conn.fetchval(query, pid):
        assert loop.time() < deadline, f"no backend waited for a lock of {pid} within {timeout} s"
        await asyncio.sleep(0.01)


async def test_a_renewal_aborted_for_a_deadlock_runs_again(store: Store) -> None:
    for rid in (A, B):
        await store.insert_response(owned(rid, "p1"), [], [])
    before = await _deadlocks(store)
    async with store.db.writer.connect() as other:
        x = (await other.get_raw_connection()).driver_connection
        assert x is not None
        # The other transaction takes B, then A: the reverse of the renewal's id order. Its
        # deadlock timeout is long, so PostgreSQL breaks the deadlock on the renewal's side.
        await x.execute("SET deadlock_timeout = '10s'")
        tx = x.transaction()
        await tx.start()
        await x.execute("UPDATE responses SET usage = usage WHERE id = $1", B)
        renewal = asyncio.create_task(store.renew_leases("p1", [B, A]))
        async with store.db.reader.connect() as watcher:
            w = (await watcher.get_raw_connection()).driver_connection
            await _wait_blocked_by(w, x.get_server_pid())  # the renewal holds A and waits for B
        await x.execute("UPDATE responses SET usage = usage WHERE id = $1", A)  # a deadlock
        await tx.commit()
        await x.execute("RESET deadlock_timeout")
    assert await asyncio.wait_for(renewal, 10) == {A, B}
    # (pg_stat_database is updated when the aborted session reports; give it a moment.)
    for _ in range(50):
        if await _deadlocks(store) > before:
            break
        await asyncio.sleep(0.1)
    assert await _deadlocks(store) == before + 1  # there was one, and the renewal lost it


async def test_a_batch_of_superstep_writes_locks_its_rows_in_id_order(store: Store) -> None:
    """While the batch waits for B (held by another transaction), it already holds A: it took
    the smaller id first, whatever order its join visits the rows in (B is the table's first
    row here, so a scan in the table's order meets B first)."""
    for rid in (B, A):
        await store.insert_response(owned(rid, "p1"), [], [])
    async with store.db.writer.connect() as other, store.db.writer.connect() as probe:
        x = (await other.get_raw_connection()).driver_connection
        y = (await probe.get_raw_connection()).driver_connection
        assert x is not None and y is not None
        tx = x.transaction()
        await tx.start()
        try:
            await x.execute("UPDATE responses SET usage = usage WHERE id = $1", B)
            # One batch: both are queued before the outbox's writer takes any.
            writes = [store.submit(Write(rid, "p1", events=events(1, 3))) for rid in (B, A)]
            await _wait_blocked_by(y, x.get_server_pid())  # the batch's statement waits for B
            assert not any(w.done() for w in writes)
            with pytest.raises(asyncpg.LockNotAvailableError):
                await y.execute("SELECT id FROM responses WHERE id = $1 FOR UPDATE NOWAIT", A)
        finally:
            await tx.commit()  # lets the batch go on, whatever the check found
    await asyncio.wait_for(asyncio.gather(*writes), 10)
    for rid in (A, B):
        assert [e.seq for e in await store.read_events(rid, 0)] == [1, 2]


async def _xmin(store: Store, rid: str) -> str:
    async with store.db.reader.connect() as conn:
        q = text("SELECT xmin::text FROM responses WHERE id = :id")
        return str((await conn.execute(q, {"id": rid})).scalar())


async def test_a_fresh_lease_is_checked_not_rewritten(store: Store) -> None:
    """Every batch of a live stream fences each of its responses: a new row version each time
    (its WAL, its dead tuple) cost the database ~40% of its CPU per 17-response batch. The row's
    `xmin` (the transaction that wrote this version) stays while only events commit, and moves
    once the write changes the response (its status)."""
    await store.insert_response(owned(A, "p1"), [], [])
    before = await _xmin(store, A)
    await store.submit(Write(A, "p1", events=events(1, 3)))
    assert await _xmin(store, A) == before
    with pytest.raises(LeaseLost):
        await store.submit(Write(A, "p2", events=events(3, 4)))  # still fenced
    await store.submit(Write(A, "p1", events=events(3, 4), status="in_progress"))
    assert await _xmin(store, A) != before
    assert [e.seq for e in await store.read_events(A, 0)] == [1, 2, 3]
