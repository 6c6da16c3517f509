"""The relay's reads of a stored response (both dialects): every event once, in order, across
pages that grow as a backlog is read (`READ_BATCH` doubling up to `READ_BATCH_MAX`); never an
event of a write that failed."""

from __future__ import annotations

import asyncio
import json

import pytest

from durable_responses.runtime.delivery.relay import READ_BATCH, READ_BATCH_MAX, Relay
from durable_responses.runtime.run.registry import RunRegistry
from durable_responses.store import Store, StoreError, Write
from tests.store.helpers import checkpoint, event, events, owned

# Past the first page, two grown pages and some of the largest: every page size is crossed.
N = READ_BATCH * 3 + READ_BATCH_MAX + 123


async def _finished_response(store: Store, rid: str) -> None:
    await store.insert_response(owned(rid, "p1"), [], events(0, 1))
    body = events(1, N - 1)
    for i in range(0, len(body), 5000):
        await store.submit(Write(rid, "p1", events=body[i : i + 5000]))
    await store.submit(Write(rid, "p1", events=[event(N - 1, "response.completed")]))


async def _replay(store: Store, rid: str, after: int) -> list[int]:
    relay = Relay(store, RunRegistry(), remote_poll_seconds=30)
    return [row.seq async for batch in relay.committed(rid, after) for row in batch]


async def test_a_long_replay_sends_every_event_once_in_order(store: Store) -> None:
    rid = "resp_relay_pages"
    await _finished_response(store, rid)
    assert await _replay(store, rid, -1) == list(range(N))
    start = READ_BATCH + 7  # from the middle: the pages start there
    assert await _replay(store, rid, start) == list(range(start + 1, N))


async def test_a_relay_never_sends_the_events_of_a_write_that_failed(store: Store) -> None:
    """A watched response's write fails (its checkpoint id is taken): its events never
    committed, so the rows the outbox keeps for relays must not hold them. The relay starts
    reading right after the failure (its subscription taken before, as a creator's stream
    takes it), and sends only what committed: the write that replaces them, then the end."""
    rid = "resp_relay_failed"
    await store.insert_response(owned(rid, "p1"), [], events(0, 1))
    await store.submit(Write(rid, "p1", checkpoint=checkpoint("cp_1", rid, event_seq=0)))
    sub = store.notifier.subscribe(rid)
    with pytest.raises(StoreError):
        await store.submit(
            Write(rid, "p1", events=events(1, 3, delta="never committed"), checkpoint=checkpoint("cp_1", rid))
        )
    relay = Relay(store, RunRegistry(), remote_poll_seconds=30)
    sent: list[tuple[int, str | None]] = []

    async def watch() -> None:
        async for batch in relay.committed(rid, 0, sub):
            sent.extend((row.seq, json.loads(row.data).get("delta")) for row in batch)

    watching = asyncio.create_task(watch())
    await store.submit(Write(rid, "p1", events=events(1, 3, delta="committed")))
    await store.submit(Write(rid, "p1", events=[event(3, "response.completed")]))
    await asyncio.wait_for(watching, 30)
    assert sent == [(1, "committed"), (2, "committed"), (3, None)], sent
