"""`SqlSink` and `MemorySink`: events are taken as emitted, and nothing follows a failed write."""

from __future__ import annotations

import asyncio
import json

import pytest
from agent_framework import Agent
from agent_framework_openai import OpenAIChatCompletionClient

from durable_responses.protocol import events as ev
from durable_responses.protocol import items
from durable_responses.runtime import journal
from durable_responses.runtime.journal import journaled
from durable_responses.runtime.run.memory import MemorySink
from durable_responses.runtime.run.sinks import SqlSink
from durable_responses.runtime.run.usage import RunUsage, StreamUsage, Usage, UsageMeter, ensure_usage_spans
from durable_responses.store import LeaseLost, Store, Write
from durable_responses.testing import FakeModel
from tests.store.helpers import checkpoint, event, owned


async def test_an_event_is_taken_as_it_was_when_emitted(store: Store) -> None:
    """Builders do not copy (hot path): the sink serializes at `emit`, so later changes to the
    item (the mapper closes it) never reach an event already emitted."""
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    sink = SqlSink(store, "resp_1", "p1", live=False, start_seq=1)
    item = items.message_item("msg_1", status="in_progress")
    sink.emit(ev.output_item_added(0, item))
    item["status"] = "completed"
    await sink.commit()
    (row,) = await store.read_events("resp_1", 0)
    assert json.loads(row.data)["item"]["status"] == "in_progress"

    memory = MemorySink()
    item = items.message_item("msg_2", status="in_progress")
    memory.emit(ev.output_item_added(0, item))
    item["status"] = "completed"
    assert json.loads(memory.events[0].data)["item"]["status"] == "in_progress"


async def test_send_does_not_wait_and_commit_does(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    sink = SqlSink(store, "resp_1", "p1", live=False, start_seq=1)
    sink.emit(ev.output_text_delta("msg_1", 0, 0, "a"))
    sent = sink.send(checkpoint=checkpoint("cp_1", "resp_1", event_seq=1))
    assert not sent.done()  # handed over, not committed yet
    sink.emit(ev.output_text_delta("msg_1", 0, 0, "b"))
    await sink.commit()
    assert sent.done()  # writes commit in order: the later commit implies the earlier
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2]
    assert await store.load_checkpoint("cp_1", "alice") is not None


async def test_nothing_is_handed_over_behind_a_failed_write(store: Store) -> None:
    """A checkpoint must never commit after outputs that were lost: once a write of the sink
    failed, `send` raises, even in the loop turn before the failure callback has run."""
    await store.insert_response(owned("resp_1", "other-owner"), [], [event(0, "response.created")])
    sink = SqlSink(store, "resp_1", "p1", live=False, start_seq=1)
    sink.emit(ev.output_text_delta("msg_1", 0, 0, "lost"))
    failed = sink.send(urgent=True)
    while not failed.done():
        await asyncio.sleep(0)
    with pytest.raises(LeaseLost):
        sink.send(checkpoint=checkpoint("cp_1", "resp_1", event_seq=1))
    with pytest.raises(LeaseLost):
        await sink.commit()
    await asyncio.sleep(0.05)
    assert await store.load_checkpoint("cp_1", "alice") is None
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0]


async def test_a_memory_sink_settles_by_giving_its_stream_a_turn() -> None:
    """`store=false`: settling (after the workflow's last event) lets the stream waiting on the
    sink send what it holds before the run goes on to the framework's end-of-stream work."""
    sink = MemorySink()
    sent: list[int] = []

    async def stream() -> None:
        await sink.changed.wait()
        sent.extend(e.seq for e in sink.events)

    task = asyncio.create_task(stream())
    await asyncio.sleep(0)  # the stream now waits for an event
    sink.emit({"type": "response.output_text.delta", "delta": "x"})
    await sink.settle()
    assert sent == [0]
    await task


async def test_a_model_calls_record_commits_with_its_usage(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-run replays a recorded model call and reports no usage for it: were the call's usage
    left to the run's next write, a crash between the record's commit and that write would lose
    it. The record's own write carries it (a real agent, its OpenAI client, the fake model)."""
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    ensure_usage_spans()
    meter = UsageMeter()
    sink = SqlSink(
        store, "resp_1", "p1", live=False, start_seq=1, usage=RunUsage(meter, StreamUsage()), journaling=True
    )
    carried: list[str | None] = []
    submit = store.submit

    def spy(write: Write) -> asyncio.Future[None]:
        if write.journal:
            carried.append(write.usage)
        return submit(write)

    monkeypatch.setattr(store, "submit", spy)
    with FakeModel() as fake:
        client = OpenAIChatCompletionClient(model="fake", api_key="k", base_url=fake.base_url)
        agent = Agent(client=client, name="writer")
        journaled(agent)

        async def run() -> None:  # a task of its own, as a run is: the meter and journal are its context's
            meter.activate()
            journal.activate(sink.journal)
            async for _ in agent.run("tell me about order B1 please", stream=True):
                pass

        await asyncio.create_task(run())
        await sink.commit()
        (call,) = fake.calls
    assert call.usage is not None and call.usage.input_tokens > 0
    reported = Usage(call.usage.input_tokens, call.usage.output_tokens, call.usage.cached_tokens)
    assert [Usage.from_body(text) for text in carried] == [reported]
