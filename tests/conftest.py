"""Shared fixtures: real databases (a SQLite file, a fresh PostgreSQL database) and real servers.

Servers, cheapest first:
- `shared_server` / `shared_servers`: in-process servers (`support.inprocess`) shared by the
  tests of one module, one per dialect (and per app and settings), each on its own database.
  For tests that only need *a* server: every response they make is their own, and they do not
  depend on what else the server has run.
- `inproc_server` / `inproc_factory`: in-process servers on the test's own fresh database
  (`database_url`), for tests that look at the whole database, restart a server on it, or
  need a server nobody else used.
- `server_factory`: `durable-responses serve` subprocesses (`support.servers`), only where a
  process must die (`kill -9`, SIGTERM) or the command itself is under test.

Every database fixture runs on both dialects. PostgreSQL is never skipped quietly: every
PostgreSQL database comes from `support.pg`, which fails the test when the server is
unreachable, unless DURABLE_RESPONSES_SKIP_POSTGRES=1 says to skip it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import servers
from tests.support.inprocess import InProcessServer
from tests.support.pg import PG_ADMIN, ROOT, _migrated_pg, _pg_reachable, drop_pg_database, new_pg_database
from tests.support.servers import RUNNING, ServerProcess, free_port, stop_servers_on

__all__ = [
    "PG_ADMIN",
    "ROOT",
    "RUNNING",
    "InProcessServer",
    "ServerProcess",
    "_pg_reachable",
    "drop_pg_database",
    "free_port",
    "new_pg_database",
]

DIALECTS = ["sqlite", "postgresql"]


def pytest_configure(config: pytest.Config) -> None:
    # Subprocess servers start as forks of a warm process (see `support.forkserver`); 0 turns that off.
    servers.fork_servers(os.environ.get("DURABLE_RESPONSES_TEST_FORKS", "1") != "0")


# Modules whose tests keep both cores busy (client and server CPU-bound). Under pytest-xdist
# (`make test` runs two workers, `--dist loadgroup`) they share one worker and go first, so they
# overlap the crash tests (which mostly wait for leases and ticks) instead of each other, and
# the longest items do not start last.
CPU_BOUND = ("tests/e2e/test_fuzz.py", "tests/e2e/test_large_inputs.py")

# The tests `make test` runs on the newest supported agent-framework only (marked `once`; the
# oldest release's pass leaves them out). Each runs no agent-framework code that a release can
# change, or covers both releases by itself; `tests/test_release_selection.py` holds them to it.
ONCE = {
    "tests/store/": "the store: SQL on SQLite and PostgreSQL, no agent-framework call",
    "tests/protocol/": "the wire protocol: a pure package (tests/protocol/test_purity.py)",
    "tests/postgres/": "PgBouncer, TLS, credentials: the store's connections",
    "tests/chaos/": "database and replica faults on the countdown workflow, whose restore runs "
    "on both releases in tests/crash",
    "tests/surface/test_webhooks.py": "webhook delivery: the store's outbox and HTTP",
    "tests/surface/test_action_webhooks.py": "webhook delivery: the store's outbox and HTTP",
    "tests/surface/test_websocket.py": "the WebSocket transport of the Responses stream",
    "tests/ops/test_retention.py": "retention: deletes rows",
    "tests/ops/test_metrics.py": "the Prometheus endpoint",
    "tests/web/": "the SSE response class",
    "tests/container/": "the image installs requirements.txt's releases whichever venv runs the "
    "test, and both passes would build the same image tag",
    "tests/agents/test_releases.py": "runs a server of each release itself, both ways",
    "tests/test_install.py": "packaging: installs the wheel without its dependencies",
    "tests/test_deploy_files.py": "the deploy files",
    "tests/test_sizes.py": "source sizes",
    "tests/test_construction.py": "a scan of the source",
    "tests/test_xdist_groups.py": "pytest-xdist's grouping, on a suite of its own (the two venvs install "
    "the same pytest and pytest-xdist)",
    "tests/e2e/test_workers.py": "process supervision (`serve --workers`, SO_REUSEPORT, signals); its "
    "workers serve the default echo workflow, which the rest of tests/e2e runs on both releases",
}


def release_once(path: str) -> bool:
    """Whether the test module at `path` (from the repository root) runs on one release only."""
    return any(path == prefix or (prefix.endswith("/") and path.startswith(prefix)) for prefix in ONCE)


# Before pytest-xdist's own hook, which names each item's group (`--dist loadgroup`) from the
# `xdist_group` markers it finds: one added after it groups nothing.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    first = []
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if release_once(path):
            item.add_marker(pytest.mark.once)
        if path in CPU_BOUND:
            item.add_marker(pytest.mark.xdist_group("cpu-bound"))
            first.append(item)
    if first:
        moved = {id(item) for item in first}
        rest = [item for item in items if id(item) not in moved]
        items[:] = first + rest


@pytest.fixture
def pg_database_url() -> Iterator[str]:
    """A fresh, migrated PostgreSQL database (for tests only PostgreSQL can run: replicas)."""
    yield from _migrated_pg()


def _sqlite_url(directory: Path) -> str:
    return f"sqlite:///{directory / 'db' / 'durable-responses.db'}"


@pytest.fixture(params=DIALECTS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database of each dialect (SQLite: a new file the server migrates; PostgreSQL:
    migrated, as `serve` requires)."""
    if request.param == "sqlite":
        url = _sqlite_url(tmp_path)
        yield url
        stop_servers_on(url)
        return
    yield from _migrated_pg()


