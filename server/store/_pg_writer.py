"""PostgreSQL's hot outbox path: a whole batch of a run's writes in one statement.

Invariants:
- A write commits only while its owner holds the response's lease, and commits whole: the
  lease fence (the response row locked where its owner holds it, in id order, and updated
  only when the write changes it) and every row of the write are one statement, whose
  data-modifying CTEs share one transaction; rows are inserted only for the (response, owner)
  pairs the fence matched. A write fenced off commits nothing, its neighbours commit,
  and the caller fails it with `LeaseLost` (as the general path would).
- Any error (a duplicate event, a lost connection) rolls the whole statement back; the caller
  then retries each write alone on the general path.

Why: on the general path a small write costs ~9 round trips (pool ping, BEGIN, fence, one
INSERT per table, NOTIFY, COMMIT), each needing the event loop that the agents keep busy; here
it is one, with fixed SQL text (arrays through `unnest`), so the prepared statement is reused.

Only writes that carry events, closed items, a checkpoint, a status change and journal records qualify
(`WriteKind.SUPERSTEP`: the writes of every superstep), plus plain creations (`CREATE`: a
batch's new responses, their input items and first events, all or none) and plain ends
(`END`: the terminal transition with the last events and items and the pruning of old
checkpoints, one statement each); pending requests (human in the loop) take the general path
(`GENERAL`: `_plan`'s statements on the SQLAlchemy engine, `pg_notify` included). The
statements' text comes from `_pg_statements` (generated from the table metadata).

Behind a pooler in transaction mode (`prepared_statements=false`) the writer's connection
keeps no prepared statement: each statement is parsed again (two round trips instead of one),
which a session pinned for one transaction at most cannot avoid.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from . import _pg_statements as _pgs
from . import _sql
from ._base import write_all
from ._in_doubt import READ_BACK, Lookup
from ._pg_listen import payloads
from ._plan import creation_rows, fences, journal_keeps, journal_rows
from ._writer import Fenced, WriteKind, Writer
from .errors import Unavailable, classify
from .records import Write

_SUPERSTEP = _pgs.superstep_statement()
_CREATE = _pgs.creation_statement(inputs_as_json=False)
_CREATE_BULK = _pgs.creation_statement(inputs_as_json=True)
_END = _pgs.end_statement()
# Input items of a batch of creations beyond which their rows are built in a worker thread and
# sent as one JSON text: asyncpg encodes arrays element by element on the event loop (~0.4 s
# for 100,000 items, with building the rows), a text parameter is one copy.
_BULK_INPUTS = 1000

Connect = Callable[[], Awaitable[Any]]


class PgWriter(Writer):
    """Runs the fast paths on its own connection (no pool, no ping: one round trip), the
    general path on the SQLAlchemy engine."""

    fast = frozenset({WriteKind.CREATE, WriteKind.SUPERSTEP, WriteKind.END})
    reads_back = True

    def __init__(
        self,
        connect: Connect,
        engine: AsyncEngine,
        *,
        lease_seconds: float,
        pooler_seen: Callable[[], object] | None = None,
    ) -> None:
        self._connect = connect
        self._pooler_seen = pooler_seen
        self._engine = engine
        self._lease_seconds = lease_seconds
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._notify: tuple[str, str] | None = None  # (channel, payload prefix) when replicas listen

    def notify_replicas(self, channel: str, prefix: str) -> None:
        self._notify = (channel, prefix)

    async def commit(self, kind: WriteKind, writes: Sequence[Write]) -> Fenced:
        if kind is WriteKind.SUPERSTEP:
            rows = await self._fetch(_SUPERSTEP, self._superstep_arguments(writes))
            committed = {(r[0], r[1]) for r in rows}
            return {(w.response_id, w.owner) for w in writes if w.owner is not None} - committed
        if kind is WriteKind.CREATE:
            if sum(len(w.create[1]) for w in writes if w.create is not None) > _BULK_INPUTS:
                args = await asyncio.to_thread(_creation_arguments, writes, inputs_as_json=True)
                await self._fetch(_CREATE_BULK, args)
            else:
                await self._fetch(_CREATE, _creation_arguments(writes, inputs_as_json=False))
            return set()
        if kind is WriteKind.END:
            # One statement each; several share a transaction, in id order (the order a lease
            # renewal locks rows in: no deadlock). A fenced-off end returns no row.
            writes = sorted(writes, key=lambda w: w.response_id)
            results = await self._fetch_many([(_END, _end_arguments(w)) for w in writes])
            return {_key(w) for w, rows in zip(writes, results, strict=True) if not rows}
        await self._general(writes)
        return set()

    async def committed(self, writes: Sequence[Write]) -> list[Write] | None:
        lookup = Lookup.of(writes)
        if lookup is None:
            return None
        async with self._lock:
            try:
                conn = await self._connection()
                rows = await conn.fetch(READ_BACK.text, *lookup.arguments())
            except Exception:
                if self._conn is not None and self._conn.is_closed():
                    self._conn = None
                return None  # still unreachable: the retries fail as the database does
        return lookup.found_in(rows)

    async def _general(self, writes: Sequence[Write]) -> None:
        async with self._engine.begin() as conn:
            await write_all(conn, writes, lease_seconds=self._lease_seconds)
            if self._notify is not None:
                await notify(conn, *self._notify, {w.response_id for w in writes})

    async def _fetch(self, statement: _sql.PgStatement, args: list[Any]) -> list[Any]:
        return (await self._fetch_many([(statement, args)]))[0]

    async def _fetch_many(self, statements: list[tuple[_sql.PgStatement, list[Any]]]) -> list[list[Any]]:
        """Run statements on the writer's connection: one alone (autocommit: one round trip),
        several in one transaction."""
        notify = self._notify
        for st, args in statements:
            assert len(args) == st.params, f"{len(args)} arguments for a statement of {st.params}"
        prepared = [[*_bind(st, args, notify is not None), *(notify or ())] for st, args in statements]
        async with self._lock:
            conn = await self._connection()
            try:
                if len(prepared) == 1:
                    return [await conn.fetch(*prepared[0])]
                async with conn.transaction():
                    return [await conn.fetch(*st) for st in prepared]
            except Exception as exc:
                unavailable = classify(exc)
                if unavailable is not None and unavailable.reason is Unavailable.POOLER:
                    # Its statements were prepared on a session it no longer has: connect
                    # again, without them (`PgConnector.pooler_seen`).
                    if self._pooler_seen is not None:
                        self._pooler_seen()
                    conn.terminate()
                if conn.is_closed():
                    self._conn = None
                raise

    def _superstep_arguments(self, writes: Sequence[Write]) -> list[Any]:
        """The statement's arrays: fences, then each of `_pgs.SUPERSTEP_SPECS`' rows, each row
        carrying its (response, owner) so only fenced pairs insert."""
        batch_fences = fences(writes, lease_seconds=self._lease_seconds, now=time.time())
        fence_rows = [
            (f.response_id, f.owner, f.until, f.renew_below, f.status, f.usage, f.journal)
            for f in batch_fences
        ]
        args = _sql.columns(fence_rows, _pgs.FENCE_WIDTH)
        for spec in _pgs.SUPERSTEP_SPECS:
            rows = journal_rows(writes) if spec is _sql.JOURNAL else spec.guarded_rows(writes)
            args += _sql.columns(rows, 2 + len(spec.value_columns))
        return args + _sql.columns(journal_keeps(writes), 3)

    async def _connection(self) -> Any:
        if self._conn is None or self._conn.is_closed():
            self._conn = await self._connect()
        return self._conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)


async def notify(conn: AsyncConnection, channel: str, prefix: str, response_ids: set[str]) -> None:
    """`pg_notify` for the general path (the fast paths add it to their own statement)."""
    from sqlalchemy import text

    for payload in payloads(prefix, response_ids):
        await conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": channel, "p": payload})


def _bind(statement: _sql.PgStatement, args: list[Any], notify: bool) -> list[Any]:
    """The statement's text and arguments: arrays packed, or plain when one does not pack."""
    packed = statement.pack(args)
    if packed is not None:
        return [statement.render(notify, packed=True), *packed]
    return [statement.render(notify), *statement.encode(args)]


