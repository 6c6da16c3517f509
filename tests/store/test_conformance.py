"""The store conformance suite: every test runs on SQLite and on PostgreSQL (`store` fixture).

It pins the contract the runtime and HTTP layers rely on: tenant scoping, the outbox's group
commit, lease fencing, checkpoint/event atomicity, checkpoint order by the host's sequence,
lease claims that never hand one response to two processes, and whole-response deletes.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import astuple

import pytest
from sqlalchemy import update

from durable_responses.store import (
    AddedItem,
    Answers,
    AnswersTaken,
    Claims,
    ConversationDeleted,
    DuplicateResponse,
    EventRow,
    Finish,
    ItemsTaken,
    LeaseLost,
    Notifier,
    Store,
    StoreError,
    Write,
)
from durable_responses.store import _tables as t

from .conftest import LEASE_SECONDS, StoreFactory
from .helpers import (
    checkpoint,
    count,
    event,
    events,
    input_item,
    output_item,
    owned,
    pending,
    response,
)

# -- responses ---------------------------------------------------------------------------


async def test_ping(store: Store) -> None:
    await store.ping()


async def test_insert_and_get_response_scoped_by_user(store: Store) -> None:
    row = response("resp_1", "alice", conversation_id="conv_1", previous_response_id="resp_0")
    await store.insert_response(row, [input_item(0), input_item(1)], [event(0, "response.created")])

    got = await store.get_response("resp_1", "alice")
    assert got == row
    # Each field of the type written (1 == True: SQLite's driver returns booleans as integers).
    assert got is not None and [type(v) for v in astuple(got)] == [type(v) for v in astuple(row)]
    assert await store.get_response("resp_1", None) == row  # the runtime's unscoped read
    assert await store.get_response("resp_1", "mallory") is None
    assert await store.get_response("resp_missing", "alice") is None
    assert [i.item_id for i in await store.input_items("resp_1")] == ["msg_0000", "msg_0001"]
    assert [e.type for e in await store.read_events("resp_1", -1)] == ["response.created"]


async def test_duplicate_response_is_refused_and_changes_nothing(store: Store) -> None:
    await store.insert_response(response("resp_1", "alice"), [input_item(0)], [event(0, "response.created")])
    with pytest.raises(DuplicateResponse):
        await store.insert_response(
            response("resp_1", "mallory"), [input_item(0, "msg_other"), input_item(1)], [event(0), event(1)]
        )
    got = await store.get_response("resp_1", "alice")
    assert got is not None and got.user_id == "alice"
    assert [i.item_id for i in await store.input_items("resp_1")] == ["msg_0000"]
    assert await store.max_event_seq("resp_1") == 0


async def test_creations_batched_together_fail_alone(store_factory: StoreFactory) -> None:
    """Creations sharing a transaction: a duplicate among them is refused, the others commit
    with their input items and first events."""
    store = await store_factory(commit_window=0.05)
    await store.insert_response(response("resp_dup", "alice"), [], [event(0, "response.created")])
    results = await asyncio.gather(
        *(
            store.insert_response(
                response(rid, "bob"), [input_item(0), input_item(1)], [event(0, "response.created"), event(1)]
            )
            for rid in ("resp_a", "resp_dup", "resp_b")
        ),
        return_exceptions=True,
    )
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], DuplicateResponse)
    for rid in ("resp_a", "resp_b"):
        got = await store.get_response(rid, "bob")
        assert got is not None and got.status == "in_progress"
        assert [i.item_id for i in await store.input_items(rid)] == ["msg_0000", "msg_0001"]
        assert [e.seq for e in await store.read_events(rid, -1)] == [0, 1]
    dup = await store.get_response("resp_dup", None)
    assert dup is not None and dup.user_id == "alice"


# -- input items paging ------------------------------------------------------------------

N_ITEMS = 150


@pytest.fixture
async def paged(store: Store) -> Store:
    await store.insert_response(response("resp_p"), [input_item(i) for i in range(N_ITEMS)], [])
    await store.insert_response(response("resp_other"), [input_item(0, "msg_foreign")], [])
    return store


def _ids(positions: range | list[int]) -> list[str]:
    return [f"msg_{p:04d}" for p in positions]


_LIMITS = (1, 7, 20, 149, 150)


@pytest.mark.parametrize("order", ["asc", "desc"])
async def test_input_items_forward_paging_is_complete(paged: Store, order: str) -> None:
    expected = _ids(range(N_ITEMS)) if order == "asc" else _ids(range(N_ITEMS - 1, -1, -1))
    for limit in _LIMITS:
        seen: list[str] = []
        cursor: str | None = None
        for _ in range(N_ITEMS + 2):
            result = await paged.list_input_items(
                "resp_p", after=cursor, before=None, limit=limit, order=order
            )
            assert result is not None
            page, has_more = result
            seen += [i.item_id for i in page]
            if not has_more:
                break
            assert len(page) == limit
            cursor = page[-1].item_id
        assert seen == expected, f"limit={limit}"  # complete, ordered, no duplicates


@pytest.mark.parametrize("order", ["asc", "desc"])
async def test_input_items_backward_paging_is_complete(paged: Store, order: str) -> None:
    """`before=X` is the page just before X (in the requested order), like `after` in reverse."""
    expected = _ids(range(N_ITEMS)) if order == "asc" else _ids(range(N_ITEMS - 1, -1, -1))
    for limit in _LIMITS:
        cursor = expected[-1]
        seen: list[str] = []
        for _ in range(N_ITEMS + 2):
            result = await paged.list_input_items(
                "resp_p", after=None, before=cursor, limit=limit, order=order
            )
            assert result is not None
            page, has_more = result
            ids = [i.item_id for i in page]
            assert ids == sorted(ids, reverse=order == "desc")
            seen = ids + seen
            if not has_more:
                break
            assert len(page) == limit
            cursor = page[0].item_id
        assert seen == expected[:-1], f"limit={limit}"


async def test_input_items_page_edges(paged: Store) -> None:
    page = await paged.list_input_items("resp_p", after=None, before=None, limit=1000, order="asc")
    assert page is not None and [i.item_id for i in page[0]] == _ids(range(N_ITEMS)) and page[1] is False
    page = await paged.list_input_items("resp_p", after=None, before=None, limit=N_ITEMS, order="desc")
    assert page is not None and len(page[0]) == N_ITEMS and page[1] is False
    page = await paged.list_input_items("resp_p", after=None, before=None, limit=N_ITEMS - 1, order="asc")
    assert page is not None and len(page[0]) == N_ITEMS - 1 and page[1] is True

    # The page just before a cursor, not the first page of the list.
    page = await paged.list_input_items("resp_p", after=None, before="msg_0100", limit=5, order="asc")
    assert page is not None and [i.item_id for i in page[0]] == _ids(range(95, 100)) and page[1] is True
    page = await paged.list_input_items("resp_p", after=None, before="msg_0040", limit=5, order="desc")
    assert page is not None and [i.item_id for i in page[0]] == _ids(range(45, 40, -1)) and page[1] is True
    page = await paged.list_input_items("resp_p", after=None, before="msg_0003", limit=5, order="asc")
    assert page is not None and [i.item_id for i in page[0]] == _ids(range(3)) and page[1] is False

    # Both cursors: the items strictly between them.
    page = await paged.list_input_items("resp_p", after="msg_0010", before="msg_0020", limit=100, order="asc")
    assert page is not None and [i.item_id for i in page[0]] == _ids(range(11, 20)) and page[1] is False
    page = await paged.list_input_items(
        "resp_p", after="msg_0020", before="msg_0010", limit=100, order="desc"
    )
    assert page is not None and [i.item_id for i in page[0]] == _ids(range(19, 10, -1)) and page[1] is False

    # The last item has nothing after it.
    page = await paged.list_input_items("resp_p", after="msg_0149", before=None, limit=20, order="asc")
    assert page == ([], False)


async def test_input_items_unknown_cursor_is_none(paged: Store) -> None:
    for kwargs in ({"after": "msg_nope", "before": None}, {"after": None, "before": "msg_nope"}):
        assert await paged.list_input_items("resp_p", limit=20, order="asc", **kwargs) is None
    # A cursor that is another response's item is unknown here.
    assert (
        await paged.list_input_items("resp_p", after="msg_foreign", before=None, limit=20, order="desc")
        is None
    )
    assert await paged.list_input_items("resp_none", after=None, before=None, limit=20, order="desc") == (
        [],
        False,
    )


# -- the outbox --------------------------------------------------------------------------


async def test_submit_commits_events_in_order(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    assert await store.max_event_seq("resp_1") == 0
    assert await store.max_event_seq("resp_missing") == -1

    futures = [store.submit(Write("resp_1", "p1", events=events(1 + 3 * k, 4 + 3 * k))) for k in range(10)]
    await asyncio.gather(*futures)

    rows = await store.read_events("resp_1", -1)
    assert [r.seq for r in rows] == list(range(31))
    assert rows[0].type == "response.created"
    assert json.loads(rows[7].data)["sequence_number"] == 7
    assert [r.seq for r in await store.read_events("resp_1", 20)] == list(range(21, 31))
    assert [r.seq for r in await store.read_events("resp_1", 5, limit=4)] == [6, 7, 8, 9]
    assert await store.read_events("resp_1", 30) == []
    # A page is also a range of numbers: its ends, and numbers no event can have.
    assert [r.seq for r in await store.read_events("resp_1", -5, limit=3)] == [0, 1, 2]
    assert [r.seq for r in await store.read_events("resp_1", 27, limit=100)] == [28, 29, 30]
    assert await store.read_events("resp_1", 2**31 - 1) == []
    assert await store.read_events("resp_1", 10**15) == []
    assert await store.max_event_seq("resp_1") == 30


async def test_creation_keeps_submission_order_whether_the_outbox_is_idle_or_busy(store: Store) -> None:
    """A creation on an idle outbox commits in its caller's task (`Outbox.commit_now`), on a
    busy one behind what is queued; either way a write submitted after it commits after it
    (its fence needs the row the creation inserts)."""
    outbox = store.outbox
    for rid, busy in (("resp_idle", False), ("resp_busy", True)):
        if busy:
            await store.insert_response(owned("resp_other", "p1"), [], [event(0, "response.created")])
            queued = store.submit(Write("resp_other", "p1", events=events(1, 50)))
        create = asyncio.ensure_future(
            store.insert_response(owned(rid, "p1"), [], [event(0, "response.created")])
        )
        await asyncio.sleep(0)  # the creation has started (idle: it holds the outbox now)
        assert outbox.busy()  # idle: the creation holds it; busy: the queued write does
        after = store.submit(Write(rid, "p1", events=events(1, 4)))
        await create
        await after
        if busy:
            await queued
        assert [r.seq for r in await store.read_events(rid, -1)] == [0, 1, 2, 3]


async def test_write_with_items_status_and_write_now(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1", status="queued"), [], [event(0, "response.created")])
    await store.submit(
        Write(
            "resp_1",
            "p1",
            events=[event(1, "response.in_progress")],
            items=[output_item(0), output_item(1, included=False, status="incomplete")],
            status="in_progress",
        )
    )
    got = await store.get_response("resp_1", "alice")
    assert got is not None and got.status == "in_progress"
    assert [i.output_index for i in await store.output_items("resp_1")] == [0]
    every = await store.output_items("resp_1", included_only=False)
    assert [(i.output_index, i.status, i.included) for i in every] == [
        (0, "completed", True),
        (1, "incomplete", False),
    ]
    assert all(type(i.included) is bool for i in every)
    # The row and the items kept in the output, read together (GET /responses/{id}).
    assert await store.response_with_output("resp_1", "alice") == (got, every[:1])
    assert await store.response_with_output("resp_1", None) == (got, every[:1])  # unscoped
    assert await store.response_with_output("resp_1", "mallory") is None
    assert await store.response_with_output("resp_missing", "alice") is None
    assert await store.max_output_index("resp_1") == 1
    assert await store.max_output_index("resp_missing") == -1

    await store.write_now(
        [Write("resp_1", "p1", events=[event(2)]), Write("resp_1", "p1", events=[event(3)])]
    )
    assert await store.max_event_seq("resp_1") == 3
    with pytest.raises(LeaseLost):
        await store.write_now(
            [Write("resp_1", "p1", events=[event(4)]), Write("resp_1", "p2", events=[event(5)])]
        )
    assert await store.max_event_seq("resp_1") == 3


async def test_group_commit_of_many_writes(store: Store) -> None:
    n_responses, n_writes = 50, 40
    rids = [f"resp_{i:02d}" for i in range(n_responses)]
    for rid in rids:
        await store.insert_response(owned(rid, "p1"), [], [event(0, "response.created")])
    commits_before = store.outbox.commits

    async def drive(rid: str) -> None:
        for seq in range(1, n_writes + 1):
            # Submit without waiting for the previous write: the outbox keeps submission order.
            fut = store.submit(Write(rid, "p1", events=[event(seq, rid=rid)]))
            if seq % 10 == 0:
                await fut
            else:
                fut.add_done_callback(lambda f: f.exception())
            await asyncio.sleep(0)

    await asyncio.gather(*(drive(rid) for rid in rids))
    await asyncio.gather(*(store.submit(Write(rid, "p1")) for rid in rids))

    for rid in rids:
        rows = await store.read_events(rid, -1)
        assert [r.seq for r in rows] == list(range(n_writes + 1)), rid
        assert all(json.loads(r.data).get("rid", rid) == rid for r in rows)
    commits = store.outbox.commits - commits_before
    total = n_responses * (n_writes + 1)
    assert 0 < commits <= total // 10, f"{commits} commits for {total} writes"


async def test_close_commits_what_is_queued(store_factory: StoreFactory) -> None:
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    futures = [store.submit(Write("resp_1", "p1", events=[event(seq)])) for seq in range(1, 101)]
    await store.outbox.close()
    assert all(f.done() and f.exception() is None for f in futures)
    assert await store.max_event_seq("resp_1") == 100
    closed = store.submit(Write("resp_1", "p1", events=[event(101)]))
    with pytest.raises(StoreError):
        await closed
    assert await store.max_event_seq("resp_1") == 100


async def test_lease_fencing_fails_only_the_stale_write(store_factory: StoreFactory) -> None:
    store = await store_factory(commit_window=0.05)
    for rid, owner in (("resp_a", "p1"), ("resp_b", "p2"), ("resp_c", "p1")):
        await store.insert_response(owned(rid, owner), [], [event(0, "response.created")])
    b_before = await store.get_response("resp_b", None)

    # One batch (the 50 ms window gathers them): the middle write is not its lease's owner.
    fa = store.submit(Write("resp_a", "p1", events=events(1, 4)))
    fb = store.submit(Write("resp_b", "p1", events=events(1, 4), checkpoint=checkpoint("cp_b", "resp_b")))
    fc = store.submit(Write("resp_c", "p1", events=events(1, 4)))
    results = await asyncio.gather(fa, fb, fc, return_exceptions=True)

    assert results[0] is None and results[2] is None
    assert isinstance(results[1], LeaseLost) and results[1].response_id == "resp_b"
    assert await store.max_event_seq("resp_a") == 3
    assert await store.max_event_seq("resp_c") == 3
    assert await store.max_event_seq("resp_b") == 0
    assert await store.latest_checkpoint(user_id="alice", response_id="resp_b") is None
    b_after = await store.get_response("resp_b", None)
    assert b_after is not None and b_before is not None
    assert (b_after.lease_owner, b_after.lease_expires_at) == ("p2", b_before.lease_expires_at)


async def test_lease_fencing_of_many_responses_in_one_batch(store_factory: StoreFactory) -> None:
    """A batch of many responses (the live commit of many streams): each write's lease, status
    and usage are renewed whatever its place in the batch, and only the stale owners' writes fail."""
    store = await store_factory(commit_window=0.05)
    stale = {2, 7, 8, 12}
    rids = [f"resp_{i:02d}" for i in range(13)]
    for i, rid in enumerate(rids):
        await store.insert_response(
            owned(rid, "p2" if i in stale else "p1"), [], [event(0, "response.created")]
        )
    before = {rid: await store.get_response(rid, None) for rid in rids}
    until = time.time() + 3600
    futures = [
        store.submit(
            Write(
                rid, "p1", events=events(1, 3), status="in_progress", usage=f'{{"n":{i}}}', lease_until=until
            )
        )
        for i, rid in enumerate(rids)
    ]
    results = await asyncio.gather(*futures, return_exceptions=True)
    for i, rid in enumerate(rids):
        row = await store.get_response(rid, None)
        old = before[rid]
        assert row is not None and old is not None
        if i in stale:
            assert isinstance(results[i], LeaseLost) and results[i].response_id == rid
            assert await store.max_event_seq(rid) == 0
            assert (row.lease_owner, row.lease_expires_at, row.status) == (
                "p2",
                old.lease_expires_at,
                old.status,
            )
        else:
            assert results[i] is None, (rid, results[i])
            assert await store.max_event_seq(rid) == 2
            assert row.lease_owner == "p1" and row.lease_expires_at == pytest.approx(until)
            assert row.status == "in_progress" and row.usage == f'{{"n":{i}}}'


