"""What the store's query modules share: the database, and the translation of its errors.

Invariant: every query opens its connection through `_read()` or `_write()`, so a database
that cannot be used surfaces as `DatabaseUnavailable` (`errors.classify`) from every method,
never as a driver's exception; anything else (a lost lease, a constraint) passes unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, NamedTuple

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncConnection

from ..observability import metrics
from .db._engine import SQLITE, Database, outside_transaction
from .errors import classify
from .ops.health import Op
from .records import CheckpointRow, ResponseRow


class Query(NamedTuple):
    """One read's statement in each form `StoreBase._fetch` runs: asyncpg's (`$1`...), sqlite3's
    (`?`) and SQLAlchemy's (`:p1`..., built once: building a statement per call was a fifth of
    a page's fixed cost)."""

    pg: str
    sqlite: str
    named: TextClause

    @classmethod
    def of(cls, statement: Callable[[tuple[str, ...]], str], params: int) -> Query:
        """The three forms of `statement(marks)`, a statement of `params` parameters."""
        numbers = range(1, params + 1)
        return cls(
            statement(tuple(f"${i}" for i in numbers)),
            statement(("?",) * params),
            text(statement(tuple(f":p{i}" for i in numbers))),
        )


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

    async def _fetch(self, *queries: tuple[Query, tuple[Any, ...]]) -> list[list[Any]]:
        """The rows of each of `queries` (a statement, its arguments), one after another on one
        reader connection: one checkout (on PostgreSQL, one ping) for all.

        Where `Database.driver_reads`, on the connection's own driver, outside a transaction,
        the rows as the driver makes them (SQLite's booleans are integers): for a page of 2,000
        events SQLAlchemy's statement and result handling cost 2-4x the driver's own (server
        CPU, measured: PostgreSQL 1.86 vs 0.43 us per row and 365 vs 52 us per page). Otherwise
        (behind a transaction pooler) through SQLAlchemy, in the transaction it keeps."""
        async with self._read() as conn:
            if not self.db.driver_reads:
                return [
                    list((await conn.execute(q.named, {f"p{i}": v for i, v in enumerate(args, 1)})).all())
                    for q, args in queries
                ]
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            if self.dialect == SQLITE:
                return [list(await driver.execute_fetchall(q.sqlite, args)) for q, args in queries]
            return [list(await driver.fetch(q.pg, *args)) for q, args in queries]

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
