"""Shared fixtures: real databases (SQLite file, fresh PostgreSQL database) and real servers.

`server_factory` starts `python -m server serve` as a subprocess (uvicorn on a free loopback
port), so tests can `kill -9` it and start another on the same database. PostgreSQL is never
skipped: an unreachable server fails the run, unless DURABLE_RESPONSES_SKIP_POSTGRES=1 says to.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pg import PG_ADMIN, ROOT, _migrated_pg, drop_pg_database, new_pg_database
from tests.support.servers import RUNNING, ServerProcess, free_port

__all__ = [
    "PG_ADMIN",
    "ROOT",
    "RUNNING",
    "ServerProcess",
    "drop_pg_database",
    "free_port",
    "new_pg_database",
]


@pytest.fixture
def pg_database_url() -> Iterator[str]:
    """A fresh, migrated PostgreSQL database (for tests only PostgreSQL can run: replicas)."""
    yield from _migrated_pg()


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, migrated database of each dialect."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'db' / 'durable-responses.db'}"
        yield url
        return
    yield from _migrated_pg()


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[object]:
    started: list[ServerProcess] = []

    def make(database_url: str, app: str | None = None, **kwargs: object) -> ServerProcess:
        workdir = kwargs.pop("workdir", None) or tmp_path / f"work-{len(started)}"
        srv = ServerProcess(database_url=database_url, app=app, workdir=workdir, **kwargs)  # type: ignore[arg-type]
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.kill()


@pytest.fixture
def server(database_url: str, server_factory: object) -> Iterator[ServerProcess]:
    """A running server on the default example app (echo), one per dialect."""
    srv = server_factory(database_url).start()  # type: ignore[operator]
    yield srv