async def test_lease_fencing_checks_every_owner_of_a_response_in_a_batch(store_factory: StoreFactory) -> None:
    """A stale owner's write that shares a batch with the real owner's write is still fenced."""
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p2"), [], [event(0, "response.created")])
    good = store.submit(Write("resp_1", "p2", events=[event(1)]))
    stale = store.submit(Write("resp_1", "p1", events=[event(2)]))
    results = await asyncio.gather(good, stale, return_exceptions=True)
    assert results[0] is None
    assert isinstance(results[1], LeaseLost)
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1]


async def test_unowned_write_is_not_fenced(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p2"), [], [])
    await store.submit(Write("resp_1", None, events=[event(0)]))
    assert await store.max_event_seq("resp_1") == 0


async def test_write_renews_the_writers_lease(store: Store) -> None:
    await store.insert_response(
        response("resp_1", lease_owner="p1", lease_expires_at=time.time() + 1), [], []
    )
    before = time.time()
    await store.submit(Write("resp_1", "p1", events=[event(0)]))
    row = await store.get_response("resp_1", None)
    assert row is not None and row.lease_expires_at is not None
    assert row.lease_expires_at >= before + LEASE_SECONDS - 0.5
    until = time.time() + 1234
    await store.submit(Write("resp_1", "p1", events=[event(1)], lease_until=until))
    row = await store.get_response("resp_1", None)
    assert row is not None and row.lease_expires_at == pytest.approx(until)


async def test_write_keeps_a_fresh_lease_and_never_shortens_one(store: Store) -> None:
    """A write renews its lease only once a third of it is gone (the LeaseKeeper renews it every
    third anyway): a fresh lease, or one renewed further ahead, is left as it is, and the write
    still commits only for its owner."""
    fresh = time.time() + LEASE_SECONDS - 1
    await store.insert_response(response("resp_1", lease_owner="p1", lease_expires_at=fresh), [], [])
    await store.submit(Write("resp_1", "p1", events=[event(0)]))
    row = await store.get_response("resp_1", None)
    assert row is not None and row.lease_expires_at == pytest.approx(fresh)
    far = time.time() + 3600
    await store.submit(Write("resp_1", "p1", events=[event(1)], lease_until=far))
    await store.submit(Write("resp_1", "p1", events=[event(2)]))
    row = await store.get_response("resp_1", None)
    assert row is not None and row.lease_expires_at == pytest.approx(far)
    with pytest.raises(LeaseLost):
        await store.submit(Write("resp_1", "p2", events=[event(3)]))
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2]


