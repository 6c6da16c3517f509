"""Database URLs and engines for the two dialects.

Invariant: every URL a user may give (`sqlite:///path`, `postgresql://user@host/db`, their
async driver forms, `postgres://`) maps to one async SQLAlchemy URL; SQLite always runs in WAL
mode with `synchronous=FULL`, so a committed event survives a `kill -9` and a power cut. Every
PostgreSQL connection, SQLAlchemy's pool included, comes from one `PgConnector` per URL (TLS,
tokens, prepared statements decided in one place: `_pg_connect`).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool, StaticPool
from sqlalchemy.util import await_only

from ..errors import DatabaseUnavailable, Unavailable
from ..ops.health import DatabaseHealth, Op
from ._pg_auth import TokenProvider
from ._pg_connect import PgConnector, libpq_dsn

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
    """The DSN for a plain asyncpg connection to `url`'s database (`_pg_connect.libpq_dsn`)."""
    return libpq_dsn(url)


def sqlite_path(url: URL) -> str | None:
    db = url.database
    if not db or db == ":memory:":
        return None
    return db


def redact(url: URL) -> str:
    return url.render_as_string(hide_password=True)


@dataclass(frozen=True)
class ConnectionOptions:
    """How a server connects to PostgreSQL beyond its URL (`StoreSettings.connection_options`).

    `listen_url`: where LISTEN connects ("" the main URL, "off" nowhere: relays poll).
    """

    pool_size: int = 10
    pool_overflow: int = 10
    connect_timeout: float = 10.0
    listen_url: str = ""
    token: TokenProvider | None = None


@dataclass
class Database:
    """The engines of one database: a single-connection writer and a pool of readers.

    SQLite allows one writer at a time; giving writes their own connection that begins with
    `BEGIN IMMEDIATE` avoids lock-upgrade deadlocks between our own tasks, and readers in WAL
    mode never wait for it. PostgreSQL uses one pool for both, plus the outbox writer's own
    connection (`connect_raw`) and LISTEN's (`listen`, None when LISTEN is off).
    """

    url: URL
    dialect: str
    writer: AsyncEngine
    reader: AsyncEngine
    pg: PgConnector | None = None
    listen: PgConnector | None = field(default=None)
    # What the store's own operations find: down, still down, back (one log line each).
    health: DatabaseHealth = field(default_factory=DatabaseHealth)

    @property
    def connect_raw(self) -> Callable[[], Awaitable[Any]] | None:
        return self.pg.connect if self.pg is not None else None

    @property
    def reads_outside_transactions(self) -> bool:
        """Whether a read may run without BEGIN and ROLLBACK around it (two round trips of its
        three): on PostgreSQL where a connection keeps its own server session (no transaction
        pooler, which needs a transaction to keep a client on one session). Reads are SELECTs
        at READ COMMITTED, where each statement sees the database as of its own start with or
        without a transaction around it."""
        return self.pg is not None and self.pg.prepared_statements is True

    @property
    def driver_reads(self) -> bool:
        """Whether a single-statement read may bypass SQLAlchemy for the driver's own
        connection (`StoreBase._fetch`): on SQLite (a lone SELECT is its own
        transaction), and on PostgreSQL where reads run outside a transaction (a transaction
        pooler's client needs BEGIN and ROLLBACK around it, which SQLAlchemy issues)."""
        return self.dialect == SQLITE or self.reads_outside_transactions

    def failed(self, exc: DatabaseUnavailable, op: Op) -> None:
        """A store operation found the database unusable: health counts it (one log line per
        condition change); a prepared statement gone missing corrects the pooler decision."""
        self.health.failed(exc, op)
        if exc.reason is Unavailable.POOLER and self.pg is not None:
            self.pg.pooler_seen()

    async def dispose(self) -> None:
        await self.writer.dispose()
        if self.reader is not self.writer:
            await self.reader.dispose()


def _sqlite_engine(url: URL, *, immediate: bool, pool_size: int) -> AsyncEngine:
    engine = create_async_engine(
        url,
        hide_parameters=True,  # a statement's error names no value a client sent
        pool_size=pool_size,
        max_overflow=0,
        connect_args={"timeout": 30, "check_same_thread": False},
    )

    _configure_sqlite(engine.sync_engine, immediate=immediate)
    return engine


BUSY_TIMEOUT_MS = 30_000
WAL_AUTOCHECKPOINT_PAGES = 256  # of 4 KiB: 1 MiB
WAL_SIZE_LIMIT_BYTES = 1 << 20


