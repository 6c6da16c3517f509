"""A real server in a subprocess (`python -m server serve` on a free loopback port), for tests
that must `kill -9` it, SIGTERM it, or start another on the same database.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent.parent


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
        # One client for the whole wait: a new one per poll builds a TLS context (~15 ms of CPU)
        # ten times a second, CPU the starting server needs (three replicas starting at once).
        with httpx.Client(timeout=1) as http:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
                try:
                    if http.get(self.base_url + "/readiness").status_code == 200:
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


def kill_servers_on(database_url: str) -> None:
    for srv in list(RUNNING):
        if srv.database_url == database_url:
            srv.kill()