async def test_checkpoint_and_events_commit_atomically(store_factory: StoreFactory) -> None:
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.insert_response(owned("resp_2", "p1"), [], [event(0, "response.created")])
    await store.submit(
        Write("resp_1", "p1", events=events(1, 3), checkpoint=checkpoint("cp_1", "resp_1", event_seq=2))
    )
    original = await store.load_checkpoint("cp_1", "alice")
    assert original is not None and original.event_seq == 2

    # A write whose checkpoint cannot be stored (duplicate id) commits none of its events,
    # and its neighbour in the same batch still commits.
    bad = store.submit(
        Write(
            "resp_1",
            "p1",
            events=events(3, 6),
            checkpoint=checkpoint("cp_1", "resp_1", event_seq=5, data="{}"),
        )
    )
    neighbour = store.submit(
        Write("resp_2", "p1", events=events(1, 4), checkpoint=checkpoint("cp_2", "resp_2"))
    )
    results = await asyncio.gather(bad, neighbour, return_exceptions=True)
    assert isinstance(results[0], StoreError)
    assert results[1] is None

    assert await store.max_event_seq("resp_1") == 2
    assert await store.load_checkpoint("cp_1", "alice") == original
    assert await count(store, t.checkpoints, response_id="resp_1") == 1
    assert await store.max_event_seq("resp_2") == 3
    assert await store.load_checkpoint("cp_2", "alice") is not None

    # The run can go on from where the database is.
    await store.submit(
        Write("resp_1", "p1", events=events(3, 6), checkpoint=checkpoint("cp_3", "resp_1", event_seq=5))
    )
    latest = await store.latest_checkpoint(user_id="alice", response_id="resp_1")
    assert latest is not None and latest.checkpoint_id == "cp_3" and latest.event_seq == 5
    assert [e.seq for e in await store.read_events("resp_1", -1)] == list(range(6))


