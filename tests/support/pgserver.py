"""A PostgreSQL server of the test's own: `initdb` into a temporary directory, its own port.

For tests that stop, kill, restart or partition the database (the machine's server on 5432 is
shared with CI and must never be stopped). Runs as the `postgres` OS user when the test runs as
root (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from .servers import free_port

PG_BIN = Path(os.environ.get("DURABLE_RESPONSES_PG_BIN", "/usr/lib/postgresql/15/bin"))


def _as_postgres() -> dict[str, object]:
    """subprocess kwargs that drop root to the `postgres` user (no-op for other users)."""
    if os.geteuid() != 0:
        return {}
    pw = pwd.getpwnam("postgres")

    def demote() -> None:
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    return {"preexec_fn": demote}


class OwnPostgres:
    """One private PostgreSQL cluster: `start()`, `stop()`, `kill()`, `restart()`, `url(db)`.

    `conf` lines are appended to postgresql.conf (e.g. ssl settings); `hba` replaces
    pg_hba.conf when given.
    """

    def __init__(
        self,
        *,
        port: int | None = None,
        conf: list[str] | None = None,
        hba: list[str] | None = None,
        base: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self._owned_base = base is None
        self.base = Path(base or tempfile.mkdtemp(prefix="dr-pg-"))
        self.data = self.base / "data"
        self.socket_dir = self.base / "sock"
        self.log = self.base / "postgres.log"
        self.conf = conf or []
        self.hba = hba
        self.proc: subprocess.Popen[bytes] | None = None

    # -- lifecycle ------------------------------------------------------------------

    def init(self) -> OwnPostgres:
        if (self.data / "PG_VERSION").exists():
            return self
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.base, pw.pw_uid, pw.pw_gid)
            os.chown(self.socket_dir, pw.pw_uid, pw.pw_gid)
        subprocess.run(
            [
                str(PG_BIN / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--locale=C.UTF-8",
            ],
            check=True,
            capture_output=True,
            timeout=120,
            **_as_postgres(),  # type: ignore[arg-type]
        )
        lines = [
            f"port = {self.port}",
            "listen_addresses = '127.0.0.1'",
            f"unix_socket_directories = '{self.socket_dir}'",
            "fsync = off",
            "synchronous_commit = off",
            "full_page_writes = off",
            "max_connections = 100",
            "shared_buffers = 32MB",
            *self.conf,
        ]
        with open(self.data / "postgresql.conf", "a") as f:
            f.write("\n" + "\n".join(lines) + "\n")
        if self.hba is not None:
            (self.data / "pg_hba.conf").write_text("\n".join(self.hba) + "\n")
        return self

    def start(self, timeout: float = 30) -> OwnPostgres:
        self.init()
        if self.running():
            return self
        logf = open(self.log, "ab")
        self.proc = subprocess.Popen(
            [str(PG_BIN / "postgres"), "-D", str(self.data)],
            stdout=logf,
            stderr=subprocess.STDOUT,
            **_as_postgres(),  # type: ignore[arg-type]
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.proc.returncode}:\n{self.log_text()}")
            if self._accepting():
                return self
            time.sleep(0.05)
        raise RuntimeError(f"postgres did not start in {timeout}s:\n{self.log_text()}")

    def _accepting(self) -> bool:
        res = subprocess.run(
            [str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"],
            capture_output=True,
        )
        return res.returncode == 0

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, mode: str = "fast", timeout: float = 30) -> None:
        """A clean shutdown (`smart`, `fast` or `immediate`, as pg_ctl's modes)."""
        if not self.running():
            return
        assert self.proc is not None
        sig = {"smart": signal.SIGTERM, "fast": signal.SIGINT, "immediate": signal.SIGQUIT}[mode]
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        """SIGKILL the postmaster (its backends exit when they notice)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        # Backends that outlive a killed postmaster keep the port: wait until it is free.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self._accepting():
            time.sleep(0.05)
        pid_file = self.data / "postmaster.pid"
        with contextlib.suppress(OSError):
            pid_file.unlink()

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()

    def destroy(self) -> None:
        self.stop("immediate")
        if self._owned_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    # -- databases ------------------------------------------------------------------

    def url(
        self,
        database: str = "postgres",
        *,
        user: str = "postgres",
        host: str = "127.0.0.1",
        port: int | None = None,
    ) -> str:
        return f"postgresql://{user}@{host}:{port or self.port}/{database}"

    def psql(self, sql: str, *, database: str = "postgres") -> str:
        res = subprocess.run(
            [
                str(PG_BIN / "psql"),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-Atc",
                sql,
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if res.returncode != 0:
            raise RuntimeError(f"psql failed: {res.stderr}")
        return res.stdout

    def create_database(self, name: str) -> str:
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def __enter__(self) -> OwnPostgres:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.destroy()


@contextlib.contextmanager
def own_postgres(**kwargs: object) -> Iterator[OwnPostgres]:
    pg = OwnPostgres(**kwargs)  # type: ignore[arg-type]
    try:
        yield pg.start()
    finally:
        pg.destroy()
