"""Fresh databases on the machine's PostgreSQL (created per test, dropped after).

PostgreSQL is never skipped unless asked: an unreachable server fails the test, unless
DURABLE_RESPONSES_SKIP_POSTGRES=1 (never in CI) says to skip it.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PG_ADMIN = os.environ.get("DURABLE_RESPONSES_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _pg_admin(sql: str) -> list[tuple[object, ...]]:
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> list[tuple[object, ...]]:
        conn = await asyncpg.connect(PG_ADMIN.replace("postgresql://", "postgres://"), timeout=5)
        try:
            return [tuple(r) for r in await conn.fetch(sql)]
        finally:
            await conn.close()

    return asyncio.run(run())


def _pg_reachable() -> str | None:
    try:
        _pg_admin("SELECT 1")
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


_unreachable: str | None = None  # no server there: every later test fails (or skips) at once


def _require_postgres() -> None:
    """PostgreSQL is half of the suite: without it, fail, unless the user opted out."""
    global _unreachable
    problem = _unreachable
    attempt = 0
    while problem is None:
        problem = _pg_reachable()
        if problem is None:
            return
        if "TooManyConnections" in problem and attempt < 9:
            # The machine's server is shared (max_connections): a full server is busy, not
            # absent. Wait for connections to free up instead of failing the test at once.
            attempt += 1
            time.sleep(0.5 * attempt)
            problem = None
    if problem is None:
        return
    if "TooManyConnections" not in problem:
        _unreachable = problem
    msg = f"PostgreSQL not reachable at {PG_ADMIN}: {problem}"
    if os.environ.get("DURABLE_RESPONSES_SKIP_POSTGRES") == "1":
        pytest.skip(reason=f"{msg} (DURABLE_RESPONSES_SKIP_POSTGRES=1)")
    pytest.fail(
        f"{msg}. The PostgreSQL half of the suite needs it (set DURABLE_RESPONSES_TEST_PG to another "
        "server, or DURABLE_RESPONSES_SKIP_POSTGRES=1 to skip those tests knowingly)."
    )


# Every test database's name starts with this (the test process's pid in it), so that
# `sweep_stale` finds what a test process that died left, whichever suite made it.
_PREFIX = f"dr_e2e_{os.getpid()}_"
_template: str | None = None


def database_name(kind: str = "") -> str:
    """A new test database name: `dr_e2e_<pid>_<kind><random>`."""
    return f"{_PREFIX}{kind}{uuid.uuid4().hex[:12]}"


def _base() -> str:
    return PG_ADMIN.rsplit("/", 1)[0]


def sweep_stale() -> None:
    """Drop test databases left by test processes that died (their pid is in the name)."""
    for (name,) in _pg_admin("SELECT datname FROM pg_database WHERE datname LIKE 'dr\\_e2e\\_%'"):
        parts = str(name).split("_")
        if len(parts) < 4 or not parts[2].isdigit():
            continue
        pid = int(parts[2])
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue  # alive: another test run's
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        try:
            drop_pg_database(f"{_base()}/{name}")
        except Exception as exc:  # someone's leftover: never a reason to fail this run
            print(f"could not drop stale test database {name}: {exc}")


def _template_database() -> str:
    """A migrated database to copy (`CREATE DATABASE ... TEMPLATE`: ~50 ms instead of a
    migration per test), made once per test process and dropped when it exits."""
    global _template
    if _template is None:
        sweep_stale()
        name = f"{_PREFIX}template"
        _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        _pg_admin(f'CREATE DATABASE "{name}"')
        url = f"{_base()}/{name}"
        subprocess.run(
            [sys.executable, "-m", "durable_responses", "migrate", "--database-url", url],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=120,
        )
        atexit.register(drop_pg_database, url)
        _template = name
    return _template


def new_pg_database(*, migrated: bool = False) -> str:
    """A fresh database on the machine's PostgreSQL (empty, or with the schema at head)."""
    _require_postgres()
    name = database_name()
    if migrated:
        _pg_admin(f'CREATE DATABASE "{name}" TEMPLATE "{_template_database()}"')
    else:
        _pg_admin(f'CREATE DATABASE "{name}"')
    return f"{_base()}/{name}"


def drop_pg_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    _pg_admin(
        f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _migrated_pg() -> Iterator[str]:
    url = new_pg_database(migrated=True)
    try:
        yield url
    finally:
        from .servers import kill_servers_on

        kill_servers_on(url)
        drop_pg_database(url)