@pytest.mark.parametrize("max_batch", [256, 1], ids=["same-batch", "next-batch"])
async def test_a_failed_write_fails_the_queued_writes_of_its_response(
    store_factory: StoreFactory, max_batch: int
) -> None:
    """A write queued behind a failed one of the same response must not commit: its events would
    leave a sequence gap and its checkpoint would be committed without the outputs before it."""
    store = await store_factory(commit_window=0.05, max_batch=max_batch)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.insert_response(owned("resp_2", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", checkpoint=checkpoint("cp_0", "resp_1", event_seq=0)))

    # Live delivery: events go out at once, the checkpoint follows before the first is answered.
    bad = store.submit(Write("resp_1", "p1", events=events(1, 3), checkpoint=checkpoint("cp_0", "resp_1")))
    later = store.submit(Write("resp_1", "p1", events=events(3, 5), checkpoint=checkpoint("cp_1", "resp_1")))
    other = store.submit(Write("resp_2", "p1", events=events(1, 3)))
    results = await asyncio.gather(bad, later, other, return_exceptions=True)
    assert isinstance(results[0], StoreError)
    assert isinstance(results[1], StoreError)
    assert results[2] is None

    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0]
    assert await store.load_checkpoint("cp_1", "alice") is None
    latest = await store.latest_checkpoint(user_id="alice", response_id="resp_1")
    assert latest is not None and latest.checkpoint_id == "cp_0"
    assert await store.max_event_seq("resp_2") == 2

    # A write submitted once the failure is known (a recovery, a terminal event) commits.
    await store.submit(Write("resp_1", "p1", events=events(1, 3)))
    assert await store.max_event_seq("resp_1") == 2


async def test_a_write_whose_events_do_not_follow_the_last_committed_is_refused(
    store_factory: StoreFactory,
) -> None:
    """The sequence continuity guard (invariant 4): a write whose first event is not the one
    after the last this process committed for its response is refused whole, on every path
    (live events, a checkpoint's write, an end), e.g. a run that goes on submitting after a
    write of its failed. Nothing of it commits: no gap, and the write that does follow commits."""
    store = await store_factory(commit_window=0.0)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", events=events(1, 3)))

    # A write failed (its checkpoint id is taken): events 3-4 did not commit...
    await store.submit(Write("resp_1", "p1", checkpoint=checkpoint("cp_1", "resp_1", event_seq=2)))
    with pytest.raises(StoreError):
        await store.submit(
            Write("resp_1", "p1", events=events(3, 5), checkpoint=checkpoint("cp_1", "resp_1"))
        )
    # ...so whatever comes after them must not, in any kind of write.
    done = Finish(status="completed", completed_at=time.time())
    skipping = [
        Write("resp_1", "p1", events=events(5, 7)),
        Write("resp_1", "p1", events=events(5, 7), checkpoint=checkpoint("cp_2", "resp_1", event_seq=6)),
        Write("resp_1", "p1", events=[event(5, "response.completed")], finish=done),
    ]
    for write in skipping:
        with pytest.raises(StoreError, match="does not follow"):
            await store.submit(write)
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2]
    assert await store.load_checkpoint("cp_2", "alice") is None
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status == "in_progress"

    await store.submit(Write("resp_1", "p1", events=[event(3, "response.completed")], finish=done))
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2, 3]


async def test_an_end_batched_behind_its_superstep_commits_after_it(store_factory: StoreFactory) -> None:
    """Superstep writes and a response's end may take different paths in one batch (the fast
    path and the general one): the end still commits after the superstep, and not at all when
    the superstep was fenced off."""
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.insert_response(owned("resp_2", "p2"), [], [event(0, "response.created")])
    done = Finish(status="completed", completed_at=time.time())
    futures = [
        store.submit(Write("resp_1", "p1", events=events(1, 3), checkpoint=checkpoint("cp_1", "resp_1"))),
        store.submit(Write("resp_1", "p1", events=[event(3, "response.completed")], finish=done)),
        # resp_2 belongs to p2: p1's superstep and end must both be refused.
        store.submit(Write("resp_2", "p1", events=events(1, 3))),
        store.submit(Write("resp_2", "p1", events=[event(3, "response.completed")], finish=done)),
    ]
    results = await asyncio.gather(*futures, return_exceptions=True)
    assert results[:2] == [None, None]
    assert isinstance(results[2], LeaseLost) and isinstance(results[3], LeaseLost)
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2, 3]
    first = await store.get_response("resp_1", "alice")
    assert first is not None and first.status == "completed" and first.lease_owner is None
    assert await store.load_checkpoint("cp_1", "alice") is not None
    assert [e.seq for e in await store.read_events("resp_2", -1)] == [0]
    second = await store.get_response("resp_2", "alice")
    assert second is not None and second.status != "completed" and second.lease_owner == "p2"


async def test_an_end_commits_its_events_items_and_prune_whole_or_not_at_all(
    store_factory: StoreFactory,
) -> None:
    """A response's end (terminal transition, last events and closed items, pruning of old
    checkpoints) is one write: a stale owner's end changes nothing; the owner's end commits all
    of it; ends batched together commit together."""
    store = await store_factory(commit_window=0.05)
    for rid in ("resp_1", "resp_2", "resp_3"):
        await store.insert_response(owned(rid, "p1"), [], [event(0, "response.created")])
        for k in range(3):
            await store.submit(
                Write(rid, "p1", checkpoint=checkpoint(f"{rid}_cp{k}", rid, lineage=f"l_{rid}"))
            )

    def end(rid: str, owner: str) -> Write:
        return Write(
            rid,
            owner,
            events=[event(1, "response.output_item.done"), event(2, "response.completed")],
            items=[output_item(0)],
            finish=Finish(status="completed", completed_at=time.time(), usage='{"total_tokens": 1}'),
            prune=("alice", f"l_{rid}"),
        )

    with pytest.raises(LeaseLost):
        await store.submit(end("resp_1", "p0"))
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status != "completed" and row.lease_owner == "p1"
    assert await store.max_event_seq("resp_1") == 0
    assert await store.output_items("resp_1") == []
    assert len(await store.list_checkpoints(user_id="alice", lineage="l_resp_1")) == 3

    await asyncio.gather(*(store.submit(end(rid, "p1")) for rid in ("resp_1", "resp_2", "resp_3")))
    for rid in ("resp_1", "resp_2", "resp_3"):
        row = await store.get_response(rid, "alice")
        assert row is not None and row.status == "completed" and row.usage == '{"total_tokens": 1}'
        assert (row.lease_owner, row.lease_expires_at) == (None, None)
        assert [e.seq for e in await store.read_events(rid, -1)] == [0, 1, 2]
        assert [i.item_id for i in await store.output_items(rid)] == ["out_0000"]
        kept = await store.list_checkpoints(user_id="alice", lineage=f"l_{rid}")
        assert [c.checkpoint_id for c in kept] == [f"{rid}_cp2"]


