"""A real server in a subprocess (`durable-responses serve` on a free loopback port), for tests
that must `kill -9` it, SIGTERM it, or start another on the same database.

Start-up is most of a crash test's cost (~3 s on this machine, 2 s of it importing the
framework), so a server normally starts from a *spare*: a Python process spawned ahead of
time that has imported the server's modules and waits for its command line on stdin. It then
sets the test's environment and working directory and calls `durable_responses.cli.main(argv)`, the
function `python -m durable_responses` calls: the same `serve` from argument parsing on (settings, app
loading, migration, uvicorn, signal handling), in a process of its own that `kill -9` ends
like any other. The app module (`--app`) is imported by `serve` itself, after the command
line arrived. `ServerProcess(..., cold=True)` runs `python -m durable_responses serve` instead, for
tests of the command itself. Only the test suite turns spares on (`keep_spares`).
"""

from __future__ import annotations

import atexit
import json
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


# region spares

_SPARE = """
import json, os, sys
import uvicorn, uvloop, httptools  # what `serve` imports on its way to listening
import agent_framework
import durable_responses.cli, durable_responses.service, durable_responses.http.app, durable_responses.runtime.host
line = sys.stdin.readline()
if not line:
    sys.exit(0)
cfg = json.loads(line)
log = os.open(cfg["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
os.dup2(log, 1)
os.dup2(log, 2)
os.close(log)
os.environ.clear()
os.environ.update(cfg["env"])
os.chdir(cfg["cwd"])
sys.argv = ["durable-responses", *cfg["argv"]]
durable_responses.cli.main(cfg["argv"])
"""

_spares: list[subprocess.Popen[bytes]] = []
_spares_lock = threading.Lock()
# Spares kept warm; 0 (the default outside the test suite: a benchmark's restart figure must
# include the interpreter's start) starts every server the ordinary way. The test suite's
# conftest sets it (DURABLE_RESPONSES_TEST_SPARES, default 1).
SPARES = 0


def keep_spares(n: int) -> None:
    global SPARES
    SPARES = n


def _spawn_spare() -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", _SPARE],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _take_spare() -> subprocess.Popen[bytes] | None:
    """A warm spare (spawning its replacement), or None when spares are off."""
    if SPARES <= 0:
        return None
    with _spares_lock:
        spare = None
        while _spares:
            candidate = _spares.pop(0)
            if candidate.poll() is None:
                spare = candidate
                break
        while len(_spares) < SPARES:
            _spares.append(_spawn_spare())
    return spare if spare is not None else _spawn_spare()


@atexit.register
def _kill_leftovers() -> None:
    """Servers a failed fixture never got to stop die with the test process (they would hold
    database connections, and the machine's PostgreSQL is shared)."""
    for srv in list(RUNNING):
        if isinstance(srv, ServerProcess):
            srv.kill()


@atexit.register
def _drop_spares() -> None:
    with _spares_lock:
        for spare in _spares:
            if spare.poll() is None:
                spare.kill()
                spare.wait(10)
        _spares.clear()


# endregion


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
        # Another interpreter (another venv: another agent-framework release) starts cold: the
        # spares run this one.
        self.python = python or sys.executable
        cold = cold or python is not None
        self.log_level = log_level
        self.database_url = database_url
        self.app = app
        self.workdir = workdir
        self.env = env or {}
        self.delivery = delivery
        self._own_port = port is None  # chosen here: another one is chosen if it is taken
        self.port = port or free_port()
        self.cold = cold
        self.proc: subprocess.Popen[bytes] | None = None
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
        spare = None if self.cold else _take_spare()
        if spare is None:
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [self.python, "-m", "durable_responses", *self._argv()],
                    cwd=self.workdir,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        else:
            config = {"argv": self._argv(), "env": env, "cwd": str(self.workdir), "log": str(self.log_path)}
            assert spare.stdin is not None
            spare.stdin.write(json.dumps(config).encode() + b"\n")
            spare.stdin.close()
            self.proc = spare
        RUNNING.append(self)
        deadline = time.monotonic() + timeout
        # One client for the whole wait: a new one per poll builds a TLS context (~15 ms of CPU)
        # at every poll, CPU the starting server needs (three replicas starting at once).
        with httpx.Client(timeout=1) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    if self._port_taken():
                        return self._start_elsewhere(timeout)
                    if spare is not None and not self.log():
                        # The spare died before it read its command line (it logs nothing
                        # before): start this one the ordinary way, so the error is in the log.
                        RUNNING.remove(self)
                        self.cold = True
                        return self.start(timeout)
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
