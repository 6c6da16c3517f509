"""Recovery's batched reads (`Store.resume_states`) on SQLite and PostgreSQL: for each claimed
response, what the per-response reads give (the newest checkpoint of its user, the events after
it, the highest event sequence number and output index, the included output items, its journal
and takeovers), for many responses in one call; takeovers recorded in one write, once per
attempt."""

from __future__ import annotations

import time

from durable_responses.store import JournalRow, ResponseRow, Store, Write
from durable_responses.store.ops.ops import Takeover

from .helpers import checkpoint, events, output_item, owned


def _rec(cp: str, place: str) -> JournalRow:
    return JournalRow(cp, "agent", place, "done", "d" * 64, "[]", time.time())


async def _seed(store: Store) -> list[ResponseRow]:
    rows = [owned(f"resp_{i}", "p1") for i in range(4)]
    for row in rows:
        await store.insert_response(row, [], [])
    # resp_0: two checkpoints, events after the newest, items (one left out of the output).
    await store.submit(
        Write("resp_0", "p1", events=events(0, 3), checkpoint=checkpoint("cp_a", "resp_0", event_seq=2))
    )
    await store.submit(
        Write(
            "resp_0",
            "p1",
            events=events(3, 6),
            items=[output_item(0), output_item(1, included=False), output_item(2)],
            checkpoint=checkpoint("cp_b", "resp_0", event_seq=5),
        )
    )
    await store.submit(Write("resp_0", "p1", events=events(6, 9), journal=[_rec("cp_b", "model:1")]))
    # resp_1: events, no checkpoint. resp_2: nothing. resp_3: a checkpoint of another user.
    await store.submit(Write("resp_1", "p1", events=events(0, 4), items=[output_item(0)]))
    await store.submit(
        Write(
            "resp_3",
            "p1",
            events=events(0, 2),
            checkpoint=checkpoint("cp_x", "resp_3", user="mallory", event_seq=1),
        )
    )
    await store.ops.record_takeover("resp_0", Takeover(attempt=1, at=1.0, owner="p0"))
    return rows


async def test_batched_reads_equal_the_per_response_reads(store: Store) -> None:
    rows = await _seed(store)
    states = await store.resume_states(rows, journal=True)
    assert sorted(states) == [r.id for r in rows]
    for row in rows:
        state = states[row.id]
        cp = await store.latest_checkpoint(user_id=row.user_id, response_id=row.id)
        assert state.checkpoint == cp, row.id
        after = cp.event_seq if cp is not None else -1
        assert state.events == await store.read_events(row.id, after, limit=1_000_000), row.id
        assert state.max_seq == await store.max_event_seq(row.id)
        assert state.max_index == await store.max_output_index(row.id)
        assert state.outputs == await store.output_items(row.id)
        assert state.journal == await store.journal(row.id)
        assert state.takeovers == await store.ops.takeovers(row.id)
    s0 = states["resp_0"]
    assert s0.checkpoint is not None and s0.checkpoint.checkpoint_id == "cp_b" and s0.checkpoint.data
    assert [e.seq for e in s0.events] == [6, 7, 8] and s0.max_seq == 8 and s0.max_index == 2
    assert [o.output_index for o in s0.outputs] == [0, 2]
    assert [j.place for j in s0.journal] == ["model:1"] and len(s0.takeovers) == 1
    assert states["resp_1"].checkpoint is None and [e.seq for e in states["resp_1"].events] == [0, 1, 2, 3]
    assert states["resp_2"].max_seq == -1 and states["resp_2"].max_index == -1 and not states["resp_2"].events
    assert states["resp_3"].checkpoint is None  # another user's checkpoint is not this response's
    assert (await store.resume_states(rows, journal=False))["resp_0"].journal == []


async def test_takeovers_are_recorded_together_once_per_attempt(store: Store) -> None:
    await _seed(store)
    first = Takeover(attempt=2, at=2.0, owner="p1", previous_owner="p0", checkpoint_id="cp_b")
    await store.ops.record_takeovers([("resp_0", first), ("resp_1", Takeover(attempt=1, at=2.0, owner="p1"))])
    # A claim counted twice (a crash between the claim and the record): the first record stays.
    await store.ops.record_takeovers([("resp_0", Takeover(attempt=2, at=3.0, owner="p2"))])
    assert [(t.attempt, t.owner) for t in await store.ops.takeovers("resp_0")] == [(1, "p0"), (2, "p1")]
    assert (await store.ops.takeovers("resp_0"))[1] == first
    assert [t.owner for t in await store.ops.takeovers("resp_1")] == ["p1"]
    await store.ops.record_takeovers([])
