"""SQLite's outbox transactions, each run whole in one dedicated thread.

Invariants:
- The thread owns the single writing connection (`BEGIN IMMEDIATE`), so there is no
  lock-upgrade contention, and every transaction is one thread hop: the event loop (busy with
  agents) is needed twice per commit, not once per statement.
- Fast path (`WriteKind.SUPERSTEP`, the writes of every superstep, see `_plan.qualifies`): a write
  commits only if its owner's lease fence matches; a write fenced off commits nothing and is
  reported, its neighbours commit. Rows go to the driver as multi-row INSERTs with fixed SQL
  (`insert_rows`): SQLAlchemy's per-row parameter processing was most of the cost of a large
  batch, and `executemany` gives the GIL away once per row, paid in a thread that competes
  with the event loop for it. Plain creations (`create`) take the
  same route: a response's first event is sent only after its creation commits, so this
  write is on every request's path to its first byte. So do plain ends (`_end`, fenced like a
  superstep write: the fence is the terminal UPDATE itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from sqlalchemy.engine import URL, Connection

from . import _sql
from ._engine import BUSY_TIMEOUT_MS, WAL_SIZE_LIMIT_BYTES, sqlite_path, sqlite_sync_engine
from ._plan import Op, creation_rows, fences, journal_keeps, journal_rows, plan, prune_params
from ._writer import Fenced, WriteKind, Writer
from .records import LeaseLost, Write
from .settings import LEASE_SECONDS

# Rows per multi-row INSERT; a batch is split into chunks of 128, 64, ..., 1 rows so each
# table needs at most 8 statements in the driver's cache (and 128 x 6 columns stays far below
# SQLite's limit of bound variables).
_CHUNK = 128
# A creation with more input items than this commits with a page cache of this size (negative:
# KiB) instead of the default 2 MB (`SqliteWriter._page_cache_for`).
_LARGE_INPUT_ROWS = 5000
# A WAL this far past its bound after a commit is checkpointed and truncated at once
# (`_bound_wal`), waiting this long at most for readers to let go of it.
WAL_TRUNCATE_ABOVE_BYTES = 4 * WAL_SIZE_LIMIT_BYTES
# The WAL's size is looked at once the commits since the last look wrote more rows than this
# (`_CHUNK`), or every this many commits: each look is a `stat` that gives the GIL away (the
# writer then waits to get it back from a busy event loop), and a commit of a few small rows
# adds little to the WAL (a live token's commit: ~20 rows).
WAL_LOOK_EVERY = 16
_CHECKPOINT_WAIT_MS = 50
_LARGE_CACHE_KIB = -64 * 1024


def _marks(n: int) -> str:
    """`(?, ?, ..., ?)` with `n` parameters."""
    return "(" + ", ".join("?" for _ in range(n)) + ")"


@functools.lru_cache(maxsize=64)
def _insert_sql(head: str, columns: int, rows: int) -> str:
    one = _marks(columns)
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
    for i, k in _chunks(len(rows)):
        cur.execute(_insert_sql(head, columns, k), [v for row in rows[i : i + k] for v in row])


def _chunks(n: int) -> Iterator[tuple[int, int]]:
    """(start, size) of the chunks of 128, 64, ..., 1 that `n` rows split into."""
    i = 0
    while i < n:
        k = min(_CHUNK, 1 << ((n - i).bit_length() - 1))
        yield i, k
        i += k


@functools.lru_cache(maxsize=16)
def _leases_sql(ids: int) -> str:
    return _sql.SQLITE_LEASES_HEAD + _marks(ids)


def leases_of(cur: sqlite3.Cursor, ids: Sequence[str]) -> dict[str, tuple[str | None, float | None]]:
    """The lease (owner, expiry) of each of `ids` that exists, in a few statements.

    One SELECT per response gave the GIL away once per response, and the writer thread, which
    shares it with a busy event loop, then waited to get it back each time: at 25 live streams a
    commit carried ~25 such checks, and the writer thread woke ~0.4 times per token.
    """
    found: dict[str, tuple[str | None, float | None]] = {}
    for i, k in _chunks(len(ids)):
        for rid, owner, until in cur.execute(_leases_sql(k), list(ids[i : i + k])):
            found[rid] = (owner, until)
    return found


def _driver(conn: Connection) -> sqlite3.Connection:
    """The driver's own connection under SQLAlchemy's."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    return raw


