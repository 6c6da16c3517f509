"""PostgreSQL's hot outbox path: a whole batch of a run's writes in one statement.

Invariants:
- A write commits only while its owner holds the response's lease, and commits whole: the
  lease fence (an UPDATE of the response row) and every row of the write are one statement,
  whose data-modifying CTEs share one transaction; rows are inserted only for the (response,
  owner) pairs the fence matched. A write fenced off commits nothing, its neighbours commit,
  and the caller fails it with `LeaseLost` (as the general path would).
- Any error (a duplicate event, a lost connection) rolls the whole statement back; the caller
  then retries each write alone on the general path.

Why: on the general path a small write costs ~9 round trips (pool ping, BEGIN, fence, one
INSERT per table, NOTIFY, COMMIT), each needing the event loop that the agents keep busy; here
it is one, with fixed SQL text (arrays through `unnest`), so the prepared statement is reused.

Only writes that carry events, closed items, a checkpoint and a status change qualify (the
writes of every superstep), plus plain creations (`create`: a batch's new responses, their
input items and first events, all or none); ends, prunes and pending requests (once per
response) take the general path (`_plan`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import fields
from typing import Any, get_args, get_type_hints

from sqlalchemy.engine import URL

from ._engine import raw_pg_dsn
from .records import ResponseRow, Write

_SQL = """
WITH f AS (
    UPDATE responses AS r
    SET lease_expires_at = w.until, status = COALESCE(w.status, r.status)
    FROM unnest($1::text[], $2::text[], $3::float8[], $4::text[]) AS w(id, owner, until, status)
    WHERE r.id = w.id AND r.lease_owner = w.owner
    RETURNING r.id, w.owner
), ev AS (
    INSERT INTO events (response_id, seq, type, data)
    SELECT u.rid, u.seq, u.type, u.data
    FROM unnest($5::text[], $6::text[], $7::int[], $8::text[], $9::text[])
        AS u(rid, owner, seq, type, data)
    WHERE (u.rid, u.owner) IN (SELECT id, owner FROM f)
), it AS (
    INSERT INTO output_items (response_id, output_index, item_id, status, included, data)
    SELECT u.rid, u.output_index, u.item_id, u.status, u.included, u.data
    FROM unnest($10::text[], $11::text[], $12::int[], $13::text[], $14::text[], $15::bool[], $16::text[])
        AS u(rid, owner, output_index, item_id, status, included, data)
    WHERE (u.rid, u.owner) IN (SELECT id, owner FROM f)
), cp AS (
    INSERT INTO checkpoints
        (checkpoint_id, user_id, lineage, response_id, workflow_name, event_seq, data, created_at)
    SELECT u.checkpoint_id, u.user_id, u.lineage, u.response_id, u.workflow_name, u.event_seq,
        u.data, u.created_at
    FROM unnest($17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[],
            $23::text[], $24::int[], $25::text[], $26::float8[])
        AS u(rid, owner, checkpoint_id, user_id, lineage, response_id, workflow_name, event_seq,
            data, created_at)
    WHERE (u.rid, u.owner) IN (SELECT id, owner FROM f)
)
SELECT id, owner{notify} FROM f
"""

# One notification per committed response (PostgreSQL folds duplicates in a transaction).
_NOTIFY = ", pg_notify(${}, ${} || id)"

_PG_TYPES: dict[Any, str] = {str: "text", bool: "bool", float: "float8", int: "int"}


def _array_type(hint: Any) -> str:
    """`str | None` -> text: the PostgreSQL array element type of a `ResponseRow` field."""
    args = [a for a in get_args(hint) if a is not type(None)] or [hint]
    return _PG_TYPES[args[0]]


def _creation_sql() -> tuple[str, list[str]]:
    """Creations (response row, input items, first events) of a batch in one statement."""
    columns = [f.name for f in fields(ResponseRow)]
    hints = get_type_hints(ResponseRow)
    casts = [f"${i}::{_array_type(hints[name])}[]" for i, name in enumerate(columns, start=1)]
    n = len(columns)
    sql = f"""