@pytest.fixture
def dialect(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgresql"


# region subprocess servers


@pytest.fixture
def server_factory(tmp_path: Path) -> Iterator[Callable[..., ServerProcess]]:
    """`make(database_url, app=None, *, env=None, delivery="live", workdir=None, ...)`: a
    `ServerProcess` (not started); every one is killed at teardown."""
    started: list[ServerProcess] = []

    def make(database_url: str, app: str | None = None, **kwargs: Any) -> ServerProcess:
        workdir = kwargs.pop("workdir", None) or tmp_path / f"work-{len(started)}"
        srv = ServerProcess(database_url=database_url, app=app, workdir=workdir, **kwargs)
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.kill()


# endregion

# region in-process servers


@pytest.fixture
def inproc_factory() -> Iterator[Callable[..., InProcessServer]]:
    """`make(database_url, app=None, *, env=None, delivery="live")`: a started in-process
    server; every one still running is stopped (gracefully) at teardown."""
    started: list[InProcessServer] = []

    def make(database_url: str, app: str | None = None, **kwargs: Any) -> InProcessServer:
        srv = InProcessServer(database_url, app, **kwargs)
        started.append(srv)
        return srv.start()

    yield make
    errors = []
    for srv in reversed(started):
        try:
            srv.stop()
        except Exception as exc:  # stop every one, then report
            errors.append(exc)
    if errors:
        raise errors[0]


@pytest.fixture
def inproc_server(database_url: str, inproc_factory: Callable[..., InProcessServer]) -> InProcessServer:
    """An in-process server on the default app (echo) and the test's own fresh database."""
    return inproc_factory(database_url)


class ServerPool:
    """In-process servers shared by one module's tests: one per (dialect, app, delivery, env),
    each on a database of its own (so no server recovers another app's responses)."""

    def __init__(self, tmp: pytest.TempPathFactory) -> None:
        self._tmp = tmp
        self._servers: dict[tuple[Any, ...], InProcessServer] = {}
        self._pg: list[Iterator[str]] = []

    def get(
        self,
        dialect: str,
        app: str | None = None,
        *,
        delivery: str = "live",
        env: dict[str, str] | None = None,
    ) -> InProcessServer:
        key = (dialect, app, delivery, tuple(sorted((env or {}).items())))
        srv = self._servers.get(key)
        if srv is not None and srv.running:
            return srv
        if dialect == "sqlite":
            url = _sqlite_url(self._tmp.mktemp("shared"))
        else:
            databases = _migrated_pg()
            url = next(databases)
            self._pg.append(databases)
        srv = InProcessServer(url, app, delivery=delivery, env=env).start()
        self._servers[key] = srv
        return srv

    def close(self) -> None:
        for srv in self._servers.values():
            srv.stop()
        for databases in self._pg:
            databases.close()  # its `finally` drops the database


@pytest.fixture(scope="module")
def _server_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerPool]:
    pool = ServerPool(tmp_path_factory)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(params=DIALECTS)
def shared_servers(
    request: pytest.FixtureRequest, _server_pool: ServerPool
) -> Callable[..., InProcessServer]:
    """`get(app=None, *, delivery="live", env=None)`: this module's shared in-process server of
    the test's dialect for that app and settings (started on first use)."""

    def get(app: str | None = None, **kwargs: Any) -> InProcessServer:
        return _server_pool.get(request.param, app, **kwargs)

    return get


@pytest.fixture
def shared_server(shared_servers: Callable[..., InProcessServer]) -> InProcessServer:
    """This module's shared in-process server on the default app (echo), per dialect."""
    return shared_servers()


# endregion
