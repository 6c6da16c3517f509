"""SQLite's outbox transactions, each run whole in one dedicated thread.

Invariants:
- The thread owns the single writing connection (`BEGIN IMMEDIATE`), so there is no
  lock-upgrade contention, and every transaction is one thread hop: the event loop (busy with
  agents) is needed twice per commit, not once per statement.
- A batch is one transaction whose statements `_sqlite_render` makes from its `Batch`: a write
  commits only if its owner's lease fence matches; a write fenced off commits nothing and is
  reported, its neighbours commit.
- A transaction is begun and ended by hand on the driver's connection: SQLAlchemy's own
  begin/commit cost ~0.1-0.2 ms per commit, which every response pays on its way to its first
  byte (creation) and every superstep pays again.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from sqlalchemy.engine import URL, Connection

from ..db._engine import BUSY_TIMEOUT_MS, WAL_SIZE_LIMIT_BYTES, sqlite_path, sqlite_sync_engine
from ..records import LeaseLost, Write
from ..settings import LEASE_SECONDS
from . import _sqlite_render
from ._batch import Batch
from ._sqlite_render import CHUNK
from ._writer import Fenced, Writer

# A creation with more input items than this commits with a page cache of this size (negative:
# KiB) instead of the default 2 MB (`SqliteWriter._page_cache_for`).
_LARGE_INPUT_ROWS = 5000
# A WAL this far past its bound after a commit is checkpointed and truncated at once
# (`_bound_wal`), waiting this long at most for readers to let go of it.
WAL_TRUNCATE_ABOVE_BYTES = 4 * WAL_SIZE_LIMIT_BYTES
# The WAL's size is looked at once the commits since the last look wrote more rows than this
# (`CHUNK`), or every this many commits: each look is a `stat` that gives the GIL away (the
# writer then waits to get it back from a busy event loop), and a commit of a few small rows
# adds little to the WAL (a live token's commit: a row of events per response, now and then an
# item).
WAL_LOOK_EVERY = 16
_CHECKPOINT_WAIT_MS = 50
_LARGE_CACHE_KIB = -64 * 1024


def _driver(conn: Connection) -> sqlite3.Connection:
    """The driver's own connection under SQLAlchemy's."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    return raw


class SqliteWriter(Writer):
    """Commits each batch in one transaction of the writer thread."""

    def __init__(self, url: URL, *, lease_seconds: float = LEASE_SECONDS) -> None:
        self._engine = sqlite_sync_engine(url)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-writer")
        self._lease_seconds = lease_seconds
        self._conn: Connection | None = None  # opened in the thread, kept for its lifetime
        path = sqlite_path(url)
        self._wal = f"{path}-wal" if path is not None else None
        self._commits = 0
        # Rows its commits inserted, changed or deleted (what grows the WAL): a run of events is
        # one row (`_events`), however many events it holds.
        self.rows_written = 0
        self._rows_looked = 0  # `rows_written` when the WAL's size was last looked at

    async def commit(self, writes: Sequence[Write], *, whole: bool = False) -> Fenced:
        batch = Batch.of(writes, lease_seconds=self._lease_seconds, now=time.time())
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._commit, batch, whole)

    def _commit(self, batch: Batch, whole: bool) -> Fenced:
        inputs = sum(len(w.create[1]) for w in batch.creations if w.create is not None)
        with self._page_cache_for(inputs), self._raw_transaction() as cur:
            lost = _sqlite_render.run(cur, batch)
            if lost and whole:
                raise LeaseLost(min(lost)[0])
            return lost

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
    def _raw_transaction(self) -> Iterator[sqlite3.Cursor]:
        """A transaction on the writer's connection, begun and ended by hand (a large commit,
        counted in the rows it wrote, has its WAL bounded at once)."""
        raw = _driver(self._connection())
        cur = raw.cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
            changes = raw.total_changes
            yield cur
            raw.commit()
            self._commits += 1
            self.rows_written += raw.total_changes - changes
            if self.rows_written - self._rows_looked > CHUNK or self._commits % WAL_LOOK_EVERY == 0:
                self._rows_looked = self.rows_written
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
