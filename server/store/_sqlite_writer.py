"""SQLite's outbox transactions, each run whole in one dedicated thread.

Invariants:
- The thread owns the single writing connection (`BEGIN IMMEDIATE`), so there is no
  lock-upgrade contention, and every transaction is one thread hop: the event loop (busy with
  agents) is needed twice per commit, not once per statement.
- Fast path (`run_writes`, the writes of every superstep, see `_plan.qualifies`): a write
  commits only if its owner's lease fence matches; a write fenced off commits nothing and is
  reported, its neighbours commit. Rows go through the driver's `executemany` with fixed SQL:
  SQLAlchemy's per-row parameter processing was most of the cost of a large batch, paid in a
  thread that competes with the event loop for the GIL. Plain creations (`create`) take the
  same route: a response's first event is sent only after its creation commits, so this
  write is on every request's path to its first byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from sqlalchemy.engine import URL, Connection

from ._engine import sqlite_sync_engine
from ._plan import CHECKPOINT_COLUMNS, RESPONSE_COLUMNS, Op, checkpoint_row, creation_rows, fences
from .records import LeaseLost, Write

_FENCE = (
    "UPDATE responses SET lease_expires_at = ?, status = COALESCE(?, status) WHERE id = ? AND lease_owner = ?"
)
_EVENTS = "INSERT INTO events (response_id, seq, type, data) VALUES (?, ?, ?, ?)"
_ITEMS = (
    "INSERT INTO output_items (response_id, output_index, item_id, status, included, data) "
    "VALUES (?, ?, ?, ?, ?, ?)"
)
_CHECKPOINTS = (
    f"INSERT INTO checkpoints ({', '.join(CHECKPOINT_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in CHECKPOINT_COLUMNS)})"
)

_RESPONSES = (
    f"INSERT INTO responses ({', '.join(RESPONSE_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in RESPONSE_COLUMNS)})"
)
_INPUTS = "INSERT INTO input_items (response_id, position, item_id, data) VALUES (?, ?, ?, ?)"


def run_ops(conn: Connection, ops: list[Op]) -> None:
    for op in ops:
        res = conn.execute(op.stmt, op.params) if op.params is not None else conn.execute(op.stmt)
        if op.fence is not None and res.rowcount != 1:
            raise LeaseLost(op.fence)


class SqliteWriter:
    def __init__(self, url: URL, *, lease_seconds: float = 15.0) -> None:
        self._engine = sqlite_sync_engine(url)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._lease_seconds = lease_seconds
        self._conn: Connection | None = None  # opened in the thread, kept for its lifetime

    async def run(self, ops: list[Op]) -> None:
        """The general path: statements planned by `_plan`, in one transaction."""
        await asyncio.get_running_loop().run_in_executor(self._pool, self._run, ops)

    def _run(self, ops: list[Op]) -> None:
        conn = self._connection()
        with conn.begin():
            run_ops(conn, ops)

    def _connection(self) -> Connection:
        if self._conn is None or self._conn.closed or self._conn.invalidated:
            self._conn = self._engine.connect()
        return self._conn

    @contextmanager
    def _raw_transaction(self) -> Iterator[sqlite3.Cursor]:
        """A transaction on the same connection, begun and ended by hand: SQLAlchemy's own
        begin/commit cost ~0.1-0.2 ms per commit, which every response pays on its way to
        its first byte (creation) and every superstep pays again."""
        raw = self._connection().connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        cur = raw.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            yield cur
            raw.commit()
        except BaseException:
            # Also after a failed COMMIT (a full disk): a transaction left open would refuse
            # every later BEGIN, and the writer would never commit again.
            if raw.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    raw.rollback()
            raise
        finally:
            cur.close()

    async def run_writes(self, writes: list[Write]) -> set[tuple[str, str]]:
        """The fast path: commit `writes`; return the (response, owner) pairs fenced off."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._run_writes, writes)

    def _run_writes(self, writes: list[Write]) -> set[tuple[str, str]]:
        batch_fences = fences(writes, lease_seconds=self._lease_seconds, now=time.time())
        with self._raw_transaction() as cur:
            lost: set[tuple[str, str]] = set()
            for f in batch_fences:
                cur.execute(_FENCE, (f.until, f.status, f.response_id, f.owner))
                if cur.rowcount != 1:
                    lost.add((f.response_id, f.owner))
            kept = [w for w in writes if (w.response_id, w.owner) not in lost] if lost else writes
            events = [(w.response_id, e.seq, e.type, e.data) for w in kept for e in w.events]
            if events:
                cur.executemany(_EVENTS, events)
            items = [
                (w.response_id, i.output_index, i.item_id, i.status, i.included, i.data)
                for w in kept
                for i in w.items
            ]
            if items:
                cur.executemany(_ITEMS, items)
            checkpoints = [checkpoint_row(c) for w in kept if (c := w.checkpoint) is not None]
            if checkpoints:
                cur.executemany(_CHECKPOINTS, checkpoints)
        return lost

    async def create(self, writes: list[Write]) -> None:
        """Commit plain creations (`_plan.is_plain_creation`) in one transaction, all or none."""
        await asyncio.get_running_loop().run_in_executor(self._pool, self._create, writes)

    def _create(self, writes: list[Write]) -> None:
        rows, inputs, events = creation_rows(writes)
        with self._raw_transaction() as cur:
            cur.executemany(_RESPONSES, rows)
            if inputs:
                cur.executemany(_INPUTS, inputs)
            if events:
                cur.executemany(_EVENTS, events)

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._engine.dispose()

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._pool, self._close)
        self._pool.shutdown(wait=True)
