"""The outbox's writers, on both dialects: every write takes the one path (a batch's
intermediate form, each dialect's renderer), the books kept (`Store.stats`), and a failed
batch's writes retried one by one, logged once per cause and counted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time

import pytest
from sqlalchemy import select

from durable_responses.store import (
    EventRow,
    Finish,
    JournalRow,
    LeaseLost,
    Store,
    StoreError,
    WebhookEvent,
    Write,
)
from durable_responses.store import _tables as t
from durable_responses.store.write import _batch, _pg_render, _sql
from durable_responses.store.write._batch import Batch
from durable_responses.store.write._pg_render import Part

from .conftest import StoreFactory
from .helpers import checkpoint, count, event, events, input_item, output_item, owned, pending


async def test_every_kind_of_write_takes_the_one_path_and_is_counted(store: Store) -> None:
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_1", "p1", events=events(1, 3), checkpoint=checkpoint("cp_1", "resp_1")))
    await store.submit(Write("resp_1", "p1", pending=[pending("resp_1", "call_a")]))
    await store.submit(
        Write(
            "resp_1",
            "p1",
            events=[event(3, "response.completed")],
            finish=Finish(status="completed", completed_at=time.time()),
            prune=("alice", "resp_1"),
        )
    )
    stats = store.stats
    assert stats.writes_by_kind == {"create": 1, "superstep": 2, "end": 1}
    assert stats.commits == 4 and stats.fallbacks == {} and stats.failed_writes == 0
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status == "completed" and row.lease_owner is None
    assert len(await store.pending_requests("resp_1", "alice")) == 1


async def test_a_failing_batch_is_retried_write_by_write_logged_once_and_counted(
    store_factory: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A batch the database refuses (a duplicate checkpoint id) is retried write by write: its
    neighbours commit, the bad write fails alone; each write retried is counted, the cause
    logged the first time only."""
    store = await store_factory(commit_window=0.05)
    for rid in ("resp_a", "resp_b"):
        await store.insert_response(owned(rid, "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_a", "p1", checkpoint=checkpoint("cp_taken", "resp_a", event_seq=0)))
    caplog.set_level(logging.WARNING, logger="durable_responses.outbox")
    for k in range(2):
        seq = 1 + 2 * k
        results = await asyncio.gather(
            store.submit(
                Write(
                    "resp_a", "p1", events=events(seq, seq + 2), checkpoint=checkpoint("cp_taken", "resp_a")
                )
            ),
            store.submit(Write("resp_b", "p1", events=events(seq, seq + 2))),
            return_exceptions=True,
        )
        assert isinstance(results[0], StoreError) and results[1] is None
        # resp_a's failed write is known to its submitter: it goes on from where the database is.
        await store.submit(Write("resp_a", "p1", events=events(seq, seq + 2)))
    stats = store.stats
    [(key, n)] = stats.fallbacks.items()
    assert key[0] == "superstep" and n == 4  # two writes retried alone, twice
    assert key[1] == {"sqlite": "IntegrityError", "postgresql": "UniqueViolationError"}[store.dialect]
    warnings = [r for r in caplog.records if "retried one by one" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "superstep" in warnings[0].getMessage() and "store.stats" in warnings[0].getMessage()
    assert stats.failed_writes == 2
    assert [e.seq for e in await store.read_events("resp_a", -1)] == list(range(5))
    assert [e.seq for e in await store.read_events("resp_b", -1)] == list(range(5))


async def test_writes_of_every_kind_share_one_transaction_in_submission_order(
    store_factory: StoreFactory,
) -> None:
    """A creation, a pending request, supersteps (one of the created response), another
    response's end with its webhook event and prune: one batch, one commit, nothing retried."""
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.insert_response(owned("resp_2", "p1"), [], [event(0, "response.created")])
    await store.submit(Write("resp_2", "p1", checkpoint=checkpoint("cp_old", "resp_2", event_seq=0)))
    before = store.stats.commits
    hook = WebhookEvent("evt_1", "resp_2", "response.completed", time.time(), "{}", ("http://x/h",))
    await asyncio.gather(
        store.submit(Write("resp_1", "p1", events=[event(1)], pending=[pending("resp_1", "call_a")])),
        store.submit(Write("resp_1", "p1", events=events(2, 4), checkpoint=checkpoint("cp_1", "resp_1"))),
        store.submit(
            Write("resp_3", None, create=(owned("resp_3", "p1"), []), events=[event(0, "response.created")])
        ),
        store.submit(Write("resp_3", "p1", events=[event(1)], status="in_progress")),
        store.submit(Write("resp_2", "p1", events=[event(1)], checkpoint=checkpoint("cp_new", "resp_2"))),
        store.submit(
            Write(
                "resp_2",
                "p1",
                events=[event(2, "response.completed")],
                finish=Finish(status="completed", completed_at=time.time()),
                prune=("alice", "resp_2"),
                webhooks=(hook,),
            )
        ),
    )
    stats = store.stats
    assert stats.commits == before + 1 and stats.fallbacks == {} and stats.failed_writes == 0
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2, 3]
    assert [e.seq for e in await store.read_events("resp_3", -1)] == [0, 1]
    assert await store.load_checkpoint("cp_1", "alice") is not None
    # The end's prune saw the checkpoint committed beside it: only the newest is kept.
    assert await store.load_checkpoint("cp_old", "alice") is None
    assert await store.load_checkpoint("cp_new", "alice") is not None
    row = await store.get_response("resp_2", "alice")
    assert row is not None and row.status == "completed" and row.lease_owner is None
    async with store.db.reader.connect() as conn:
        hooks = (await conn.execute(select(t.webhook_deliveries.c.endpoint))).scalars().all()
    assert hooks == ["http://x/h"]


