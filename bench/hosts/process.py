"""Process control for the servers the benchmark starts: a free port, start and wait until ready,
SIGTERM, `kill -9`, a last sweep of whatever is still alive at the end of the run, and the
session every served column hands its scenarios (`ServedSession`).

The benchmark's own (it shares nothing with the tests but the package `server`). Readiness is polled
every 20 ms, not 100: the recovery scenario reports the time from a restart until `/readiness`
answers, and a coarse poll would add up to its own period to that figure.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from bench.cpu import ProcessCPU
from bench.httpclient import HttpDriver

READY_POLL_S = 0.02

STARTED: list[ServerProc] = []  # every server process this run started (killed at exit if still alive)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProc:
    """One server command on a fixed loopback port; `start` again after `kill` is a restart on the
    same port (a fresh log file per start)."""

    def __init__(self, cmd: list[str], *, env: dict[str, str], cwd: Path, log_dir: Path, name: str) -> None:
        self.cmd = cmd
        self.env = env
        self.cwd = cwd
        self.log_dir = log_dir
        self.name = name
        self.port = int(cmd[cmd.index("--port") + 1])
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self._starts = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90) -> ServerProc:
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._starts += 1
        self.log_path = self.log_dir / f"{self.name}-{self.port}-{self._starts}.log"
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(
                self.cmd, cwd=self.cwd, env=self.env, stdout=logf, stderr=subprocess.STDOUT
            )
        STARTED.append(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if httpx.get(self.base_url + "/readiness", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(READY_POLL_S)
        raise RuntimeError(f"server did not become ready in {timeout}s:\n{self.log()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:] if self.log_path else ""
        except OSError:
            return ""

    def kill(self) -> None:
        """`kill -9`: no shutdown code runs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.kill()


@contextmanager
def serving(srv: Any) -> Iterator[Any]:
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        srv.kill()


class ServedSession:
    """A workflow served by one `ServerProc`: its clients, `kill -9` and a restart on the same state.

    `body`: extra fields of every POST /responses; `database`: a PostgreSQL database whose backends'
    CPU counts as the server's (bench/cpu.py `ProcessCPU`).
    """

    def __init__(self, srv: ServerProc, body: dict[str, Any], database: str | None = None) -> None:
        self.srv = srv
        self.body = body
        self.database = database

    @property
    def base_url(self) -> str:
        return self.srv.base_url

    @property
    def pid(self) -> int:
        assert self.srv.proc is not None
        return self.srv.proc.pid

    def driver(self, *, connections: int = 10, timeout: float = 300, measure_cpu: bool = False) -> HttpDriver:
        proc = self.srv.proc
        cpu = ProcessCPU(proc.pid, self.database) if measure_cpu and proc is not None else None
        return HttpDriver(self.base_url, self.body, connections=connections, timeout=timeout, cpu=cpu)

    def kill(self) -> None:
        self.srv.kill()

    def start(self) -> ServerProc:
        return self.srv.start()


def kill_leftovers() -> None:
    for srv in STARTED:
        proc = srv.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
