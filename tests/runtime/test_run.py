"""`ResponseRun` alone, on the memory sink and pairing: which end a run gets (completed,
cancelled, failed, or none when abandoned to recovery), exactly one terminal event, and its
finish hooks told once, in the order given."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from agent_framework import Message

from durable_responses.examples.echo_agent import echo_agent
from durable_responses.protocol import events as ev
from durable_responses.protocol.request import CreateRequest
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.journal import RunJournal
from durable_responses.runtime.run.drive import AppEntry, Driver, JournalUse, Pacing
from durable_responses.runtime.run.ending import Ending
from durable_responses.runtime.run.mapping import MapperSetup
from durable_responses.runtime.run.memory import MemoryPairing, MemorySink
from durable_responses.runtime.run.plan import RunPlan, RunSpec, lineage_for
from durable_responses.runtime.run.run import ResponseRun, StopKind
from durable_responses.runtime.run.usage import RunUsage, StreamUsage, UsageMeter

RID = "resp_run"
GATED = "tests.runtime.gated_app:gated_countdown"


def _run(entry: AppEntry, text: str, told: list[tuple[str, Any]]) -> tuple[ResponseRun, MemorySink]:
    request = CreateRequest.from_json_dict({"model": "m", "input": text})
    spec = RunSpec(RID, "alice", time.time(), request, False, lineage_for(request, RID))
    sink = MemorySink(start_seq=1)
    usage = RunUsage(UsageMeter(), StreamUsage())
    pairing = MemoryPairing(MapperSetup(RID, sink.emit, usage=usage.stream), sink)
    plan = RunPlan(messages=[Message("user", [text])])
    driver = Driver(
        spec,
        plan,
        sink,
        pairing,
        entry,
        Pacing(yield_every=0.004, commit_lag=0.05),
        usage.meter,
        JournalUse(RunJournal(RID, None)),
    )

    async def hand_over(outage: bool) -> None:
        told.append(("hand_over", outage))

    run = ResponseRun(
        spec,
        sink=sink,
        driver=driver,
        ending=Ending(spec, sink, pairing, None, usage),
        hand_over=hand_over,
        on_finished=(
            lambda r: told.append(("first", r.final_status)),
            lambda r: told.append(("second", r.final_status)),
        ),
    )
    return run, sink


def _terminals(sink: MemorySink) -> list[dict[str, Any]]:
    return [json.loads(e.data)["response"] for e in sink.events if e.type in ev.TERMINAL_EVENT_TYPES]


def _gated() -> AppEntry:
    app = HostedApp.load(GATED)
    return AppEntry(app.build, app.is_workflow, app.reach)


async def _at_the_gate(sink: MemorySink) -> None:
    """Wait until "tick 2" is checkpointed (closed `completed`; the next tick waits at the gate)."""
    while not any(c.item["content"][0]["text"] == "tick 2" for c in sink.closed_items):
        sink.changed.clear()
        await sink.changed.wait()


async def test_a_run_that_ends_completes_once_and_tells_its_hooks_in_order() -> None:
    told: list[tuple[str, Any]] = []
    run, sink = _run(AppEntry(echo_agent, is_workflow=False), "hello", told)
    run.start()
    run.start()  # idempotent
    await run.done.wait()
    (terminal,) = _terminals(sink)
    assert terminal["status"] == "completed" and run.final_status == "completed"
    assert terminal["output"][0]["content"][0]["text"] == "echo: hello (turn 1)"
    assert told == [("first", "completed"), ("second", "completed")]


async def test_a_cancelled_run_ends_cancelled_once(gate: asyncio.Event) -> None:
    told: list[tuple[str, Any]] = []
    run, sink = _run(_gated(), "go", told)
    run.start()
    await _at_the_gate(sink)
    run.stop(StopKind.CANCELLED)
    run.stop(StopKind.FAILED, "only the first stop counts")
    await run.done.wait()
    (terminal,) = _terminals(sink)
    assert terminal["status"] == "cancelled" and run.final_status == "cancelled"
    # What it completed stays in the output; "tick 1" never came.
    assert [i["content"][0]["text"] for i in terminal["output"]] == ["tick 3", "tick 2"]
    assert told == [("first", "cancelled"), ("second", "cancelled")]


async def test_a_run_stopped_by_the_server_fails_saying_why(gate: asyncio.Event) -> None:
    told: list[tuple[str, Any]] = []
    run, sink = _run(_gated(), "go", told)
    run.start()
    await _at_the_gate(sink)
    run.stop(StopKind.FAILED, "The server is shutting down.")
    await run.done.wait()
    (terminal,) = _terminals(sink)
    assert terminal["status"] == "failed"
    assert terminal["error"]["message"] == "The server is shutting down."


async def test_an_abandoned_run_writes_no_end_and_still_finishes(gate: asyncio.Event) -> None:
    """Left to recovery (shutdown, a lost lease): no terminal event, no hand-over (the lease is
    the shutdown's to hand off), and the hooks are told (it leaves the registry)."""
    told: list[tuple[str, Any]] = []
    run, sink = _run(_gated(), "go", told)
    run.start()
    await _at_the_gate(sink)
    run.stop(StopKind.ABANDON)
    with pytest.raises(asyncio.CancelledError):
        assert run.task is not None
        await run.task
    assert _terminals(sink) == [] and run.final_status is None
    assert told == [("first", None), ("second", None)]


def _broken_agent() -> Any:
    raise RuntimeError("the app's factory failed")


async def test_an_app_that_raises_fails_the_response_with_its_error() -> None:
    told: list[tuple[str, Any]] = []
    run, sink = _run(AppEntry(_broken_agent, is_workflow=False), "hi", told)
    run.start()
    await run.done.wait()
    (terminal,) = _terminals(sink)
    assert terminal["status"] == "failed" and terminal["error"]["code"] == "server_error"
    assert "the app's factory failed" in terminal["error"]["message"]
    assert told == [("first", "failed"), ("second", "failed")]
