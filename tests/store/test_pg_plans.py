"""What PostgreSQL does with the store's hottest read, whatever plan it picks (the machine's
server, directly).

A replay reads a response's events page by page. PostgreSQL plans a statement afresh for each
of a connection's first five executions, and for every execution behind a transaction pooler
(no prepared statement is kept); with statistics that expect a few hundred events per response,
that custom plan for `seq > after ORDER BY seq LIMIT n` was a bitmap scan of every later event
of a long response and a sort, once per page (242 ms instead of 1.2 ms for a page of 2,000 in
the middle of 100,000). Each page must read its own rows only, whatever the plan.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event, text

from durable_responses.store import ConnectionOptions, Store, Write

from .helpers import events, owned

LONG = "resp_long_plan"
PAGE = 500


def _scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if "Scan" in node["Node Type"]:
        yield node
    for child in node.get("Plans", []):
        yield from _scans(child)


# Directly, the read goes through the driver itself (`_read_sql.READ_EVENTS.pg`); behind a
# transaction pooler, through SQLAlchemy's statement.
@pytest.mark.parametrize("query", ["", "?prepared_statements=false"], ids=["driver", "sqlalchemy"])
async def test_a_page_of_a_long_response_reads_only_its_own_rows_under_a_custom_plan(
    pg_url: str, query: str
) -> None:
    # One reader connection: the driver's query logger on it sees the driver's own reads.
    store = Store.open(pg_url + query, connection=ConnectionOptions(pool_size=1, pool_overflow=0))
    await store.start()
    captured: list[tuple[str, Any]] = []

    def capture(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool
    ) -> None:
        if "FROM events" in statement:
            captured.append((statement, parameters))

    def log(record: Any) -> None:
        capture(None, None, record.query, record.args, None, False)

    # A response of its own per variant: the other's rows, deleted, leave dead entries in the
    # index until a vacuum, and a bitmap index scan counts them (1,000 for a page of 500).
    rid = f"{LONG}_{'sqlalchemy' if query else 'driver'}"
    try:
        await store.insert_response(owned(rid, "p1"), [], events(0, 1))
        await store.submit(Write(rid, "p1", events=events(1, 6000)))
        async with store.db.reader.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
        driver.add_query_logger(log)
        event.listen(store.db.reader.sync_engine, "before_cursor_execute", capture)
        page = await store.read_events(rid, 3000, limit=PAGE)
        event.remove(store.db.reader.sync_engine, "before_cursor_execute", capture)
        driver.remove_query_logger(log)
        assert [e.seq for e in page] == list(range(3001, 3001 + PAGE))

        ((statement, parameters),) = captured
        async with store.db.reader.connect() as conn:
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None
            # The plan PostgreSQL picked with statistics that expect a few hundred events per
            # response (it knows nothing of one written since its last ANALYZE): the bitmap
            # scan, not the index's order, which this small table would not make it choose.
            await raw.execute("SET plan_cache_mode = force_custom_plan; SET enable_indexscan = off")
            try:
                plan = json.loads(
                    await raw.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, *parameters)
                )
            finally:
                await raw.execute("RESET plan_cache_mode; RESET enable_indexscan")
        scans = list(_scans(plan[0]["Plan"]))
        assert scans and max(s["Actual Rows"] for s in scans) <= PAGE, json.dumps(plan, indent=1)
    finally:
        async with store.db.writer.begin() as conn:
            await conn.execute(text("DELETE FROM events WHERE response_id = :id"), {"id": rid})
            await conn.execute(text("DELETE FROM responses WHERE id = :id"), {"id": rid})
        await store.close()
