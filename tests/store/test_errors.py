"""Errors at the store boundary: a database that cannot be used is `DatabaseUnavailable`, with a
reason and a message fit for a client, from every `Store` method and every outbox write, on
both dialects; driver errors about the request itself pass unchanged.
"""

from __future__ import annotations

import asyncio
import pickle
import sqlite3
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from durable_responses.store import (
    BadDatabaseURL,
    DatabaseUnavailable,
    LeaseLost,
    Store,
    StoreError,
    Unavailable,
    Write,
    classify,
    normalize_url,
)
from durable_responses.store.db._pg_connect import PreparedStatements, libpq_dsn, prepared_statements_option
from tests.support.pgserver import free_port

from .helpers import checkpoint, event, response


def _sqlite_error(setup: str, statement: str) -> sqlite3.Error:
    """A real sqlite3 error (with its result code), provoked on a scratch database."""
    conn = sqlite3.connect(":memory:")
    conn.executescript(setup)
    try:
        conn.execute(statement)
    except sqlite3.Error as exc:
        return exc
    finally:
        conn.close()
    raise AssertionError("no error")


def _locked(tmp_path: Path) -> sqlite3.Error:
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE x (a)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        other.execute("INSERT INTO x VALUES (1)")
    except sqlite3.Error as exc:
        return exc
    finally:
        other.close()
        holder.close()
    raise AssertionError("not locked")


def test_classify_recognizes_what_makes_a_database_unusable(tmp_path: Path) -> None:
    full = _sqlite_error(
        "PRAGMA page_size=512; CREATE TABLE t (x); PRAGMA max_page_count=3;",
        "INSERT INTO t SELECT zeroblob(100000)",
    )
    assert "full" in str(full)
    cases: list[tuple[BaseException, Unavailable]] = [
        (full, Unavailable.FULL),
        (_locked(tmp_path), Unavailable.BUSY),
        (sqlite3.OperationalError("disk I/O error"), Unavailable.IO),
        (sqlite3.OperationalError("unable to open database file"), Unavailable.IO),
        (ConnectionRefusedError(111, "Connect call failed"), Unavailable.UNREACHABLE),
        (ConnectionResetError(104, "Connection reset by peer"), Unavailable.UNREACHABLE),
        (TimeoutError(), Unavailable.UNREACHABLE),
        (OSError(113, "No route to host"), Unavailable.UNREACHABLE),
        (asyncpg.TooManyConnectionsError("sorry, too many clients already"), Unavailable.REFUSED),
        (asyncpg.CannotConnectNowError("the database system is starting up"), Unavailable.REFUSED),
        (
            asyncpg.ProtocolViolationError("no more connections allowed (max_client_conn)"),
            Unavailable.REFUSED,
        ),
        (
            asyncpg.AdminShutdownError("terminating connection due to administrator command"),
            Unavailable.UNREACHABLE,
        ),
        (asyncpg.InvalidPasswordError('password authentication failed for user "app"'), Unavailable.AUTH),
        (asyncpg.DiskFullError("could not extend file"), Unavailable.FULL),
        (
            asyncpg.ReadOnlySQLTransactionError("cannot execute INSERT in a read-only transaction"),
            Unavailable.READ_ONLY,
        ),
        (
            asyncpg.DuplicatePreparedStatementError('prepared statement "__asyncpg_stmt_1__" already exists'),
            Unavailable.POOLER,
        ),
        (
            asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
            Unavailable.UNREACHABLE,
        ),
        (ssl.SSLCertVerificationError("certificate verify failed"), Unavailable.TLS),
        (ConnectionError('PostgreSQL server at "h:5432" rejected SSL upgrade'), Unavailable.TLS),
        (
            PoolTimeout("QueuePool limit of size 10 overflow 10 reached, connection timed out"),
            Unavailable.BUSY,
        ),
    ]
    for exc, reason in cases:
        found = classify(exc)
        assert found is not None and found.reason is reason, (exc, found)
    # Wrapped the way SQLAlchemy wraps driver errors: found through `.orig` and `__cause__`.
    inner = asyncpg.TooManyConnectionsError("sorry, too many clients already")
    adapted = Exception("adapted")
    adapted.__cause__ = inner
    wrapped = OperationalError("SELECT 1", {}, adapted)
    found = classify(wrapped)
    assert found is not None and found.reason is Unavailable.REFUSED and "too many" in found.detail


