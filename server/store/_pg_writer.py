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
input items and first events, all or none) and plain ends (`end`: the terminal transition with
the last events and items and the pruning of old checkpoints, one statement each); pending
requests (human in the loop) take the general path (`_plan`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, get_args, get_type_hints

import orjson
from sqlalchemy.engine import URL

from ._engine import raw_pg_dsn
from ._plan import CHECKPOINT_COLUMNS, RESPONSE_COLUMNS, checkpoint_row, creation_rows, fences
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
        (checkpoint_id, user_id, lineage, response_id, workflow_name, event_seq, data, created_at,
         awaits_input)
    SELECT u.checkpoint_id, u.user_id, u.lineage, u.response_id, u.workflow_name, u.event_seq,
        u.data, u.created_at, u.awaits_input
    FROM unnest($17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[],
            $23::text[], $24::int[], $25::text[], $26::float8[], $27::bool[])
        AS u(rid, owner, checkpoint_id, user_id, lineage, response_id, workflow_name, event_seq,
            data, created_at, awaits_input)
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


def _creation_sql(*, inputs_as_json: bool = False) -> str:
    """Creations (response row, input items, first events) of a batch in one statement.

    inputs_as_json: the input items come as one JSON array of [response_id, position, item_id,
    data] rows instead of four arrays (`_BULK_INPUTS`).
    """
    columns = RESPONSE_COLUMNS
    hints = get_type_hints(ResponseRow)
    casts = [f"${i}::{_array_type(hints[name])}[]" for i, name in enumerate(columns, start=1)]
    n = len(columns)
    if inputs_as_json:
        inputs = f"SELECT u->>0, (u->>1)::int, u->>2, u->>3 FROM json_array_elements(${n + 1}::json) AS u"
        n -= 3  # one parameter instead of four
    else:
        arrays = f"${n + 1}::text[], ${n + 2}::int[], ${n + 3}::text[], ${n + 4}::text[]"
        inputs = f"SELECT * FROM unnest({arrays})"
    sql = f"""
WITH r AS (
    INSERT INTO responses ({", ".join(columns)})
    SELECT * FROM unnest({", ".join(casts)})
    RETURNING id
), i AS (
    INSERT INTO input_items (response_id, position, item_id, data)
    {inputs}
), e AS (
    INSERT INTO events (response_id, seq, type, data)
    SELECT * FROM unnest(${n + 5}::text[], ${n + 6}::int[], ${n + 7}::text[], ${n + 8}::text[])
)
SELECT id{{notify}} FROM r
"""
    return sql


_CREATE_SQL = _creation_sql()
_CREATE_BULK_SQL = _creation_sql(inputs_as_json=True)
# Input items of a batch of creations beyond which their rows are built in a worker thread and
# sent as one JSON text: asyncpg encodes arrays element by element on the event loop (~0.4 s
# for 100,000 items, with building the rows), a text parameter is one copy.
_BULK_INPUTS = 1000

# A response's end (`_plan.is_plain_end`): the fence and the terminal transition are one UPDATE
# (a statement may not update a row twice), the last events and closed items and the pruning
# of old checkpoints happen only if it matched. The prune sees the checkpoints committed
# before this statement, which a plain end never carries one of.
_END_SQL = """
WITH f AS (
    UPDATE responses
    SET status = $3, completed_at = $4, error = $5, incomplete_details = $6, usage = $7,
        lease_owner = NULL, lease_expires_at = NULL
    WHERE id = $1 AND lease_owner = $2
    RETURNING id
), ev AS (
    INSERT INTO events (response_id, seq, type, data)
    SELECT $1, u.seq, u.type, u.data FROM unnest($8::int[], $9::text[], $10::text[]) AS u(seq, type, data)
    WHERE EXISTS (SELECT 1 FROM f)
), it AS (
    INSERT INTO output_items (response_id, output_index, item_id, status, included, data)
    SELECT $1, u.output_index, u.item_id, u.status, u.included, u.data
    FROM unnest($11::int[], $12::text[], $13::text[], $14::bool[], $15::text[])
        AS u(output_index, item_id, status, included, data)
    WHERE EXISTS (SELECT 1 FROM f)
), pr AS (
    DELETE FROM checkpoints AS c
    WHERE $16::bool AND EXISTS (SELECT 1 FROM f) AND c.user_id = $17
        AND (c.response_id = $1 OR c.lineage = $18)
        AND c.seq <> (SELECT coalesce(max(m.seq), -1) FROM checkpoints AS m
                      WHERE m.user_id = $17 AND m.response_id = $1)
        AND c.seq <> (SELECT coalesce(max(m.seq), -1) FROM checkpoints AS m
                      WHERE m.user_id = $17 AND m.lineage = $18)
)
SELECT id{notify} FROM f
"""


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
        rows = await self._fetch(_SQL, self._arguments(writes))
        committed = {(r[0], r[1]) for r in rows}
        wanted = {(w.response_id, w.owner) for w in writes if w.owner is not None}
        return wanted - committed

    async def create(self, writes: list[Write]) -> None:
        """Commit plain creations (`_plan.is_plain_creation`) in one statement, all or none."""
        if sum(len(w.create[1]) for w in writes if w.create is not None) > _BULK_INPUTS:
            args = await asyncio.to_thread(_creation_arguments, writes, inputs_as_json=True)
            await self._fetch(_CREATE_BULK_SQL, args)
        else:
            args = _creation_arguments(writes, inputs_as_json=False)
            await self._fetch(_CREATE_SQL, args)

    async def end(self, writes: list[Write]) -> set[tuple[str, str]]:
        """Commit plain ends (`_plan.is_plain_end`), all or none; return the (response, owner)
        pairs fenced off (those commit nothing). One statement each; several share a
        transaction."""
        results = await self._fetch_many([(_END_SQL, _end_arguments(w)) for w in writes])
        return {_key(w) for w, rows in zip(writes, results, strict=True) if not rows}

    async def _fetch(self, template: str, args: list[Any]) -> list[Any]:
        return (await self._fetch_many([(template, args)]))[0]

    async def _fetch_many(self, statements: list[tuple[str, list[Any]]]) -> list[list[Any]]:
        """Run statements on the writer's connection: one alone (autocommit: one round trip),
        several in one transaction."""
        prepared = [self._statement(*st) for st in statements]
        async with self._lock:
            conn = await self._connection()
            try:
                if len(prepared) == 1:
                    return [await conn.fetch(*prepared[0])]
                async with conn.transaction():
                    return [await conn.fetch(*st) for st in prepared]
            except Exception:
                if conn.is_closed():
                    self._conn = None
                raise

    def _statement(self, template: str, args: list[Any]) -> list[Any]:
        # pg_notify's two parameters follow the statement's own (numbered from the count, so
        # a column added to a statement cannot leave them pointing at the wrong ones).
        notify = ""
        if self.notify is not None:
            notify = _NOTIFY.format(len(args) + 1, len(args) + 2)
            args = [*args, *self.notify]
        return [template.replace("{notify}", notify), *args]

    def _arguments(self, writes: list[Write]) -> list[Any]:
        """The statement's arrays: fences, then events, items and checkpoints, each row
        carrying its (response, owner) so only fenced pairs insert."""
        batch_fences = fences(writes, lease_seconds=self._lease_seconds, now=time.time())
        fence_rows = [(f.response_id, f.owner, f.until, f.status) for f in batch_fences]
        events = [(w.response_id, w.owner, e.seq, e.type, e.data) for w in writes for e in w.events]
        items = [
            (w.response_id, w.owner, i.output_index, i.item_id, i.status, i.included, i.data)
            for w in writes
            for i in w.items
        ]
        checkpoints = [
            (w.response_id, w.owner, *checkpoint_row(c)) for w in writes if (c := w.checkpoint) is not None
        ]
        return [
            *_columns(fence_rows, 4),
            *_columns(events, 5),
            *_columns(items, 7),
            *_columns(checkpoints, 2 + len(CHECKPOINT_COLUMNS)),
        ]

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


def _key(w: Write) -> tuple[str, str]:
    assert w.owner is not None
    return (w.response_id, w.owner)


def _end_arguments(w: Write) -> list[Any]:
    f = w.finish
    assert f is not None and w.owner is not None
    user_id, lineage = w.prune if w.prune is not None else ("", "")
    items = [(i.output_index, i.item_id, i.status, i.included, i.data) for i in w.items]
    return [
        w.response_id,
        w.owner,
        f.status,
        f.completed_at,
        f.error,
        f.incomplete_details,
        f.usage,
        *_columns([(e.seq, e.type, e.data) for e in w.events], 3),
        *_columns(items, 5),
        w.prune is not None,
        user_id,
        lineage,
    ]


def _creation_arguments(writes: list[Write], *, inputs_as_json: bool) -> list[Any]:
    """The parameters of `_creation_sql(inputs_as_json=...)` (pure CPU: may run in a thread)."""
    rows, inputs, events = creation_rows(writes)
    input_args = [orjson.dumps(inputs).decode()] if inputs_as_json else _columns(inputs, 4)
    return [*_columns(rows, len(RESPONSE_COLUMNS)), *input_args, *_columns(events, 4)]


def _columns(rows: list[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows as `width` column arrays (for `unnest`)."""
    return [list(col) for col in zip(*rows, strict=True)] if rows else [[] for _ in range(width)]
