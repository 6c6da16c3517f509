"""What the store's query modules share: the database, and the translation of its errors.

Invariant: every query opens its connection through `_read()` or `_write()`, so a database
that cannot be used surfaces as `DatabaseUnavailable` (`errors.classify`) from every method,
never as a driver's exception; anything else (a lost lease, a constraint) passes unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from ..observability import metrics
from .db._engine import SQLITE, Database, outside_transaction
from .errors import classify
from .ops.health import Op
from .records import CheckpointRow, ResponseRow


def response_row(row: Any) -> ResponseRow:
    return ResponseRow(**dict(row._mapping))


def checkpoint_row(row: Any) -> CheckpointRow:
    return CheckpointRow(**dict(row._mapping))


class StoreBase:
    db: Database
    dialect: str
    lease_seconds: float

    @contextlib.asynccontextmanager
    async def _read(self) -> AsyncIterator[AsyncConnection]:
        """A reader connection; the database's unavailability raised as `DatabaseUnavailable`."""
        try:
            async with self.db.reader.connect() as conn:
                if self.db.reads_outside_transactions:
                    with outside_transaction((await conn.get_raw_connection()).dbapi_connection):
                        yield conn
                else:
                    yield conn
        except Exception as exc:
            unavailable = classify(exc)
            if unavailable is None:
                raise
            metrics.database_error(unavailable.reason.value)
            self.db.failed(unavailable, Op.READ)
            raise unavailable from exc
        self.db.health.succeeded(Op.READ)

    async def _driver_fetch(self, pg_query: str, sqlite_query: str, *args: Any) -> list[Any]:
        """A query on a reader connection's own driver connection (asyncpg: `pg_query`, `$n`
        parameters; aiosqlite: `sqlite_query`, `?`), outside a transaction: its rows as the
        driver makes them. Only where `Database.driver_reads`. For a page of 2,000 events
        SQLAlchemy's statement and result handling cost 2-4x the driver's own (server CPU,
        measured: PostgreSQL 1.86 vs 0.43 us per row and 365 vs 52 us per page)."""
        return (await self._driver_fetches((pg_query, sqlite_query, args)))[0]

    async def _driver_fetches(self, *queries: tuple[str, str, tuple[Any, ...]]) -> list[list[Any]]:
        """`_driver_fetch` of each of `queries` (PostgreSQL's, SQLite's, the arguments), one
        after another on one reader connection: one checkout (on PostgreSQL, one ping) for all."""
        assert self.db.driver_reads
        async with self._read() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            if self.dialect == SQLITE:
                return [list(await driver.execute_fetchall(q, args)) for _, q, args in queries]
            return [list(await driver.fetch(q, *args)) for q, _, args in queries]

    @contextlib.asynccontextmanager
    async def _write(self) -> AsyncIterator[AsyncConnection]:
        """A transaction on the writer, committed at the end; errors as in `_read`."""
        try:
            async with self.db.writer.begin() as conn:
                yield conn
        except Exception as exc:
            unavailable = classify(exc)
            if unavailable is None:
                raise
            metrics.database_error(unavailable.reason.value)
            self.db.failed(unavailable, Op.WRITE)
            raise unavailable from exc
        self.db.health.succeeded(Op.WRITE)