def _switch_to_wal(cur: Any) -> None:
    """`PRAGMA journal_mode=WAL`, retried while another connection holds the file.

    Switching a new file to WAL needs an exclusive lock, and SQLite answers "database is
    locked" at once there instead of calling the busy handler (seen with two `migrate` runs
    racing on a new file). Once the file is in WAL mode (it stays so) the pragma needs no lock.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
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
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        _switch_to_wal(cur)
        cur.execute("PRAGMA synchronous=FULL")
        # A bounded WAL (small volumes): checkpoint every 1 MiB of it (SQLite's default is
        # ~4 MiB), and truncate the file back to 1 MiB when it restarts, instead of keeping
        # its high-water mark, which on a small volume is space the database itself needs.
        cur.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
        cur.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT_BYTES}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _unnamed() -> str:
    return ""  # asyncpg's unnamed statement: replaced by the next one, never kept


def pg_engine(connector: PgConnector, **kwargs: Any) -> AsyncEngine:
    """A SQLAlchemy engine whose connections come from `connector`.

    SQLAlchemy's asyncpg dialect prepares every statement (named `__asyncpg_stmt_N__` and
    cached, by default); where prepared statements do not survive (`connector.resolve()`), it
    prepares them unnamed and keeps none.
    """
    engine: AsyncEngine | None = None

    def creator() -> Any:
        prepared = connector.prepared_statements
        if prepared is None:
            prepared = bool(await_only(connector.resolve()))
        assert engine is not None
        dbapi: Any = engine.sync_engine.dialect.dbapi

        async def connect() -> Any:
            conn = await connector.connect(prepared=prepared)
            if prepared:
                keeping.add(conn)
            return conn

        return dbapi.connect(
            async_creator_fn=connect,
            prepared_statement_cache_size=100 if prepared else 0,
            prepared_statement_name_func=None if prepared else _unnamed,
        )

    # The pool's connections that keep prepared statements (asyncpg's): replaced at their next
    # checkout once the connector finds a transaction pooler after all (`PgConnector.pooler_seen`).
    keeping: weakref.WeakSet[Any] = weakref.WeakSet()
    # hide_parameters: a statement's error (logged, and kept in the exception's text) names no
    # value a client sent.
    engine = create_async_engine(connector.url.set(query={}), creator=creator, hide_parameters=True, **kwargs)

    @event.listens_for(engine.sync_engine.pool, "checkout")
    def _on_checkout(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if connector.prepared_statements is False and record.driver_connection in keeping:
            keeping.discard(record.driver_connection)
            raise DisconnectionError("prepared statements are off now: a new connection")

    # The tables keep JSON as text (`records`): the json and jsonb codecs SQLAlchemy's asyncpg
    # dialect sets up on every new connection are two type lookups (4 round trips) before its
    # first statement, which every reconnect after a reset paid. (The dialect documents these
    # two methods as the ones to override.)
    dialect = engine.sync_engine.dialect
    for name in ("setup_asyncpg_json_codec", "setup_asyncpg_jsonb_codec"):
        setattr(dialect, name, _no_codec)

    # The pool pings a connection before lending it. The dialect pings inside a transaction
    # (BEGIN, the ping, ROLLBACK: three round trips), so that a transaction pooler keeps one
    # server session between the ping's messages; a connection that keeps its own session (no
    # such pooler: `prepared_statements`) needs one round trip. Every read paid the other two.
    transactional_ping = dialect.do_ping

    def do_ping(dbapi_connection: Any) -> bool:
        if connector.prepared_statements is not True:
            return bool(transactional_ping(dbapi_connection))
        with outside_transaction(dbapi_connection):
            return bool(transactional_ping(dbapi_connection))

    dialect.do_ping = do_ping  # type: ignore[method-assign]
    return engine


@contextlib.contextmanager
def outside_transaction(dbapi_connection: Any) -> Iterator[None]:
    """Statements on `dbapi_connection` (SQLAlchemy's asyncpg adapter) without BEGIN and ROLLBACK
    around them, its own autocommit switch set back at the end: SQLAlchemy's isolation-level
    option would hand the connection back to the pool with an explicit READ COMMITTED, no
    longer the server's default."""
    was = dbapi_connection.autocommit
    dbapi_connection.autocommit = True
    try:
        yield
    finally:
        dbapi_connection.autocommit = was


async def _no_codec(_conn: Any) -> None:
    return None


def pg_connector(raw_url: str, options: ConnectionOptions) -> PgConnector:
    return PgConnector(normalize_url(raw_url), token=options.token, connect_timeout=options.connect_timeout)


def open_database(
    raw_url: str, *, pool_size: int | None = None, options: ConnectionOptions | None = None
) -> Database:
    options = options or ConnectionOptions()
    if pool_size is not None:
        options = ConnectionOptions(
            pool_size=pool_size,
            pool_overflow=pool_size,
            connect_timeout=options.connect_timeout,
            listen_url=options.listen_url,
            token=options.token,
        )
    url = normalize_url(raw_url)
    if url.get_backend_name() == SQLITE:
        path = sqlite_path(url)
        if path is None:
            raise BadDatabaseURL("an in-memory SQLite database cannot be shared; give a file path")
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, exist_ok=True)
        writer = _sqlite_engine(url, immediate=True, pool_size=1)
        reader = _sqlite_engine(url, immediate=False, pool_size=options.pool_size)
        return Database(url=url, dialect=SQLITE, writer=writer, reader=reader)
    connector = pg_connector(raw_url, options)
    engine = pg_engine(
        connector, pool_size=options.pool_size, max_overflow=options.pool_overflow, pool_pre_ping=True
    )
    if options.listen_url.strip().lower() == "off":
        listen = None
    elif options.listen_url.strip():
        listen = pg_connector(options.listen_url, options)
    else:
        listen = connector
    return Database(url=url, dialect=POSTGRESQL, writer=engine, reader=engine, pg=connector, listen=listen)


def sync_engine_for_migrations(raw_url: str, options: ConnectionOptions | None = None) -> AsyncEngine:
    """A throwaway engine for Alembic, which must not share the server's pools.

    `options` None: the store's settings from the environment (a token provider, a connect
    timeout), as `durable-responses migrate` runs with them.
    """
    url = normalize_url(raw_url)
    if url.get_backend_name() == SQLITE:
        path = sqlite_path(url)
        if path is not None:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        return _sqlite_engine(url, immediate=True, pool_size=1)
    if options is None:
        from ..settings import StoreSettings

        options = StoreSettings.from_env().connection_options()
    return pg_engine(pg_connector(raw_url, options), poolclass=NullPool)


def sqlite_sync_engine(url: URL) -> Engine:
    """The outbox's own writing connection (stdlib sqlite3, used from one thread)."""
    engine = create_engine(
        url.set(drivername="sqlite"),
        hide_parameters=True,
        poolclass=StaticPool,
        connect_args={"timeout": 30, "check_same_thread": False},
    )

    _configure_sqlite(engine, immediate=True)
    return engine
