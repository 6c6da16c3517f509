"""Fresh PostgreSQL databases for our columns: created per server session, migrated, dropped after.

The server is the machine's shared PostgreSQL (`BENCH_PG_ADMIN`, else `DURABLE_RESPONSES_TEST_PG`,
else postgres@127.0.0.1:5432): every database the benchmark makes is named `dr_bench_<hex>`, and is
dropped when its session ends (its backends terminated first), also after a failure.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

from bench.config import ROOT

PG_ADMIN = os.environ.get(
    "BENCH_PG_ADMIN",
    os.environ.get("DURABLE_RESPONSES_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
)


def _admin(sql: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> None:
        conn = await asyncpg.connect(PG_ADMIN.replace("postgresql://", "postgres://"), timeout=5)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(run())


def unreachable() -> str | None:
    """Why PostgreSQL cannot be used, or None when it can."""
    try:
        _admin("SELECT 1")
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def database_name(url: str) -> str:
    return url.rsplit("/", 1)[1]


def new_database(migrate: bool = True) -> str:
    """A fresh database's URL (migrated to head with `python -m durable_responses migrate` unless told not)."""
    name = f"dr_bench_{uuid.uuid4().hex[:12]}"
    _admin(f'CREATE DATABASE "{name}"')
    url = f"{PG_ADMIN.rsplit('/', 1)[0]}/{name}"
    if migrate:
        try:
            subprocess.run(
                [sys.executable, "-m", "durable_responses", "migrate", "--database-url", url],
                cwd=ROOT,
                check=True,
                capture_output=True,
                timeout=120,
            )
        except BaseException:
            drop_database(url)
            raise
    return url


def drop_database(url: str) -> None:
    name = database_name(url)
    _admin(
        f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    _admin(f'DROP DATABASE IF EXISTS "{name}"')
