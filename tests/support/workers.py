"""`serve --workers N` as a subprocess: start it, wait until every worker listens, list its workers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .servers import ROOT, TEST_ENV


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def start_serve(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:

    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "durable_responses", *argv],
            cwd=log.parent,
            env={**os.environ, "PYTHONPATH": str(ROOT), **TEST_ENV, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def wait_ready(proc: subprocess.Popen[bytes], base: str, log: Path, workers: int) -> None:
    deadline = time.monotonic() + 90
    with httpx.Client(timeout=1) as http:
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            # Ready once every worker listens: until then the kernel may route to too few.
            if (
                len(children(proc.pid)) == workers
                and log.read_text().count("Application startup complete") >= workers
            ):
                try:
                    if http.get(base + "/readiness").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
    raise AssertionError(f"not ready:\n{log.read_text()}")
