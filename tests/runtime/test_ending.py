"""`Ending`: the end closes what is open and commits it with the terminal event, in one write."""

from __future__ import annotations

import asyncio
import json
import time

from agent_framework import AgentResponseUpdate, Content

from durable_responses.protocol import events as ev
from durable_responses.protocol.request import CreateRequest
from durable_responses.runtime.ending import Ending
from durable_responses.runtime.mapping import MapperSetup
from durable_responses.runtime.open_items import reopen_from_events
from durable_responses.runtime.pairing import SqlPairing
from durable_responses.runtime.plan import RunPlan, RunSpec, lineage_for
from durable_responses.runtime.sinks import SqlSink
from durable_responses.runtime.usage import RunUsage, UsageMeter
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