# Statement heads for `insert_rows` (the VALUES lists are added per chunk size).
_EVENTS = _sql.insert_head(_sql.EVENTS)
_ITEMS = _sql.insert_head(_sql.ITEMS)
_CHECKPOINTS = _sql.insert_head(_sql.CHECKPOINTS)
_RESPONSES = _sql.insert_head(_sql.RESPONSES)
_INPUTS = _sql.insert_head(_sql.INPUTS)
_JOURNAL = _sql.insert_head(_sql.JOURNAL)
_JOURNAL_KEEP = "DELETE FROM journal WHERE response_id = ? AND checkpoint_id <> ?"
_JOURNAL_CLEAR = "DELETE FROM journal WHERE response_id = ?"


def run_ops(conn: Connection, ops: list[Op]) -> None:
    for op in ops:
        res = conn.execute(op.stmt, op.params) if op.params is not None else conn.execute(op.stmt)
        if op.fence is not None and res.rowcount != 1:
            raise LeaseLost(op.fence)


class SqliteWriter(Writer):
    """Creations, supersteps and ends take the raw fast paths; the rest, `_plan`'s statements."""

    fast = frozenset({WriteKind.CREATE, WriteKind.SUPERSTEP, WriteKind.END})

    def __init__(self, url: URL, *, lease_seconds: float = LEASE_SECONDS) -> None:
        self._engine = sqlite_sync_engine(url)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._lease_seconds = lease_seconds
        self._conn: Connection | None = None  # opened in the thread, kept for its lifetime
        path = sqlite_path(url)
        self._wal = f"{path}-wal" if path is not None else None
        self._commits = 0
        self._rows_unlooked = 0  # rows committed since the WAL's size was last looked at

    async def commit(self, kind: WriteKind, writes: Sequence[Write]) -> Fenced:
        loop = asyncio.get_running_loop()
        if kind is WriteKind.SUPERSTEP:
            return await loop.run_in_executor(self._pool, self._superstep, writes)
        if kind is WriteKind.END:
            return await loop.run_in_executor(self._pool, self._end, writes)
        if kind is WriteKind.CREATE:
            await loop.run_in_executor(self._pool, self._create, writes)
        else:
            ops = plan(writes, lease_seconds=self._lease_seconds)
            await loop.run_in_executor(self._pool, self._general, ops)
        return set()

    def _general(self, ops: list[Op]) -> None:
        """The general path: statements planned by `_plan`, in one transaction."""
        conn = self._connection()
        with conn.begin():
            run_ops(conn, ops)

    def _connection(self) -> Connection:
        if self._conn is None or self._conn.closed or self._conn.invalidated:
            self._conn = self._engine.connect()
            # Statement journals in memory: a multi-row INSERT that touched more than a few
            # pages spilled its journal to a new file in the temp directory (open, write,
            # unlink: ~70 files per 2,500 live tokens at 25 streams, each a file-system metadata
            # change beside the WAL's syncs). A write statement's journal is bounded by the
            # pages it changes (chunks of at most 128 rows); this connection only writes.
            # (On the driver's connection: SQLAlchemy's own would begin a transaction first.)
            _driver(self._conn).execute("PRAGMA temp_store=MEMORY")
        return self._conn

    @contextmanager
    def _raw_transaction(self, rows: int = 0) -> Iterator[sqlite3.Cursor]:
        """A transaction on the same connection, begun and ended by hand: SQLAlchemy's own
        begin/commit cost ~0.1-0.2 ms per commit, which every response pays on its way to
        its first byte (creation) and every superstep pays again. `rows`: how many it writes
        (a large commit has its WAL bounded at once)."""
        raw = _driver(self._connection())
        cur = raw.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            yield cur
            raw.commit()
            self._commits += 1
            self._rows_unlooked += rows
            if self._rows_unlooked > _CHUNK or self._commits % WAL_LOOK_EVERY == 0:
                self._rows_unlooked = 0
                self._bound_wal(raw)
        except BaseException:
            # Also after a failed COMMIT (a full disk): a transaction left open would refuse
            # every later BEGIN, and the writer would never commit again.
            if raw.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    raw.rollback()
            raise
        finally:
            cur.close()

    def _bound_wal(self, raw: sqlite3.Connection) -> None:
        """After a commit that left the WAL well past its bound (a large input, or readers that
        kept the automatic checkpoints from finishing), checkpoint it and truncate the file,
        waiting for readers only briefly: on a small volume the WAL's space is the database's."""
        if self._wal is None:
            return
        try:
            if os.path.getsize(self._wal) <= WAL_TRUNCATE_ABOVE_BYTES:
                return
        except OSError:
            return
        with contextlib.suppress(sqlite3.Error):
            raw.execute(f"PRAGMA busy_timeout={_CHECKPOINT_WAIT_MS}")
            try:
                raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            finally:
                raw.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    def _superstep(self, writes: Sequence[Write]) -> Fenced:
        """The fast path: commit `writes`; return the (response, owner) pairs fenced off."""
        batch_fences = fences(writes, lease_seconds=self._lease_seconds, now=time.time())
        journal = journal_rows(writes)
        rows = sum(len(w.events) + len(w.items) + (w.checkpoint is not None) for w in writes) + len(journal)
        with self._raw_transaction(rows) as cur:
            lost: set[tuple[str, str]] = set()
            checked = [f for f in batch_fences if f.check_only]
            leases = leases_of(cur, [f.response_id for f in checked]) if checked else {}
            for f in batch_fences:
                if f.check_only:
                    owner, until = leases.get(f.response_id, (None, None))
                    if owner != f.owner:
                        lost.add((f.response_id, f.owner))
                        continue
                    if until is not None and until >= f.renew_below:
                        continue  # owned, and the lease is still fresh
                cur.execute(
                    _sql.SQLITE_FENCE, (f.until, f.status, f.usage, f.journal, f.response_id, f.owner)
                )
                if cur.rowcount != 1:
                    lost.add((f.response_id, f.owner))
            kept = [w for w in writes if (w.response_id, w.owner) not in lost] if lost else writes
            insert_rows(cur, _EVENTS, _sql.EVENTS.rows(kept))
            insert_rows(cur, _ITEMS, _sql.ITEMS.rows(kept))
            insert_rows(cur, _CHECKPOINTS, _sql.CHECKPOINTS.rows(kept))
            insert_rows(cur, _JOURNAL, [(r[0], *r[2:]) for r in journal if (r[0], r[1]) not in lost])
            for rid, _owner, keep in journal_keeps(kept):
                cur.execute(_JOURNAL_KEEP, (rid, keep))
        return lost

    def _end(self, writes: Sequence[Write]) -> Fenced:
        """Plain ends (`_plan.is_plain_end`): each one's fence and terminal transition in one
        UPDATE (in id order, like PostgreSQL's); its last events and items, and the pruning of
        its old checkpoints, only if that matched.
        Returns the (response, owner) pairs fenced off; their neighbours commit.

        On the general path an end took a statement per event and per item (`executemany`),
        each giving the GIL away: when a step's live streams all ended together, their ends'
        transaction held up every other stream's next commit."""
        lost: set[tuple[str, str]] = set()
        kept: list[Write] = []
        rows = sum(len(w.events) + len(w.items) for w in writes)
        with self._raw_transaction(rows) as cur:
            for w in sorted(writes, key=lambda w: w.response_id):
                assert w.finish is not None and w.owner is not None
                cur.execute(
                    _sql.SQLITE_END,
                    (*_sql.finish_values(w.finish), w.journal_stats, w.response_id, w.owner),
                )
                if cur.rowcount != 1:
                    lost.add((w.response_id, w.owner))
                    continue
                kept.append(w)
                if w.prune is not None:
                    cur.execute(_sql.PRUNE, prune_params(w.response_id, *w.prune))
                if w.journal_clear:
                    cur.execute(_JOURNAL_CLEAR, (w.response_id,))
            insert_rows(cur, _EVENTS, _sql.EVENTS.rows(kept))
            insert_rows(cur, _ITEMS, _sql.ITEMS.rows(kept))
        return lost

    def _create(self, writes: Sequence[Write]) -> None:
        """Commit plain creations (`_plan.is_plain_creation`) in one transaction, all or none."""
        rows, inputs, events = creation_rows(writes)
        written = len(rows) + len(inputs) + len(events)
        with self._page_cache_for(len(inputs)), self._raw_transaction(written) as cur:
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
        raw = _driver(self._connection())
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
