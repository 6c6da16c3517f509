"""Migrations and database URLs: the Alembic history is the schema, on both dialects.

- upgrade head -> downgrade base -> upgrade head round-trips;
- the migrated schema is exactly `durable_responses.store._tables.metadata` (alembic `compare_metadata`);
- `check_schema` refuses an out-of-date database with a message that names the command;
- concurrent `migrate` runs against one fresh database both succeed and apply the schema once;
- a failed upgrade applies nothing (every migration of one run is one transaction);
- user database URLs normalize to their async driver forms.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.engine import Connection

from durable_responses.store import (
    BadDatabaseURL,
    EventRow,
    SchemaOutOfDate,
    Store,
    Write,
    normalize_url,
    open_database,
)
from durable_responses.store._tables import ALL_TABLES, metadata
from durable_responses.store.db._engine import raw_pg_dsn, sync_engine_for_migrations
from durable_responses.store.ops.migrate import (
    check_schema,
    current_revision,
    downgrade,
    head_revision,
    upgrade,
)

from .conftest import PgServer

REPO = Path(__file__).resolve().parents[2]
TABLES = sorted(table.name for table in ALL_TABLES)


@pytest.fixture(params=["sqlite", "postgresql"])
def server_of(request: pytest.FixtureRequest) -> PgServer | None:
    # Sync on purpose: getfixturevalue cannot set up an async fixture from a running loop.
    return None if request.param == "sqlite" else request.getfixturevalue("pg_server")


@pytest.fixture
async def empty_url(server_of: PgServer | None, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database (no schema, no alembic_version) of either dialect."""
    if server_of is None:
        yield f"sqlite:///{tmp_path / 'migrate.db'}"
        return
    async with server_of.fresh_database() as url:
        yield url


