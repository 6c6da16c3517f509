"""Start-up checks of a PostgreSQL database, with what to do when one fails.

Job: before `serve` builds anything, `check_database` connects once as the server will (TLS,
token provider, timeout), refuses `prepared_statements=true` through a pooler in transaction
mode, and checks the schema revision; every failure is a `DatabaseSetupError` (or
`SchemaOutOfDate`) whose message names the cause and the fix, never a driver's traceback.

Invariant: the check connects exactly as the store will (`_engine.pg_connector`), so what
passes here is what the server then uses.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..db._engine import ConnectionOptions, pg_connector
from ..db._pg_connect import PgConnector, PreparedStatements
from ..errors import DatabaseSetupError, DatabaseUnavailable
from .migrate import check_schema

# SQLSTATEs of errors a first connection may meet that are not "unavailable" but set-up.
_SETUP_ADVICE = {
    "3D000": "create the database (CREATE DATABASE ...) and run `durable-responses migrate`",
    "42501": "grant the user CONNECT on the database and the rights `durable-responses migrate` needs",
}


def check_database(url: str, options: ConnectionOptions) -> None:
    """Raise `DatabaseSetupError` / `SchemaOutOfDate` if the server cannot run on `url`."""
    connector = pg_connector(url, options)
    asyncio.run(_check_connection(connector))
    check_schema(url, options)


async def _check_connection(connector: PgConnector) -> None:
    try:
        conn = await connector.connect(prepared=False)
    except DatabaseUnavailable as exc:
        raise DatabaseSetupError(f"cannot use the database ({exc.detail}): {exc.advice}") from exc
    except Exception as exc:
        raise DatabaseSetupError(_setup_message(connector, exc)) from exc
    await conn.close()
    if connector.mode is PreparedStatements.ON and await connector.transaction_pooled():
        raise DatabaseSetupError(
            f"{connector.where} is a connection pooler in transaction mode (consecutive transactions of "
            "one connection ran on different server sessions), where named prepared statements collide "
            "between clients: remove prepared_statements=true from DATABASE_URL (it is then detected) "
            "or set prepared_statements=false, or point DATABASE_URL at a session-mode pooler or the "
            "server itself"
        )


def _setup_message(connector: PgConnector, exc: Any) -> str:
    sqlstate = getattr(exc, "sqlstate", None)
    advice = _SETUP_ADVICE.get(sqlstate or "", "check DATABASE_URL")
    if type(exc).__name__ == "ClientConfigurationError":
        advice = "check the TLS files the URL names (sslrootcert, sslcert, sslkey) or PGSSL* variables"
    return f"cannot use the database at {connector.where} ({type(exc).__name__}: {exc}): {advice}"
