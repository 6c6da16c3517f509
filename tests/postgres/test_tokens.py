"""Passwordless PostgreSQL: a token command whose output is the password of every new
connection, against a role whose password the command itself rotates on the suite's server
(as an identity provider issues a new token). Cached until shortly before expiry; a token the
server refuses is fetched again once; a token that stays refused names its source."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from durable_responses.store import DatabaseUnavailable, Store, Unavailable, Write
from durable_responses.store.errors import DatabaseSetupError
from durable_responses.store.ops.preflight import check_database
from durable_responses.store.settings import StoreSettings
from tests.store.helpers import event, events, owned
from tests.support.pgserver import OwnPostgres

ROTATE = """
import json, secrets, subprocess, sys, time
port, counter, life = sys.argv[1], sys.argv[2], float(sys.argv[3])
password = secrets.token_urlsafe(16)
subprocess.run(["{psql}", "-h", "127.0.0.1", "-p", port, "-U", "postgres", "-d", "postgres", "-qAtc",
                f"ALTER ROLE tokenuser PASSWORD '{{password}}'"], check=True)
with open(counter, "a") as f:
    f.write(password + "\\n")
print(json.dumps({{"accessToken": password, "expires_on": time.time() + life}}))
"""


def _rotating_command(pg: OwnPostgres, tmp_path: Path, life: float) -> tuple[str, Path]:
    from tests.support.pgserver import PG_BIN

    script = tmp_path / "rotate.py"
    script.write_text(ROTATE.format(psql=PG_BIN / "psql"))
    counter = tmp_path / "issued.txt"
    return f"{sys.executable} {script} {pg.port} {counter} {life}", counter


def _issued(counter: Path) -> list[str]:
    return counter.read_text().split() if counter.exists() else []


def _terminate_token_sessions(pg: OwnPostgres) -> None:
    pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'tokenuser'")


async def test_a_rotating_token_is_fetched_for_new_connections_and_cached_until_expiry(
    pg: OwnPostgres, database: str, tmp_path: Path
) -> None:
    command, counter = _rotating_command(pg, tmp_path, life=3.0)
    settings = StoreSettings(pg_token_command=command)
    url = f"postgresql://tokenuser@127.0.0.1:{pg.port}/{database}"
    store = Store.open(url, connection=settings.connection_options(), lease_seconds=30)
    await store.start()
    try:
        await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
        await store.submit(Write("resp_1", "p1", events=events(1, 3), urgent=True))
        first = _issued(counter)
        assert len(first) == 1  # every connection so far (pool, writer, LISTEN, probe) used one token
        # Sessions end (a failover, an idle timeout): new connections reuse the cached token.
        _terminate_token_sessions(pg)
        await store.submit(Write("resp_1", "p1", events=events(3, 5), urgent=True))
        assert await store.max_event_seq("resp_1") == 4
        assert _issued(counter) == first
        # Past its expiry (less the refresh margin), a new connection rotates the password.
        await asyncio.sleep(3.0)
        _terminate_token_sessions(pg)
        await store.submit(Write("resp_1", "p1", events=events(5, 7), urgent=True))
        assert await store.max_event_seq("resp_1") == 6
        issued = _issued(counter)
        assert len(issued) == 2 and issued[0] != issued[1]
    finally:
        await store.close()


async def test_a_token_rotated_early_is_fetched_again(pg: OwnPostgres, database: str, tmp_path: Path) -> None:
    """The identity provider revoked the cached token before its announced expiry: the refused
    connection fetches a new one and succeeds."""
    command, counter = _rotating_command(pg, tmp_path, life=3600)
    store = Store.open(
        f"postgresql://tokenuser@127.0.0.1:{pg.port}/{database}",
        connection=StoreSettings(pg_token_command=command).connection_options(),
    )
    await store.start()
    try:
        await store.ping()
        pg.psql("ALTER ROLE tokenuser PASSWORD 'revoked-elsewhere'")
        _terminate_token_sessions(pg)
        await store.ping()
        assert len(_issued(counter)) == 2
    finally:
        await store.close()


async def test_an_expired_token_fails_naming_its_source(
    pg: OwnPostgres, database: str, tmp_path: Path
) -> None:
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"accessToken": "expired-token", "expires_on": 1}))
    settings = StoreSettings(pg_token_command=f"cat {stale}")
    url = f"postgresql://tokenuser@127.0.0.1:{pg.port}/{database}"
    with pytest.raises(DatabaseSetupError) as info:
        await asyncio.to_thread(check_database, url, settings.connection_options())
    message = str(info.value)
    assert "password authentication failed" in message and "DURABLE_RESPONSES_PG_TOKEN_COMMAND" in message
    assert "expired" in message and "tokenuser" in message, message
    store = Store.open(url, connection=settings.connection_options())
    try:
        with pytest.raises(DatabaseUnavailable) as unavailable:
            await store.get_response("resp_1", "alice")
        assert unavailable.value.reason is Unavailable.AUTH
        assert "DURABLE_RESPONSES_PG_TOKEN_COMMAND" in unavailable.value.advice
    finally:
        await store.close()


async def test_a_failing_token_command_is_an_auth_failure(pg: OwnPostgres, database: str) -> None:
    settings = StoreSettings(pg_token_command="echo 'no credential found' >&2; exit 1")
    url = f"postgresql://tokenuser@127.0.0.1:{pg.port}/{database}"
    with pytest.raises(DatabaseSetupError, match="exited with 1: no credential found"):
        await asyncio.to_thread(check_database, url, settings.connection_options())
