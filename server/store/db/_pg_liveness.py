"""PostgreSQL: know at once that a lease's owner is dead (issue 39), instead of waiting its lease.

Each process whose owner id carries the liveness mark (`LIVE_MARK`) holds a session-level
advisory lock, keyed by its owner id, on a connection of its own (the LISTEN URL: a direct or
session-mode connection; a transaction pooler cannot keep a session lock, and such a process
goes without the mark, its leases expiring as before). PostgreSQL releases that lock the moment
the process's session ends: a `kill -9`, a crash, a lost network. Recovery reads the lock table
(`pg_locks`): a marked owner without its lock is dead, and its responses are claimed at once.
The lease stays the fence: a process whose session was cut but that lives on loses its
responses to the survivors, and its writes are refused as with any lost lease.

The locks held are also the membership of live replicas: the survivors of a dead replica each
claim their share of its responses (the i-th, in id order, goes to the member ranked i modulo
their number), so a dead replica's 12 responses go 6 and 6 to two survivors.

Invariants:
- A process judges others by their locks only while it holds its own (and, after it lost and
  took it again, not before `SETTLE_SECONDS`: everyone's locks come back after an outage of the
  database, not all at once).
- Nothing here writes a response row: `Leases.claim_dead` does, fenced like every claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from ..errors import classify
from ._pg_connect import PgConnector

log = logging.getLogger("durable_responses.liveness")

# The advisory lock's first key (its "class"): "DRL1". The second is hashtext(owner).
LOCK_CLASS = 0x44524C31
# What an owner id carries when its process holds its liveness lock.
LIVE_MARK = ":live-"
# After this process took its lock again (its connection was lost), it waits this long before it
# judges others by theirs: after an outage every replica reconnects, each at its own pace.
SETTLE_SECONDS = 1.5
# Tries to take the lock again: soon, then every second at most (one connection attempt a
# second while the database is away), less than SETTLE_SECONDS: after an outage every replica
# holds its lock again before any of them judges the others.
_RETRY = (0.2, 1.0)


# The live members: the liveness locks held in one database (the one the locks are taken in: the
# LISTEN URL's, the same database as the main URL's), their second key as pg_locks shows it (the
# unsigned oid, as bigint). One scan of the lock table, whatever the number of responses.
def members_sql(db: str) -> str:
    """The statement, `db` the mark of its one parameter (the database's oid)."""
    return (
        f"SELECT objid::bigint FROM pg_locks WHERE locktype = 'advisory' AND classid = {LOCK_CLASS}::oid"
        f" AND objsubid = 2 AND granted AND database = CAST({db} AS bigint)::oid ORDER BY objid"
    )


_MEMBERS_PG = members_sql("$1")  # on the lock's own connection (asyncpg)
# How long a read on the lock's own connection may take (as its keep-alive query's).
_QUERY_TIMEOUT = 10.0


def key_sql(owner_expr: str) -> str:
    """The unsigned form of an owner's lock key, as `pg_locks.objid` shows it (bigint)."""
    return f"(hashtext({owner_expr})::bigint & 4294967295)"


class Liveness:
    """Holds this process's liveness lock on a connection of its own, taking it again after a loss."""

    def __init__(self, connector: PgConnector, owner: str) -> None:
        self._connector = connector
        self.owner = owner
        self._task: asyncio.Task[None] | None = None
        self._held_since: float | None = None
        self._first = True
        self.key: int | None = None
        self.database: int | None = None  # the oid of the database the lock is held in
        self.impossible = False
        self._ready = asyncio.Event()
        self._conn: Any = None  # the connection that holds the lock, while it does
        self._members: Any = None  # `_MEMBERS_PG` prepared on it (a session of its own: it stays)
        self._using = asyncio.Lock()  # one query at a time on it

    @property
    def judging(self) -> bool:
        """Whether this process may judge others by their locks now."""
        since = self._held_since
        return since is not None and time.monotonic() >= since

    async def members(self, database: int) -> list[int] | None:
        """The live members' lock keys in `database` (`members_sql`), read on the connection
        that holds this process's lock; None while it holds none there (the caller reads
        through the pool). Recovery asks every few hundred milliseconds: a read here is one round
        trip, where a pooled one is a checkout, a ping and SQLAlchemy's handling of the
        statement (an idle PostgreSQL server spent most of its CPU on these)."""
        conn, statement = self._conn, self._members
        if conn is None or statement is None or self._held_since is None or conn.is_closed():
            return None
        try:
            async with self._using:
                rows = await statement.fetch(database, timeout=_QUERY_TIMEOUT)
        except Exception:
            return None  # lost meanwhile (its listener notices): the pool's read says why
        return [int(r[0]) for r in rows]

    async def start(self, wait: float = 3.0) -> None:
        """Start holding the lock; waits (up to `wait` seconds) for the first take, so a
        restarted process's first recovery sweep already judges its dead predecessor."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="pg-liveness")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), wait)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None
        self._held_since = None

    async def _run(self) -> None:
        delay = _RETRY[0]
        reported = False
        try:
            if await self._connector.transaction_pooled():
                self.impossible = True
                self._ready.set()
                return
        except Exception:
            pass  # unreachable now: the loop below retries
        while True:
            conn: Any = None
            try:
                conn = await self._connector.connect(prepared=False)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _c, ev=lost: ev.set())
                got = await conn.fetchval(
                    f"SELECT pg_try_advisory_lock({LOCK_CLASS}, hashtext($1::text))", self.owner
                )
                if not got:
                    raise RuntimeError(f"the liveness lock of {self.owner} is held by another session")
                self.key = await conn.fetchval(f"SELECT {key_sql('$1::text')}", self.owner)
                self.database = await conn.fetchval(
                    "SELECT oid::bigint FROM pg_database WHERE datname = current_database()"
                )
                self._held_since = time.monotonic() + (0.0 if self._first else SETTLE_SECONDS)
                if not self._first:
                    log.warning("liveness lock taken again on %s", self._connector.where)
                self._members = await conn.prepare(_MEMBERS_PG)
                self._first, reported, delay = False, False, _RETRY[0]
                self._conn = conn
                self._ready.set()
                while not lost.is_set():
                    # A query now and then: a connection idle for long is what proxies drop.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(lost.wait(), 30)
                    if not lost.is_set():
                        async with self._using:
                            await conn.fetchval("SELECT 1", timeout=_QUERY_TIMEOUT)
                raise ConnectionError("the liveness connection was lost")
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._held_since = None
                if not reported:
                    unavailable = classify(exc)
                    why = (
                        unavailable.log_text() if unavailable is not None else f"{type(exc).__name__}: {exc}"
                    )
                    log.warning(
                        "liveness lock on %s lost or not taken (%s): until it is back, other replicas "
                        "may take this one's responses over, and this one judges no other",
                        self._connector.where,
                        why,
                    )
                    reported = True
            finally:
                self._conn = self._members = None
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close(timeout=2)
            await asyncio.sleep(delay)
            delay = min(delay * 2, _RETRY[1])
