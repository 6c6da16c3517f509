"""Raw SQL on a test's database, from outside the server (either dialect): to break it under a
running server (rename a table, add a failing trigger), or to read what the server stored.

Nothing here goes through `server.store`: a test that checks the store must not trust it.
"""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any


def _sqlite_path(database_url: str) -> str:
    return database_url.split(":///", 1)[1]


def _pg_dsn(database_url: str) -> str:
    _scheme, rest = database_url.split("://", 1)
    return "postgres://" + rest


def execute(database_url: str, statement: str) -> None:
    """Run one statement (DDL or DML) in its own transaction."""
    if database_url.startswith("sqlite"):
        con = sqlite3.connect(_sqlite_path(database_url), timeout=30)
        try:
            con.execute(statement)
            con.commit()
        finally:
            con.close()
        return
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> None:
        conn = await asyncpg.connect(_pg_dsn(database_url), timeout=10)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


def query(database_url: str, statement: str) -> list[tuple[Any, ...]]:
    """The rows of one SELECT."""
    if database_url.startswith("sqlite"):
        con = sqlite3.connect(_sqlite_path(database_url), timeout=30)
        try:
            return [tuple(r) for r in con.execute(statement).fetchall()]
        finally:
            con.close()
    import asyncpg

    async def run() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(_pg_dsn(database_url), timeout=10)
        try:
            return [tuple(r) for r in await conn.fetch(statement)]
        finally:
            await conn.close()

    return asyncio.run(run())


def scalar(database_url: str, statement: str) -> Any:
    rows = query(database_url, statement)
    assert len(rows) == 1 and len(rows[0]) == 1, rows
    return rows[0][0]


def quote(value: str) -> str:
    """A SQL string literal (for ids the test made itself)."""
    return "'" + value.replace("'", "''") + "'"