def test_a_connection_the_database_ended_is_unavailable_with_its_own_advice() -> None:
    """asyncpg's errors about a connection ended under an operation (no SQLSTATE) are the
    database's unavailability, and a shutdown is not advised as "too many connections"."""
    from asyncpg.exceptions import _base as asyncpg_base

    for exc in (
        asyncpg_base.InternalClientError("cannot switch to state 11; another operation (2) is in progress"),
        asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
    ):
        found = classify(exc)
        assert found is not None and found.reason is Unavailable.UNREACHABLE, exc
        assert "ended the connection" in found.log_text() and "POOL_SIZE" not in found.log_text(), exc
    stopping = classify(asyncpg.CannotConnectNowError("the database system is shutting down"))
    assert stopping is not None and stopping.reason is Unavailable.REFUSED
    assert "shutting down" in stopping.log_text() and "POOL_SIZE" not in stopping.log_text()
    assert "too many" not in stopping.message
    # As the connector words it (the target in front of the driver's words): the message kept.
    from durable_responses.store.db._engine import normalize_url
    from durable_responses.store.db._pg_connect import PgConnector

    explained = PgConnector(normalize_url("postgresql://u@h/db"))._explain(stopping)
    assert "too many" not in explained.message and "shutting down" in explained.log_text(), (
        explained.log_text()
    )
    crowded = classify(asyncpg.TooManyConnectionsError("sorry, too many clients already"))
    assert crowded is not None and "POOL_SIZE" in crowded.log_text()
    # A value the driver cannot encode is about the request: still not "unavailable".
    assert classify(asyncpg.DataError("invalid input for query argument $1")) is None


def test_classify_leaves_errors_about_the_request_alone() -> None:
    for exc in (
        IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed: events.response_id")),
        asyncpg.UniqueViolationError("duplicate key value"),
        sqlite3.IntegrityError("UNIQUE constraint failed"),
        sqlite3.OperationalError("no such table: events"),
        LeaseLost("resp_1"),
        ValueError("bad"),
        FileNotFoundError(2, "No such file", "/etc/ca.pem"),
    ):
        assert classify(exc) is None, exc


def test_database_unavailable_is_fit_for_a_client_and_for_a_log() -> None:
    exc = DatabaseUnavailable(
        Unavailable.UNREACHABLE, "ConnectionRefusedError: postgresql://app:hunter2@db/x"
    )
    assert isinstance(exc, StoreError)
    assert str(exc) == exc.message == "the database is unreachable; retry"
    assert exc.retry_after == 1.0 and exc.reason == "unreachable"
    assert "hunter2" not in exc.detail and "hunter2" not in exc.log_text()
    assert "check that the database is up" in exc.log_text()
    again = pickle.loads(pickle.dumps(exc))
    assert (again.reason, again.message, again.detail) == (exc.reason, exc.message, exc.detail)
    for reason in Unavailable:
        assert DatabaseUnavailable(reason).message.endswith(("retry", "retry later"))


def test_prepared_statements_url_option() -> None:
    assert prepared_statements_option(normalize_url("postgresql://u@h/db")) is PreparedStatements.AUTO
    for raw, mode in (
        ("false", PreparedStatements.OFF),
        ("off", PreparedStatements.OFF),
        ("true", PreparedStatements.ON),
    ):
        url = normalize_url(
            f"postgresql://u@h/db?prepared_statements={raw}&sslmode=verify-full&sslrootcert=/ca.pem"
        )
        assert prepared_statements_option(url) is mode
        # Ours is not sent to the server; libpq's TLS options reach asyncpg in libpq's spelling.
        assert libpq_dsn(url) == "postgresql://u@h/db?sslmode=verify-full&sslrootcert=%2Fca.pem"
    with pytest.raises(BadDatabaseURL, match="prepared_statements"):
        prepared_statements_option(normalize_url("postgresql://u@h/db?prepared_statements=maybe"))


