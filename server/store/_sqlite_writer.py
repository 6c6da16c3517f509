"""SQLite's outbox transactions, each run whole in one dedicated thread.

Invariants:
- The thread owns the single writing connection (`BEGIN IMMEDIATE`), so there is no
  lock-upgrade contention, and every transaction is one thread hop: the event loop (busy with
  agents) is needed twice per commit, not once per statement.
- Fast path (`run_writes`, the writes of every superstep, see `_plan.qualifies`): a write
  commits only if its owner's lease fence matches; a write fenced off commits nothing and is
  reported, its neighbours commit. Rows go to the driver as multi-row INSERTs with fixed SQL
  (`insert_rows`): SQLAlchemy's per-row parameter processing was most of the cost of a large
  batch, and `executemany` gives the GIL away once per row, paid in a thread that competes
  with the event loop for it. Plain creations (`create`) take the
  same route: a response's first event is sent only after its creation commits, so this
  write is on every request's path to its first byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from sqlalchemy.engine import URL, Connection

from ._engine import sqlite_sync_engine
from ._plan import CHECKPOINT_COLUMNS, RESPONSE_COLUMNS, Op, checkpoint_row, creation_rows, fences
from .records import LeaseLost, Write

# Rows per multi-row INSERT; a batch is split into chunks of 128, 64, ..., 1 rows so each
# table needs at most 8 statements in the driver's cache (and 128 x 6 columns stays far below
# SQLite's limit of bound variables).
_CHUNK = 128
# A creation with more input items than this commits with a page cache of this size (negative:
# KiB) instead of the default 2 MB (`SqliteWriter._page_cache_for`).
_LARGE_INPUT_ROWS = 5000
_LARGE_CACHE_KIB = -64 * 1024


@functools.lru_cache(maxsize=64)
def _insert_sql(head: str, columns: int, rows: int) -> str:
    one = "(" + ", ".join("?" for _ in range(columns)) + ")"
    return f"{head} VALUES {', '.join(one for _ in range(rows))}"


def insert_rows(cur: sqlite3.Cursor, head: str, rows: Sequence[Sequence[object]]) -> None:
    """INSERT `rows` with a few multi-row statements instead of `executemany`.

    `executemany` steps the statement once per row and releases the GIL around every step;
    while the event loop's thread runs Python (an agent's burst) this thread then waits up to
    the interpreter's switch interval (5 ms) to get it back, per row: 210 events took 0.66 s
    where multi-row statements took 32 ms (measured with a busy main thread).
    """
    if not rows:
        return
    columns = len(rows[0])
    i, n = 0, len(rows)
    while i < n:
        k = min(_CHUNK, 1 << ((n - i).bit_length() - 1))
        cur.execute(_insert_sql(head, columns, k), [v for row in rows[i : i + k] for v in row])
        i += k


_FENCE = (
    "UPDATE responses SET lease_expires_at = ?, status = COALESCE(?, status) WHERE id = ? AND lease_owner = ?"
)
# Statement heads for `insert_rows` (the VALUES lists are added per chunk size).
_EVENTS = "INSERT INTO events (response_id, seq, type, data)"
_ITEMS = "INSERT INTO output_items (response_id, output_index, item_id, status, included, data)"
_CHECKPOINTS = f"INSERT INTO checkpoints ({', '.join(CHECKPOINT_COLUMNS)})"
_RESPONSES = f"INSERT INTO responses ({', '.join(RESPONSE_COLUMNS)})"
_INPUTS = "INSERT INTO input_items (response_id, position, item_id, data)"


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
            insert_rows(
                cur, _EVENTS, [(w.response_id, e.seq, e.type, e.data) for w in kept for e in w.events]
            )
            insert_rows(
                cur,
                _ITEMS,
                [
                    (w.response_id, i.output_index, i.item_id, i.status, i.included, i.data)
                    for w in kept
                    for i in w.items
                ],
            )
            insert_rows(
                cur, _CHECKPOINTS, [checkpoint_row(c) for w in kept if (c := w.checkpoint) is not None]
            )
        return lost

    async def create(self, writes: list[Write]) -> None:
        """Commit plain creations (`_plan.is_plain_creation`) in one transaction, all or none."""
        await asyncio.get_running_loop().run_in_executor(self._pool, self._create, writes)

    def _create(self, writes: list[Write]) -> None:
        rows, inputs, events = creation_rows(writes)
        with self._page_cache_for(len(inputs)), self._raw_transaction() as cur:
            insert_rows(cur, _RESPONSES, rows)
            insert_rows(cur, _INPUTS, inputs)
            insert_rows(cur, _EVENTS, events)

    @contextmanager
    def _page_cache_for(self, n_inputs: int) -> Iterator[None]:
        """A page cache that holds a large input's index pages for one transaction.

        Input items land at random places of the item id indexes; past the default cache (2 MB)
        SQLite spills dirty pages and reads them back: 100,000 items took 2.8 s instead of 1.3 s,
        and every other response's commit waits behind this one (one writer).
        """
        if n_inputs <= _LARGE_INPUT_ROWS:
            yield
            return
        raw = self._connection().connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        (previous,) = raw.execute("PRAGMA cache_size").fetchone()
        try:
            raw.execute(f"PRAGMA cache_size = {_LARGE_CACHE_KIB}")
            yield
        finally:
            # Back to the usual size: SQLite frees the pages beyond it.
            with contextlib.suppress(sqlite3.Error):
                raw.execute(f"PRAGMA cache_size = {int(previous)}")

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._engine.dispose()

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._pool, self._close)
        self._pool.shutdown(wait=True)
