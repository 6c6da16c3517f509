"""Fresh databases on the machine's PostgreSQL (created per test, dropped after).

PostgreSQL is never skipped in CI: with DURABLE_RESPONSES_REQUIRE_POSTGRES=1 an unreachable
server fails the test instead of skipping it.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PG_ADMIN = os.environ.get("DURABLE_RESPONSES_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _pg_admin(sql: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> None:
        conn = await asyncpg.connect(PG_ADMIN.replace("postgresql://", "postgres://"), timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


def _pg_reachable() -> str | None:
    try:
        _pg_admin("SELECT 1")
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def new_pg_database() -> str:
    problem = _pg_reachable()
    if problem is not None:
        msg = f"PostgreSQL not reachable at {PG_ADMIN}: {problem}"
        if os.environ.get("DURABLE_RESPONSES_REQUIRE_POSTGRES") == "1":
            pytest.fail(msg)
        pytest.skip(reason=msg)
    name = f"dr_e2e_{uuid.uuid4().hex[:12]}"
    _pg_admin(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0]
    return f"{base}/{name}"


def drop_pg_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    _pg_admin(
        f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    _pg_admin(f'DROP DATABASE IF EXISTS "{name}"')


def _migrated_pg() -> Iterator[str]:
    url = new_pg_database()
    try:
        subprocess.run(
            [sys.executable, "-m", "server", "migrate", "--database-url", url],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield url
    finally:
        from .servers import kill_servers_on

        kill_servers_on(url)
        drop_pg_database(url)
