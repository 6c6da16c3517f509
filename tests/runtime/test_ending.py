"""`Ending`: the end closes what is open and commits it with the terminal event, in one write."""

from __future__ import annotations

import asyncio
import json
import time

from agent_framework import AgentResponseUpdate, AgentSession, Content

from durable_responses.protocol import events as ev
from durable_responses.protocol.request import CreateRequest
from durable_responses.runtime._af_private import decode_session
from durable_responses.runtime.run.ending import SESSION_ROWS, Ending, Interrupted
from durable_responses.runtime.run.mapping import MapperSetup
from durable_responses.runtime.run.open_items import ClosedItem, reopen_from_events
from durable_responses.runtime.run.pairing import SqlPairing
from durable_responses.runtime.run.plan import RunPlan, RunSpec, lineage_for
from durable_responses.runtime.run.sinks import SqlSink
from durable_responses.runtime.run.usage import RunUsage, StreamUsage, Usage, UsageMeter
from durable_responses.store import OutputItemRow, Store
from tests.store.helpers import event, owned


async def test_a_crash_while_a_recovered_response_ends_leaves_its_open_items_open(store: Store) -> None:
    """A recovered response's end reads the items earlier lives stored. A live stream hands what
    is emitted to the outbox at the next loop turn, so the end closes its open items only after
    that read: their closing events then commit with their rows in the end's one write, and a
    crash during the read leaves them open, for recovery to continue. (CI, a plain agent across
    kill -9: a crash there committed `output_item.done` without the item's row; each later life
    replayed the recorded reply as a new item with the same id, done `completed` at output
    indexes 1, 2 and 3.)"""
    rid, owner = "resp_1", "p1"
    await store.insert_response(owned(rid, owner), [], [event(0, "response.created")])
    sink = SqlSink(store, rid, owner, live=True, start_seq=1)
    request = CreateRequest.from_json_dict({"model": "m", "input": "send_receipt", "background": True})
    spec = RunSpec(rid, "alice", time.time(), request, True, lineage_for(request, rid), all_output_here=False)
    # Index 0 is an earlier life's (stored): this life goes on at 1.
    pairing = SqlPairing(
        store, spec, RunPlan(messages=[]), sink, MapperSetup(rid, sink.emit, next_output_index=1), ()
    )
    mapper = pairing.mapper
    reply = AgentResponseUpdate(
        contents=[Content.from_text("receipt sent")], role="assistant", author_name="clerk", message_id="m1"
    )
    mapper.feed(reply)
    await sink.settle()  # the item's opening events are committed (live delivery)
    reading, release = asyncio.Event(), asyncio.Event()

    async def stored_items(response_id: str) -> list[OutputItemRow]:
        reading.set()
        await release.wait()  # the process is killed while the end reads
        return await store.output_items(response_id)

    ending = Ending(spec, sink, pairing, stored_items, RunUsage(UsageMeter(), mapper.usage))
    end = asyncio.create_task(ending.finish("completed", close_status="completed"))
    await reading.wait()
    await sink.settle()  # whatever the end handed over by now is committed

    # What a kill -9 now leaves for recovery: the item still open, with its text.
    stored = [(e.type, json.loads(e.data)) for e in await store.read_events(rid, -1)]
    assert [t for t, _ in stored if t == ev.OUTPUT_ITEM_DONE] == [], stored
    reopened, highest = reopen_from_events(rid, stored)
    assert [(i.output_index, i.text) for i in reopened] == [(1, "receipt sent")]
    assert highest == 1

    release.set()
    await end
    # The end's one write: the item's closing events, its row and the terminal event.
    (row,) = await store.output_items(rid)
    assert (row.output_index, row.status, row.included) == (1, "completed", True)
    types = [e.type for e in await store.read_events(rid, -1)]
    assert types[-2:] == [ev.OUTPUT_ITEM_DONE, ev.RESPONSE_COMPLETED]


def _usage_body(input_tokens: int, output_tokens: int) -> str:
    usage = Usage()
    usage.input_tokens, usage.output_tokens = input_tokens, output_tokens
    return json.dumps(usage.body())


async def test_an_end_without_a_run_keeps_the_usage_its_row_kept(store: Store) -> None:
    """Recovery's end of a response it does not resume (`Interrupted`, usage from the row):
    the item the dead owner left open is closed `incomplete` and left out, and the usage the
    dead owner committed is the terminal event's and the row's."""
    rid, owner = "resp_int", "p1"
    await store.insert_response(owned(rid, owner), [], [event(0, "response.created")])
    sink = SqlSink(store, rid, owner, live=False, start_seq=1)
    request = CreateRequest.from_json_dict({"model": "m", "input": "go"})
    spec = RunSpec(
        rid, "alice", time.time(), request, False, lineage_for(request, rid), all_output_here=False
    )
    left_open = ClosedItem(0, "msg_0", "incomplete", False, {"type": "message", "id": "msg_0"})
    usage = RunUsage.stored(_usage_body(12, 5))
    ending = Ending(spec, sink, Interrupted([left_open]), store.output_items, usage)
    await ending.finish(
        "failed", close_status="incomplete", error={"code": "server_error", "message": "gone"}
    )

    assert ending.status == "failed"
    terminal = json.loads((await store.read_events(rid, -1))[-1].data)
    assert terminal["type"] == ev.RESPONSE_FAILED
    assert (
        terminal["response"]["usage"]["input_tokens"],
        terminal["response"]["usage"]["output_tokens"],
    ) == (12, 5)
    assert terminal["response"]["output"] == []
    row = await store.get_response(rid, None)
    assert row is not None and row.status == "failed" and row.usage is not None
    assert json.loads(row.usage)["input_tokens"] == 12
    (item,) = await store.output_items(rid, included_only=False)
    assert (item.status, item.included) == ("incomplete", False)


async def test_a_completed_end_keeps_the_agents_session_it_is_given(store: Store) -> None:
    """A plain agent's session (the driver's) is kept with a completed end, for the next turn;
    a failed end keeps none."""
    for rid, status in (("resp_ses", "completed"), ("resp_nos", "failed")):
        await store.insert_response(owned(rid, "p1"), [], [event(0, "response.created")])
        sink = SqlSink(store, rid, "p1", live=False, start_seq=1)
        request = CreateRequest.from_json_dict({"model": "m", "input": "go"})
        spec = RunSpec(rid, "alice", time.time(), request, False, lineage_for(request, rid))
        pairing = SqlPairing(store, spec, RunPlan(messages=[]), sink, MapperSetup(rid, sink.emit), ())
        ending = Ending(spec, sink, pairing, store.output_items, RunUsage(UsageMeter(), StreamUsage()))
        await ending.finish(status, close_status="completed", session=AgentSession(session_id=f"s-{rid}"))
        kept = await store.load_checkpoint(f"session_{rid}", "alice")
        if status == "completed":
            assert kept is not None and kept.workflow_name == SESSION_ROWS
            assert decode_session(kept.data)["session_id"] == f"s-{rid}"
        else:
            assert kept is None
