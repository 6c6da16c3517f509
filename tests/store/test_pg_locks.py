"""How the store's transactions share response rows on PostgreSQL (the machine's server,
directly): a lease renewal that PostgreSQL aborts to break a deadlock runs again instead of
failing (the lease keeper logged it as an error, with a traceback)."""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from server.store import Store

from .helpers import owned

A, B = "resp_lock_a", "resp_lock_b"


async def _deadlocks(store: Store) -> int:
    async with store.db.reader.connect() as conn:
        q = text("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")
        return int((await conn.execute(q)).scalar() or 0)


async def test_a_renewal_aborted_for_a_deadlock_runs_again(pg_url: str) -> None:
    store = Store.open(pg_url)
    await store.start()
    try:
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
            await asyncio.sleep(0.3)  # the renewal holds A and waits for B
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
    finally:
        async with store.db.writer.begin() as conn:
            await conn.execute(text("DELETE FROM responses WHERE id IN (:a, :b)"), {"a": A, "b": B})
        await store.close()