async def test_a_creation_and_other_responses_writes_commit_as_one(store_factory: StoreFactory) -> None:
    """A creation beside another response's superstep and a third one's end: one commit (one
    statement on PostgreSQL), each write's rows there, the fenced-off write alone failing."""
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.insert_response(owned("resp_2", "p1"), [], [event(0, "response.created")])
    before = store.stats.commits
    results = await asyncio.gather(
        store.submit(
            Write("resp_9", None, create=(owned("resp_9", "p1"), [input_item(0)]), events=[event(0)])
        ),
        store.submit(Write("resp_1", "p1", events=events(1, 3), checkpoint=checkpoint("cp_1", "resp_1"))),
        store.submit(Write("resp_1", "p2", events=[event(3)])),  # not the owner: fenced off
        store.submit(
            Write("resp_2", "p1", events=[event(1, "response.completed")], finish=Finish("completed", 1.0))
        ),
        return_exceptions=True,
    )
    assert results[0] is None and results[1] is None and results[3] is None
    assert isinstance(results[2], LeaseLost)
    assert store.stats.commits == before + 1 and store.stats.fallbacks == {}
    assert [e.seq for e in await store.read_events("resp_9", -1)] == [0]
    assert [i.position for i in await store.input_items("resp_9")] == [0]
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2]
    row = await store.get_response("resp_2", "alice")
    assert row is not None and row.status == "completed" and row.lease_owner is None


def test_common_shapes_are_one_statement() -> None:
    """A superstep, a creation, an end, and any mix of them over different responses render as
    one statement; a fence of a response created in the same batch, and a deletion of rows the
    batch inserts, go in a statement after the rows they must see."""
    now = time.time()
    step = Write("r1", "p", events=events(1, 3), items=[output_item(0)], checkpoint=checkpoint("c1", "r1"))
    create = Write("r2", None, create=(owned("r2", "p"), []), events=[event(0)])
    end = Write("r3", "p", events=[event(5)], finish=Finish("completed", now), prune=("alice", "r3"))

    def shapes(*writes: Write) -> int:
        return len(_pg_render.parts(Batch.of(writes, lease_seconds=30, now=now)))

    assert shapes(step) == shapes(create) == shapes(end) == shapes(step, create, end) == 1
    assert shapes(create, Write("r2", "p", events=[event(1)])) == 2
    assert shapes(Write("r3", "p", checkpoint=checkpoint("c3", "r3")), end) == 2
    # Journal records a keep of the same batch takes are left out of the form: one statement.
    record = JournalRow("c0", "agent", "model:1", "done", "d" * 64, "[]", now)
    keep = Write("r1", "p", checkpoint=checkpoint("c1", "r1"), journal_keep="c1")
    batch = Batch.of([Write("r1", "p", journal=[record]), keep], lease_seconds=30, now=now)
    assert [w.journal for w in batch.owned] == [[], []] and len(_pg_render.parts(batch)) == 1


