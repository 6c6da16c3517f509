"""Fixtures for the store suite: a migrated database per dialect, and a `Store` per test.

PostgreSQL: one fresh database per test session (`dr_e2e_<pid>_store_<hex>`, the prefix of
every test database: `tests.support.pg.sweep_stale` drops those of test processes that died),
migrated once to head and emptied before every test; every database this session creates is
dropped at the end, also when tests fail. When the server is unreachable the PostgreSQL cases fail, or are skipped when
`DURABLE_RESPONSES_SKIP_POSTGRES=1` (never in CI).

SQLite: a temp file per test, copied from one template migrated once per session.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.engine import make_url

from durable_responses.store import Store
from durable_responses.store._tables import ALL_TABLES
from durable_responses.store.ops.migrate import upgrade
from tests.support.pg import database_name, sweep_stale

# The same variable as tests/conftest.py: the admin URL of the PostgreSQL server to test on.
PG_ADMIN_URL = os.environ.get("DURABLE_RESPONSES_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
LEASE_SECONDS = 5.0


def _pg_dsn(url: str, database: str | None = None) -> str:
    """A libpq DSN (what asyncpg takes): no SQLAlchemy driver suffix; optionally another database."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1)).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


def _with_database(url: str, name: str) -> str:
    return _pg_dsn(url, name)


@dataclass
class PgServer:
    """An admin connection to the PostgreSQL server; creates and drops throwaway databases."""

    admin: asyncpg.Connection
    created: list[str] = field(default_factory=list)

    async def create_database(self) -> tuple[str, str]:
        name = database_name("store_")
        await self.admin.execute(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return name, _with_database(PG_ADMIN_URL, name)

    async def drop_database(self, name: str) -> None:
        await self.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
            name,
        )
        await self.admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if name in self.created:
            self.created.remove(name)

    @contextlib.asynccontextmanager
    async def fresh_database(self) -> AsyncIterator[str]:
        """An empty database for one test (migration tests); dropped afterwards."""
        name, url = await self.create_database()
        try:
            yield url
        finally:
            await self.drop_database(name)


@pytest.fixture(scope="session")
async def pg_server() -> AsyncIterator[PgServer]:
    try:
        admin = await asyncpg.connect(_pg_dsn(PG_ADMIN_URL), timeout=5)
    except Exception as exc:
        where = PG_ADMIN_URL.split("@")[-1]
        message = f"PostgreSQL not reachable at {where}: {type(exc).__name__}: {exc}"
        if os.environ.get("DURABLE_RESPONSES_SKIP_POSTGRES") == "1":
            pytest.skip(reason=f"{message} (DURABLE_RESPONSES_SKIP_POSTGRES=1)")
        pytest.fail(f"{message} (DURABLE_RESPONSES_SKIP_POSTGRES=1 skips the PostgreSQL half)", pytrace=False)
    server = PgServer(admin)
    await asyncio.to_thread(sweep_stale)
    try:
        yield server
    finally:
        try:
            for name in list(server.created):
                await server.drop_database(name)
        finally:
            await admin.close()


@pytest.fixture(scope="session")
async def pg_url(pg_server: PgServer) -> str:
    """The session's PostgreSQL database, migrated to head once."""
    _name, url = await pg_server.create_database()
    await asyncio.to_thread(upgrade, url)
    return url


@pytest.fixture(scope="session")
async def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    await asyncio.to_thread(upgrade, f"sqlite:///{path}")
    return path


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    target = tmp_path / "store.db"
    shutil.copyfile(sqlite_template, target)
    for suffix in ("-wal", "-shm"):
        extra = Path(str(sqlite_template) + suffix)
        if extra.exists():
            shutil.copyfile(extra, Path(str(target) + suffix))
    return f"sqlite:///{target}"


async def _empty(store: Store) -> None:
    # DELETE beats TRUNCATE on tables this small; nothing relies on the checkpoint seq restarting.
    async with store.db.writer.begin() as conn:
        for table in ALL_TABLES:
            await conn.execute(table.delete())


@pytest.fixture(params=["sqlite", "postgresql", "postgresql-unprepared"])
def db_url(request: pytest.FixtureRequest) -> str:
    """A database migrated to head with no rows, of either dialect; `postgresql-unprepared` is
    PostgreSQL with `?prepared_statements=false`, the path a pooler in transaction mode takes
    (no statement kept prepared: unnamed ones, parsed for every execution)."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    url = str(request.getfixturevalue("pg_url"))
    return url + "?prepared_statements=false" if request.param == "postgresql-unprepared" else url


StoreFactory = Callable[..., Awaitable[Store]]


@pytest.fixture
async def store_factory(db_url: str) -> AsyncIterator[StoreFactory]:
    """Opens (and finally closes) started `Store`s on the test's database."""
    opened: list[Store] = []
    emptied = False

    async def open_store(**kwargs: object) -> Store:
        nonlocal emptied
        kwargs.setdefault("lease_seconds", LEASE_SECONDS)
        store = Store.open(db_url, **kwargs)
        opened.append(store)
        if store.dialect == "postgresql" and not emptied:
            await _empty(store)
            emptied = True
        await store.start()
        if store.dialect == "postgresql":
            # LISTEN's (re)connect wakes every subscriber once: let it happen before the test.
            for _ in range(500):
                if store.cross_process_wakeups:
                    break
                await asyncio.sleep(0.01)
            else:
                raise AssertionError("LISTEN did not connect within 5 s")
        return store

    try:
        yield open_store
    finally:
        for store in reversed(opened):
            await store.close()


@pytest.fixture
async def store(store_factory: StoreFactory) -> Store:
    return await store_factory()
