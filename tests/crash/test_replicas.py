"""Two replicas on one PostgreSQL database: one owner at a time, cross-replica streaming.

Invariant 6 (one owner, lease taken over only after expiry) and the NOTIFY path that wakes a
relay on a replica that does not run the response. A replica that must die (`kill -9`) is a
subprocess; the others are in-process servers (their own store, notifier and LISTEN
connection, as in a process of their own).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.inprocess import InProcessServer
from tests.support.responses import output_texts, read_jsonl, retrieve, wait_status
from tests.support.servers import TEST_ENV, ServerProcess
from tests.support.sse import iter_frames

COUNTDOWN = "tests.apps.workflows:recording_countdown"
LEASE = float(TEST_ENV["DURABLE_RESPONSES_LEASE_SECONDS"])
SWEEP = float(TEST_ENV["DURABLE_RESPONSES_RECOVERY_INTERVAL"])


@pytest.fixture
def pg_url(pg_database_url: str) -> str:
    """Replicas share one database server: PostgreSQL (SQLite is the single-host default)."""
    return pg_database_url


def test_stream_through_other_replica_is_woken_by_notify(
    pg_url: str, inproc_factory: Callable[..., InProcessServer]
) -> None:
    a = inproc_factory(pg_url, COUNTDOWN)
    b = inproc_factory(pg_url, COUNTDOWN)
    bg = a.client().responses.create(model="m", input="6 delay=0.2", background=True)
    started = time.monotonic()
    seqs: list[int] = []
    gaps: list[float] = []
    last = time.monotonic()
    with httpx.stream("GET", f"{b.base_url}/responses/{bg.id}?stream=true", timeout=30) as r:
        for frame in iter_frames(r.iter_lines()):
            if frame.id is not None:
                now = time.monotonic()
                gaps.append(now - last)
                last = now
                seqs.append(int(frame.id))
    took = time.monotonic() - started
    assert seqs == list(range(len(seqs)))
    assert output_texts(retrieve(b, bg.id)) == [f"tick {n}" for n in range(6, -1, -1)]
    # Replica B's relay falls back to a 5 s timer for a response another replica runs; NOTIFY
    # must have woken it far sooner, event after event (ticks are 0.2 s apart).
    assert took < 5, f"stream through replica B took {took:.1f}s"
    assert max(gaps) < 2.5, f"replica B's stream waited {max(gaps):.1f}s between two events"


@pytest.mark.crash
def test_one_owner_at_a_time_and_takeover_after_lease_expiry(
    pg_url: str,
    server_factory: Callable[..., ServerProcess],
    inproc_factory: Callable[..., InProcessServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = tmp_path / "runs.jsonl"
    env = {"RECORD_RUN_CALLS": str(record)}
    monkeypatch.setenv("RECORD_RUN_CALLS", str(record))  # the in-process replica's app reads it here
    a = server_factory(pg_url, COUNTDOWN, env=env).start()
    b = inproc_factory(pg_url, COUNTDOWN)
    assert a.proc is not None
    client = a.client()
    # Three ticks 2.5 s apart: a run writes nothing (a write extends its lease too) for longer
    # than a lease, so only the renewal keeps its lease; they run for 7.5 s.
    ticks = 2
    ids = [
        client.responses.create(model="m", input=f"{ticks} delay=2.5", background=True).id for _ in range(4)
    ]
    # Nothing to wait for: B must *not* take them over while A lives and renews its leases,
    # so wait longer than a lease and a sweep (without renewal B is in by then).
    time.sleep(LEASE + SWEEP + 1.0)
    assert [retrieve(a, rid)["status"] for rid in ids] == ["in_progress"] * 4, "finished too soon to tell"
    calls = read_jsonl(record)
    assert {c["pid"] for c in calls} == {a.proc.pid}, calls
    assert len(calls) == len(ids)
    a.kill()
    for rid in ids:
        final = wait_status(b, rid, timeout=60)
        assert final["status"] == "completed", (final, b.log())
        assert output_texts(final) == [f"tick {n}" for n in range(ticks, -1, -1)]
    calls = read_jsonl(record)
    recovered = [c for c in calls if c["pid"] == os.getpid()]
    assert len(recovered) == len(ids), calls  # each response taken over exactly once, by B
    assert all(c["checkpoint_id"] for c in recovered)
    assert len(calls) == 2 * len(ids), calls
