"""The server behind Debian's PgBouncer, in transaction mode and in session mode, in front of
this suite's own PostgreSQL.

Per mode, one database: `serve` refuses it until it is migrated (saying so), `migrate` works
through the pooler, then two replicas share it: A a subprocess (so it can be `kill -9`ed),
B in this process. Through the pooler they pass create, stream, background, a stream of A's
response followed on B, replay, cancel (asked of B, run by A), and A's `kill -9` with B
resuming its response. In transaction mode the pooler is detected (prepared statements off),
A cannot LISTEN (its relays poll) and B listens on a direct URL
(`DURABLE_RESPONSES_LISTEN_DATABASE_URL`); in session mode both LISTEN through the pooler.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from durable_responses.service import StartupError, prepare
from durable_responses.settings import Settings
from tests.support.inprocess import TEST_ENV, InProcessServer
from tests.support.pgserver import OwnPostgres
from tests.support.responses import wait_status, wait_terminal
from tests.support.servers import ServerProcess
from tests.support.sse import check_sequence, stream_events
from tests.support.waits import wait_for_value

from .conftest import migrate, require_pgbouncer
from .pgbouncer import PgBouncer, PoolMode

APP = "durable_responses.examples.countdown:countdown"


@pytest.fixture(params=["transaction", "session"])
def bouncer(request: pytest.FixtureRequest, pg: OwnPostgres) -> Iterator[PgBouncer]:
    require_pgbouncer()
    mode: PoolMode = request.param
    # Session mode gives each client connection a server session of its own: room for both
    # replicas' pools (transaction mode shares a few sessions among them all).
    with PgBouncer(server_port=pg.port, pool_mode=mode, pool_size=20 if mode == "transaction" else 80) as b:
        yield b


@pytest.fixture
def empty_database(pg: OwnPostgres) -> Iterator[str]:
    name = f"dr_bouncer_{os.getpid()}_{time.monotonic_ns() % 10**9}"
    pg.psql(f'CREATE DATABASE "{name}"')
    yield name
    pg.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _settings(url: str) -> Settings:
    return Settings.from_env({**TEST_ENV, "DATABASE_URL": url, "DURABLE_RESPONSES_APP": APP})


def _ticks(response: Any) -> list[str]:
    return [c.text for item in response.output if item.type == "message" for c in item.content]


def test_two_replicas_through_pgbouncer(
    bouncer: PgBouncer, pg: OwnPostgres, empty_database: str, tmp_path: Path
) -> None:
    transaction = bouncer.pool_mode == "transaction"
    url = bouncer.url(empty_database)

    # Start-up errors say what to do.
    with pytest.raises(StartupError, match="durable-responses migrate"):
        prepare(_settings(url))
    migrated = migrate(url)
    assert migrated.returncode == 0, migrated.stderr
    if transaction:
        with pytest.raises(StartupError, match=r"transaction mode.*prepared_statements=false"):
            prepare(_settings(url + "?prepared_statements=true"))

    a = ServerProcess(database_url=url, app=APP, workdir=tmp_path / "a", log_level="info").start()
    b_env = {"DURABLE_RESPONSES_LISTEN_DATABASE_URL": pg.url(empty_database)} if transaction else {}
    b = InProcessServer(url, APP, env=b_env).start()
    try:
        stats = b.service.store.stats
        assert stats.transaction_pooler is transaction and stats.prepared_statements is not transaction
        log = a.log()
        assert ("LISTEN is impossible through the connection pooler" in log) is transaction, log
        client_a, client_b = a.client(), b.client()

        # create (JSON) and stream on B
        r = client_b.responses.create(model="m", input="3 delay=0.01")
        assert r.status == "completed" and _ticks(r) == ["tick 3", "tick 2", "tick 1", "tick 0"]
        with client_b.responses.stream(model="m", input="2 delay=0.01") as stream:
            seqs = [e.sequence_number for e in stream]
            final = stream.get_final_response()
        assert seqs == list(range(len(seqs))) and _ticks(final) == ["tick 2", "tick 1", "tick 0"]

        # background on A, followed live on B, then replayed on B
        bg = client_a.responses.create(model="m", input="6 delay=0.1", background=True)
        followed = stream_events(b.base_url, bg.id, timeout=30)
        check_sequence(followed, label="followed on B")
        assert _ticks(client_b.responses.retrieve(bg.id)) == [f"tick {n}" for n in range(6, -1, -1)]
        assert stream_events(b.base_url, bg.id) == followed  # replay: the same rows, payloads and all
        # ... and the other way: B's response followed on A (which polls in transaction mode)
        other = client_b.responses.create(model="m", input="4 delay=0.1", background=True)
        check_sequence(stream_events(a.base_url, other.id, timeout=30), label="followed on A")

        # cancel, asked of B, of a response A runs
        long = client_a.responses.create(model="m", input="100 delay=0.05", background=True)
        wait_status(b, long.id, ["in_progress"])
        cancelled = client_b.responses.cancel(long.id)
        assert cancelled.status == "cancelled"
        check_sequence(stream_events(b.base_url, long.id), label="cancelled")

        # kill -9 of A mid-response: B resumes it once A's lease expires
        victim = client_a.responses.create(model="m", input="12 delay=0.1", background=True)
        # Killed mid-run: once A has committed some of its ticks, long before the last.
        running = wait_for_value(
            lambda: client_b.responses.retrieve(victim.id),
            lambda r: r.status != "queued" and len(r.output) >= 2,
            30,
            message="the victim's first ticks",
        )
        assert running.status == "in_progress", running
        a.kill()
        done = wait_terminal(client_b, victim.id, 30)
        assert done.status == "completed", done
        assert _ticks(done) == [f"tick {n}" for n in range(12, -1, -1)]
        check_sequence(stream_events(b.base_url, victim.id), label="recovered")
        fallbacks = b.service.store.stats.fallbacks
        assert all(cause == "after_general" for _kind, cause in fallbacks), fallbacks
    finally:
        a.kill()
        b.stop()
    assert "Traceback" not in a.log(), a.log()


def test_the_pooler_probe_agrees_under_concurrent_first_connections(
    bouncer: PgBouncer, empty_database: str
) -> None:
    """A replica's first connections (its pool's, its writer's, LISTEN's) ask at once whether a
    transaction pooler is in front, while another replica keeps the pooler's sessions busy: every
    one must get the same, right answer. (A connection told "no pooler" behind a transaction
    pooler keeps named prepared statements, which the next transaction's session lacks.)"""
    from durable_responses.store.db._engine import ConnectionOptions, pg_connector

    url = bouncer.url(empty_database)
    expected = bouncer.pool_mode == "transaction"

    async def scenario() -> list[list[bool]]:
        import asyncpg

        stop = asyncio.Event()

        async def traffic() -> None:  # another replica's short transactions through the pooler
            conn = await asyncpg.connect(url, statement_cache_size=0)
            try:
                while not stop.is_set():
                    async with conn.transaction():
                        await conn.fetchval("SELECT pg_backend_pid()")
            finally:
                await conn.close()

        others = [asyncio.create_task(traffic()) for _ in range(4)]
        verdicts: list[list[bool]] = []
        try:
            await asyncio.sleep(0.2)
            for _ in range(8):
                connector = pg_connector(url, ConnectionOptions())
                asked = await asyncio.gather(
                    *(connector.resolve() for _ in range(6)), connector.transaction_pooled()
                )
                verdicts.append([not prepared for prepared in asked[:-1]] + [asked[-1]])
        finally:
            stop.set()
            await asyncio.gather(*others)
        return verdicts

    verdicts = asyncio.run(scenario())
    wrong = [v for v in verdicts if v != [expected] * len(v)]
    assert not wrong, f"pooled should be {expected} for every caller: {wrong}"


def test_a_misled_pooler_probe_is_corrected_at_the_first_missing_statement(
    pg: OwnPostgres, empty_database: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The start-up probe can be misled (it timed out under load, or other clients' traffic hid
    the pooler in every round): connections then keep prepared statements behind a transaction
    pooler. The first statement found missing on its session turns them off for good (a
    warning says so), the pool's prepared connections are replaced at their next checkout and
    the writer reconnects: a few 503s (`pooler`) at most, then none, reads and writes alike."""
    import logging

    from durable_responses.store import DatabaseUnavailable, Store, Unavailable
    from durable_responses.store.db._engine import ConnectionOptions
    from durable_responses.store.db._pg_connect import PgConnector
    from tests.store.helpers import event, owned

    require_pgbouncer()
    migrated = migrate(pg.url(empty_database))
    assert migrated.returncode == 0, migrated.stderr

    async def misled(self: PgConnector) -> bool:
        return False

    monkeypatch.setattr(PgConnector, "probe", misled)

    async def scenario() -> tuple[list[int], Any]:
        store = Store.open(url, connection=ConnectionOptions(pool_size=6, pool_overflow=0))
        await store.start("replica-a")
        try:
            assert store.stats.prepared_statements is True  # misled
            failed: list[int] = []
            for round_ in range(2):

                async def worker(i: int, round_: int = round_) -> int:
                    bad = 0
                    for j in range(25):
                        try:
                            rid = f"resp_{round_}_{i}_{j}"
                            await store.insert_response(
                                owned(rid, "replica-a"), [], [event(0, "response.created")]
                            )
                            assert await store.get_response(rid, None) is not None
                        except DatabaseUnavailable as exc:
                            assert exc.reason is Unavailable.POOLER, exc
                            bad += 1
                    return bad

                failures = sum(await asyncio.gather(*(worker(i) for i in range(8))))
                failed.append(failures)
            return failed, store.stats
        finally:
            await store.close()

    # Two server sessions for eight busy clients: consecutive transactions of one client
    # connection land on either, so a statement prepared on one is soon missing on the other.
    with (
        PgBouncer(server_port=pg.port, pool_mode="transaction", pool_size=2) as bouncer,
        caplog.at_level(logging.WARNING, logger="durable_responses.pg"),
    ):
        url = bouncer.url(empty_database)
        failed, stats = asyncio.run(scenario())
    assert failed[1] == 0, f"failures after the correction: {failed}"
    assert stats.prepared_statements is False and stats.transaction_pooler is True, stats
    assert failed[0] <= 12, f"too many failures before the correction: {failed}"
    assert any("prepared statements are off from now on" in r.getMessage() for r in caplog.records), [
        r.getMessage() for r in caplog.records
    ]
