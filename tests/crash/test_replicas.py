"""Two replicas on one PostgreSQL database: one owner at a time, cross-replica streaming.

Invariant 6 (one owner, lease taken over only after expiry) and the NOTIFY path that wakes a
relay on a replica that does not run the response.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ServerProcess

COUNTDOWN = "tests.apps.workflows:recording_countdown"


@pytest.fixture
def pg_url(pg_database_url: str) -> str:
    """Replicas share one database server: PostgreSQL (SQLite is the single-host default)."""
    return pg_database_url


def _ticks(client: Any, rid: str) -> list[str]:
    r = client.responses.retrieve(rid)
    return [c.text for item in r.output if item.type == "message" for c in item.content]


@pytest.mark.crash
def test_stream_through_other_replica_is_woken_by_notify(pg_url: str, server_factory: Any) -> None:
    a: ServerProcess = server_factory(pg_url, COUNTDOWN).start()
    b: ServerProcess = server_factory(pg_url, COUNTDOWN).start()
    bg = a.client().responses.create(model="m", input="6 delay=0.2", background=True)
    started = time.monotonic()
    seqs: list[int] = []
    gaps: list[float] = []
    last = time.monotonic()
    with httpx.stream("GET", f"{b.base_url}/responses/{bg.id}?stream=true", timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("id: "):
                now = time.monotonic()
                gaps.append(now - last)
                last = now
                seqs.append(int(line[4:]))
    assert seqs == list(range(len(seqs)))
    assert _ticks(b.client(), bg.id) == [f"tick {n}" for n in range(6, -1, -1)]
    # Replica B's relay falls back to a 5 s timer; NOTIFY must have woken it far sooner.
    assert time.monotonic() - started < 5, f"stream through replica B took {time.monotonic() - started:.1f}s"


@pytest.mark.crash
def test_one_owner_at_a_time_and_takeover_after_lease_expiry(
    pg_url: str, server_factory: Any, tmp_path: Path
) -> None:
    record = tmp_path / "runs.jsonl"
    env = {"RECORD_RUN_CALLS": str(record)}
    a: ServerProcess = server_factory(pg_url, COUNTDOWN, env=env).start()
    b: ServerProcess = server_factory(pg_url, COUNTDOWN, env=env).start()
    client = a.client()
    ids = [client.responses.create(model="m", input="5 delay=0.3", background=True).id for _ in range(4)]
    time.sleep(1.0)
    assert a.proc is not None and b.proc is not None
    # While A lives and renews its leases, B never drives A's responses.
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    assert {c["pid"] for c in calls} == {a.proc.pid}
    a.kill()
    deadline = time.monotonic() + 60
    for rid in ids:
        while client_status(b, rid) != "completed":
            assert time.monotonic() < deadline, b.log()
            time.sleep(0.2)
        assert _ticks(b.client(), rid) == [f"tick {n}" for n in range(5, -1, -1)]
    calls = [json.loads(line) for line in record.read_text().splitlines()]
    recovered = [c for c in calls if c["pid"] == b.proc.pid]
    assert len(recovered) == len(ids)  # each response taken over exactly once, by B
    assert all(c["checkpoint_id"] for c in recovered)


def client_status(srv: ServerProcess, rid: str) -> str:
    return str(srv.client().responses.retrieve(rid).status)