WITH r AS (
    INSERT INTO responses ({", ".join(columns)})
    SELECT * FROM unnest({", ".join(casts)})
    RETURNING id
), i AS (
    INSERT INTO input_items (response_id, position, item_id, data)
    SELECT * FROM unnest(${n + 1}::text[], ${n + 2}::int[], ${n + 3}::text[], ${n + 4}::text[])
), e AS (
    INSERT INTO events (response_id, seq, type, data)
    SELECT * FROM unnest(${n + 5}::text[], ${n + 6}::int[], ${n + 7}::text[], ${n + 8}::text[])
)
SELECT id{{notify}} FROM r
"""
    return sql, columns


_CREATE_SQL, _RESPONSE_COLUMNS = _creation_sql()


def qualifies(w: Write) -> bool:
    """Whether `w` can take this path (see the module docstring)."""
    return w.owner is not None and w.create is None and w.finish is None and w.prune is None and not w.pending


def is_plain_creation(w: Write) -> bool:
    """A creation with its first events and nothing else (`Store.insert_response`)."""
    return (
        w.create is not None
        and w.owner is None
        and not w.items
        and w.checkpoint is None
        and not w.pending
        and w.status is None
        and w.finish is None
        and w.prune is None
    )


class PgWriter:
    """Runs qualifying batches on its own connection (no pool, no ping: one round trip)."""

    def __init__(self, url: URL, *, lease_seconds: float) -> None:
        self._dsn = raw_pg_dsn(url)
        self._lease_seconds = lease_seconds
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self.notify: tuple[str, str] | None = None  # (channel, payload prefix) when replicas listen

    async def run(self, writes: list[Write]) -> set[tuple[str, str]]:
        """Commit `writes` in one statement; return the (response, owner) pairs fenced off."""
        rows = await self._fetch(_SQL, 26, self._arguments(writes))
        committed = {(r[0], r[1]) for r in rows}
        wanted = {(w.response_id, w.owner) for w in writes if w.owner is not None}
        return wanted - committed

    async def create(self, writes: list[Write]) -> None:
        """Commit plain creations (`is_plain_creation`) in one statement, all or none."""
        cols: list[list[Any]] = [[] for _ in _RESPONSE_COLUMNS]
        inputs: list[list[Any]] = [[], [], [], []]
        events: list[list[Any]] = [[], [], [], []]
        for w in writes:
            assert w.create is not None
            row, input_rows = w.create
            for col, name in zip(cols, _RESPONSE_COLUMNS, strict=True):
                col.append(getattr(row, name))
            for i in input_rows:
                for col, value in zip(inputs, (row.id, i.position, i.item_id, i.data), strict=True):
                    col.append(value)
            for e in w.events:
                for col, value in zip(events, (row.id, e.seq, e.type, e.data), strict=True):
                    col.append(value)
        await self._fetch(_CREATE_SQL, len(_RESPONSE_COLUMNS) + 8, [*cols, *inputs, *events])

    async def _fetch(self, template: str, n_args: int, args: list[Any]) -> list[Any]:
        notify = ""
        if self.notify is not None:
            notify = _NOTIFY.format(n_args + 1, n_args + 2)
            args = [*args, *self.notify]
        sql = template.replace("{notify}", notify)
        async with self._lock:
            conn = await self._connection()
            try:
                rows: list[Any] = await conn.fetch(sql, *args)
            except Exception:
                if conn.is_closed():
                    self._conn = None
                raise
        return rows

    def _arguments(self, writes: list[Write]) -> list[Any]:
        now = time.time()
        fence: dict[tuple[str, str], list[Any]] = {}
        ev: list[list[Any]] = [[], [], [], [], []]
        it: list[list[Any]] = [[], [], [], [], [], [], []]
        cp: list[list[Any]] = [[], [], [], [], [], [], [], [], [], []]
        for w in writes:
            rid, owner = w.response_id, w.owner
            assert owner is not None
            until = w.lease_until if w.lease_until is not None else now + self._lease_seconds
            entry = fence.get((rid, owner))
            if entry is None:
                fence[(rid, owner)] = [rid, owner, until, w.status]
            else:
                entry[2] = max(entry[2], until)
                if w.status is not None:
                    entry[3] = w.status
            for e in w.events:
                for col, value in zip(ev, (rid, owner, e.seq, e.type, e.data), strict=True):
                    col.append(value)
            for i in w.items:
                item = (rid, owner, i.output_index, i.item_id, i.status, i.included, i.data)
                for col, value in zip(it, item, strict=True):
                    col.append(value)
            c = w.checkpoint
            if c is not None:
                values = (
                    rid,
                    owner,
                    c.checkpoint_id,
                    c.user_id,
                    c.lineage,
                    c.response_id,
                    c.workflow_name,
                    c.event_seq,
                    c.data,
                    c.created_at,
                )
                for col, value in zip(cp, values, strict=True):
                    col.append(value)
        f_cols: list[list[Any]] = [[], [], [], []]
        for entry in fence.values():
            for col, value in zip(f_cols, entry, strict=True):
                col.append(value)
        return [*f_cols, *ev, *it, *cp]

    async def _connection(self) -> Any:
        if self._conn is None or self._conn.is_closed():
            import asyncpg

            self._conn = await asyncpg.connect(self._dsn, timeout=10)
        return self._conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)
