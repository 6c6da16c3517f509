"""Recovery in-process, on a real store: a replica stops while its run waits inside a superstep;
another replica's sweep claims the response and resumes it from the newest paired checkpoint,
through the app's own `agent.run`, so every output comes once. A continuation's first checkpoint
already holds its answer: recovered from it, the answer is taken once, within the workflow's
`max_iterations`."""

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
REVIEW = "tests.runtime.gated_app:gated_review"


async def _host(url: str, app: str = APP) -> Host:
    host = Host(Store.open(url, lease_seconds=5), HostedApp.load(app), RuntimeSettings())
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


async def _ended(host: Host, rid: str) -> dict[str, Any]:
    async def ended() -> Any:
        row = await host.store.get_response(rid, "alice")
        return row if row is not None and row.status not in ("queued", "in_progress") else None

    await _until(ended)
    return await host.get("alice", rid)


async def _answer_the_review(host: Host) -> str:
    """Pause the review, answer its request "yes" in a background continuation; its id."""
    asked = await host.create("alice", parse_create_request({"input": "go", "background": True}), None)
    paused = await _ended(host, asked.response_id)
    assert paused["status"] == "completed", paused
    (call,) = [item for item in paused["output"] if item["type"] == "function_call"]
    answer = {"type": "function_call_output", "call_id": call["call_id"], "output": "yes"}
    body = {"input": [answer], "previous_response_id": asked.response_id, "background": True}
    return (await host.create("alice", parse_create_request(body), None)).response_id


def _assert_answered_once(final: dict[str, Any]) -> None:
    assert final["status"] == "completed", final
    assert [item["type"] for item in final["output"]] == ["message", "message"]  # no request again
    assert [c["text"] for item in final["output"] for c in item["content"]] == ["review: yes", "published"]


async def test_a_continuation_restores_and_answers_within_the_workflows_max_iterations(db_url: str) -> None:
    """The review needs exactly its `max_iterations` (request, answer, publication): the answer's
    run restores the pause and delivers the answer in one workflow run, as agent-framework resumes
    a pause itself (restoring alone first would spend a superstep: "did not converge")."""
    host = await _host(db_url, REVIEW)
    try:
        _assert_answered_once(await _ended(host, await _answer_the_review(host)))
    finally:
        await host.stop()


async def test_a_continuation_recovered_after_its_first_checkpoint_takes_its_answer_once(
    db_url: str, gate: asyncio.Event, caplog: pytest.LogCaptureFixture
) -> None:
    """The answer's run saves its first checkpoint with the answer queued (not marked
    `awaits_input`: no checkpoint comes between the restore and the delivery), so recovery from it
    neither loses the answer nor delivers it again, and still fits the review's `max_iterations`."""
    first = await _host(db_url, REVIEW)
    rid = await _answer_the_review(first)

    async def checkpoints() -> list[Any]:
        return await first.store.list_checkpoints(user_id="alice", lineage=f"resp:{rid}")

    # The answer's superstep waits at the gate; before it, the run's entry checkpoint only.
    await _until(checkpoints)
    stored = await checkpoints()
    assert [c.awaits_input for c in stored] == [False], stored
    await first.stop()  # a background run is left to recovery; its lease handed off

    gate.set()
    caplog.set_level(logging.INFO, logger="durable_responses.recovery")
    second = await _host(db_url, REVIEW)
    try:
        _assert_answered_once(await _ended(second, rid))
        recovered = [r.getMessage() for r in caplog.records if f"recovering response {rid}" in r.getMessage()]
        assert len(recovered) == 1 and stored[0].checkpoint_id in recovered[0], recovered
    finally:
        await second.stop()
