"""`Driver` alone, on the memory sink and pairing (nothing written): it enters the app through
its own `agent.run`, feeds the mapper, keeps a plain agent's session, restores a workflow's
checkpoint, starts the journal there, and stops on a failed write."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from agent_framework import AgentSession, Message

from durable_responses.examples.echo_agent import echo_agent
from durable_responses.protocol import events as ev
from durable_responses.protocol.request import CreateRequest
from durable_responses.runtime.apps.apps import HostedApp
from durable_responses.runtime.journal import RunJournal
from durable_responses.runtime.run.drive import AppEntry, Driver, JournalUse, Pacing
from durable_responses.runtime.run.mapping import MapperSetup
from durable_responses.runtime.run.memory import Loader, MemoryPairing, MemorySink
from durable_responses.runtime.run.plan import RunPlan, RunSpec, lineage_for
from durable_responses.runtime.run.usage import UsageMeter

RID = "resp_drive"
COUNTDOWN = "durable_responses.examples.countdown:countdown"


def _spec(*, queued: bool = False) -> RunSpec:
    request = CreateRequest.from_json_dict({"model": "m", "input": "x", "background": queued})
    return RunSpec(RID, "alice", time.time(), request, queued, lineage_for(request, RID), queued=queued)


def _driver(
    entry: AppEntry,
    plan: RunPlan,
    sink: MemorySink,
    *,
    spec: RunSpec | None = None,
    fallback: Loader | None = None,
) -> tuple[Driver, MemoryPairing, RunJournal]:
    pairing = MemoryPairing(MapperSetup(RID, sink.emit), sink, fallback)
    journal = RunJournal(RID, None)
    driver = Driver(
        spec or _spec(),
        plan,
        sink,
        pairing,
        entry,
        Pacing(yield_every=0.004, commit_lag=0.05),
        UsageMeter(),
        JournalUse(journal),
    )
    return driver, pairing, journal


def _said(sink: MemorySink) -> str:
    return "".join(json.loads(e.data)["delta"] for e in sink.events if e.type == ev.OUTPUT_TEXT_DELTA)


def _user(text: str) -> list[Message]:
    return [Message("user", [text])]


async def test_a_plain_agent_is_entered_through_its_own_run_and_its_session_kept() -> None:
    entered: list[Any] = []

    def build() -> Any:
        agent = echo_agent()
        run = agent.run

        def recording_run(messages: Any = None, **kwargs: Any) -> Any:
            entered.append(kwargs)
            return run(messages, **kwargs)

        agent.run = recording_run  # type: ignore[method-assign]  # the app's own override
        return agent

    sink = MemorySink(start_seq=1)
    driver, pairing, _ = _driver(AppEntry(build, is_workflow=False), RunPlan(messages=_user("hello")), sink)
    await driver.drive()

    assert len(entered) == 1 and entered[0]["stream"] is True
    assert entered[0]["session"] is driver.session and isinstance(driver.session, AgentSession)
    assert _said(sink) == "echo: hello (turn 1)"
    assert sink.events[0].type == ev.OUTPUT_ITEM_ADDED
    assert [e.seq for e in sink.events] == list(range(1, len(sink.events) + 1))
    # The reply's item stays open: the end closes it (nothing was checkpointed).
    assert pairing.mapper.has_open and sink.closed_items == []
    assert not driver.truncated

    # The next turn restores that session: the agent sees the first turn's history.
    sink2 = MemorySink(start_seq=1)
    plan = RunPlan(messages=_user("again"), session=driver.session.to_dict())
    second, _, _ = _driver(AppEntry(echo_agent, is_workflow=False), plan, sink2)
    await second.drive()
    assert _said(sink2) == "echo: again (turn 2)"


async def test_a_queued_response_announces_in_progress_before_the_agent_starts() -> None:
    sink = MemorySink(start_seq=1)
    driver, _, _ = _driver(
        AppEntry(echo_agent, is_workflow=False), RunPlan(messages=_user("hi")), sink, spec=_spec(queued=True)
    )
    await driver.drive()
    first = json.loads(sink.events[0].data)
    assert first["type"] == "response.in_progress" and first["response"]["status"] == "in_progress"
    assert sink.events[1].type == ev.OUTPUT_ITEM_ADDED


async def test_a_workflow_checkpoints_through_the_pairing_and_resumes_from_a_checkpoint() -> None:
    app = HostedApp.load(COUNTDOWN)
    entry = AppEntry(app.build, app.is_workflow, app.reach)
    sink = MemorySink(start_seq=1)
    driver, pairing, journal = _driver(entry, RunPlan(messages=_user("3 delay=0")), sink)
    await driver.drive()
    assert _said(sink) == "tick 3tick 2tick 1tick 0"
    # Each superstep's item closed `completed` at its checkpoint, through the pairing.
    assert [c.item["content"][0]["text"] for c in sink.closed_items] == [
        "tick 3",
        "tick 2",
        "tick 1",
        "tick 0",
    ]
    assert all(c.status == "completed" for c in sink.closed_items)
    assert journal.checkpoint_id == ""  # a first run starts from no checkpoint
    assert driver.session is None  # a workflow keeps its state in checkpoints

    # Restoring the checkpoint saved after "tick 2" goes on from there, and the journal starts
    # at that checkpoint.
    storage = pairing.storage
    # (The first superstep starts the count; each after it is one tick.)
    after_two = next(
        cp for cp in await storage.list_checkpoints(workflow_name="countdown") if cp.iteration_count == 3
    )
    sink2 = MemorySink(start_seq=100)
    resumed, _, journal2 = _driver(
        entry, RunPlan(messages=[], checkpoint_id=after_two.checkpoint_id), sink2, fallback=storage.load
    )
    await resumed.drive()
    # (The memory sink writes no journal: it stays where the run started.)
    assert journal2.checkpoint_id == after_two.checkpoint_id
    assert _said(sink2) == "tick 1tick 0"


class FailingSink(MemorySink):
    """A sink whose write fails once the agent's first output is emitted."""

    def emit(self, event: dict[str, Any]) -> None:
        super().emit(event)
        if event["type"] == ev.OUTPUT_ITEM_ADDED and self.failure is None:
            self.failure = ConnectionError("the write was refused")


async def test_a_failed_write_stops_the_drive() -> None:
    sink = FailingSink(start_seq=1)
    app = HostedApp.load(COUNTDOWN)
    driver, _, _ = _driver(
        AppEntry(app.build, app.is_workflow, app.reach), RunPlan(messages=_user("5 delay=0")), sink
    )
    with pytest.raises(ConnectionError):
        await driver.drive()
    assert "tick 0" not in _said(sink)  # it stopped instead of running to the end
