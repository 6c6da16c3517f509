"""Recovery in-process, on a real store (SQLite in a temp file): a replica stops while its run
waits inside a superstep; another replica's sweep claims the response and resumes it from the
newest paired checkpoint, through the app's own `agent.run`, so every output comes once."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from durable_responses.protocol.request import parse_create_request
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.host import Host
from durable_responses.runtime.settings import RuntimeSettings
from durable_responses.store import Store

APP = "tests.runtime.gated_app:gated_countdown"


async def _host(url: str) -> Host:
    host = Host(Store.open(url, lease_seconds=5), HostedApp.load(APP), RuntimeSettings())
    await host.start()
    return host


async def _until(check: Any) -> Any:
    """Wait (polling the store) until `check()` gives something true; return it."""
    while not (found := await check()):
        await asyncio.sleep(0.02)
    return found


async def test_a_sweep_resumes_from_the_newest_paired_checkpoint(
    sqlite_url: str, gate: asyncio.Event, caplog: pytest.LogCaptureFixture
) -> None:
    first = await _host(sqlite_url)
    created = await first.create("alice", parse_create_request({"input": "go", "background": True}), None)
    rid = created.response_id
    store = first.store

    async def checkpoints() -> list[Any]:
        return await store.list_checkpoints(user_id="alice", lineage=f"resp:{rid}")

    async def four_checkpoints() -> list[Any]:
        return rows if len(rows := await checkpoints()) >= 4 else []

    # Before the first superstep, after the start, after "tick 3" and after "tick 2": "tick 1"
    # waits at the gate.
    stored = await _until(four_checkpoints)
    assert len(stored) == 4  # (the gate holds the next)
    newest = stored[-1]
    await first.stop()  # a background run is left to recovery; its lease handed off

    gate.set()
    caplog.set_level(logging.INFO, logger="durable_responses.recovery")
    second = await _host(sqlite_url)
    try:

        async def ended() -> Any:
            row = await second.store.get_response(rid, "alice")
            return row if row is not None and row.status not in ("queued", "in_progress") else None

        row = await _until(ended)
        assert row.status == "completed"
        body = await second.get("alice", rid)
        texts = [c["text"] for item in body["output"] for c in item["content"]]
        assert texts == ["tick 3", "tick 2", "tick 1", "tick 0"]  # none repeated, none lost
        resumed = [
            r.getMessage() for r in caplog.records if r.getMessage().startswith(f"recovering response {rid}")
        ]
        assert len(resumed) == 1 and f"checkpoint {newest.checkpoint_id}" in resumed[0], resumed
        events = [json.loads(e.data) for e in await second.store.read_events(rid, -1)]
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert sum(e["type"] == "response.created" for e in events) == 1
    finally:
        await second.stop()
