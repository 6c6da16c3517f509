"""Fixtures of the chaos suite: a PostgreSQL server of its own behind a breakable proxy, fresh
databases cloned from one migrated template, replicas as subprocesses, a small tmpfs volume.

Nothing here touches the machine's PostgreSQL on 5432: the cluster is initdb'd in a temporary
directory on its own port (`tests.support.pgserver.OwnPostgres`) and destroyed at the end.
Every server, proxy, mount and directory a fixture starts is cleaned up by its finalizer, on
failure too. At the end of the run every scenario's summary (disruption times, what clients
saw, what failed) is printed, whether the test passed, failed or xfailed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.pgserver import OwnPostgres
from tests.support.proxy import Proxy
from tests.support.servers import ROOT, ServerProcess

from .checks import SUMMARIES
from .harness import DbWatch

COUNTDOWN = "durable_responses.examples.countdown:countdown"
TEMPLATE_DB = "chaos_template"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not SUMMARIES:
        return
    terminalreporter.section("chaos scenarios (disruption times, what clients saw, what fails)")
    for sc in SUMMARIES:
        terminalreporter.write_line(sc.render())


@pytest.fixture(scope="session")
def chaos_pg() -> Iterator[OwnPostgres]:
    """The suite's own PostgreSQL cluster, with one migrated template database."""
    pg = OwnPostgres(conf=["max_connections = 300"])
    try:
        pg.start()
        pg.create_database(TEMPLATE_DB)
        subprocess.run(
            [sys.executable, "-m", "durable_responses", "migrate", "--database-url", pg.url(TEMPLATE_DB)],
            cwd=ROOT,
            check=True,
            capture_output=True,
            timeout=120,
        )
        yield pg
    finally:
        pg.destroy()


@pytest.fixture
def pg_db(chaos_pg: OwnPostgres) -> Iterator[str]:
    """A fresh migrated database (a copy of the template) on the suite's cluster; its name."""
    name = f"chaos_{uuid.uuid4().hex[:10]}"
    chaos_pg.psql(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE_DB}"')
    yield name
    with contextlib.suppress(Exception):
        if chaos_pg.running():
            chaos_pg.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def db_proxy(chaos_pg: OwnPostgres) -> Iterator[Proxy]:
    """A proxy in front of the suite's cluster: replicas connect through it, the test breaks it."""
    proxy = Proxy(chaos_pg.port, name="pg-proxy").start()
    try:
        yield proxy
    finally:
        proxy.close()


@pytest.fixture
def pg_watch(chaos_pg: OwnPostgres, pg_db: str) -> Iterator[DbWatch]:
    """Direct reads of the scenario's database (around the proxy)."""
    watch = DbWatch(pg_dsn=chaos_pg.url(pg_db).replace("postgresql://", "postgres://"))
    try:
        yield watch
    finally:
        watch.close()


class Replicas:
    """Server subprocesses of one scenario; all killed at the end."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.all: list[ServerProcess] = []
        self.dead: set[int] = set()

    def start(
        self,
        database_url: str,
        count: int = 1,
        *,
        app: str = COUNTDOWN,
        env: dict[str, str] | None = None,
        port: int | None = None,
    ) -> list[ServerProcess]:
        """Start `count` replicas at once (in parallel: each takes ~1 s to import and bind);
        `port`: the one replica's port (a restart where its predecessor listened)."""
        assert port is None or count == 1
        new = [
            ServerProcess(
                database_url=database_url,
                app=app,
                workdir=self.workdir / f"replica-{len(self.all) + i}",
                env=env,
                port=port,
            )
            for i in range(count)
        ]
        self.all.extend(new)
        errors: list[BaseException] = []

        def start(srv: ServerProcess) -> None:
            try:
                srv.start()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=start, args=(s,)) for s in new]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        if errors:
            raise errors[0]
        return new

    def live(self) -> list[str]:
        return [s.base_url for s in self.all if s.proc is not None and s.proc.poll() is None]

    def kill(self, srv: ServerProcess) -> None:
        self.dead.add(srv.port)
        srv.kill()

    def stop_all(self) -> None:
        for srv in self.all:
            srv.kill()


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    reps = Replicas(tmp_path)
    try:
        yield reps
    finally:
        reps.stop_all()


class SmallVolume:
    """A tmpfs of `size` mounted on a fresh directory (root only); unmounted at the end."""

    def __init__(self, size: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="dr-chaos-vol-"))
        self.size = size
        self.mounted = False

    def mount(self) -> SmallVolume:
        res = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size},mode=0755", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            pytest.fail(
                f"the disk-full scenario needs a {self.size} tmpfs (run as root): mount failed: {res.stderr.strip()}"
            )
        self.mounted = True
        return self

    def fill(self, name: str = "filler", leave: int = 0) -> Path:
        """Write zeros until the volume is full (leaving `leave` bytes); returns the file."""
        filler = self.path / name
        block = b"\0" * 65536
        with open(filler, "wb") as f:
            try:
                while True:
                    free = shutil.disk_usage(self.path).free
                    if free <= leave:
                        break
                    f.write(block[: max(1, min(len(block), free - leave))])
                    f.flush()
                    os.fsync(f.fileno())
            except OSError:
                pass
        return filler

    def free(self) -> int:
        return shutil.disk_usage(self.path).free

    def cleanup(self) -> None:
        if self.mounted:
            res = subprocess.run(["umount", str(self.path)], capture_output=True)
            if res.returncode != 0:
                subprocess.run(["umount", "-l", str(self.path)], capture_output=True)
            self.mounted = False
        shutil.rmtree(self.path, ignore_errors=True)


@pytest.fixture
def small_volume() -> Iterator[Callable[[str], SmallVolume]]:
    volumes: list[SmallVolume] = []

    def make(size: str) -> SmallVolume:
        vol = SmallVolume(size)
        volumes.append(vol)
        return vol.mount()

    try:
        yield make
    finally:
        for vol in volumes:
            vol.cleanup()