def _key(w: Write) -> tuple[str, str]:
    assert w.owner is not None
    return (w.response_id, w.owner)


def _end_arguments(w: Write) -> list[Any]:
    """The parameters of `_pgs.end_statement` (its text takes them in this order)."""
    f = w.finish
    assert f is not None and w.owner is not None
    user_id, lineage = w.prune if w.prune is not None else ("", "")
    ev, it = _sql.EVENTS.values, _sql.ITEMS.values
    return [
        w.response_id,
        w.owner,
        *_sql.finish_values(f),
        w.journal_stats,
        *_sql.columns([ev(e) for e in w.events], len(_sql.EVENTS.value_columns)),
        *_sql.columns([it(i) for i in w.items], len(_sql.ITEMS.value_columns)),
        w.prune is not None,
        user_id,
        lineage,
        w.journal_clear,
    ]


def _creation_arguments(writes: Sequence[Write], *, inputs_as_json: bool) -> list[Any]:
    """The parameters of `_pgs.creation_statement(inputs_as_json=...)`, in `CREATION_SPECS`
    order (pure CPU: may run in a thread)."""
    rows, inputs, events = creation_rows(writes)
    responses, input_spec, event_spec = _pgs.CREATION_SPECS
    input_args = (
        [orjson.dumps(inputs).decode()] if inputs_as_json else _sql.columns(inputs, len(input_spec.columns))
    )
    return [
        *_sql.columns(rows, len(responses.columns)),
        *input_args,
        *_sql.columns(events, len(event_spec.columns)),
    ]
