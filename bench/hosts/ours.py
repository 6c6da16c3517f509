"""Ours: `python -m durable_responses serve` on SQLite (a fresh file) and PostgreSQL (a fresh database per
session, migrated, dropped at its end), in `live` and `durable` delivery.

The server runs with its default lease (15 s; `--lease-seconds`) and recovery interval (2 s).
Requests add `background=true`: every event is committed before it is sent and the response is
recoverable, the guarantee asked of the resilient existing host (`--ours-foreground` sends plain
streams; on this machine the two differ by noise, plus one `response.queued` event).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.config import ROOT, Sizes, log
from bench.hosts import postgres
from bench.hosts.base import OURS_ONLY, Host
from bench.hosts.process import ServedSession, ServerProc, free_port, serving
from durable_responses.store.settings import LEASE_SECONDS


def ours_env(lease_s: float) -> dict[str, str]:
    return {
        "DURABLE_RESPONSES_LEASE_SECONDS": str(lease_s),
        "DURABLE_RESPONSES_RECOVERY_INTERVAL": "2",  # the server's default
        "DURABLE_RESPONSES_SHUTDOWN_GRACE_SECONDS": "3",
    }


def ours_server(
    url: str,
    app: str,
    delivery: str,
    workdir: Path,
    env: dict[str, str],
    port: int | None = None,
    args: tuple[str, ...] = (),
) -> ServerProc:
    """`python -m durable_responses serve` of this checkout (PYTHONPATH), logging at WARNING, plus `args`."""
    cmd = [sys.executable, "-m", "durable_responses", "serve", "--port", str(port or free_port())]
    cmd += ["--database-url", url, "--delivery", delivery, "--log-level", "warning", "--app", app, *args]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return ServerProc(cmd, env=full_env, cwd=workdir, log_dir=workdir, name="server")


@contextmanager
def fresh_database(dialect: str, where: Path) -> Iterator[str]:
    """A SQLite file under `where`, or a migrated PostgreSQL database dropped at the end."""
    if dialect == "sqlite":
        path = where / "bench.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        yield f"sqlite:///{path}"
        return
    url = postgres.new_database()
    try:
        yield url
    finally:
        try:
            postgres.drop_database(url)
        except Exception as exc:
            log(f"could not drop {url}: {exc}")


class OursSession(ServedSession):
    def __init__(
        self, srv: ServerProc, body: dict[str, Any], database_url: str, database: str | None
    ) -> None:
        # `database`: PostgreSQL's database name, to find its backends' CPU.
        super().__init__(srv, body, database)
        self.database_url = database_url  # for scenarios that read the database (bytes per response)


@dataclass
class OursHost(Host):
    lease_s: float = LEASE_SECONDS
    # More `serve` arguments of this column (a column of `--workers N` is a host with them;
    # `ProcessCPU` counts a server's child processes too).
    args: tuple[str, ...] = ()

    @property
    def tags(self) -> set[str]:
        return {self.key, self.kind, self.dialect, self.delivery}

    def rounds(self, sizes: Sizes) -> int:
        return sizes.ours_reps_factor

    def skip(self, scenario: str) -> str | None:
        if scenario == "capacity" and self.delivery == "durable":
            return "durable delivery shows a superstep's tokens when its checkpoint commits"
        if scenario in OURS_ONLY and self.delivery == "durable":
            return "the same event log and tables as live delivery: measured on the live column"
        if scenario in OURS_ONLY and self.dialect != _OURS_ONLY_ON[scenario]:
            return f"measured on the {_OURS_ONLY_ON[scenario]} column (the full run must fit 15 minutes)"
        return super().skip(scenario)

    @property
    def workers(self) -> int:
        return int(self.args[self.args.index("--workers") + 1]) if "--workers" in self.args else 1

    @contextmanager
    def session(self, app: str, name: str) -> Iterator[OursSession]:
        workdir = self.work / name
        with fresh_database(self.dialect, workdir) as url:
            srv = ours_server(
                url, f"bench.apps:{app}", self.delivery, workdir, ours_env(self.lease_s), args=self.args
            )
            database = postgres.database_name(url) if self.dialect == "postgresql" else None
            with serving(srv):
                _wait_listening(srv.port, self.workers)
                yield OursSession(srv, self.body, url, database)


# Where each ours-only scenario runs: one column each keeps the full run within its 15 minutes.
# Long replays on PostgreSQL, the production store; memory per response is the server
# process's own (the same code on either store), measured with SQLite, whose database bytes
# are the embedded default's (bench/ops.py measures PostgreSQL's bytes per response too).
_OURS_ONLY_ON = {"long": "postgresql", "footprint": "sqlite"}


def _wait_listening(port: int, n: int, timeout: float = 60) -> None:
    """Until `n` sockets listen on `port` (every worker of `--workers n`: the first one answers
    /readiness before the others listen, and keep-alive connections stay where they landed)."""
    if n <= 1:
        return
    needle = f":{port:04X} 00000000:0000 0A"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = Path("/proc/net/tcp").read_text() + Path("/proc/net/tcp6").read_text()
        if text.count(needle) >= n:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{n} workers did not all listen on port {port} within {timeout:.0f} s")


def ours_hosts(foreground: bool, lease_s: float) -> list[Host]:
    body: dict[str, Any] = {} if foreground else {"background": True}
    out: list[Host] = []
    for dialect in ("sqlite", "postgresql"):
        for delivery in ("live", "durable"):
            out.append(
                OursHost(
                    f"{dialect}-{delivery}",
                    f"ours, {'SQLite' if dialect == 'sqlite' else 'PostgreSQL'} {delivery}",
                    "ours",
                    body=dict(body),
                    dialect=dialect,
                    delivery=delivery,
                    lease_s=lease_s,
                )
            )
    # `serve --workers 2` on PostgreSQL (live delivery), for live capacity only: N processes on
    # one port, one replica each, so capacity can grow with the machine's cores.
    out.append(
        OursHost(
            "postgresql-live-w2",
            "ours, PostgreSQL live, --workers 2",
            "ours",
            body=dict(body),
            dialect="postgresql",
            delivery="live",
            lease_s=lease_s,
            args=("--workers", "2"),
            only=("capacity",),
        )
    )
    return out
