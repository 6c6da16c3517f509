"""The journal's store contract (SQLite and PostgreSQL, `store` fixture): records travel in the
outbox's fenced, ordered writes; a checkpoint's write deletes the records of every other
checkpoint, an end all of them; a stale owner records nothing; a response's delete and retention
take its records too."""

from __future__ import annotations

import asyncio
import time

import pytest

from durable_responses.store import Finish, JournalRow, LeaseLost, Store, StoreError, Write
from durable_responses.store import _tables as t

from .conftest import StoreFactory
from .helpers import checkpoint, count, event, events, owned


def rec(cp: str, place: str, state: str = "done", data: str = "[]", executor: str = "agent") -> JournalRow:
    return JournalRow(cp, executor, place, state, "d" * 64, data, time.time())


async def test_records_commit_in_order_with_the_events_and_are_read_back(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", events=events(1, 3), journal=[rec("cp_0", "model:1")]))
    await store.submit(Write("resp_1", "p1", journal=[rec("cp_0", "tool:call_a", "intent", "null")]))
    await store.submit(Write("resp_1", "p1", journal=[rec("cp_0", "tool:call_a", "done", '"ok"')]))
    got = await store.journal("resp_1")
    assert [(r.checkpoint_id, r.place, r.state, r.data) for r in got] == [
        ("cp_0", "model:1", "done", "[]"),
        ("cp_0", "tool:call_a", "intent", "null"),
        ("cp_0", "tool:call_a", "done", '"ok"'),
    ]
    assert await store.journal("resp_other") == []


async def test_a_stale_owner_records_nothing(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    with pytest.raises(LeaseLost):
        await store.submit(Write("resp_1", "p0", journal=[rec("cp_0", "model:1")]))
    assert await store.journal("resp_1") == []


async def test_the_next_checkpoint_deletes_the_records_it_supersedes(store_factory: StoreFactory) -> None:
    """Records of the superstep that started at cp_0 go with cp_1's write (one transaction,
    batched or not); records already made for cp_1's superstep stay."""
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.insert_response(owned("resp_2", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", checkpoint=checkpoint("cp_0", "resp_1", event_seq=0)))
    await store.submit(Write("resp_2", "p1", journal=[rec("cp_x", "model:1")]))
    await asyncio.gather(
        store.submit(Write("resp_1", "p1", events=events(1, 3), journal=[rec("cp_0", "model:1")])),
        store.submit(Write("resp_1", "p1", journal=[rec("cp_0", "tool:c1", "intent")])),
        store.submit(
            Write(
                "resp_1",
                "p1",
                events=events(3, 5),
                checkpoint=checkpoint("cp_1", "resp_1", event_seq=4),
                journal_keep="cp_1",
            )
        ),
        store.submit(Write("resp_1", "p1", journal=[rec("cp_1", "model:1")])),
    )
    assert [(r.checkpoint_id, r.place) for r in await store.journal("resp_1")] == [("cp_1", "model:1")]
    assert [(r.checkpoint_id, r.place) for r in await store.journal("resp_2")] == [("cp_x", "model:1")]
    assert [e.seq for e in await store.read_events("resp_1", -1)] == list(range(5))


async def test_a_checkpoint_write_that_fails_keeps_the_records(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", checkpoint=checkpoint("cp_0", "resp_1", event_seq=0)))
    await store.submit(Write("resp_1", "p1", journal=[rec("cp_0", "model:1")]))
    with pytest.raises(LeaseLost):
        await store.submit(
            Write("resp_1", "p0", checkpoint=checkpoint("cp_1", "resp_1"), journal_keep="cp_1")
        )
    with pytest.raises(StoreError):  # a duplicate checkpoint id: the whole write is refused
        await store.submit(
            Write(
                "resp_1",
                "p1",
                events=events(1, 2),
                checkpoint=checkpoint("cp_0", "resp_1"),
                journal_keep="cp_0",
            )
        )
    assert [r.place for r in await store.journal("resp_1")] == ["model:1"]


async def test_the_end_deletes_every_record(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", journal=[rec("", "model:1"), rec("", "tool:c1", "intent")]))
    await store.submit(
        Write(
            "resp_1",
            "p1",
            events=[event(1, "response.completed")],
            finish=Finish(status="completed", completed_at=time.time()),
            journal_clear=True,
        )
    )
    assert await store.journal("resp_1") == []
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status == "completed"


async def test_deleting_a_response_deletes_its_records(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", journal=[rec("", "model:1")]))
    assert await store.delete_response("resp_1", "alice")
    assert await count(store, t.journal, response_id="resp_1") == 0


async def test_records_keeps_counts_and_the_clearing_end_take_the_fast_paths(store: Store) -> None:
    """A superstep's records, the deletion its checkpoint carries and the journal's counts commit
    on the dialect's superstep path, the end that deletes every record on its end path: the
    journal adds no general-path transaction to a superstep."""
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    before = dict(store.stats.writes_by_kind)
    await store.submit(Write("resp_1", "p1", checkpoint=checkpoint("cp_0", "resp_1", event_seq=0)))
    await store.submit(
        Write("resp_1", "p1", journal=[rec("cp_0", "model:1")], journal_stats='{"recorded": 1}')
    )
    await store.submit(Write("resp_1", "p1", journal=[rec("cp_0", "tool:c1", "intent")]))
    await store.submit(
        Write(
            "resp_1",
            "p1",
            events=events(1, 2),
            checkpoint=checkpoint("cp_1", "resp_1", event_seq=1),
            journal_keep="cp_1",
            journal_stats='{"recorded": 2}',
        )
    )
    await store.submit(Write("resp_1", "p1", journal=[rec("cp_1", "model:1")]))
    assert [(r.checkpoint_id, r.place) for r in await store.journal("resp_1")] == [("cp_1", "model:1")]
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.journal == '{"recorded": 2}'
    await store.submit(
        Write(
            "resp_1",
            "p1",
            events=[event(2, "response.completed")],
            finish=Finish(status="completed", completed_at=time.time()),
            journal_clear=True,
            journal_stats='{"recorded": 3}',
        )
    )
    assert await store.journal("resp_1") == []
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status == "completed" and row.journal == '{"recorded": 3}'
    after = store.stats.writes_by_kind
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    assert grew.get("general", 0) == 0, grew
    assert grew.get("superstep") == 5 and grew.get("end") == 1, grew
    assert store.stats.fallbacks == {}
