"""The store's lease queries: claims of expired responses, renewals, releases.

Invariant: a response is claimed by at most one process at a time (PostgreSQL: `FOR UPDATE
SKIP LOCKED`; SQLite: one writer), and only while its lease has expired.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence

from sqlalchemy import ColumnElement, and_, case, func, or_, select, text, update

from .. import _tables as t
from .._base import Query, StoreBase, response_row
from ..db._engine import POSTGRESQL
from ..db._pg_liveness import LIVE_MARK, key_sql, members_sql
from ..errors import lost_to_concurrency
from ..records import (
    ACTIVE_STATUSES,
    ResponseRow,
    Runnable,
)

# The live members through the pool (`live_members`): the statement the lock's own connection runs.
_MEMBERS = Query.of(lambda marks: members_sql(marks[0]), 1)
# Tries of a lease renewal that PostgreSQL aborted for a concurrent transaction.
_RENEW_ATTEMPTS = 3
# A lease released on a graceful shutdown (a hand-off, not a crash: no recovery counted); a
# lease expired because its owner is known dead is 0.0.
HANDED_OFF = -1.0

# PostgreSQL: the active responses, in id order, whose owner carries the liveness mark and holds
# no liveness lock (its key is not among the live members'), with their owner. (Their leases may
# still run: that is the point.) An index range scan of the active responses, no lock table.
_DEAD_SQL = (
    "SELECT r.id, r.lease_owner FROM responses r"
    " WHERE r.status IN ('queued', 'in_progress') AND r.lease_expires_at >= :now"
    " AND r.lease_owner LIKE :mark AND r.lease_owner <> :me"
    " AND NOT (" + key_sql("r.lease_owner") + " = ANY(CAST(:members AS bigint[])))"
    " ORDER BY r.id"
)


class Leases(StoreBase):
    """Claim, renew and release leases on in-flight responses."""

    # -- leases -------------------------------------------------------------------------

    async def claim_expired(
        self, owner: str, *, limit: int = 50, own: Collection[str] = ()
    ) -> list[ResponseRow]:
        """`claim_some` without the count of those left."""
        return (await self.claim_some(owner, limit=limit, own=own))[0]

    async def claim_some(
        self,
        owner: str,
        *,
        limit: int = 50,
        own: Collection[str] = (),
        runnable: Runnable | None = None,
        busy: Collection[str] = (),
    ) -> tuple[list[ResponseRow], int]:
        """Take over active responses whose lease expired (or that never had one), and those of
        `own` still leased to `owner` (its runs that stopped on a database error: the lease
        proves nobody else took them, so there is nothing to wait for).

        `recovery_count` counts takeovers after a crash; a process taking back its own
        response after an outage is not one (an outage must not use up a response's
        recoveries).

        Also returns how many are left to claim after these (in the same transaction): a
        sweep that sees fewer left than it expected knows another replica claims too.

        `runnable`: only the responses of the apps and versions it names (None: any).

        `busy`: responses `owner` runs right now, never claimed: a lease of ours that lapsed
        while the process was busy is renewed by its run, not taken over (a takeover would count
        a recovery that never happened and start a second run under the same owner, which no
        fence tells apart)."""
        now = time.time()
        c = t.responses.c
        lapsed = or_(c.lease_expires_at.is_(None), c.lease_expires_at < now)
        mine = and_(c.id.in_(list(own)), c.lease_owner == owner) if own else None
        expired = and_(c.status.in_(ACTIVE_STATUSES), lapsed if mine is None else or_(lapsed, mine))
        if runnable is not None:
            expired = and_(expired, runnable_condition(runnable))
        if busy:
            expired = and_(expired, c.id.not_in(list(busy)))
        if self.dialect != POSTGRESQL:
            # SQLite: a look without a lock first. Most sweeps find nothing, and a claim's
            # transaction holds the one write lock every commit needs across several round trips
            # through a busy event loop, while the outbox's commits of every live stream wait
            # (SQLite's busy handler sleeps 1, 2, 5, 10 ms ... between tries). PostgreSQL's
            # claim locks only the rows it picks (`SKIP LOCKED`), and the survivors of a dead
            # replica share its responses by the timing of their claims: left as it was.
            async with self._read() as conn:
                if (await conn.execute(select(c.id).where(expired).limit(1))).first() is None:
                    return [], 0
        pick = select(c.id).where(expired).order_by(c.created_at).limit(limit)
        if self.dialect == POSTGRESQL:
            pick = pick.with_for_update(skip_locked=True)
        # Two statements, not `UPDATE ... WHERE id IN (pick)`: PostgreSQL may plan that as a
        # nested-loop semi join that rescans the `LIMIT ... FOR UPDATE SKIP LOCKED` subquery per
        # row, skipping the rows it has just updated, and so claims every expired response
        # instead of `limit`. The picked rows stay locked (SQLite: the write lock) until commit.
        async with self._write() as conn:
            ids = list((await conn.execute(pick)).scalars())
            if not ids:
                return [], 0
            stmt = (
                update(t.responses)
                .where(and_(c.id.in_(ids), expired))
                .values(
                    lease_owner=owner,
                    lease_expires_at=now + self.lease_seconds,
                    # A hand-off (a graceful shutdown released it) or our own response after an
                    # outage is no crash: not counted.
                    recovery_count=c.recovery_count
                    + case(
                        (c.lease_expires_at == HANDED_OFF, 0),
                        *(((mine, 0),) if mine is not None else ()),
                        else_=1,
                    ),
                )
                .returning(*t.responses.c)
            )
            rows = (await conn.execute(stmt)).all()
            left = (await conn.execute(select(func.count()).where(expired))).scalar()
        return [response_row(r) for r in rows], int(left or 0)

    async def live_members(self, database: int) -> list[int]:
        """PostgreSQL: the keys of the liveness locks held in `database` (an oid), in order."""
        (rows,) = await self._fetch((_MEMBERS, (database,)))
        return [int(r[0]) for r in rows]

    async def dead_owned(self, owner: str, members: Sequence[int]) -> list[tuple[str, str]]:
        """PostgreSQL: (id, owner) of the active responses whose owner carries the liveness mark
        and is not among the live `members` (`live_members`): dead, its lease not yet expired."""
        params = {"now": time.time(), "mark": f"%{LIVE_MARK}%", "me": owner, "members": list(members)}
        async with self._read() as conn:
            rows = (await conn.execute(text(_DEAD_SQL), params)).all()
        return [(r[0], r[1]) for r in rows]

    async def claim_dead(
        self, owner: str, dead: Sequence[tuple[str, str]], runnable: Runnable | None = None
    ) -> list[ResponseRow]:
        """Take over these responses of dead owners (`dead_owned`), each only while its owner is
        still the one found dead (another survivor may have claimed it meanwhile): a crash
        takeover, counted."""
        if not dead:
            return []
        c = t.responses.c
        was = or_(*(and_(c.id == rid, c.lease_owner == old) for rid, old in dead))
        still = and_(c.status.in_(ACTIVE_STATUSES), was)
        if runnable is not None:
            still = and_(still, runnable_condition(runnable))
        pick = select(c.id).where(still).order_by(c.id).with_for_update(skip_locked=True)
        async with self._write() as conn:
            ids = list((await conn.execute(pick)).scalars())
            if not ids:
                return []
            stmt = (
                update(t.responses)
                .where(and_(c.id.in_(ids), still))
                .values(
                    lease_owner=owner,
                    lease_expires_at=time.time() + self.lease_seconds,
                    recovery_count=c.recovery_count + 1,
                )
                .returning(*t.responses.c)
            )
            rows = (await conn.execute(stmt)).all()
        return [response_row(r) for r in rows]

    async def next_lease_expiry(self, owner: str) -> float | None:
        """When the next lease of an active response held by another owner expires (wall
        clock), if any: recovery sweeps then instead of polling."""
        c = t.responses.c
        q = select(func.min(c.lease_expires_at)).where(
            and_(c.status.in_(ACTIVE_STATUSES), c.lease_owner != owner, c.lease_expires_at.is_not(None))
        )
        async with self._read() as conn:
            value = (await conn.execute(q)).scalar()
        return float(value) if value is not None else None

    async def release_foreign_leases(self, owner: str) -> int:
        """Expire every lease of an active response held by another owner; only for a caller
        that knows every other owner is dead (the store, once it holds an SQLite database's
        lock file: no other process uses the database)."""
        c = t.responses.c
        async with self._write() as conn:
            res = await conn.execute(
                update(t.responses)
                .where(
                    and_(
                        c.status.in_(ACTIVE_STATUSES),
                        c.lease_owner.is_not(None),
                        c.lease_owner != owner,
                        c.lease_expires_at > 0.0,
                    )
                )
                .values(lease_expires_at=0.0)
            )
        return int(res.rowcount or 0)

    async def renew_leases(self, owner: str, response_ids: Sequence[str]) -> set[str]:
        """Extend the leases this owner still holds; returns the ids still owned.

        The rows are locked in id order (PostgreSQL), the order the outbox's commits lock them
        in too (`_batch.Batch.fences`, whatever the batch holds): two transactions
        taking the same rows in different orders deadlock, and PostgreSQL aborts one after a
        second (seen in benchmarks: this renewal against a batch of ends, and against a batch
        of superstep writes). Aborted all the same (by a transaction of another kind), the
        renewal runs again."""
        if not response_ids:
            return set()
        for attempt in range(_RENEW_ATTEMPTS):
            try:
                return await self._renew(owner, list(response_ids))
            except Exception as exc:
                if attempt + 1 == _RENEW_ATTEMPTS or not lost_to_concurrency(exc):
                    raise
        raise AssertionError("unreachable")

    async def _renew(self, owner: str, response_ids: list[str]) -> set[str]:
        c = t.responses.c
        mine = and_(c.id.in_(response_ids), c.lease_owner == owner)
        if self.dialect == POSTGRESQL:
            locked = select(c.id).where(mine).order_by(c.id).with_for_update()
            mine = and_(c.id.in_(locked.scalar_subquery()), c.lease_owner == owner)
        stmt = (
            update(t.responses)
            .where(mine)
            .values(lease_expires_at=time.time() + self.lease_seconds)
            .returning(c.id)
        )
        async with self._write() as conn:
            return {r[0] for r in (await conn.execute(stmt)).all()}

    async def release_lease(self, response_id: str, owner: str) -> None:
        """Let recovery (any process, this one included) take this response at once."""
        c = t.responses.c
        async with self._write() as conn:
            await conn.execute(
                update(t.responses)
                .where(and_(c.id == response_id, c.lease_owner == owner, c.status.in_(ACTIVE_STATUSES)))
                .values(lease_expires_at=0.0)
            )

    async def release_leases(self, owner: str, *, notify: str | None = None) -> None:
        """Let other processes recover our in-flight responses at once (graceful shutdown): a
        hand-off, which their claim does not count as a recovery. `notify` (PostgreSQL):
        `pg_notify` this payload on the events channel in the same transaction, which wakes the
        other replicas' recovery at once."""
        c = t.responses.c
        async with self._write() as conn:
            res = await conn.execute(
                update(t.responses)
                .where(and_(c.lease_owner == owner, c.status.in_(ACTIVE_STATUSES)))
                .values(lease_expires_at=HANDED_OFF)
            )
            if notify is not None and self.dialect == POSTGRESQL and res.rowcount:
                from ..db._pg_listen import CHANNEL

                await conn.execute(
                    text("SELECT pg_notify(:ch, :payload)"), {"ch": CHANNEL, "payload": notify}
                )


def runnable_condition(runnable: Runnable) -> ColumnElement[bool]:
    """The responses a replica can run (`Runnable`): of one of its apps (when it hosts several)
    and of a version it runs, or of no recorded version."""
    c = t.responses.c
    parts = []
    for app, versions in runnable.versions.items():
        version = or_(c.app_version.is_(None), c.app_version.in_(list(versions)))
        parts.append(and_(c.app == app, version) if runnable.by_app else version)
    return or_(*parts)
