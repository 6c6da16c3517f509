"""How the store connects to PostgreSQL (the machine's server, directly): LISTEN on its own URL
or off, the pooler probe on a direct connection, the connections' application name, pool sizes
from the settings. Poolers, TLS and tokens: tests/postgres."""

from __future__ import annotations

import asyncio
import logging

import pytest
from sqlalchemy import text

from server.store import ConnectionOptions, Store
from server.store.settings import StoreSettings


async def _until(cond: object, timeout: float = 5) -> bool:
    for _ in range(int(timeout * 100)):
        if cond():  # type: ignore[operator]
            return True
        await asyncio.sleep(0.01)
    return False


async def test_listen_off_makes_relays_poll_and_says_so(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="durable_responses.store")
    store = Store.open(pg_url, connection=ConnectionOptions(listen_url="off"))
    await store.start()
    try:
        await asyncio.sleep(0.2)
        assert store.cross_process_wakeups is False
        assert any("LISTEN is off" in r.getMessage() for r in caplog.records)
    finally:
        await store.close()


async def test_listen_on_its_own_url(pg_url: str) -> None:
    store = Store.open(
        "postgresql://nobody@127.0.0.1:1/unused", connection=ConnectionOptions(listen_url=pg_url)
    )
    await store.start()
    try:
        assert await _until(lambda: store.cross_process_wakeups)  # LISTEN is up; the main URL is not
    finally:
        await store.close()


async def test_a_direct_connection_is_no_transaction_pooler(pg_url: str) -> None:
    store = Store.open(pg_url)
    await store.start()
    try:
        stats = store.stats
        assert (stats.transaction_pooler, stats.prepared_statements) == (False, True)
        async with store.db.reader.connect() as conn:
            name = (await conn.execute(text("SELECT current_setting('application_name')"))).scalar()
        assert name == "durable-responses"  # operators can tell our connections apart
    finally:
        await store.close()


def test_pool_sizes_come_from_the_settings() -> None:
    settings = StoreSettings.from_env(
        {"DURABLE_RESPONSES_PG_POOL_SIZE": "3", "DURABLE_RESPONSES_PG_POOL_OVERFLOW": "0"}
    )
    options = settings.connection_options()
    assert (options.pool_size, options.pool_overflow, options.listen_url) == (3, 0, "")
    store = Store.open("postgresql://u@127.0.0.1:1/db", connection=options)
    pool = store.db.reader.sync_engine.pool
    assert (pool.size(), pool._max_overflow) == (3, 0)  # type: ignore[attr-defined]