async def test_failing_events_commit_no_checkpoint(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    # seq 0 already exists: the whole write is refused, checkpoint included.
    with pytest.raises(StoreError):
        await store.submit(
            Write("resp_1", "p1", events=[event(0), event(1)], checkpoint=checkpoint("cp", "resp_1"))
        )
    assert await store.load_checkpoint("cp", "alice") is None
    assert await store.max_event_seq("resp_1") == 0


async def test_finish_sets_terminal_state_and_clears_lease(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    done_at = time.time()
    await store.submit(
        Write(
            "resp_1",
            "p1",
            events=[event(1, "response.completed")],
            finish=Finish(status="completed", completed_at=done_at, usage='{"total_tokens": 3}'),
        )
    )
    row = await store.get_response("resp_1", "alice")
    assert row is not None
    assert row.status == "completed"
    assert row.completed_at == pytest.approx(done_at)
    assert row.usage == '{"total_tokens": 3}'
    assert row.error is None
    assert (row.lease_owner, row.lease_expires_at) == (None, None)
    # The finished response belongs to nobody: a late write of the old owner is fenced off.
    with pytest.raises(LeaseLost):
        await store.submit(Write("resp_1", "p1", events=[event(2)]))
    assert await store.max_event_seq("resp_1") == 1

    await store.insert_response(owned("resp_2", "p1"), [], [])
    await store.submit(
        Write(
            "resp_2",
            "p1",
            finish=Finish(
                status="failed", completed_at=None, error='{"code": "server_error"}', incomplete_details=None
            ),
        )
    )
    row = await store.get_response("resp_2", "alice")
    assert row is not None and row.status == "failed" and row.error == '{"code": "server_error"}'
    assert await store.claim_expired("p2") == []


# -- notifications -----------------------------------------------------------------------


async def test_notifier_wakes_only_subscribers_of_the_committed_response(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [])
    await store.insert_response(owned("resp_2", "p1"), [], [])
    with store.notifier.subscribe("resp_1") as sub1, store.notifier.subscribe("resp_1") as sub1b:
        assert store.notifier.has_subscribers("resp_1")
        sub1.clear()
        sub1b.clear()
        await store.submit(Write("resp_2", "p1", events=[event(0)]))
        assert await sub1.wait(0.1) is False

        waiter = asyncio.create_task(sub1.wait(5))
        await asyncio.sleep(0)
        await store.submit(Write("resp_1", "p1", events=[event(0)]))
        assert await waiter is True
        # The rows are there when the subscriber wakes.
        assert await store.max_event_seq("resp_1") == 0
        # Each subscriber has its own flag.
        sub1.clear()
        assert await sub1b.wait(0) is True
        assert await sub1.wait(0.01) is False
    assert not store.notifier.has_subscribers("resp_1")


async def test_notifier_wakes_on_a_failed_write_too(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p2"), [], [])
    with store.notifier.subscribe("resp_1") as sub:
        sub.clear()
        with pytest.raises(LeaseLost):
            await store.submit(Write("resp_1", "p1", events=[event(0)]))
        assert await sub.wait(0) is True


async def test_notifier_unit() -> None:
    n = Notifier()
    n.publish("nobody")  # no subscribers: nothing happens
    sub = n.subscribe("r")
    n.publish_many(["x", "r"])
    assert await sub.wait(0) is True
    sub.clear()
    assert await sub.wait(0.01) is False
    sub.close()
    sub.close()
    assert not n.has_subscribers("r")


# -- checkpoints -------------------------------------------------------------------------


async def _store_checkpoints(store: Store, rid: str, cps: list) -> None:  # type: ignore[type-arg]
    for cp in cps:
        await store.submit(Write(rid, None, checkpoint=cp))


async def test_latest_checkpoint_is_by_host_sequence(store: Store) -> None:
    await store.insert_response(response("resp_1"), [], [])
    now = time.time()
    # Timestamps run backwards (clock skew, another replica): the host's order still wins.
    await _store_checkpoints(
        store, "resp_1", [checkpoint(f"cp_{k}", "resp_1", created_at=now - k * 100) for k in range(5)]
    )
    latest = await store.latest_checkpoint(user_id="alice", response_id="resp_1")
    assert latest is not None and latest.checkpoint_id == "cp_4"
    assert latest.seq is not None
    listed = await store.list_checkpoints(user_id="alice", lineage="resp_1")
    assert [c.checkpoint_id for c in listed] == [f"cp_{k}" for k in range(5)]
    seqs = [c.seq for c in listed]
    assert all(isinstance(s, int) for s in seqs) and seqs == sorted(set(seqs))  # type: ignore[type-var]
    assert await store.latest_checkpoint(user_id="mallory", response_id="resp_1") is None


async def test_latest_checkpoint_filters(store: Store) -> None:
    await store.insert_response(response("resp_1"), [], [])
    await store.insert_response(response("resp_2"), [], [])
    await _store_checkpoints(
        store,
        "resp_1",
        [
            checkpoint("a1", "resp_1", lineage="conv", workflow_name="wf_a"),
            checkpoint("b1", "resp_1", lineage="conv", workflow_name="wf_b"),
        ],
    )
    await _store_checkpoints(
        store, "resp_2", [checkpoint("a2", "resp_2", lineage="conv", workflow_name="wf_a")]
    )
    await _store_checkpoints(
        store, "resp_2", [checkpoint("x2", "resp_2", lineage="other", workflow_name="wf_a")]
    )

    async def latest(**kw: str) -> str | None:
        row = await store.latest_checkpoint(user_id="alice", **kw)
        return None if row is None else row.checkpoint_id

    assert await latest() == "x2"
    assert await latest(lineage="conv") == "a2"
    assert await latest(lineage="conv", workflow_name="wf_b") == "b1"
    assert await latest(response_id="resp_1") == "b1"
    assert await latest(response_id="resp_1", workflow_name="wf_a") == "a1"
    assert await latest(response_id="resp_2", lineage="conv") == "a2"
    assert await latest(lineage="nope") is None
    ids = [c.checkpoint_id for c in await store.list_checkpoints(user_id="alice", lineage="conv")]
    assert ids == ["a1", "b1", "a2"]
    ids = [
        c.checkpoint_id
        for c in await store.list_checkpoints(user_id="alice", lineage="conv", workflow_name="wf_a")
    ]
    assert ids == ["a1", "a2"]


async def test_checkpoints_are_scoped_by_user(store: Store) -> None:
    await store.insert_response(response("resp_a", "alice"), [], [])
    await store.insert_response(response("resp_m", "mallory"), [], [])
    cp = checkpoint("cp_a", "resp_a", user="alice", lineage="shared", event_seq=7)
    await _store_checkpoints(store, "resp_a", [cp])
    await _store_checkpoints(
        store, "resp_m", [checkpoint("cp_m", "resp_m", user="mallory", lineage="shared")]
    )

    loaded = await store.load_checkpoint("cp_a", "alice")
    assert loaded is not None
    assert (loaded.checkpoint_id, loaded.user_id, loaded.lineage, loaded.response_id) == (
        "cp_a",
        "alice",
        "shared",
        "resp_a",
    )
    assert (loaded.workflow_name, loaded.event_seq, loaded.data) == ("wf", 7, cp.data)
    assert loaded.created_at == pytest.approx(cp.created_at)
    assert await store.load_checkpoint("cp_a", "mallory") is None
    assert await store.load_checkpoint("cp_missing", "alice") is None
    assert [c.checkpoint_id for c in await store.list_checkpoints(user_id="alice", lineage="shared")] == [
        "cp_a"
    ]
    assert [c.checkpoint_id for c in await store.list_checkpoints(user_id="mallory", lineage="shared")] == [
        "cp_m"
    ]
    assert await store.list_checkpoints(user_id="bob", lineage="shared") == []

    assert await store.delete_checkpoint("cp_a", "mallory") is False
    assert await store.load_checkpoint("cp_a", "alice") is not None
    assert await store.delete_checkpoint("cp_a", "alice") is True
    assert await store.load_checkpoint("cp_a", "alice") is None
    assert await store.delete_checkpoint("cp_a", "alice") is False
    assert await store.load_checkpoint("cp_m", "mallory") is not None


async def test_prune_keeps_newest_of_response_and_of_lineage(store: Store) -> None:
    for rid, user in (("resp_1", "alice"), ("resp_2", "alice"), ("resp_3", "alice"), ("resp_m", "mallory")):
        await store.insert_response(response(rid, user), [], [])
    await _store_checkpoints(
        store, "resp_1", [checkpoint(f"r1_{k}", "resp_1", lineage="conv") for k in range(3)]
    )
    await _store_checkpoints(
        store, "resp_2", [checkpoint(f"r2_{k}", "resp_2", lineage="conv") for k in range(2)]
    )
    await _store_checkpoints(
        store, "resp_3", [checkpoint(f"r3_{k}", "resp_3", lineage="other") for k in range(2)]
    )
    await _store_checkpoints(
        store, "resp_m", [checkpoint(f"m_{k}", "resp_m", user="mallory", lineage="conv") for k in range(2)]
    )

    deleted = await store.prune_checkpoints(user_id="alice", response_id="resp_1", lineage="conv")
    assert deleted == 3
    conv = [c.checkpoint_id for c in await store.list_checkpoints(user_id="alice", lineage="conv")]
    assert conv == ["r1_2", "r2_1"]  # the newest of the response, the newest of the lineage
    other = [c.checkpoint_id for c in await store.list_checkpoints(user_id="alice", lineage="other")]
    assert other == ["r3_0", "r3_1"]
    mallory = [c.checkpoint_id for c in await store.list_checkpoints(user_id="mallory", lineage="conv")]
    assert mallory == ["m_0", "m_1"]

    # Pruning the lineage's newest response leaves the lineage with its newest checkpoint only.
    assert await store.prune_checkpoints(user_id="alice", response_id="resp_2", lineage="conv") == 1
    assert [c.checkpoint_id for c in await store.list_checkpoints(user_id="alice", lineage="conv")] == [
        "r2_1"
    ]
    assert await store.prune_checkpoints(user_id="alice", response_id="resp_3", lineage="other") == 1
    assert [c.checkpoint_id for c in await store.list_checkpoints(user_id="alice", lineage="other")] == [
        "r3_1"
    ]
    assert await store.prune_checkpoints(user_id="alice", response_id="resp_none", lineage="none") == 0


async def test_prune_of_a_response_that_is_its_own_lineage(store: Store) -> None:
    await store.insert_response(response("resp_1"), [], [])
    await _store_checkpoints(store, "resp_1", [checkpoint(f"cp_{k}", "resp_1") for k in range(4)])
    assert await store.prune_checkpoints(user_id="alice", response_id="resp_1", lineage="resp_1") == 3
    assert [c.checkpoint_id for c in await store.list_checkpoints(user_id="alice", lineage="resp_1")] == [
        "cp_3"
    ]


# -- leases ------------------------------------------------------------------------------


async def test_claim_expired_takes_only_expired_active_responses(store: Store) -> None:
    now = time.time()
    rows = [
        response("expired_1", status="in_progress", lease_owner="dead", lease_expires_at=now - 10),
        response("expired_2", status="queued", lease_owner="dead", lease_expires_at=now - 1),
        response("never_leased", status="queued"),
        response("released", status="in_progress", lease_owner="gone", lease_expires_at=0.0),
        response("alive", status="in_progress", lease_owner="p9", lease_expires_at=now + 60),
        response("done", status="completed", lease_owner="dead", lease_expires_at=now - 10),
        response("failed", status="failed"),
        response("cancelled", status="cancelled", lease_expires_at=now - 10),
        response("incomplete", status="incomplete"),
    ]
    for i, row in enumerate(rows):
        row.created_at = now - 100 + i
        await store.insert_response(row, [], [])

    claimed = await store.claim_expired("p1")
    assert sorted(r.id for r in claimed) == ["expired_1", "expired_2", "never_leased", "released"]
    for r in claimed:
        assert r.lease_owner == "p1"
        assert r.lease_expires_at is not None and r.lease_expires_at > time.time() + LEASE_SECONDS - 2
        stored = await store.get_response(r.id, None)
        assert stored is not None and stored.lease_owner == "p1"
    for rid in ("alive", "done", "failed", "cancelled", "incomplete"):
        stored = await store.get_response(rid, None)
        assert stored is not None and stored.lease_owner != "p1"
    assert await store.claim_expired("p2") == []


async def test_claim_expired_respects_limit_oldest_first(store: Store) -> None:
    now = time.time()
    for i in range(10):
        await store.insert_response(response(f"resp_{i}", created_at=now - 100 + i), [], [])
    first = await store.claim_expired("p1", limit=4)
    assert sorted(r.id for r in first) == [f"resp_{i}" for i in range(4)]
    rest = await store.claim_expired("p2", limit=100)
    assert sorted(r.id for r in rest) == [f"resp_{i}" for i in range(4, 10)]


async def test_concurrent_claimers_never_share_a_response(store_factory: StoreFactory) -> None:
    # Leases that outlive the test: a round's claims must not expire (and be claimed again) in a
    # later round on a slow machine (seen: 5 s leases, four rounds at load ~9 on two cores).
    stores = [await store_factory(lease_seconds=600) for _ in range(3)]
    seed = stores[0]
    n, rounds = 30, 4
    for rnd in range(rounds):
        now = time.time()
        rids = [f"r{rnd}_{i:02d}" for i in range(n)]
        for i, rid in enumerate(rids):
            await seed.insert_response(
                response(rid, created_at=now + i * 1e-3, lease_owner="dead", lease_expires_at=now - 5), [], []
            )

        claims: dict[str, list[str]] = {f"p{k}": [] for k in range(len(stores))}

        async def claimer(s: Store, owner: str) -> None:
            for _ in range(n):
                got = await s.claim_expired(owner, limit=3)
                if not got:
                    return
                claims[owner] += [r.id for r in got]

        await asyncio.gather(*(claimer(s, f"p{k}") for k, s in enumerate(stores)))
        every = [rid for ids in claims.values() for rid in ids]
        assert sorted(every) == sorted(rids), f"round {rnd}: {claims}"  # all taken, none twice
        for owner, ids in claims.items():
            for rid in ids:
                row = await seed.get_response(rid, None)
                assert row is not None and row.lease_owner == owner


async def test_renew_and_release_leases(store: Store) -> None:
    now = time.time()
    await store.insert_response(response("mine_1", lease_owner="p1", lease_expires_at=now + 1), [], [])
    await store.insert_response(response("mine_2", lease_owner="p1", lease_expires_at=now + 1), [], [])
    await store.insert_response(response("theirs", lease_owner="p2", lease_expires_at=now + 1), [], [])
    await store.insert_response(response("mine_done", status="completed", lease_owner="p1"), [], [])

    assert await store.renew_leases("p1", []) == set()
    kept = await store.renew_leases("p1", ["mine_1", "mine_2", "theirs", "missing"])
    assert kept == {"mine_1", "mine_2"}
    for rid in kept:
        row = await store.get_response(rid, None)
        assert row is not None and row.lease_expires_at is not None
        assert row.lease_expires_at > now + LEASE_SECONDS - 1
    theirs = await store.get_response("theirs", None)
    assert theirs is not None and theirs.lease_expires_at == pytest.approx(now + 1)

    await store.release_leases("p1")
    for rid in ("mine_1", "mine_2"):
        row = await store.get_response(rid, None)
        assert row is not None and row.lease_expires_at is not None and row.lease_expires_at <= time.time()
    claimed = await store.claim_expired("p3")
    assert sorted(r.id for r in claimed) == ["mine_1", "mine_2"]
    # p1 lost them: its renewals and writes are refused.
    assert await store.renew_leases("p1", ["mine_1", "mine_2"]) == set()
    with pytest.raises(LeaseLost):
        await store.submit(Write("mine_1", "p1", events=[event(0)]))
    await store.submit(Write("mine_1", "p3", events=[event(0)]))
    assert await store.max_event_seq("mine_1") == 0


# -- cancel ------------------------------------------------------------------------------


async def test_request_cancel_and_cancel_requested(store: Store) -> None:
    await store.insert_response(response("active", "alice"), [], [])
    await store.insert_response(response("queued", "alice", status="queued"), [], [])
    await store.insert_response(response("done", "alice", status="completed"), [], [])

    assert await store.cancel_requested([]) == set()
    assert await store.cancel_requested(["active", "queued", "done", "missing"]) == set()

    assert await store.request_cancel("active", "mallory") is None
    assert await store.cancel_requested(["active"]) == set()

    row = await store.request_cancel("active", "alice")
    assert row is not None and row.cancel_requested is True and row.status == "in_progress"
    again = await store.request_cancel("active", "alice")
    assert again is not None and again.cancel_requested is True

    done = await store.request_cancel("done", "alice")
    assert done is not None and done.cancel_requested is False and done.status == "completed"
    assert await store.request_cancel("missing", "alice") is None

    assert await store.cancel_requested(["active", "queued", "done", "missing"]) == {"active"}
    await store.request_cancel("queued", "alice")
    assert await store.cancel_requested(["active", "queued"]) == {"active", "queued"}


# -- delete ------------------------------------------------------------------------------


async def _full_response(store: Store, rid: str, user: str = "alice") -> None:
    await store.insert_response(
        owned(rid, "p1", user=user), [input_item(0, f"{rid}_in0"), input_item(1, f"{rid}_in1")], [event(0)]
    )
    await store.submit(
        Write(
            rid,
            "p1",
            events=events(1, 5),
            items=[output_item(0), output_item(1)],
            checkpoint=checkpoint(f"{rid}_cp", rid, user=user),
            pending=[pending(rid, f"{rid}_call", user=user, checkpoint_id=f"{rid}_cp")],
        )
    )
    await store.submit(Write(rid, "p1", checkpoint=checkpoint(f"{rid}_cp2", rid, user=user)))


_RESPONSE_TABLES = (t.input_items, t.output_items, t.events, t.checkpoints, t.pending_requests)


async def test_delete_response_removes_every_row_of_it_only(store: Store) -> None:
    await _full_response(store, "resp_1")
    await _full_response(store, "resp_2")
    # Events: one row for the creation's event, one for the run of the write's four (`_events`).
    expected = {t.input_items: 2, t.output_items: 2, t.events: 2, t.checkpoints: 2, t.pending_requests: 1}
    for table in _RESPONSE_TABLES:
        assert await count(store, table, response_id="resp_1") == expected[table], table.name

    assert await store.delete_response("resp_1", "mallory") is False
    assert await store.get_response("resp_1", "alice") is not None

    with store.notifier.subscribe("resp_1") as sub:
        sub.clear()
        assert await store.delete_response("resp_1", "alice") is True
        assert await sub.wait(0) is True
    assert await store.get_response("resp_1", None) is None
    for table in _RESPONSE_TABLES:
        assert await count(store, table, response_id="resp_1") == 0, table.name
        assert await count(store, table, response_id="resp_2") == expected[table], table.name
    assert await count(store, t.responses) == 1
    assert await store.load_checkpoint("resp_1_cp", "alice") is None
    assert await store.load_checkpoint("resp_2_cp", "alice") is not None
    assert await store.delete_response("resp_1", "alice") is False


# -- human in the loop -------------------------------------------------------------------


async def _answer(
    store: Store, by: str, calls: list[str], of: str = "resp_1", user: str = "alice"
) -> list[str]:
    """Create `by` answering `calls` of `of`; the calls refused ([] when it was created)."""
    try:
        await store.insert_response(
            response(by, user), [], [event(0, "response.created")], answers=Answers(of, user, tuple(calls))
        )
    except AnswersTaken as exc:
        assert exc.response_id == by
        return exc.refused
    return []


async def test_pending_requests_answer_all_or_none_in_the_creation(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [])
    await store.insert_response(owned("resp_m", "p1", user="mallory"), [], [])
    await store.submit(
        Write("resp_1", "p1", pending=[pending("resp_1", "call_b"), pending("resp_1", "call_a")])
    )
    await store.submit(Write("resp_m", "p1", pending=[pending("resp_m", "call_a", user="mallory")]))

    rows = await store.pending_requests("resp_1", "alice")
    assert [(r.call_id, r.status, r.answered_by) for r in rows] == [
        ("call_a", "pending", None),
        ("call_b", "pending", None),
    ]
    assert rows[0].checkpoint_id == "cp" and rows[0].user_id == "alice"
    assert await store.pending_requests("resp_1", "mallory") == []

    # One unknown id: nothing is answered, and the answering response is not created.
    assert await _answer(store, "resp_2", ["call_a", "call_x"]) == ["call_x"]
    assert {r.status for r in await store.pending_requests("resp_1", "alice")} == {"pending"}
    assert await store.get_response("resp_2", None) is None
    assert await store.max_event_seq("resp_2") == -1
    # Another user cannot answer them.
    assert await _answer(store, "resp_2", ["call_a"], user="mallory") == ["call_a"]
    assert await store.get_response("resp_2", None) is None

    assert await _answer(store, "resp_2", ["call_a", "call_b"]) == []
    assert await store.get_response("resp_2", "alice") is not None
    rows = await store.pending_requests("resp_1", "alice")
    assert [(r.call_id, r.status, r.answered_by) for r in rows] == [
        ("call_a", "answered", "resp_2"),
        ("call_b", "answered", "resp_2"),
    ]
    # A second answer is refused, creates nothing and leaves the first one's mark.
    assert await _answer(store, "resp_3", ["call_a"]) == ["call_a"]
    assert await store.get_response("resp_3", None) is None
    assert {r.answered_by for r in await store.pending_requests("resp_1", "alice")} == {"resp_2"}
    # A creation that fails for another reason (its id is taken) answers nothing.
    await store.release_answers("resp_2")
    with pytest.raises(DuplicateResponse):
        await store.insert_response(
            response("resp_2"), [], [], answers=Answers("resp_1", "alice", ("call_a",))
        )
    assert {r.status for r in await store.pending_requests("resp_1", "alice")} == {"pending"}
    # Mallory's request of the same call id is untouched throughout.
    assert [r.status for r in await store.pending_requests("resp_m", "mallory")] == ["pending"]


async def test_a_refused_answer_fails_only_its_creation_in_a_batch(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [])
    await store.submit(Write("resp_1", "p1", pending=[pending("resp_1", "call_a")]))
    # Queued together, committed as one batch: the second answer of call_a fails alone.
    writes = [
        Write(
            f"resp_{k}",
            None,
            create=(response(f"resp_{k}"), []),
            answers=Answers("resp_1", "alice", ("call_a",)),
        )
        for k in (2, 3)
    ]
    writes.append(Write("resp_4", None, create=(response("resp_4"), [])))
    results = await asyncio.gather(*(store.submit(w) for w in writes), return_exceptions=True)
    assert results[0] is None and results[2] is None, results
    assert isinstance(results[1], AnswersTaken) and results[1].refused == ["call_a"], results
    assert await store.get_response("resp_3", None) is None
    assert await store.get_response("resp_4", None) is not None
    assert {r.answered_by for r in await store.pending_requests("resp_1", "alice")} == {"resp_2"}


async def test_release_answers_reopens_only_that_responses_answers(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [])
    await store.insert_response(owned("resp_x", "p1"), [], [])
    await store.submit(
        Write("resp_1", "p1", pending=[pending("resp_1", "call_a"), pending("resp_1", "call_b")])
    )
    await store.submit(Write("resp_x", "p1", pending=[pending("resp_x", "call_a")]))
    assert await _answer(store, "resp_2", ["call_a", "call_b"]) == []
    assert await _answer(store, "resp_3", ["call_a"], of="resp_x") == []

    assert await store.release_answers("resp_2") == 2
    rows = await store.pending_requests("resp_1", "alice")
    assert [(r.status, r.answered_by) for r in rows] == [("pending", None), ("pending", None)]
    assert [(r.status, r.answered_by) for r in await store.pending_requests("resp_x", "alice")] == [
        ("answered", "resp_3")
    ]
    assert await store.release_answers("resp_2") == 0
    # The same call can be answered again.
    assert await _answer(store, "resp_4", ["call_a", "call_b"]) == []


async def test_concurrent_answers_only_one_wins(store_factory: StoreFactory) -> None:
    a, b = await store_factory(), await store_factory()
    await a.insert_response(owned("resp_1", "p1"), [], [])
    await a.submit(Write("resp_1", "p1", pending=[pending("resp_1", "call_a"), pending("resp_1", "call_b")]))
    results = await asyncio.gather(
        *(_answer(a if k % 2 else b, f"resp_{k}", ["call_a", "call_b"]) for k in range(2, 8))
    )
    assert sum(1 for r in results if r == []) == 1, results
    winner = f"resp_{results.index([]) + 2}"
    assert {r.answered_by for r in await a.pending_requests("resp_1", "alice")} == {winner}
    created = [k for k in range(2, 8) if await a.get_response(f"resp_{k}", None) is not None]
    assert created == [results.index([]) + 2]


async def test_items_added_by_hand_are_claimed_in_the_creation_all_or_none(store: Store) -> None:
    await store.conversations.create(
        "alice", "conv_1", "{}", [AddedItem("msg_a", "{}"), AddedItem("msg_b", "{}")]
    )
    free = await store.conversations.unclaimed("alice", "conv_1")
    assert [a.item_id for a in free] == ["msg_a", "msg_b"]
    seqs = tuple(a.seq for a in free if a.seq is not None)
    assert len(seqs) == 2

    async def create(rid: str, claimed: tuple[int, ...], user: str = "alice") -> bool:
        try:
            await store.insert_response(response(rid, user), [], [], claims=Claims(user, "conv_1", claimed))
        except ItemsTaken as exc:
            assert exc.response_id == rid
            return False
        return True

    # Another user's claim of the same items takes nothing and creates nothing.
    assert not await create("resp_m", seqs, user="mallory")
    assert await store.get_response("resp_m", None) is None
    assert await create("resp_1", seqs)
    assert await store.conversations.unclaimed("alice", "conv_1") == []
    assert await count(store, t.conversation_items, response_id="resp_1") == 2
    # Taken: a second claim of one of them fails whole, its response is not created.
    assert not await create("resp_2", seqs[1:])
    assert await store.get_response("resp_2", None) is None
    assert await count(store, t.conversation_items, response_id="resp_1") == 2
    # A creation that fails for another reason (its id is taken) claims nothing.
    await store.conversations.add_items("alice", "conv_1", [AddedItem("msg_c", "{}")])
    [c] = await store.conversations.unclaimed("alice", "conv_1")
    with pytest.raises(DuplicateResponse):
        await create("resp_1", (c.seq or 0,))
    assert [a.item_id for a in await store.conversations.unclaimed("alice", "conv_1")] == ["msg_c"]


async def test_a_conversation_used_first_is_created_with_the_creation(store: Store) -> None:
    first = Claims("alice", "conv_new")
    # A creation that fails (its id is taken) leaves no conversation behind.
    await store.insert_response(response("resp_1"), [], [])
    with pytest.raises(DuplicateResponse):
        await store.insert_response(response("resp_1"), [], [], claims=first)
    assert await store.conversations.get("alice", "conv_new") is None
    await store.insert_response(response("resp_2"), [], [], claims=first)
    row = await store.conversations.get("alice", "conv_new")
    assert row is not None and row.metadata == "{}" and row.deleted_at is None
    # Another first use of the same id (two turns raced to it) creates it once, and both commit.
    await store.insert_response(response("resp_3"), [], [], claims=first)
    assert await count(store, t.conversations, id="conv_new") == 1
    assert await store.get_response("resp_3", "alice") is not None


async def test_a_conversation_deleted_before_its_first_use_commits_refuses_the_creation(
    store_factory: StoreFactory,
) -> None:
    a, b = await store_factory(), await store_factory()
    # The creation read conv_new absent (a first use); before its write, another replica's first
    # use created it and a client deleted it.
    assert await a.conversations.get("alice", "conv_new", deleted=True) is None
    first = Claims("alice", "conv_new")
    await b.insert_response(response("resp_b"), [], [], claims=first)
    assert await b.conversations.delete("alice", "conv_new")
    with pytest.raises(ConversationDeleted) as refused:
        await a.insert_response(response("resp_1"), [], [], claims=first)
    assert (refused.value.response_id, refused.value.conversation_id) == ("resp_1", "conv_new")
    assert await a.get_response("resp_1", None) is None
    row = await a.conversations.get("alice", "conv_new", deleted=True)
    assert row is not None and row.deleted_at is not None
    # Refused in a group commit too, alone: its neighbour (another user's first use) commits.
    results = await asyncio.gather(
        a.insert_response(response("resp_2"), [], [], claims=first),
        a.insert_response(response("resp_3", "bob"), [], [], claims=Claims("bob", "conv_new")),
        return_exceptions=True,
    )
    assert isinstance(results[0], ConversationDeleted) and results[1] is None
    assert await a.get_response("resp_2", None) is None
    assert await a.conversations.get("bob", "conv_new") is not None


async def test_a_conversation_deleted_after_a_turn_read_it_refuses_the_turn(store: Store) -> None:
    # The turn read conv_1 live (with one item added by hand, and without); a client deleted it
    # before the turn's write: nothing of the turn commits, with items to claim or none.
    for added in ([], [AddedItem("msg_a", "{}")]):
        conv, rid = f"conv_{len(added)}", f"resp_{len(added)}"
        await store.conversations.create("alice", conv, "{}", added)
        seqs = tuple(a.seq or 0 for a in await store.conversations.unclaimed("alice", conv))
        assert await store.conversations.delete("alice", conv)
        with pytest.raises(ConversationDeleted) as refused:
            await store.insert_response(response(rid), [], [], claims=Claims("alice", conv, seqs))
        assert (refused.value.response_id, refused.value.conversation_id) == (rid, conv)
        assert await store.get_response(rid, None) is None
        row = await store.conversations.get("alice", conv, deleted=True)
        assert row is not None and row.deleted_at is not None
    # A turn of a live conversation commits, and leaves it as it was.
    await store.conversations.create("alice", "conv_live", '{"k": "v"}', [])
    await store.insert_response(response("resp_live"), [], [], claims=Claims("alice", "conv_live"))
    row = await store.conversations.get("alice", "conv_live")
    assert row is not None and row.metadata == '{"k": "v"}' and row.deleted_at is None


async def test_a_stale_claim_without_its_response_is_free(store: Store) -> None:
    await store.conversations.create("alice", "conv_1", "{}", [AddedItem("msg_a", "{}")])
    async with store.db.writer.begin() as conn:
        await conn.execute(
            update(t.conversation_items).values(response_id="resp_never", claimed_at=time.time() - 3600)
        )
    [a] = await store.conversations.unclaimed("alice", "conv_1")
    assert a.seq is not None
    await store.insert_response(response("resp_1"), [], [], claims=Claims("alice", "conv_1", (a.seq,)))
    assert await count(store, t.conversation_items, response_id="resp_1") == 1


# -- conversations -----------------------------------------------------------------------


async def test_conversation_responses_in_order(store: Store) -> None:
    now = time.time()
    await store.conversations.create("alice", "conv_1", "{}", [])
    for rid, at in (("resp_c", now + 3), ("resp_a", now + 1), ("resp_b", now + 2), ("resp_a2", now + 1)):
        await store.insert_response(response(rid, "alice", created_at=at, conversation_id="conv_1"), [], [])
    await store.insert_response(response("resp_x", "alice", created_at=now, conversation_id="conv_2"), [], [])
    await store.insert_response(
        response("resp_m", "mallory", created_at=now, conversation_id="conv_1"), [], []
    )

    got = [r.id for r in await store.conversation_responses("alice", "conv_1")]
    assert got == ["resp_a", "resp_a2", "resp_b", "resp_c"]
    assert [r.id for r in await store.conversation_responses("mallory", "conv_1")] == ["resp_m"]
    assert await store.conversation_responses("bob", "conv_1") == []


# -- rows round-trip ---------------------------------------------------------------------


async def test_event_rows_round_trip_unicode_and_large_payloads(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [])
    big = "x" * 200_000
    rows = [
        EventRow(seq=0, type="response.output_text.delta", data=json.dumps({"delta": "héllo ✓ \U0001f600"})),
        EventRow(seq=1, type="response.output_text.delta", data=json.dumps({"delta": big})),
    ]
    await store.submit(Write("resp_1", "p1", events=rows))
    assert await store.read_events("resp_1", -1) == rows