def test_statements_follow_the_table_metadata_and_bind_by_name() -> None:
    """Every shape's statement names every insert column of its tables and numbers its
    parameters 1..n without a gap; its arguments are bound by name (a missing one is an error,
    never a shifted argument); every row spec covers its table (no hand-written lists)."""
    for spec in (_sql.RESPONSES, _sql.INPUTS, _sql.EVENTS, _sql.ITEMS, _sql.CHECKPOINTS, _sql.PENDING):
        expected = [c.name for c in spec.table.columns if not (c.table is t.checkpoints and c.name == "seq")]
        assert list(spec.columns) == expected, spec.table.name
    tables = tuple(s.table.name for s in _pg_render.ROW_SPECS)
    for part in (
        Part(fences=True, guarded=tables, finish=True, prune=True, keep=True, clear=True, webhooks=True),
        Part(creations=True, plain=tables),
        Part(creations=True, inputs_json=True, plain=("events",), fences=True, guarded=("events",)),
        Part(prune=True, keep=True, clear=True),
    ):
        st = _pg_render.statement(part)
        for text in (st.text, st.packed_text):
            numbers = sorted({int(n) for n in re.findall(r"\$(\d+)", text)})
            assert numbers == list(range(1, st.params + 1))
            assert "@@" not in text
        for table in (*part.guarded, *part.plain):
            columns = [
                c.name for c in t.metadata.tables[table].columns if c.name != "seq" or table == "events"
            ]
            assert f"INSERT INTO {table} ({', '.join(columns)})" in st.text, table
        if part.fences or part.creations:
            for packed in (False, True):
                assert f"pg_notify(${st.params + 1}, ${st.params + 2}" in st.render(True, packed=packed)
        assert st.packed_text.count("string_to_array") == len(st.arrays) > 0
        with pytest.raises(KeyError):
            st.bind({})
    assert {f.name for f in dataclasses.fields(Write)} == _batch.WRITE_FIELDS


async def test_stats_is_a_snapshot(store: Store) -> None:
    before = store.stats
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    after = store.stats
    assert before.commits == 0 and after.commits == 1 and after.commits_by_kind == {"create": 1}
    assert after.dialect == store.dialect
    if store.dialect == "postgresql":
        unprepared = "prepared_statements=false" in str(store.db.url)
        assert after.prepared_statements is not unprepared
        assert after.transaction_pooler in (None, False)  # LISTEN probes it (maybe not yet)
        assert after.cross_process_wakeups is True  # the fixture waited for LISTEN
    else:
        assert after.prepared_statements is None and after.cross_process_wakeups is False


def test_arrays_pack_into_one_text_unless_an_element_would_be_misread() -> None:
    """A packed array is one text, every element after a newline, NULL as the mark; an array
    with an element the split would misread goes in plain form (`pack` says None)."""
    assert _sql.pack([], "text[]") == ""
    assert _sql.pack(["a", "", None], "text[]") == "\na\n\n\x01"
    assert _sql.pack([""], "text[]") == "\n"  # one empty string, not an empty array
    assert _sql.pack([1, None, 3], "int4[]") == "\n1\n\x01\n3"
    assert _sql.pack([0.5, float("inf")], "float8[]") == "\n0.5\ninf"
    assert _sql.pack([True, False, None], "bool[]") == "\nt\nf\n\x01"
    assert _sql.pack(["line\nbreak"], "text[]") is None
    assert _sql.pack(["\x01"], "text[]") is None
    assert _sql.pack(["a\x01b", None], "text[]") is None
    st = _pg_render.statement(Part(fences=True, guarded=("events", "output_items", "checkpoints")))
    args = [[] for _ in range(st.params)]
    assert st.pack(args) == [""] * st.params
    args[st.arrays[-3][0]] = ["x\ny"]
    assert st.pack(args) is None


async def test_awkward_values_round_trip_through_the_fast_paths(store: Store) -> None:
    """Values a packed array cannot carry (a newline, the NULL mark) and ones it must keep apart
    (an empty string, NULL) come back as written, whichever form the statement took."""
    await store.insert_response(owned("resp_1", "p1", user=""), [], [event(0, "response.created")])
    odd = [
        EventRow(seq=1, type="t", data=""),
        EventRow(seq=2, type="t", data="\x01"),
        EventRow(seq=3, type="t", data='{"a":"b"}'),
    ]
    cp = checkpoint("cp_1", "resp_1", user="", lineage=None, event_seq=3)
    await store.submit(Write("resp_1", "p1", events=odd, checkpoint=cp))
    await store.submit(Write("resp_1", "p1", events=[EventRow(seq=4, type="t", data="two\nlines")]))
    await store.submit(Write("resp_1", "p1", events=[EventRow(seq=5, type="t", data="")]))
    rows = await store.read_events("resp_1", 0)
    assert [(r.seq, r.data) for r in rows] == [
        (1, ""),
        (2, "\x01"),
        (3, '{"a":"b"}'),
        (4, "two\nlines"),
        (5, ""),
    ]
    loaded = await store.load_checkpoint("cp_1", "")
    assert loaded is not None and (loaded.user_id, loaded.lineage, loaded.event_seq) == ("", "resp_1", 3)
    assert store.stats.fallbacks == {} and store.stats.failed_writes == 0


