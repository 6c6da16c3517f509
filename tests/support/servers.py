"""A real server in a subprocess (`durable-responses serve` on a free loopback port), for tests
that must `kill -9` it, SIGTERM it, or start another on the same database.

Importing the server and the framework is most of a start's CPU (~1.5-2 s per interpreter), so
in the test suite a server normally starts as a fork of the fork server (`support.forkserver`):
one process per test process that imported those modules once. The child sets the test's
environment and working directory and calls `durable_responses.cli.main(argv)`, the function
`python -m durable_responses` calls: the same `serve` from argument parsing on (settings, app
loading, migration, uvicorn, signal handling), in a process of its own that `kill -9` ends
like any other. The app module (`--app`) is imported by `serve` itself, in the child.
`ServerProcess(..., cold=True)` runs `python -m durable_responses serve` instead, for tests of
the command itself. Only the test suite turns the fork server on (`fork_servers`).
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from . import forkserver

ROOT = Path(__file__).resolve().parent.parent.parent

# What every test server runs with unless the test says otherwise: short leases and sweeps so
# recovery and shutdown take fractions of a second (`inprocess.TEST_ENV` is the same).
TEST_ENV: dict[str, str] = {
    "DURABLE_RESPONSES_LEASE_SECONDS": "2",
    "DURABLE_RESPONSES_RECOVERY_INTERVAL": "0.5",
    "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS": "3",
}


_HANDED_OUT: set[int] = set()
_PORTS_LOCK = threading.Lock()


def free_port() -> int:
    """A loopback port nobody listens on, never the same twice in this process (the kernel may
    hand a just-closed port out again: two servers started at once got the same one)."""
    with _PORTS_LOCK:
        while True:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
            if port not in _HANDED_OUT:
                _HANDED_OUT.add(port)
                return port


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants (a `--workers` supervisor's workers hold the socket)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            continue
    return out


def listens(pid: int, port: int) -> bool:
    """Whether `pid` (or a descendant) holds the socket listening on loopback `port`: another
    process that bound it first (a test server of another worker, an outgoing connection's
    ephemeral port) answers `/readiness` just as well."""
    inodes: set[str] = set()
    for p in _tree(pid):
        try:
            for fd in os.listdir(f"/proc/{p}/fd"):
                target = os.readlink(f"/proc/{p}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes:
                return True
    return False


RUNNING: list[Any] = []  # every server (subprocess or in-process) not yet stopped


@atexit.register
def _kill_leftovers() -> None:
    """Servers a failed fixture never got to stop die with the test process (they would hold
    database connections, and the machine's PostgreSQL is shared)."""
    for srv in list(RUNNING):
        if isinstance(srv, ServerProcess):
            srv.kill()


def fork_servers(on: bool) -> None:
    """Whether servers start as forks of the fork server (the test suite's conftest turns it
    on; off, the default elsewhere: a benchmark's restart figure must include the
    interpreter's start)."""
    forkserver.ENABLED = on


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
        cold: bool = False,
        python: str | None = None,
    ) -> None:
        # Another interpreter (another venv: another agent-framework release) has a fork server
        # of its own.
        self.python = python or sys.executable
        self.log_level = log_level
        self.database_url = database_url
        self.app = app
        self.workdir = workdir
        self.env = env or {}
        self.delivery = delivery
        self._own_port = port is None  # chosen here: another one is chosen if it is taken
        self.port = port or free_port()
        self.cold = cold
        self.proc: subprocess.Popen[bytes] | forkserver.Forked | None = None
        self.log_path = workdir / f"server-{self.port}-{uuid.uuid4().hex[:6]}.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _argv(self) -> list[str]:
        argv = [
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
            argv += ["--app", self.app]
        return argv

    def start(self, timeout: float = 60) -> ServerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT), **TEST_ENV, **self.env}
        config = {"argv": self._argv(), "env": env, "cwd": str(self.workdir), "log": str(self.log_path)}
        self.proc = None if self.cold else forkserver.fork(config, self.python)
        if self.proc is None:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [self.python, "-m", "durable_responses", *self._argv()],
                    cwd=self.workdir,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        RUNNING.append(self)
        deadline = time.monotonic() + timeout
        # One client for the whole wait: a new one per poll builds a TLS context (~15 ms of CPU)
        # at every poll, CPU the starting server needs (three replicas starting at once).
        with httpx.Client(timeout=1) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    if self._port_taken():
                        return self._start_elsewhere(timeout)
                    raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    ready = http.get(self.base_url + "/readiness").status_code == 200
                except httpx.HTTPError:
                    ready = False
                if ready and listens(self.proc.pid, self.port):
                    return self
                if ready and self._port_taken():
                    return self._start_elsewhere(timeout)  # someone else answered on our port
                time.sleep(0.03)
        raise RuntimeError(f"server did not become ready:\n{self.log()}")

    def _port_taken(self) -> bool:
        return "address already in use" in self.log()

    def _start_elsewhere(self, timeout: float) -> ServerProcess:
        """This server could not bind its port (another process holds it): on a port of its
        own choosing it starts again on another; a port the test chose is an error."""
        self.kill()
        if not self._own_port:
            raise RuntimeError(f"port {self.port} is taken by another process:\n{self.log()}")
        self.port = free_port()
        self.log_path = self.workdir / f"server-{self.port}-{uuid.uuid4().hex[:6]}.log"
        self.cold = True
        return self.start(timeout)

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

    stop = kill  # what a fixture's teardown calls on any server

    def terminate(self, timeout: float = 20) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout)
        if self in RUNNING:
            RUNNING.remove(self)
        return int(self.proc.returncode)

    def client(self, **kwargs: object):  # type: ignore[no-untyped-def]
        from openai import OpenAI

        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("timeout", 60)
        return OpenAI(base_url=self.base_url, api_key="test-key", **kwargs)  # type: ignore[arg-type]


def stop_servers_on(database_url: str) -> None:
    """Stop every server (subprocess: kill -9; in-process: graceful) still using a database,
    before the database is dropped."""
    for srv in list(RUNNING):
        if srv.database_url == database_url:
            srv.stop()


kill_servers_on = stop_servers_on
