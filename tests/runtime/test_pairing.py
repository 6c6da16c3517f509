"""`SqlPairing` alone: a checkpoint commits with the items it closes and the events before it
(a recording sink shows the one write; the real store, what recovery would find)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from agent_framework import AgentResponseUpdate, Content, WorkflowCheckpoint

from durable_responses.protocol import events as ev
from durable_responses.protocol.request import CreateRequest
from durable_responses.protocol.sse import dumps
from durable_responses.runtime.run.mapping import MapperSetup
from durable_responses.runtime.run.open_items import ClosedItem
from durable_responses.runtime.run.pairing import SHOW_FIRST_EVENTS, CheckpointSaveFailed, SqlPairing
from durable_responses.runtime.run.plan import RunPlan, RunSpec, lineage_for
from durable_responses.runtime.run.sinks import Sink, SqlSink
from durable_responses.store import CheckpointRow, EventRow, Finish, PendingRequestRow, Store
from tests.store.helpers import event, owned

RID, OWNER = "resp_pair", "p1"


class RecordingSink(Sink):
    """Numbers events like a sink and records each write: the events it carries, its rows."""

    def __init__(self, *, live: bool = False, refuse: bool = False) -> None:
        self.seq = 1
        self.live = live
        self.held: list[EventRow] = []
        self.writes: list[dict[str, Any]] = []
        self._refuse = refuse

    def emit(self, event: dict[str, Any]) -> None:
        event["sequence_number"] = self.seq
        self.held.append(EventRow(self.seq, event["type"], dumps(event)))
        self.seq += 1

    def send(
        self,
        closed: Sequence[ClosedItem] = (),
        *,
        checkpoint: CheckpointRow | None = None,
        pending: Sequence[PendingRequestRow] = (),
        status: str | None = None,
        finish: Finish | None = None,
        prune: tuple[str, str | None] | None = None,
        urgent: bool = False,
        waiting: Sequence[Mapping[str, Any]] = (),
    ) -> asyncio.Future[None]:
        if self._refuse:
            raise ConnectionError("the database refused the write")
        self.writes.append({"events": self.held, "closed": list(closed), "checkpoint": checkpoint})
        self.held = []
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def _spec() -> RunSpec:
    request = CreateRequest.from_json_dict({"model": "m", "input": "go", "background": True})
    return RunSpec(RID, "alice", time.time(), request, True, lineage_for(request, RID))


def _pairing(store: Store, sink: Sink) -> SqlPairing:
    return SqlPairing(store, _spec(), RunPlan(messages=[]), sink, MapperSetup(RID, sink.emit), ())


def _checkpoint() -> WorkflowCheckpoint:
    return WorkflowCheckpoint(workflow_name="wf", graph_signature_hash="h")


def _text(text: str, message_id: str) -> AgentResponseUpdate:
    return AgentResponseUpdate(
        contents=[Content.from_text(text)], role="assistant", author_name="bot", message_id=message_id
    )


def _tool_ran(call_id: str) -> list[AgentResponseUpdate]:
    return [
        AgentResponseUpdate(contents=[Content.from_function_call(call_id, "lookup", arguments="{}")]),
        AgentResponseUpdate(contents=[Content.from_function_result(call_id, result="ok")]),
    ]


async def test_a_checkpoint_is_one_write_with_the_items_it_closes_and_the_events_before_it(
    store: Store,
) -> None:
    sink = RecordingSink()
    pairing = _pairing(store, sink)
    pairing.mapper.feed(_text("first answer", "m1"))
    checkpoint = _checkpoint()
    await pairing.storage.save(checkpoint)

    (write,) = sink.writes
    row = write["checkpoint"]
    assert row is not None and row.checkpoint_id == checkpoint.checkpoint_id
    # The write carries every event so far, the item's closing last; the row points at it.
    types = [e.type for e in write["events"]]
    assert types[0] == ev.OUTPUT_ITEM_ADDED and types[-1] == ev.OUTPUT_ITEM_DONE
    assert row.event_seq == write["events"][-1].seq == sink.seq - 1
    assert [(c.output_index, c.status, c.included) for c in write["closed"]] == [(0, "completed", True)]
    assert pairing.last_checkpoint is checkpoint
    assert pairing.storage.saved == [checkpoint.checkpoint_id]

    # What the next superstep opens is not the first checkpoint's: it goes with the second.
    pairing.mapper.feed(_text("second answer", "m2"))
    second = _checkpoint()
    await pairing.storage.save(second)
    assert [c.output_index for c in sink.writes[1]["closed"]] == [1]
    assert sink.writes[1]["checkpoint"].event_seq > row.event_seq


_CLOSING = {ev.OUTPUT_TEXT_DONE, ev.CONTENT_PART_DONE, ev.OUTPUT_ITEM_DONE}


async def test_small_live_supersteps_are_one_write_each(store: Store) -> None:
    # A countdown: many supersteps of one output, more events in all than SHOW_FIRST_EVENTS.
    sink = RecordingSink(live=True)
    pairing = _pairing(store, sink)
    for i in range(SHOW_FIRST_EVENTS):
        pairing.mapper.feed(_text(f"step {i}", f"m{i}"))
        await pairing.storage.save(_checkpoint())
    assert len(sink.writes) == SHOW_FIRST_EVENTS
    assert all(w["checkpoint"] is not None and len(w["events"]) == 6 for w in sink.writes)


@pytest.mark.parametrize("handed_over", [False, True])
async def test_a_large_live_superstep_commits_its_outputs_before_closing_its_items(
    store: Store, handed_over: bool
) -> None:
    """Counted over the superstep, not over what the sink still holds: a busy run hands its
    events over at every loop turn (`handed_over`: half of them, as a flush would)."""
    sink = RecordingSink(live=True)
    pairing = _pairing(store, sink)
    outputs = SHOW_FIRST_EVENTS // 3 + 1
    for i in range(outputs):
        if handed_over and i == outputs // 2:
            sink.send()
        pairing.mapper.feed(_text(f"answer {i}", f"m{i}"))
    await pairing.storage.save(_checkpoint())

    *outputs_writes, closing = sink.writes
    # Its outputs first, committed before its items close (the pairing waits for them), then the
    # closing events with the checkpoint: still behind every event before it.
    assert len(outputs_writes) == (2 if handed_over else 1)
    shown = [e for w in outputs_writes for e in w["events"]]
    assert len(shown) == 3 * outputs and not _CLOSING & {e.type for e in shown}
    assert all(w["checkpoint"] is None and w["closed"] == [] for w in outputs_writes)
    assert {e.type for e in closing["events"]} == _CLOSING and len(closing["events"]) == 3 * outputs
    assert closing["checkpoint"].event_seq == closing["events"][-1].seq
    assert len(closing["closed"]) == outputs

    # The next superstep counts from this save: a small one is one write again.
    pairing.mapper.feed(_text("small", "m-next"))
    await pairing.storage.save(_checkpoint())
    assert len(sink.writes) == len(outputs_writes) + 2 and sink.writes[-1]["checkpoint"] is not None


async def test_a_tool_run_waits_for_the_next_checkpoint_when_durable_and_goes_at_once_when_live(
    store: Store,
) -> None:
    durable = RecordingSink(live=False)
    pairing = _pairing(store, durable)
    for update in _tool_ran("call_1"):
        pairing.mapper.feed(update)
    assert durable.writes == []  # its row is held for the next commit point
    pairing.mapper.feed(_text("done", "m1"))
    await pairing.storage.save(_checkpoint())
    (write,) = durable.writes
    assert [c.item["type"] for c in write["closed"]] == ["mcp_call", "message"]

    live = RecordingSink(live=True)
    pairing = _pairing(store, live)
    for update in _tool_ran("call_1"):
        pairing.mapper.feed(update)
    (write,) = live.writes  # with its closing event, no checkpoint
    assert write["checkpoint"] is None
    assert [c.item["type"] for c in write["closed"]] == ["mcp_call"]
    assert [e.type for e in write["events"]] == [ev.OUTPUT_ITEM_ADDED, ev.OUTPUT_ITEM_DONE]


async def test_a_refused_save_stops_the_run_even_though_the_framework_swallows_it(store: Store) -> None:
    pairing = _pairing(store, RecordingSink(refuse=True))
    pairing.mapper.feed(_text("lost", "m1"))
    pairing.check()  # nothing failed yet
    with pytest.raises(ConnectionError):
        await pairing.storage.save(_checkpoint())
    assert pairing.storage.saved == []
    with pytest.raises(CheckpointSaveFailed):
        pairing.check()


async def test_the_stored_checkpoint_is_paired_with_its_outputs(store: Store) -> None:
    """Against the real store: once the checkpoint is there, so are its items and every event
    up to the one it points at; what came after it is not part of it."""
    await store.insert_response(owned(RID, OWNER), [], [event(0, "response.created")])
    sink = SqlSink(store, RID, OWNER, live=False, start_seq=1)
    pairing = _pairing(store, sink)
    pairing.mapper.feed(_text("kept", "m1"))
    checkpoint = _checkpoint()
    await pairing.storage.save(checkpoint)
    pairing.mapper.feed(_text("after the checkpoint", "m2"))
    await pairing.storage.list_checkpoint_ids(workflow_name="wf")  # waits for the pairing's writes

    stored = await store.load_checkpoint(checkpoint.checkpoint_id, "alice")
    assert stored is not None
    events = await store.read_events(RID, -1)
    assert events[-1].seq == stored.event_seq  # durable: the later item's events are still held
    assert events[-1].type == ev.OUTPUT_ITEM_DONE
    (item,) = await store.output_items(RID)
    assert (item.output_index, item.status) == (0, "completed")
    assert json.loads(item.data)["content"][0]["text"] == "kept"
