"""Database URLs and engines for the two dialects.

Invariant: every URL a user may give (`sqlite:///path`, `postgresql://user@host/db`, their
async driver forms, `postgres://`) maps to one async SQLAlchemy URL; SQLite always runs in WAL
mode with `synchronous=FULL`, so a committed event survives a `kill -9` and a power cut.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool, StaticPool

SQLITE = "sqlite"
POSTGRESQL = "postgresql"


class BadDatabaseURL(ValueError):
    pass


def _redact_raw(raw: str) -> str:
    """`raw` with any password masked: error messages end up in logs."""
    return re.sub(r"(://[^:/@\s]*):[^@\s]*@", r"\1:***@", raw.strip())


def normalize_url(raw: str) -> URL:
    """Map a user's database URL to its async driver form."""
    text = raw.strip()
    if text.startswith("postgres://"):
        text = "postgresql://" + text[len("postgres://") :]
    try:
        url = make_url(text)
    except Exception as exc:  # SQLAlchemy raises ArgumentError with a terse message
        raise BadDatabaseURL(
            f"cannot parse database URL {_redact_raw(raw)!r}: "
            "use sqlite:///path/to.db or postgresql://user@host/db"
        ) from exc
    backend = url.get_backend_name()
    if backend == SQLITE:
        return url.set(drivername="sqlite+aiosqlite")
    if backend == POSTGRESQL:
        query = dict(url.query)
        # libpq's sslmode has no asyncpg spelling; asyncpg takes `ssl` with the same values.
        if "sslmode" in query:
            query["ssl"] = query.pop("sslmode")
        return url.set(drivername="postgresql+asyncpg", query=query)
    raise BadDatabaseURL(
        f"unsupported database {backend!r} in {_redact_raw(raw)!r}: use sqlite or postgresql"
    )


def raw_pg_dsn(url: URL) -> str:
    """The DSN for a plain asyncpg connection (LISTEN, the outbox's writer) to `url`'s database.

    `normalize_url` spells libpq's `sslmode` as SQLAlchemy's asyncpg `ssl`; asyncpg's own DSN
    parser knows only `sslmode` (it would send `ssl` to the server as a setting).
    """
    query = dict(url.query)
    if "ssl" in query:
        query["sslmode"] = query.pop("ssl")
    return url.set(drivername="postgresql", query=query).render_as_string(hide_password=False)


def sqlite_path(url: URL) -> str | None:
    db = url.database
    if not db or db == ":memory:":
        return None
    return db


def redact(url: URL) -> str:
    return url.render_as_string(hide_password=True)


@dataclass
class Database:
    """The engines of one database: a single-connection writer and a pool of readers.

    SQLite allows one writer at a time; giving writes their own connection that begins with
    `BEGIN IMMEDIATE` avoids lock-upgrade deadlocks between our own tasks, and readers in WAL
    mode never wait for it. PostgreSQL uses one pool for both.
    """

    url: URL
    dialect: str
    writer: AsyncEngine
    reader: AsyncEngine

    async def dispose(self) -> None:
        await self.writer.dispose()
        if self.reader is not self.writer:
            await self.reader.dispose()


def _sqlite_engine(url: URL, *, immediate: bool, pool_size: int) -> AsyncEngine:
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=0,
        connect_args={"timeout": 30, "check_same_thread": False},
    )

    _configure_sqlite(engine.sync_engine, immediate=immediate)
    return engine


_BUSY_TIMEOUT_MS = 30_000


def _switch_to_wal(cur: Any) -> None:
    """`PRAGMA journal_mode=WAL`, retried while another connection holds the file.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is
    locked" at once there instead of calling the busy handler (seen with two `migrate` runs
    racing on a new file). Once the file is in WAL mode (it stays so) the pragma needs no lock.
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:  # sqlite3.OperationalError, or aiosqlite's adapted one
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _configure_sqlite(engine: Engine, *, immediate: bool) -> None:
    """WAL, full sync, a busy timeout, and transactions we begin ourselves."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Manage transactions ourselves (pysqlite's implicit BEGIN is deferred and lazy).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        # The busy timeout first: switching a new file to WAL needs a lock another process
        # (a concurrent `migrate`) may hold, and would fail at once without it.
        cur.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        _switch_to_wal(cur)
        cur.execute("PRAGMA synchronous=FULL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def open_database(raw_url: str, *, pool_size: int = 10) -> Database:
    url = normalize_url(raw_url)
    if url.get_backend_name() == SQLITE:
        path = sqlite_path(url)
        if path is None:
            raise BadDatabaseURL("an in-memory SQLite database cannot be shared; give a file path")
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        writer = _sqlite_engine(url, immediate=True, pool_size=1)
        reader = _sqlite_engine(url, immediate=False, pool_size=pool_size)
        return Database(url=url, dialect=SQLITE, writer=writer, reader=reader)
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
    )
    return Database(url=url, dialect=POSTGRESQL, writer=engine, reader=engine)


def sync_engine_for_migrations(raw_url: str) -> AsyncEngine:
    """A throwaway engine for Alembic, which must not share the server's pools."""
    url = normalize_url(raw_url)
    if url.get_backend_name() == SQLITE:
        path = sqlite_path(url)
        if path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        return _sqlite_engine(url, immediate=True, pool_size=1)
    return create_async_engine(url, poolclass=NullPool)


def sqlite_sync_engine(url: URL) -> Engine:
    """The outbox's own writing connection (stdlib sqlite3, used from one thread)."""
    engine = create_engine(
        url.set(drivername="sqlite"),
        poolclass=StaticPool,
        connect_args={"timeout": 30, "check_same_thread": False},
    )

    _configure_sqlite(engine, immediate=True)
    return engine
