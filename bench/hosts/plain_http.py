"""The plain-HTTP reference column: the framework streamed over HTTP, nothing stored (issue 17).

Not a host anyone would run: bench/hosts/plain_http_serve.py drives the bench workflow through
agent-framework exactly as the floor does and writes each token to its HTTP stream as one SSE
frame, on the same uvicorn (uvloop, httptools) as ours, in its own process. Its CPU per token is
the floor's work plus the HTTP of each token and nothing more, so it is the least any Responses
host that streams over HTTP can spend; the table reads ours against it as well as against the
floor. It runs live capacity (the scenario whose CPU per token issues 17 and 40 bound), the
1000-output burst (interleaved with the floor and ours) and the concurrent short responses:
where it stands against the floor there is what serving over HTTP alone costs, before anything
is stored (issue 40 reads its per-output and responses/s targets with it).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.hosts.base import Host
from bench.hosts.process import ServedSession, ServerProc, free_port, serving

SERVE = Path(__file__).resolve().parent / "plain_http_serve.py"


@dataclass
class PlainHttpHost(Host):
    @property
    def recovery_skip(self) -> str | None:
        return "stores nothing"

    @contextmanager
    def session(self, app: str, name: str) -> Iterator[ServedSession]:
        workdir = self.work / name
        cmd = [sys.executable, str(SERVE), "--app", app, "--port", str(free_port())]
        srv = ServerProc(cmd, env=dict(os.environ), cwd=workdir, log_dir=workdir, name="plain-http")
        with serving(srv):
            yield ServedSession(srv, {})


def plain_http_hosts() -> list[Host]:
    return [
        PlainHttpHost(
            "plain-http",
            "framework over plain HTTP, nothing stored",
            "reference",
            only=("capacity", "concurrent", "burst"),
        )
    ]
