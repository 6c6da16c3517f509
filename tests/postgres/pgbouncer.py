"""A PgBouncer of the test's own (Debian's `pgbouncer`), in front of a PostgreSQL of the test's own.

Runs as the `postgres` OS user when the test runs as root (PgBouncer refuses to run as root),
on its own port, with its config, log and pid files in a temporary directory. `auth_type=trust`:
the tests are about pooling, TLS and tokens are tested against PostgreSQL directly.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Literal

from tests.support.pgserver import free_port

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
PoolMode = Literal["transaction", "session"]


def available() -> bool:
    return os.path.exists(PGBOUNCER)


def _demote() -> dict[str, object]:
    if os.geteuid() != 0:
        return {}
    pw = pwd.getpwnam("postgres")

    def demote() -> None:
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    return {"preexec_fn": demote}


class PgBouncer:
    def __init__(
        self,
        *,
        server_port: int,
        pool_mode: PoolMode,
        users: tuple[str, ...] = ("postgres",),
        pool_size: int = 20,
        max_client_conn: int = 200,
        extra: tuple[str, ...] = (),
    ) -> None:
        self.port = free_port()
        self.server_port = server_port
        self.pool_mode = pool_mode
        self.base = Path(tempfile.mkdtemp(prefix="dr-pgbouncer-"))
        self.log = self.base / "pgbouncer.log"
        self.proc: subprocess.Popen[bytes] | None = None
        (self.base / "users.txt").write_text("".join(f'"{u}" ""\n' for u in users))
        lines = [
            "[databases]",
            f"* = host=127.0.0.1 port={server_port}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {self.base / 'users.txt'}",
            f"pool_mode = {pool_mode}",
            f"default_pool_size = {pool_size}",
            f"max_client_conn = {max_client_conn}",
            f"logfile = {self.log}",
            f"pidfile = {self.base / 'pgbouncer.pid'}",
            "admin_users = postgres",
            "server_reset_query = DISCARD ALL",
            *extra,
        ]
        (self.base / "pgbouncer.ini").write_text("\n".join(lines) + "\n")
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            for p in (self.base, *self.base.iterdir()):
                os.chown(p, pw.pw_uid, pw.pw_gid)

    def url(self, database: str, *, user: str = "postgres", query: str = "") -> str:
        return f"postgresql://{user}@127.0.0.1:{self.port}/{database}{query}"

    def start(self, timeout: float = 15) -> PgBouncer:
        self.proc = subprocess.Popen(
            [PGBOUNCER, str(self.base / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            **_demote(),  # type: ignore[arg-type]
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pgbouncer exited with {self.proc.returncode}:\n{self.log_text()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not start in {timeout}s:\n{self.log_text()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.base, ignore_errors=True)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def __enter__(self) -> PgBouncer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
