"""PostgreSQL's outbox transactions on the writer's own connection (no pool, no ping).

Invariants:
- A write commits only while its owner holds the response's lease, and commits whole: a batch
  is the statements `_pg_render` makes of its `Batch` (one, for every common shape: a
  superstep, a creation, an end, or any mix of them), in one transaction; rows are inserted
  only for the (response, owner) pairs the fence matched. A write fenced off commits nothing,
  its neighbours commit, and the caller fails it with `LeaseLost`.
- Any error (a duplicate event, a lost connection) rolls the whole batch back; the caller
  then retries each write alone.
- `pg_notify` goes in the committing statement, once `notify_replicas` has been called.

Why one statement: a small write as one statement per table cost ~9 round trips (pool ping,
BEGIN, fence, one INSERT per table, NOTIFY, COMMIT), each needing the event loop that the
agents keep busy; one statement alone commits in one round trip, and its text depends only on
the batch's shape, so its prepared statement is reused.

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

from ..errors import Unavailable, classify
from ..records import LeaseLost, Write
from . import _pg_render, _pg_takes, _sql
from ._batch import Batch
from ._in_doubt import READ_BACK, Lookup
from ._writer import Fenced, Writer

Connect = Callable[[], Awaitable[Any]]
# Events of a batch from which its arguments are built in a worker thread (`_in_thread`): their
# runs are compressed there (`_events`; zlib gives the GIL up while it works), not on the
# event loop.
BULK_EVENTS = 1000


class PgWriter(Writer):
    """Commits each batch on its own connection."""

    reads_back = True

    def __init__(
        self,
        connect: Connect,
        *,
        lease_seconds: float,
        pooler_seen: Callable[[], object] | None = None,
    ) -> None:
        self._connect = connect
        self._pooler_seen = pooler_seen
        self._lease_seconds = lease_seconds
        self._conn: Any = None
        self._lock = asyncio.Lock()
        self._notify: tuple[str, str] | None = None  # (channel, payload prefix) when replicas listen

    def notify_replicas(self, channel: str, prefix: str) -> None:
        self._notify = (channel, prefix)

    async def commit(self, writes: Sequence[Write], *, whole: bool = False) -> Fenced:
        batch = Batch.of(writes, lease_seconds=self._lease_seconds, now=time.time())
        shapes = _pg_render.parts(batch)
        if not shapes:
            return set()
        if len(shapes) == 1 and not (whole and batch.fences):
            part = shapes[0]
            if _in_thread(part, batch):
                args = await asyncio.to_thread(_pg_render.arguments, part, batch, set())
            else:
                args = _pg_render.arguments(part, batch, set())
            [rows] = await self._fetch_many([(_pg_render.statement(part), args)])
            return _lost(batch, part, rows)
        return await self._fetch_parts(batch, shapes, whole)

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

    async def _fetch_parts(self, batch: Batch, shapes: list[_pg_render.Part], whole: bool) -> Fenced:
        """A batch of several statements in one transaction: each one's arguments depend on
        which pairs the ones before it fenced off (`whole`: any raises `LeaseLost`)."""
        lost: Fenced = set()
        async with self._lock:
            conn = await self._connection()
            try:
                async with conn.transaction():
                    for part in shapes:
                        st = _pg_render.statement(part)
                        if _in_thread(part, batch):
                            args = await asyncio.to_thread(_pg_render.arguments, part, batch, lost)
                        else:
                            args = _pg_render.arguments(part, batch, lost)
                        rows = await conn.fetch(*self._prepare(st, args))
                        if part.answers or part.claims:
                            refused = _pg_takes.taken(part.answers, batch, rows)
                            if refused is not None:
                                raise refused
                        lost |= _lost(batch, part, rows)
                        if lost and whole:
                            raise LeaseLost(min(lost)[0])
            except Exception as exc:
                self._failed(conn, exc)
                raise
        return lost

    async def _fetch_many(self, statements: list[tuple[_sql.PgStatement, list[Any]]]) -> list[list[Any]]:
        """Run statements on the writer's connection: one alone (autocommit: one round trip),
        several in one transaction."""
        prepared = [self._prepare(st, args) for st, args in statements]
        async with self._lock:
            conn = await self._connection()
            try:
                if len(prepared) == 1:
                    return [await conn.fetch(*prepared[0])]
                async with conn.transaction():
                    return [await conn.fetch(*st) for st in prepared]
            except Exception as exc:
                self._failed(conn, exc)
                raise

    def _prepare(self, st: _sql.PgStatement, args: list[Any]) -> list[Any]:
        assert len(args) == st.params, f"{len(args)} arguments for a statement of {st.params}"
        notify = self._notify if "{notify}" in st.text else None
        return [*_bind(st, args, notify is not None), *(notify or ())]

    def _failed(self, conn: Any, exc: Exception) -> None:
        unavailable = classify(exc)
        if unavailable is not None and unavailable.reason is Unavailable.POOLER:
            # Its statements were prepared on a session it no longer has: connect again,
            # without them (`PgConnector.pooler_seen`).
            if self._pooler_seen is not None:
                self._pooler_seen()
            conn.terminate()
        if conn.is_closed():
            self._conn = None

    async def _connection(self) -> Any:
        if self._conn is None or self._conn.is_closed():
            self._conn = await self._connect()
        return self._conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)


def _bind(statement: _sql.PgStatement, args: list[Any], notify: bool) -> list[Any]:
    """The statement's text and arguments: arrays packed, or plain when one does not pack."""
    packed = statement.pack(args)
    if packed is not None:
        return [statement.render(notify, packed=True), *packed]
    return [statement.render(notify), *statement.encode(args)]


def _lost(batch: Batch, part: _pg_render.Part, rows: list[Any]) -> Fenced:
    """The pairs a statement with fences fenced off (it returns those it holds)."""
    if not part.fences:
        return set()
    held = {(r[0], r[1]) for r in rows}
    return {f.key for f in batch.fences} - held


def _in_thread(part: _pg_render.Part, batch: Batch) -> bool:
    """Whether `_pg_render.arguments` for `part` of `batch` are worth a worker thread: input
    items as one JSON text (`_pg_render.BULK_INPUTS`), or `BULK_EVENTS` events to compress."""
    if part.inputs_json:
        return True
    if "events" not in part.guarded and "events" not in part.plain:
        return False
    return sum(len(w.events) for w in batch.owned) + sum(len(w.events) for w in batch.unowned) >= BULK_EVENTS
