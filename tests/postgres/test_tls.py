"""TLS to PostgreSQL: `sslmode=verify-full` with `sslrootcert`, the libpq `PGSSL*` variables,
client certificates; a wrong CA, a wrong host name or a server without TLS is refused with a
message that names the cause and the fix (at start-up) and as `DatabaseUnavailable(tls)` from
the store."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest

from durable_responses.store import DatabaseUnavailable, Store, Unavailable
from durable_responses.store.db._engine import ConnectionOptions
from durable_responses.store.errors import DatabaseSetupError
from durable_responses.store.ops.preflight import check_database
from tests.support.pgserver import OwnPostgres

from . import pgbouncer
from .certs import Certs
from .conftest import require_pgbouncer

OPTIONS = ConnectionOptions(connect_timeout=5)


async def _check(url: str) -> None:
    """The start-up check (sync: `serve` runs it before its event loop), from a test's loop."""
    await asyncio.to_thread(check_database, url, OPTIONS)


def _url(pg: OwnPostgres, db: str, *, host: str = "localhost", user: str = "postgres", **query: str) -> str:
    q = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in query.items())
    return f"postgresql://{user}@{host}:{pg.port}/{db}" + (f"?{q}" if q else "")


async def _tls_in_use(url: str) -> tuple[bool, str]:
    """Whether the store's pooled connection is TLS, and the user it authenticated as."""
    from sqlalchemy import text

    store = Store.open(url, connection=OPTIONS)
    try:
        await store.start()
        async with store.db.reader.connect() as conn:
            row = (
                await conn.execute(
                    text("SELECT ssl, current_user FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
                )
            ).one()
        await store.ping()
        return bool(row[0]), str(row[1])
    finally:
        await store.close()


async def test_verify_full_with_the_right_ca(pg: OwnPostgres, certs: Certs, database: str) -> None:
    url = _url(pg, database, sslmode="verify-full", sslrootcert=str(certs.ca))
    await _check(url)
    assert await _tls_in_use(url) == (True, "postgres")


async def test_libpq_environment_variables_are_honoured(
    pg: OwnPostgres, certs: Certs, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGSSLMODE", "verify-full")
    monkeypatch.setenv("PGSSLROOTCERT", str(certs.ca))
    assert await _tls_in_use(_url(pg, database)) == (True, "postgres")
    monkeypatch.setenv("PGSSLROOTCERT", str(certs.other_ca))
    with pytest.raises(DatabaseUnavailable) as info:
        await _tls_in_use(_url(pg, database))
    assert info.value.reason is Unavailable.TLS


async def test_client_certificate(pg: OwnPostgres, certs: Certs, database: str) -> None:
    with_cert = _url(
        pg,
        database,
        user="certuser",
        sslmode="verify-full",
        sslrootcert=str(certs.ca),
        sslcert=str(certs.client_cert),
        sslkey=str(certs.client_key),
    )
    assert await _tls_in_use(with_cert) == (True, "certuser")
    without = _url(pg, database, user="certuser", sslmode="verify-full", sslrootcert=str(certs.ca))
    with pytest.raises(DatabaseSetupError, match="certificate") as info:
        await _check(without)
    assert "certuser" in str(info.value)


async def test_a_wrong_ca_is_refused_with_a_clear_message(
    pg: OwnPostgres, certs: Certs, database: str
) -> None:
    url = _url(pg, database, sslmode="verify-full", sslrootcert=str(certs.other_ca))
    with pytest.raises(DatabaseSetupError) as info:
        await _check(url)
    message = str(info.value)
    assert "certificate verify failed" in message and "sslrootcert" in message, message
    store = Store.open(url, connection=OPTIONS)
    try:
        with pytest.raises(DatabaseUnavailable) as unavailable:
            await store.ping()
        assert unavailable.value.reason is Unavailable.TLS
        assert "secure connection" in str(unavailable.value)  # the client's message says no more
    finally:
        await store.close()


async def test_a_wrong_host_name_is_refused_with_a_clear_message(
    pg: OwnPostgres, certs: Certs, database: str
) -> None:
    """The certificate names `localhost` only: 127.0.0.1 does not match under verify-full (and
    does under verify-ca, which checks the CA alone)."""
    url = _url(pg, database, host="127.0.0.1", sslmode="verify-full", sslrootcert=str(certs.ca))
    with pytest.raises(DatabaseSetupError) as info:
        await _check(url)
    message = str(info.value)
    assert "mismatch" in message and "'127.0.0.1'" in message and "verify-ca" in message, message
    await _check(_url(pg, database, host="127.0.0.1", sslmode="verify-ca", sslrootcert=str(certs.ca)))


def test_tls_required_where_none_is_offered(pg: OwnPostgres, database: str) -> None:
    """PgBouncer here speaks no TLS: `sslmode=require` through it is refused, saying so."""
    require_pgbouncer()
    with pgbouncer.PgBouncer(server_port=pg.port, pool_mode="session") as bouncer:
        url = bouncer.url(database, query="?sslmode=require")
        with pytest.raises(DatabaseSetupError) as info:
            check_database(url, OPTIONS)
    message = str(info.value)
    assert "SSL" in message and "offers no TLS" in message, message
