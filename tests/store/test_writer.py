"""The outbox's writers, on both dialects: which path each kind of write takes, the books kept
(`Store.stats`), and fallbacks from a fast path logged once per cause and counted.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time

import pytest

from durable_responses.store import (
    EventRow,
    Finish,
    Store,
    StoreError,
    Write,
    WriteKind,
    _pg_statements,
    _sql,
)
from durable_responses.store import _tables as t

from .conftest import StoreFactory
from .helpers import checkpoint, event, events, output_item, owned, pending


async def test_each_kind_takes_its_dialects_path(store: Store) -> None:
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
    assert stats.writes_by_kind == {"create": 1, "superstep": 1, "general": 1, "end": 1}
    assert stats.commits == 4 and stats.fallbacks == {} and stats.failed_writes == 0
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status == "completed" and row.lease_owner is None


async def test_a_failing_fast_path_falls_back_logged_once_and_counted(
    store_factory: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """A superstep batch the fast path refuses (a duplicate checkpoint id) is retried write by
    write on the general path: its neighbours commit, the bad write fails alone; the fallback is
    counted every time and logged the first time for its cause only."""
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
    assert key[0] == "superstep" and n == 2
    assert key[1] == {"sqlite": "IntegrityError", "postgresql": "UniqueViolationError"}[store.dialect]
    warnings = [r for r in caplog.records if "path failed" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "superstep" in warnings[0].getMessage() and "store.stats" in warnings[0].getMessage()
    assert stats.failed_writes == 2
    assert [e.seq for e in await store.read_events("resp_a", -1)] == list(range(5))
    assert [e.seq for e in await store.read_events("resp_b", -1)] == list(range(5))


async def test_a_superstep_behind_a_general_write_of_its_response_keeps_its_order(
    store_factory: StoreFactory,
) -> None:
    """A superstep write queued behind its response's pending-request write (general path) goes
    general with it (counted as `after_general`), so the two commit in submission order."""
    store = await store_factory(commit_window=0.05)
    await store.insert_response(owned("resp_1", "p1"), [], [event(0, "response.created")])
    await store.insert_response(owned("resp_2", "p1"), [], [event(0, "response.created")])
    first = store.submit(Write("resp_1", "p1", events=[event(1)], pending=[pending("resp_1", "call_a")]))
    second = store.submit(Write("resp_1", "p1", events=events(2, 4), checkpoint=checkpoint("cp_1", "resp_1")))
    other = store.submit(Write("resp_2", "p1", events=events(1, 3)))
    await asyncio.gather(first, second, other)
    stats = store.stats
    assert stats.fallbacks == {("superstep", "after_general"): 1}
    assert stats.writes_by_kind["superstep"] == 1 and stats.writes_by_kind["general"] == 2
    assert [e.seq for e in await store.read_events("resp_1", -1)] == [0, 1, 2, 3]
    cp = await store.load_checkpoint("cp_1", "alice")
    assert cp is not None


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


def test_statements_and_rows_follow_the_table_metadata() -> None:
    """Every fast-path statement names every insert column of its tables and numbers its
    parameters 1..n without a gap; every row spec covers its table (no hand-written lists)."""
    for spec in (_sql.RESPONSES, _sql.INPUTS, _sql.EVENTS, _sql.ITEMS, _sql.CHECKPOINTS, _sql.PENDING):
        expected = [c.name for c in spec.table.columns if not (c.table is t.checkpoints and c.name == "seq")]
        assert list(spec.columns) == expected, spec.table.name
    for st in (
        _pg_statements.superstep_statement(),
        _pg_statements.creation_statement(inputs_as_json=False),
        _pg_statements.creation_statement(inputs_as_json=True),
        _pg_statements.end_statement(),
    ):
        for text in (st.text, st.packed_text):
            numbers = sorted({int(n) for n in re.findall(r"\$(\d+)", text)})
            assert numbers == list(range(1, st.params + 1))
            assert "{notify}" in text and "@@" not in text
        for packed in (False, True):
            assert f"pg_notify(${st.params + 1}, ${st.params + 2}" in st.render(True, packed=packed)
        assert st.packed_text.count("string_to_array") == len(st.arrays) > 0
    assert [k.value for k in WriteKind] == ["create", "superstep", "general", "end"]  # commit order


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
    st = _pg_statements.superstep_statement()
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
    0.6 s over a 100 ms round trip). Each kind of the fast paths, and a commit read back."""
    from durable_responses.store._in_doubt import Lookup
    from durable_responses.store._pg_writer import PgWriter

    queries: list[str] = []
    assert store.db.connect_raw is not None
    connect_raw = store.db.connect_raw

    async def connect() -> object:
        conn = await connect_raw()
        conn.add_query_logger(lambda record: queries.append(record.query))
        return conn

    writer = PgWriter(connect, store.db.writer, lease_seconds=store.lease_seconds)
    try:
        create = Write(
            "resp_1", "p1", create=(owned("resp_1", "p1"), []), events=[event(0, "response.created")]
        )
        await writer.commit(WriteKind.CREATE, [create])
        step = Write(
            "resp_1",
            "p1",
            events=events(1, 3),
            items=[output_item(0)],
            checkpoint=checkpoint("cp_1", "resp_1"),
        )
        assert await writer.commit(WriteKind.SUPERSTEP, [step]) == set()
        assert await writer.committed([step]) == [step]
        end = Write(
            "resp_1",
            "p1",
            events=[event(3, "response.completed")],
            finish=Finish(status="completed", completed_at=time.time()),
            prune=("alice", "resp_1"),
        )
        assert await writer.commit(WriteKind.END, [end]) == set()
    finally:
        await writer.close()
    assert Lookup.of([step]) is not None
    looked_up = [q for q in queries if "typeinfo" in q or "current_setting('jit')" in q]
    assert not looked_up, looked_up
    assert len(queries) == 4, queries
    row = await store.get_response("resp_1", "alice")
    assert row is not None and row.status == "completed"
