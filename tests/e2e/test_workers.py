"""`serve --workers N`: N replicas on one port (PostgreSQL), refused on SQLite.

Real subprocesses: the supervisor is `python -m durable_responses serve --workers 2`, its workers are the
same command with one process each; the kernel (SO_REUSEPORT) spreads new connections over them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.pg import drop_pg_database, new_pg_database
from tests.support.responses import wait_status
from tests.support.servers import ROOT, free_port
from tests.support.workers import children, start_serve, wait_ready


def _owners(url: str) -> list[str]:
    import asyncpg  # type: ignore[import-untyped]

    async def run() -> list[str]:
        conn = await asyncpg.connect(url.replace("postgresql://", "postgres://"), timeout=5)
        try:
            return [str(r[0]) for r in await conn.fetch("SELECT created_by FROM responses")]
        finally:
            await conn.close()

    return asyncio.run(run())


@pytest.fixture
def pg_url() -> Iterator[str]:
    url = new_pg_database(migrated=True)
    try:
        yield url
    finally:
        drop_pg_database(url)


def test_two_workers_share_the_port_and_drain_on_sigterm(pg_url: str, tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "workers.log"
    proc = start_serve(
        ["serve", "--workers", "2", "--port", str(port), "--database-url", pg_url, "--log-level", "info"], log
    )
    try:
        wait_ready(proc, base, log, 2)
        workers = children(proc.pid)
        assert len(workers) == 2
        ids: list[str] = []
        for i in range(40):
            # A new connection per request: SO_REUSEPORT picks a worker per connection.
            with httpx.Client(base_url=base, timeout=30) as http:
                r = http.post("/v1/responses", json={"input": f"hello {i}", "background": True})
                assert r.status_code == 200, r.text
                ids.append(r.json()["id"])
        for rid in ids:
            body = wait_status(base, rid, timeout=30)
            assert body["status"] == "completed", body
        owners = _owners(pg_url)
        assert len(owners) == 40
        # The replica id is host:pid:nonce; each worker is a replica of its own.
        pids = {int(o.split(":")[1]) for o in owners}
        assert pids == set(workers), (pids, workers)
        proc.send_signal(signal.SIGTERM)
        # As a single `serve` does after its drain, the supervisor ends by the signal it was sent.
        assert proc.wait(60) == -signal.SIGTERM, log.read_text()
        assert not any(Path(f"/proc/{w}").exists() for w in workers)
        text = log.read_text()
        assert "Traceback" not in text, text
        assert text.count("Application shutdown complete") == 2, text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_worker_that_cannot_serve_stops_the_supervisor(pg_url: str, tmp_path: Path) -> None:
    """A worker that exits 2 (its app cannot load) is not replaced: no crash loop, the
    supervisor stops with that code."""
    log = tmp_path / "workers.log"
    proc = start_serve(
        ["serve", "--port", str(free_port()), "--database-url", pg_url, "--app", "no_such_module:factory"],
        log,
        {"DURABLE_RESPONSES_WORKERS": "2"},
    )
    try:
        assert proc.wait(90) == 2, log.read_text()
        text = log.read_text()
        assert "is not replaced" in text and "replaced by worker" not in text, text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("how", ["flag", "env"])
def test_sqlite_refuses_more_than_one_worker(tmp_path: Path, how: str) -> None:

    argv = [
        sys.executable,
        "-m",
        "durable_responses",
        "serve",
        "--database-url",
        f"sqlite:///{tmp_path / 'db.sqlite'}",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if how == "flag":
        argv += ["--workers", "2"]
    else:
        env["DURABLE_RESPONSES_WORKERS"] = "2"
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 2
    assert "needs PostgreSQL" in done.stderr and "one process" in done.stderr, done.stderr
    assert not (tmp_path / "db.sqlite").exists()


def test_ctrl_c_drains_every_worker_and_exits_0(pg_url: str, tmp_path: Path) -> None:
    """Ctrl+C (SIGINT) is a stop the user asked for: the workers drain, the supervisor exits 0
    without a KeyboardInterrupt traceback (a single `serve` does the same)."""
    port = free_port()
    log = tmp_path / "workers.log"
    proc = start_serve(["serve", "--workers", "2", "--port", str(port), "--database-url", pg_url], log)
    try:
        wait_ready(proc, f"http://127.0.0.1:{port}", log, 2)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 0, log.read_text()
        text = log.read_text()
        assert "Traceback" not in text and "KeyboardInterrupt" not in text, text
        assert text.count("Application shutdown complete") == 2, text
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_crash_loop_stops_the_supervisor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers that keep dying are replaced MAX_REPLACEMENTS times within the window, then the
    supervisor stops with the dead worker's code (real processes that exit 3 at once)."""
    from durable_responses import workers

    monkeypatch.setattr(workers, "_backoff", lambda _recent: 0.0)
    sup = workers._Supervisor(["serve"], 2)

    def crashing() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])

    monkeypatch.setattr(sup, "_spawn", crashing)
    sup.start()
    assert sup.wait() == 3
    assert len(sup.replaced) == workers.MAX_REPLACEMENTS