async def _run_sync(url: str, fn: Any) -> Any:
    engine = sync_engine_for_migrations(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(fn)
    finally:
        await engine.dispose()


def _table_names(conn: Connection) -> list[str]:
    return sorted(inspect(conn).get_table_names())


def _schema_diff(conn: Connection) -> list[Any]:
    ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": True})
    return list(compare_metadata(ctx, metadata))


def _version_rows(conn: Connection) -> list[str]:
    return [r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version")).all()]


async def test_upgrade_downgrade_upgrade(empty_url: str) -> None:
    head = head_revision()
    assert await asyncio.to_thread(current_revision, empty_url) is None
    assert await asyncio.to_thread(upgrade, empty_url) == (None, head)
    assert await _run_sync(empty_url, _table_names) == sorted([*TABLES, "alembic_version"])

    await asyncio.to_thread(downgrade, empty_url, "base")
    assert await asyncio.to_thread(current_revision, empty_url) is None
    assert await _run_sync(empty_url, _table_names) == ["alembic_version"]

    assert await asyncio.to_thread(upgrade, empty_url) == (None, head)
    assert await _run_sync(empty_url, _table_names) == sorted([*TABLES, "alembic_version"])
    assert await _run_sync(empty_url, _schema_diff) == []


async def test_migrated_schema_matches_metadata(empty_url: str) -> None:
    await asyncio.to_thread(upgrade, empty_url)
    assert await _run_sync(empty_url, _schema_diff) == []


async def test_upgrade_twice_is_a_noop(empty_url: str) -> None:
    head = head_revision()
    assert await asyncio.to_thread(upgrade, empty_url) == (None, head)
    # Rows survive a second run: nothing is dropped or recreated.
    store = Store.open(empty_url)
    await store.start()
    try:
        await store.conversations.create("alice", "conv_1", "{}", [])
        assert await asyncio.to_thread(upgrade, empty_url) == (head, head)
        assert await _run_sync(empty_url, _version_rows) == [head]
        assert [r.id for r in await store.conversation_responses("alice", "conv_1")] == []
        assert await _run_sync(
            empty_url, lambda c: c.execute(text("SELECT id FROM conversations")).all()
        ) == [("conv_1",)]
    finally:
        await store.close()


async def test_check_schema_names_the_migrate_command(empty_url: str) -> None:
    url = empty_url
    if url.startswith("postgresql://postgres@"):
        # Trust auth ignores the password; the message must not show it.
        url = url.replace("postgresql://postgres@", "postgresql://postgres:s3cret-pw@")
    with pytest.raises(SchemaOutOfDate) as info:
        await asyncio.to_thread(check_schema, url)
    message = str(info.value)
    assert "durable-responses migrate" in message
    assert head_revision() in message
    assert "s3cret-pw" not in message

    await asyncio.to_thread(upgrade, url)
    await asyncio.to_thread(check_schema, url)

    await asyncio.to_thread(downgrade, url, "base")
    with pytest.raises(SchemaOutOfDate, match="durable-responses migrate"):
        await asyncio.to_thread(check_schema, url)


async def test_a_failed_upgrade_leaves_the_database_as_it_was(empty_url: str) -> None:
    """All migrations of one `migrate` run are one transaction, on SQLite too.

    Alembic would commit SQLite after each migration; a run that failed half way would then
    leave a schema between revisions, and a concurrent run could act on a stale revision.
    """

    def squat_on_0002s_index(conn: Connection) -> None:
        conn.execute(text("CREATE TABLE squatter (answered_by VARCHAR(64))"))
        conn.execute(text("CREATE INDEX ix_pending_requests_answered_by ON squatter (answered_by)"))
        conn.commit()

    await _run_sync(empty_url, squat_on_0002s_index)
    with pytest.raises(Exception, match="ix_pending_requests_answered_by"):
        await asyncio.to_thread(upgrade, empty_url)
    # 0001 ran before 0002 failed; none of it stayed.
    assert await _run_sync(empty_url, _table_names) == ["squatter"]
    assert await asyncio.to_thread(current_revision, empty_url) is None


async def _migrate_in_subprocess(url: str) -> tuple[int, str]:
    # Processes, not threads: alembic.context is a process-global proxy, and real deployments
    # race separate containers.
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import sys; from durable_responses.store.ops.migrate import upgrade; print(upgrade(sys.argv[1]))",
        url,
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(errors="replace")


async def test_concurrent_upgrades_apply_the_schema_once(empty_url: str) -> None:
    head = head_revision()
    results = await asyncio.gather(*(_migrate_in_subprocess(empty_url) for _ in range(2)))
    for rc, out in results:
        assert rc == 0, out
        # (revision before, revision after): "before" is read ahead of the migration lock, so
        # several runs may report None; had two of them both applied 0001, one would have failed
        # on CREATE TABLE of an existing table.
        assert out.strip().splitlines()[-1].endswith(f"'{head}')"), out
    assert await _run_sync(empty_url, _version_rows) == [head]
    assert await _run_sync(empty_url, _schema_diff) == []
    await asyncio.to_thread(check_schema, empty_url)


async def test_postgres_url_forms_connect(pg_url: str) -> None:
    """`postgres://` and libpq's `sslmode` work against a real server, not only on paper."""
    rest = pg_url.split("://", 1)[1]
    for url in (f"postgres://{rest}", f"postgresql+asyncpg://{rest}", f"postgresql://{rest}?sslmode=disable"):
        store = Store.open(url)
        await store.start()
        try:
            await store.ping()
        finally:
            await store.close()


# -- database URLs -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("sqlite:///data/x.db", "sqlite+aiosqlite:///data/x.db"),
        ("sqlite:////abs/x.db", "sqlite+aiosqlite:////abs/x.db"),
        ("sqlite+aiosqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        ("sqlite+pysqlite:///x.db", "sqlite+aiosqlite:///x.db"),
        ("postgresql://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql://u:pw@h:5433/db", "postgresql+asyncpg://u:pw@h:5433/db"),
        ("postgres://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql+asyncpg://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("postgresql+psycopg2://u@h/db", "postgresql+asyncpg://u@h/db"),
        ("  postgresql://u@h/db\n", "postgresql+asyncpg://u@h/db"),
    ],
)
def test_normalize_url(raw: str, expected: str) -> None:
    assert normalize_url(raw).render_as_string(hide_password=False) == expected


def test_raw_connections_get_libpq_sslmode() -> None:
    """LISTEN and the outbox's writer connect with asyncpg itself, whose DSN knows `sslmode`
    only (a managed PostgreSQL such as Azure's requires it)."""
    url = normalize_url("postgresql://u:pw@h/db?sslmode=require")
    assert url.query["ssl"] == "require"  # SQLAlchemy's asyncpg dialect spelling
    dsn = raw_pg_dsn(url)
    assert dsn == "postgresql://u:pw@h/db?sslmode=require"
    assert raw_pg_dsn(normalize_url("postgresql://u@h/db")) == "postgresql://u@h/db"


async def test_fast_path_writer_connects_with_sslmode(pg_url: str) -> None:
    """The outbox's own asyncpg connection honours a URL that carries `sslmode`."""
    from durable_responses.store import Write

    from .helpers import events, owned

    sep = "&" if "?" in pg_url else "?"
    store = Store.open(pg_url + f"{sep}sslmode=prefer")
    await store.start()
    try:
        await store.insert_response(owned("resp_sslmode", "p1"), [], [])
        await store.submit(Write("resp_sslmode", "p1", events=events(0, 3), urgent=True))
        assert await store.max_event_seq("resp_sslmode") == 2
        stats = store.stats
        assert stats.writes_by_kind.get("superstep") == 1 and stats.fallbacks == {}  # committed in one batch
    finally:
        await store.close()


def test_normalize_url_parts() -> None:
    url = normalize_url("postgres://user:pw@db.example:6543/responses")
    assert (url.drivername, url.username, url.password, url.host, url.port, url.database) == (
        "postgresql+asyncpg",
        "user",
        "pw",
        "db.example",
        6543,
        "responses",
    )
    assert normalize_url("sqlite:///data/x.db").database == "data/x.db"


@pytest.mark.parametrize("mode", ["disable", "require", "verify-full"])
def test_normalize_url_sslmode_becomes_ssl(mode: str) -> None:
    url = normalize_url(f"postgresql://u@h/db?sslmode={mode}&application_name=dr")
    assert dict(url.query) == {"ssl": mode, "application_name": "dr"}
    assert dict(normalize_url(f"postgresql+asyncpg://u@h/db?ssl={mode}").query) == {"ssl": mode}


@pytest.mark.parametrize(
    ("raw", "hint"),
    [
        ("not a url", "sqlite:///"),
        ("", "postgresql://"),
        ("postgresql://u:hunter2@h:notaport/db", "postgresql://"),
        ("mysql://u:hunter2@h/db", "unsupported database 'mysql'"),
        ("http://example.com", "use sqlite or postgresql"),
    ],
)
def test_bad_url_is_refused_helpfully(raw: str, hint: str) -> None:
    with pytest.raises(BadDatabaseURL) as info:
        normalize_url(raw)
    message = str(info.value)
    assert hint in message
    assert "hunter2" not in message  # passwords never reach logs
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("raw", ["sqlite://", "sqlite:///:memory:"])
def test_in_memory_sqlite_is_refused(raw: str) -> None:
    with pytest.raises(BadDatabaseURL, match="in-memory"):
        open_database(raw)


def _revisions() -> list[str]:
    from alembic.script import ScriptDirectory

    from durable_responses.store.ops.migrate import alembic_config

    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


async def test_every_revision_upgrades_downgrades_and_upgrades_again(empty_url: str) -> None:
    """Each step, one at a time: up to N, down to N-1, up to N again, with a row kept throughout."""
    revisions = _revisions()
    assert revisions[0] == "0001" and revisions[-1] == head_revision()
    previous = "base"
    for rev in revisions:
        await asyncio.to_thread(upgrade, empty_url, rev)
        if rev == revisions[0]:

            def seed(conn: Connection) -> None:
                conn.execute(
                    text(
                        "INSERT INTO responses (id, user_id, status, background, stream, delivery, created_at,"
                        " request, request_hash, cancel_requested) VALUES ('resp_keep', 'u', 'completed',"
                        " false, false, 'live', 1.0, '{}', 'h', false)"
                    )
                )
                conn.commit()

            await _run_sync(empty_url, seed)
        if previous != "base":
            await asyncio.to_thread(downgrade, empty_url, previous)
            assert await asyncio.to_thread(current_revision, empty_url) == previous
            await asyncio.to_thread(upgrade, empty_url, rev)
        assert await asyncio.to_thread(current_revision, empty_url) == rev

        def kept(conn: Connection) -> list[str]:
            return [r[0] for r in conn.execute(text("SELECT id FROM responses")).all()]

        assert await _run_sync(empty_url, kept) == ["resp_keep"]
        previous = rev
    assert await _run_sync(empty_url, _schema_diff) == []


async def test_events_written_before_runs_read_the_same_after_0008(empty_url: str) -> None:
    """Event rows of one event each, written under 0007, read back unchanged after the upgrade
    to the head, before and after a run of new events written beside them (`store/write/_events`)."""
    await asyncio.to_thread(upgrade, empty_url, "0007")
    old = [
        (s, "response.output_text.delta", f'{{"type":"response.output_text.delta","sequence_number":{s}}}')
        for s in range(5)
    ]

    def seed(conn: Connection) -> None:
        conn.execute(
            text(
                "INSERT INTO responses (id, user_id, status, background, stream, delivery, created_at,"
                " request, request_hash, cancel_requested, lease_owner, lease_expires_at) VALUES"
                " ('resp_old', 'u', 'in_progress', false, false, 'live', 1.0, '{}', 'h', false, 'p1', 1e12)"
            )
        )
        for seq, type_, data in old:
            conn.execute(
                text("INSERT INTO events (response_id, seq, type, data) VALUES ('resp_old', :s, :t, :d)"),
                {"s": seq, "t": type_, "d": data},
            )
        conn.commit()

    await _run_sync(empty_url, seed)
    await asyncio.to_thread(upgrade, empty_url)
    store = Store.open(empty_url, lease_seconds=15)
    await store.start()
    try:
        expected = [EventRow(*e) for e in old]
        for after in range(-1, 5):
            assert await store.read_events("resp_old", after, limit=2) == expected[after + 1 : after + 3]
        new = [EventRow(s, "response.output_text.delta", f'{{"sequence_number":{s}}}') for s in range(5, 9)]
        await store.submit(Write("resp_old", "p1", events=new))
        assert await store.read_events("resp_old", 3) == [*expected[4:], *new]
        assert await store.max_event_seq("resp_old") == 8
    finally:
        await store.close()
