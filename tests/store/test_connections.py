"""How the store connects to PostgreSQL (the machine's server, directly): LISTEN on its own URL
or off, the pooler probe on a direct connection, the connections' application name, pool sizes
from the settings. Poolers, TLS and tokens: tests/postgres."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import pytest
from sqlalchemy import text

from durable_responses.store import ConnectionOptions, Store
from durable_responses.store.settings import StoreSettings


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


async def _statements_of_the_pools_connection(
    url: str, work: Callable[[Store], Awaitable[None]]
) -> list[str]:
    """The plain statements (BEGIN, ROLLBACK, the pool's ping `;`; not the queries, which
    SQLAlchemy's prepared statements do not log and the driver's own reads do) the pool's one
    connection sent while `work` ran."""
    store = Store.open(url, connection=ConnectionOptions(pool_size=1, pool_overflow=0, listen_url="off"))
    await store.start()
    try:
        await store.get_response("resp_warm", None)  # the pool's connection exists
        seen: list[str] = []
        async with store.db.reader.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            raw.add_query_logger(lambda record: seen.append(record.query.strip().rstrip(";").upper()))
        await work(store)
        return [q for q in seen if not q.startswith("SELECT ")]
    finally:
        await store.close()


async def _two_reads(store: Store) -> None:
    assert await store.get_response("resp_none", None) is None
    assert await store.read_events("resp_none", -1) == []


async def test_a_read_on_its_own_session_is_the_ping_and_the_query(pg_url: str) -> None:
    """Where a connection keeps its server session, a read is one round trip for the pool's
    ping and one for its statement: no BEGIN and ROLLBACK around either."""
    assert await _statements_of_the_pools_connection(pg_url, _two_reads) == ["", ""]


async def test_behind_a_transaction_pooler_reads_keep_their_transactions(pg_url: str) -> None:
    """`prepared_statements=false` (a transaction pooler): the ping and each read run inside a
    transaction, which keeps the client on one server session."""
    seen = await _statements_of_the_pools_connection(pg_url + "?prepared_statements=false", _two_reads)
    assert seen == ["BEGIN", "", "ROLLBACK", "BEGIN", "ROLLBACK"] * 2


async def test_a_write_after_reads_still_commits_as_one_transaction(pg_url: str) -> None:
    """A write on the connection the reads used (they left it out of a transaction only for
    their own time): BEGIN ... COMMIT."""

    async def read_then_write(store: Store) -> None:
        await _two_reads(store)
        assert await store.request_cancel("resp_none", "alice") is None

    seen = await _statements_of_the_pools_connection(pg_url, read_then_write)
    assert seen == ["", "", "", "BEGIN", "COMMIT"]  # the BEGIN as before: the server's default isolation


def test_pool_sizes_come_from_the_settings() -> None:
    settings = StoreSettings.from_env(
        {"DURABLE_RESPONSES_PG_POOL_SIZE": "3", "DURABLE_RESPONSES_PG_POOL_OVERFLOW": "0"}
    )
    options = settings.connection_options()
    assert (options.pool_size, options.pool_overflow, options.listen_url) == (3, 0, "")
    store = Store.open("postgresql://u@127.0.0.1:1/db", connection=options)
    pool = store.db.reader.sync_engine.pool
    assert (pool.size(), pool._max_overflow) == (3, 0)  # type: ignore[attr-defined]