@pytest.fixture(params=["sqlite", "postgresql"])
async def unusable(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Store, Unavailable]]:
    """A started store whose database cannot be used: SQLite at a path that is a directory (it
    cannot be opened), PostgreSQL at a port nobody listens on."""
    if request.param == "sqlite":
        (tmp_path / "a-directory.db").mkdir()
        url, reason = f"sqlite:///{tmp_path / 'a-directory.db'}", Unavailable.IO
    else:
        url, reason = f"postgresql://postgres@127.0.0.1:{free_port()}/nowhere", Unavailable.UNREACHABLE
    store = Store.open(url, lease_seconds=5)
    await store.start()
    try:
        yield store, reason
    finally:
        await store.close()


async def test_every_method_raises_database_unavailable(unusable: tuple[Store, Unavailable]) -> None:
    store, reason = unusable
    calls = [
        store.ping(),
        store.get_response("resp_1", "alice"),
        store.read_events("resp_1", -1),
        store.output_items("resp_1"),
        store.list_input_items("resp_1", after=None, before=None, limit=20, order="asc"),
        store.find_items("alice", "msg_1"),
        store.max_event_seq("resp_1"),
        store.delete_response("resp_1", "alice"),
        store.request_cancel("resp_1", "alice"),
        store.claim_expired("p1"),
        store.renew_leases("p1", ["resp_1"]),
        store.release_leases("p1"),
        store.load_checkpoint("cp", "alice"),
        store.latest_checkpoint(user_id="alice", response_id="resp_1"),
        store.prune_checkpoints(user_id="alice", response_id="resp_1", lineage="resp_1"),
        store.pending_requests("resp_1", "alice"),
        store.conversations.create("alice", "conv_1", "{}", []),
        store.conversation_responses("alice", "conv_1"),
        store.insert_response(response("resp_1"), [], [event(0, "response.created")]),
        store.write_now([Write("resp_1", None, checkpoint=checkpoint("cp", "resp_1"))]),
        store.conversations.get("alice", "conv_1"),
        store.conversations.unclaimed("alice", "conv_1"),
        store.conversations.delete("alice", "conv_1"),
        store.webhooks.claim_due("p1", lease_seconds=5),
        store.webhooks.next_due(),
        store.webhooks.release("p1"),
        store.submit(Write("resp_1", "p1", events=[event(1)])),
        store.submit(Write("resp_2", "p1", events=[event(1)], checkpoint=checkpoint("cp2", "resp_2"))),
    ]
    # One after another: concurrent callers of SQLite's single writer connection would queue
    # for it and, as no connection ever returns to the pool, wait out its timeout (`busy`).
    results: list[BaseException | object] = []
    for call in calls:
        try:
            results.append(await asyncio.wait_for(call, 20))
        except Exception as exc:
            results.append(exc)
    for call, result in zip(calls, results, strict=True):
        assert isinstance(result, DatabaseUnavailable), (call, result)
        assert result.reason is reason, (call, result.reason, result.detail)
        assert result.message in str(result)
    # The write queued behind resp_1's failed write fails the same way, not as a generic error.
    later = await asyncio.gather(
        store.submit(Write("resp_1", "p1", events=[event(2)])), return_exceptions=True
    )
    assert isinstance(later[0], DatabaseUnavailable)
    assert store.stats.failed_writes >= 3


async def test_an_unreachable_database_fails_a_batch_without_trying_each_write(
    unusable: tuple[Store, Unavailable],
) -> None:
    """While the database is down, a batch's fallback stops at the first write that fails the
    same way: the others fail at once (they do not each wait for a connection)."""
    store, _reason = unusable
    writes = [store.submit(Write(f"resp_{i}", "p1", events=[event(1)])) for i in range(20)]
    results = await asyncio.wait_for(asyncio.gather(*writes, return_exceptions=True), 30)
    assert all(isinstance(r, DatabaseUnavailable) for r in results)
    [(kind, cause)] = store.stats.fallbacks
    assert kind == "superstep" and cause.startswith("unavailable:")