async def test_an_end_with_items_on_both_paths_matches(store: Store) -> None:
    """The same end, whichever path it takes, leaves the same rows."""
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.submit(
        Write(
            "resp_1",
            "p1",
            events=[event(1, "response.output_item.done"), event(2, "response.completed")],
            items=[output_item(0), output_item(1, included=False, status="incomplete")],
            finish=Finish(status="completed", completed_at=1.5, error=None, usage='{"t": 1}'),
        )
    )
    row = await store.get_response("resp_1", "alice")
    assert row is not None and (row.status, row.completed_at, row.usage) == ("completed", 1.5, '{"t": 1}')
    every = await store.output_items("resp_1", included_only=False)
    assert [(i.output_index, i.included) for i in every] == [(0, True), (1, False)]


@pytest.mark.parametrize("db_url", ["postgresql", "postgresql-unprepared"], indirect=True)
async def test_a_new_writer_connection_runs_its_statements_without_type_lookups(store: Store) -> None:
    """On a new connection (after a reset, say) the writer's first statements go out alone: no
    type lookup before them (asyncpg looks an `int4[]` parameter's type up first: 3 queries,
    0.6 s over a 100 ms round trip). A creation, a superstep, an end, and a commit read back."""
    from durable_responses.store.write._in_doubt import Lookup
    from durable_responses.store.write._pg_writer import PgWriter

    queries: list[str] = []
    assert store.db.connect_raw is not None
    connect_raw = store.db.connect_raw

    async def connect() -> object:
        conn = await connect_raw()
        conn.add_query_logger(lambda record: queries.append(record.query))
        return conn

    writer = PgWriter(connect, lease_seconds=store.lease_seconds)
    try:
        create = Write(
            "resp_1", None, create=(owned("resp_1", "p1"), []), events=[event(0, "response.created")]
        )
        await writer.commit([create])
        step = Write(
            "resp_1",
            "p1",
            events=events(1, 3),
            items=[output_item(0)],
            checkpoint=checkpoint("cp_1", "resp_1"),
        )
        assert await writer.commit([step]) == set()
        assert await writer.committed([step]) == [step]
        end = Write(
            "resp_1",
            "p1",
            events=[event(3, "response.completed")],
            finish=Finish(status="completed", completed_at=time.time()),
            prune=("alice", "resp_1"),
        )
        assert await writer.commit([end]) == set()
    finally:
        await writer.close()
    assert Lookup.of([step]) is not None
    looked_up = [q for q in queries if "typeinfo" in q or "current_setting('jit')" in q]
    assert not looked_up, looked_up
    assert len(queries) == 4, queries
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status == "completed"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_the_sqlite_writer_counts_the_rows_it_writes_not_the_events(store: Store) -> None:
    """The WAL's size is looked at by the rows commits wrote: a write of 2 x RUN + 7 events is
    three rows of runs (and its item one), not 519."""
    from durable_responses.store.write._events import RUN
    from durable_responses.store.write._sqlite_writer import SqliteWriter

    writer = SqliteWriter(store.db.url, lease_seconds=store.lease_seconds)
    try:
        create = Write(
            "resp_1", None, create=(owned("resp_1", "p1"), []), events=[event(0, "response.created")]
        )
        await writer.commit([create])
        assert writer.rows_written == 2  # the response's row, its first event
        await writer.commit([Write("resp_1", None, events=events(1, 2 * RUN + 8), items=[output_item(0)])])
        assert writer.rows_written == 2 + 3 + 1
    finally:
        await writer.close()
    assert await count(store, t.events, response_id="resp_1") == 1 + 3
    assert await count(store, t.output_items, response_id="resp_1") == 1


async def test_an_awaited_write_cuts_the_window_short(store_factory: StoreFactory) -> None:
    """Live events wait the group-commit window for company; a write someone awaits (an end, a
    creation, an urgent one) ends the wait at once and commits with them, in one transaction."""
    store = await store_factory(commit_window=30.0)
    for rid in ("resp_1", "resp_2"):
        await store.insert_response(owned(rid, "p1"), [], [event(0, "response.created")])
    before = store.stats.commits
    live = store.submit(Write("resp_1", "p1", events=[event(1)]))
    await asyncio.sleep(0.05)
    assert not live.done()  # waiting for company: the window is 30 s
    started = time.monotonic()
    await store.submit(Write("resp_2", "p1", events=[event(1)], urgent=True))
    assert time.monotonic() - started < 5
    await live
    assert store.stats.commits == before + 1
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1]
