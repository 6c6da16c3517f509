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
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from durable_responses.store.settings import LEASE_SECONDS
from tests.support.pg import drop_pg_database, new_pg_database
from tests.support.responses import wait_status
from tests.support.servers import ROOT, TEST_ENV, free_port


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


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


def _start(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:

    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "durable_responses", *argv],
            cwd=log.parent,
            env={**os.environ, "PYTHONPATH": str(ROOT), **TEST_ENV, **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _wait_ready(proc: subprocess.Popen[bytes], base: str, log: Path, workers: int) -> None:
    deadline = time.monotonic() + 90
    with httpx.Client(timeout=1) as http:
        while time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text()
            # Ready once every worker listens: until then the kernel may route to too few.
            if (
                len(_children(proc.pid)) == workers
                and log.read_text().count("Application startup complete") >= workers
            ):
                try:
                    if http.get(base + "/readiness").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
            time.sleep(0.1)
    raise AssertionError(f"not ready:\n{log.read_text()}")


def test_two_workers_share_the_port_and_drain_on_sigterm(pg_url: str, tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "workers.log"
    proc = _start(
        ["serve", "--workers", "2", "--port", str(port), "--database-url", pg_url, "--log-level", "info"], log
    )
    try:
        _wait_ready(proc, base, log, 2)
        workers = _children(proc.pid)
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


def _max_seqs(url: str, ids: list[str]) -> dict[str, int]:
    import asyncpg

    async def run() -> dict[str, int]:
        conn = await asyncpg.connect(url.replace("postgresql://", "postgres://"), timeout=5)
        try:
            rows = await conn.fetch(
                "SELECT response_id, max(seq) FROM events WHERE response_id = ANY($1) GROUP BY 1", ids
            )
            return {str(r[0]): int(r[1]) for r in rows}
        finally:
            await conn.close()

    return asyncio.run(run())


def _owned_by(url: str, pid: int) -> list[str]:
    import asyncpg

    async def run() -> list[str]:
        conn = await asyncpg.connect(url.replace("postgresql://", "postgres://"), timeout=5)
        try:
            rows = await conn.fetch(
                "SELECT id FROM responses WHERE status IN ('queued', 'in_progress') AND split_part(lease_owner, ':', 2) = $1",
                str(pid),
            )
            return [str(r[0]) for r in rows]
        finally:
            await conn.close()

    return asyncio.run(run())


def test_a_dead_worker_is_replaced_and_its_responses_taken_over_at_once(pg_url: str, tmp_path: Path) -> None:
    """Issue 39: `kill -9` of one of two workers, with the default 15 s lease. Proves: the port
    answers all along (new connections go to the live worker), the supervisor starts a new
    worker, and the dead one's in-flight responses resume long before their leases would have
    expired (its siblings know at once that it died). Measured: when each resumed."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "workers.log"
    app = "durable_responses.examples.countdown:countdown"
    proc = _start(
        ["serve", "--port", str(port), "--database-url", pg_url, "--app", app],
        log,
        {"DURABLE_RESPONSES_WORKERS": "2", "DURABLE_RESPONSES_LEASE_SECONDS": f"{LEASE_SECONDS:g}"},
    )
    try:
        _wait_ready(proc, base, log, 2)
        victim, survivor = _children(proc.pid)
        ids: list[str] = []
        for i in range(16):
            with httpx.Client(base_url=base, timeout=30) as http:  # a connection each: both workers
                r = http.post("/v1/responses", json={"input": f"40 delay=0.1 w{i}", "background": True})
                assert r.status_code == 200, r.text
                ids.append(r.json()["id"])
        time.sleep(0.5)
        theirs = _owned_by(pg_url, victim)
        assert theirs, "the victim runs none of the responses: the test would prove nothing"
        baseline = _max_seqs(pg_url, theirs)
        killed = time.monotonic()
        os.kill(victim, signal.SIGKILL)
        # A connection the kernel queued on the victim's socket in the instant it died is reset
        # with it (SO_REUSEPORT): probes begin once its sockets are closed.
        time.sleep(0.2)
        answered, failed = 0, 0
        resumed: dict[str, float] = {}
        deadline = killed + 12  # bounded: the 15 s lease must not be what resumes them
        while time.monotonic() < deadline and (len(resumed) < len(theirs) or answered < 20):
            try:
                with httpx.Client(base_url=base, timeout=5) as http:
                    answered += http.get("/readiness").status_code in (200, 503)
            except httpx.HTTPError:
                failed += 1
            for rid, seq in _max_seqs(pg_url, theirs).items():
                if rid not in resumed and seq > baseline[rid]:
                    resumed[rid] = time.monotonic() - killed
            time.sleep(0.05)
        times = sorted(resumed.values())
        print(
            f"worker killed: {len(theirs)} of its responses resumed "
            f"{times[0] if times else None:.2f}..{times[-1] if times else None:.2f} s after the kill; "
            f"port: {answered} answers, {failed} refused"
        )
        assert len(resumed) == len(theirs), (resumed, theirs)
        assert failed == 0, f"{failed} connections to the port failed while a worker was replaced"
        assert proc.poll() is None, log.read_text()
        deadline = time.monotonic() + 30
        while len(_children(proc.pid)) < 2 or survivor not in _children(proc.pid):
            assert time.monotonic() < deadline, _children(proc.pid)
            time.sleep(0.1)
        assert victim not in _children(proc.pid)
        assert "replaced by worker" in log.read_text()
        with httpx.Client(base_url=base, timeout=30) as http:
            for rid in ids:
                end = time.monotonic() + 60
                while (body := http.get(f"/v1/responses/{rid}").json())["status"] in (
                    "queued",
                    "in_progress",
                ):
                    assert time.monotonic() < end, body
                    time.sleep(0.1)
                assert body["status"] == "completed", body
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == -signal.SIGTERM, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_worker_that_cannot_serve_stops_the_supervisor(pg_url: str, tmp_path: Path) -> None:
    """A worker that exits 2 (its app cannot load) is not replaced: no crash loop, the
    supervisor stops with that code."""
    log = tmp_path / "workers.log"
    proc = _start(
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
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "needs PostgreSQL" in done.stderr and "one process" in done.stderr, done.stderr
    assert not (tmp_path / "db.sqlite").exists()


def test_ctrl_c_drains_every_worker_and_exits_0(pg_url: str, tmp_path: Path) -> None:
    """Ctrl+C (SIGINT) is a stop the user asked for: the workers drain, the supervisor exits 0
    without a KeyboardInterrupt traceback (a single `serve` does the same)."""
    port = free_port()
    log = tmp_path / "workers.log"
    proc = _start(["serve", "--workers", "2", "--port", str(port), "--database-url", pg_url], log)
    try:
        _wait_ready(proc, f"http://127.0.0.1:{port}", log, 2)
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
