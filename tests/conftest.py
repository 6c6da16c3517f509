"""Shared fixtures: real databases (SQLite file, fresh PostgreSQL database) and real servers.

`server_factory` starts `python -m server serve` as a subprocess (uvicorn on a free loopback
port), so tests can `kill -9` it and start another on the same database. PostgreSQL is never
skipped in CI: with DURABLE_RESPONSES_REQUIRE_POSTGRES=1 an unreachable server fails the run.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
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
        for srv in list(RUNNING):
            if srv.database_url == url:
                srv.kill()
        drop_pg_database(url)


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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


RUNNING: list[ServerProcess] = []


class ServerProcess:
    def __init__(
        self,
        *,
        database_url: str,
        app: str | None,
        workdir: Path,
        env: dict[str, str] | None = None,
        delivery: str = "live",
        port: int | None = None,
        log_level: str = "warning",
    ) -> None:
        self.log_level = log_level
        self.database_url = database_url
        self.app = app
        self.workdir = workdir
        self.env = env or {}
        self.delivery = delivery
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = workdir / f"server-{self.port}-{uuid.uuid4().hex[:6]}.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> ServerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            {
                "PYTHONPATH": str(ROOT),
                "DURABLE_RESPONSES_LEASE_SECONDS": "2",
                "DURABLE_RESPONSES_RECOVERY_INTERVAL": "0.5",
                "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS": "3",
            }
        )
        env.update(self.env)
        cmd = [
            sys.executable,
            "-m",
            "server",
            "serve",
            "--port",
            str(self.port),
            "--database-url",
            self.database_url,
            "--delivery",
            self.delivery,
            "--log-level",
            self.log_level,
        ]
        if self.app:
            cmd += ["--app", self.app]
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT)
        RUNNING.append(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.base_url + "/readiness", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server did not become ready:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except OSError:
            return ""

    def kill(self) -> None:
        """`kill -9`: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        if self in RUNNING:
            RUNNING.remove(self)

    def terminate(self, timeout: float = 20) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        return int(self.proc.returncode)

    def client(self, **kwargs: object):  # type: ignore[no-untyped-def]
        from openai import OpenAI

        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("timeout", 60)
        return OpenAI(base_url=self.base_url, api_key="test-key", **kwargs)  # type: ignore[arg-type]


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
