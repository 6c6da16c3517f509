"""Issue 39 at the store: a hand-off is no recovery (both dialects), and on PostgreSQL an owner's
death is known by its liveness lock (store/db/_pg_liveness.py) before its lease expires."""

from __future__ import annotations

import asyncio
import time

from sqlalchemy import event as sa_event

from durable_responses.store import LIVE_MARK, Store, Write

from .conftest import LEASE_SECONDS, StoreFactory
from .helpers import event, response


async def test_a_hand_off_is_not_counted_as_a_recovery(store: Store) -> None:
    now = time.time()
    await store.insert_response(response("handed", lease_owner="p1", lease_expires_at=now + 60), [], [])
    await store.insert_response(response("crashed", lease_owner="p2", lease_expires_at=now - 1), [], [])
    await store.release_leases("p1")  # p1's graceful shutdown
    claimed = {r.id: r.recovery_count for r in await store.claim_expired("p3")}
    assert claimed == {"handed": 0, "crashed": 1}


async def test_a_write_queued_at_the_hand_off_commits_before_it(store: Store) -> None:
    """A run's write still queued when its process hands off commits first: committed after the
    release, its fence would renew the handed-off lease (it looks expired), and the next owner's
    claim would count a recovery (seen: 2 of 8 responses after a SIGTERM hand-off at load ~7)."""
    await store.insert_response(response("r", lease_owner="p1", lease_expires_at=time.time() + 1), [], [])
    queued = store.submit(Write("r", "p1", events=[event(0)]))  # renews: most of the lease is gone
    await store.hand_off("p1")
    assert queued.done() and queued.exception() is None
    assert await store.max_event_seq("r") == 0
    claimed = {r.id: r.recovery_count for r in await store.claim_expired("p2")}
    assert claimed == {"r": 0}


async def _started(db_url: str, owner: str) -> Store:
    store = Store.open(db_url, lease_seconds=LEASE_SECONDS)
    await store.start(owner)
    return store


async def test_a_dead_owner_is_known_by_its_liveness_lock(store_factory: StoreFactory, db_url: str) -> None:
    seed = await store_factory()
    if seed.dialect != "postgresql":
        # SQLite's proof is its lock file (a restarted process alone); no session lock here.
        assert not seed.liveness_possible
        return
    assert seed.liveness_possible
    a_owner, b_owner, c_owner = (f"host:{n}{LIVE_MARK}{n:08x}" for n in (1, 2, 3))
    a, b, c = [await _started(db_url, o) for o in (a_owner, b_owner, c_owner)]
    try:
        for s in (a, b, c):
            assert s.judges_liveness and s.liveness_key is not None and s.liveness_database is not None
        now = time.time()
        for i in range(6):
            row = response(f"of_a_{i}", lease_owner=a_owner, lease_expires_at=now + 60)
            await seed.insert_response(row, [], [])
        await seed.insert_response(response("of_b", lease_owner=b_owner, lease_expires_at=now + 60), [], [])
        # An unmarked owner without a lock (a process through a transaction pooler): never "dead".
        await seed.insert_response(
            response("plain", lease_owner="host:9:abc", lease_expires_at=now + 60), [], []
        )
        assert b.liveness_database is not None
        members = await b.live_members(b.liveness_database)
        assert sorted(members) == sorted(s.liveness_key for s in (a, b, c))  # type: ignore[type-var]
        assert await b.dead_owned(b_owner, members) == []
        await a.close()  # its session ends: the lock is gone at once (a kill -9 does the same)
        for _ in range(100):
            members = await b.live_members(b.liveness_database)
            if len(members) == 2:
                break
            await asyncio.sleep(0.02)
        assert len(members) == 2
        dead = await b.dead_owned(b_owner, members)
        assert [rid for rid, _ in dead] == [f"of_a_{i}" for i in range(6)]
        assert {old for _, old in dead} == {a_owner}
        # Claimed while its dead owner is still the one found; not again by another survivor.
        got_b = await b.claim_dead(b_owner, dead[::2])
        got_c = await c.claim_dead(c_owner, dead)
        assert sorted(r.id for r in got_b) == ["of_a_0", "of_a_2", "of_a_4"]
        assert sorted(r.id for r in got_c) == ["of_a_1", "of_a_3", "of_a_5"]
        assert all(r.recovery_count == 1 for r in got_b + got_c)
        assert await c.dead_owned(c_owner, members) == []
    finally:
        for s in (a, b, c):
            await s.close()


async def test_live_members_are_read_on_the_lock_connection(store_factory: StoreFactory, db_url: str) -> None:
    """Recovery asks for the members every LIVENESS_POLL: while a process holds its lock, the
    read goes over that lock's own connection (no pool checkout), with the pool's answer; once
    the lock's connection is gone, through the pool again."""
    seed = await store_factory()
    if seed.dialect != "postgresql":
        return  # no liveness lock on SQLite (see above)
    owners = [f"host:{n}{LIVE_MARK}{n:08x}" for n in (4, 5)]
    a, b = [await _started(db_url, o) for o in owners]
    try:
        database = a.liveness_database
        assert database is not None
        checkouts: list[object] = []
        pool = a.db.reader.sync_engine.pool
        listener = lambda *_args: checkouts.append(1)  # noqa: E731
        sa_event.listen(pool, "checkout", listener)
        try:
            members = await a.live_members(database)
            assert checkouts == []
            assert sorted(members) == sorted(s.liveness_key for s in (a, b))  # type: ignore[type-var]
            await a.close_liveness()  # the lock and its connection are gone
            assert await a.live_members(database) == [b.liveness_key]
            assert checkouts, "without its lock connection the read goes through the pool"
        finally:
            sa_event.remove(pool, "checkout", listener)
    finally:
        for s in (a, b):
            await s.close()
