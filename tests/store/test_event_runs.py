"""Events stored as runs (`store/write/_events`), on SQLite and PostgreSQL: every page from every
`starting_after` returns each event exactly as written, whatever rows hold it: one event per row
as written before migration 0008, runs of a write's events (plain and compressed, split at
`RUN`), and recovery's read from a checkpoint inside a run."""

from __future__ import annotations

import json

from sqlalchemy import insert, select

from durable_responses.store import EventRow, Store, Write
from durable_responses.store import _tables as t
from durable_responses.store.write import _events

from .helpers import checkpoint, count, event, owned


def _big(seq: int) -> EventRow:
    """An event of ~2 KB: a run of them is stored compressed."""
    return event(seq, delta="x" * 2000, item_id=f"msg_{seq}")


async def _every_page(store: Store, rid: str, expected: list[EventRow]) -> None:
    last = expected[-1].seq
    for after in range(-1, last + 1):
        for limit in (1, 3, 1000):
            page = await store.read_events(rid, after, limit=limit)
            assert page == [e for e in expected if e.seq > after][:limit], (after, limit)


async def test_pages_from_every_point_over_old_rows_and_runs(store: Store) -> None:
    rid = "resp_runs"
    await store.insert_response(owned(rid, "p1"), [], [])
    # Rows as written before migration 0008: one event each, no size, nothing packed.
    old = [event(s, delta=f"old {s}") for s in range(4)]
    async with store.db.writer.begin() as conn:
        await conn.execute(
            insert(t.events),
            [{"response_id": rid, "seq": e.seq, "type": e.type, "data": e.data} for e in old],
        )
    small = [event(s, delta=f"d {s}\n\t\u2028") for s in range(4, 9)]  # one plain run
    big = [_big(s) for s in range(9, 12)]  # one compressed run
    alone = [_big(12)]  # one event, compressed
    for batch in (small, big, alone):
        await store.submit(Write(rid, "p1", events=batch))
    expected = [*old, *small, *big, *alone]
    assert await count(store, t.events, response_id=rid) == 4 + 3
    async with store.db.reader.connect() as conn:
        sizes = (await conn.execute(select(t.events.c.size, t.events.c.packed.is_not(None)))).all()
    assert sorted((int(n), bool(p)) for n, p in sizes) == [(1, False)] * 4 + [
        (1, True),
        (3, True),
        (5, False),
    ]
    assert await store.max_event_seq(rid) == 12
    await _every_page(store, rid, expected)
    # The JSON is returned byte for byte.
    assert [e.data for e in await store.read_events(rid, -1)] == [e.data for e in expected]
    assert json.loads((await store.read_events(rid, 4, limit=1))[0].data)["delta"] == "d 5\n\t\u2028"


async def test_a_long_write_is_split_into_runs_and_read_in_pages(store: Store) -> None:
    rid = "resp_long"
    n = 2 * _events.RUN + 7
    written = [event(0, "response.created")] + [event(s, item_id=f"msg_{s}") for s in range(1, n)]
    await store.insert_response(owned(rid, "p1"), [], written[:1])
    await store.submit(Write(rid, "p1", events=written[1:]))
    assert await count(store, t.events, response_id=rid) == 1 + 3
    read: list[EventRow] = []
    while len(read) < n:
        page = await store.read_events(rid, read[-1].seq if read else -1, limit=100)
        assert page
        read.extend(page)
    assert read == written
    for after in (-1, 0, _events.RUN - 1, _events.RUN, _events.RUN + 1, n - 3, n - 1):
        assert await store.read_events(rid, after, limit=50) == written[after + 1 : after + 51]


async def test_recovery_reads_the_events_after_a_checkpoint_inside_a_run(store: Store) -> None:
    rid = "resp_resume"
    row = owned(rid, "p1")
    await store.insert_response(row, [], [])
    written = [event(s, item_id=f"msg_{s}") for s in range(10)]
    await store.submit(Write(rid, "p1", events=written, checkpoint=checkpoint("cp_1", rid, event_seq=4)))
    [state] = (await store.resume_states([row], journal=False)).values()
    assert state.events == written[5:]
    assert state.max_seq == 9


async def test_events_holding_a_separator_are_stored_one_per_row(store: Store) -> None:
    """Text that is not JSON's (a raw record or unit separator) goes one event per row, unchanged."""
    rid = "resp_raw"
    await store.insert_response(owned(rid, "p1"), [], [])
    written = [EventRow(0, "a", "x\x1ey"), EventRow(1, "b", "\x1f"), EventRow(2, "c", "{}")]
    await store.submit(Write(rid, "p1", events=written))
    assert await count(store, t.events, response_id=rid) == 3
    await _every_page(store, rid, written)
