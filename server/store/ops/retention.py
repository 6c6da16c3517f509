"""Retention: delete finished responses older than a cutoff, with everything that is theirs.

Job: `Retention.purge(older_than)` finds eligible responses in small batches and deletes each
batch (the response, its input and output items, events, checkpoints and their log, pending
requests, takeovers, webhook events and deliveries, items it took from its conversation) in
one short transaction; `dry_run` only counts. The host's sweeper calls it periodically
(`DURABLE_RESPONSES_RETENTION`), `durable-responses purge` on demand.

Invariants:
- Eligible means: ended (`completed`, `failed`, `cancelled`, `incomplete`), created before the
  cutoff, awaiting no input (no `pending` request), no webhook still to deliver, and, for a
  conversation's turn, a conversation that is itself deleted or expired (no turn, item or
  creation after the cutoff, no turn running or awaiting input). A conversation keeps every
  turn its later turns need; an expired one is marked deleted (a tombstone: its id is never
  reused) once its last turn goes.
- A batch is one transaction over a bounded number of responses: no long lock. PostgreSQL:
  a replica sweeps only while it holds the retention advisory lock for that transaction, and
  picks rows with `FOR UPDATE SKIP LOCKED`; two replicas never delete the same rows.
- The clock is injected (`clock`): tests age rows by moving it, never by sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, delete, exists, func, not_, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection

from ...observability import metrics
from .. import _tables as t
from .._base import StoreBase
from ..db._engine import POSTGRESQL, Database
from ..records import ACTIVE_STATUSES, TERMINAL_STATUSES

__all__ = ["PurgeReport", "Retention", "parse_duration"]

log = logging.getLogger("durable_responses.retention")

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
# The advisory lock key of the retention sweep (PostgreSQL): one replica deletes at a time.
_LOCK_KEY = 0x6472_7265_7461_696E  # "dretain"


def parse_duration(value: str) -> float:
    """`30d`, `12h`, `90m`, `45s`, `2w`, `0s` -> seconds; raises ValueError otherwise."""
    m = _DURATION.match(value)
    if m is None:
        raise ValueError(f"not a duration: {value[:40]!r} (use a number and a unit: 30d, 12h, 90m, 45s)")
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclass(frozen=True)
class PurgeReport:
    """What a purge removed (or, dry run, would remove): responses and rows per table."""

    dry_run: bool
    cutoff: float
    responses: int = 0
    rows: Counter[str] = field(default_factory=Counter)
    conversations: int = 0  # expired conversations marked deleted
    skipped_locked: bool = False  # another replica was sweeping (PostgreSQL)

    def lines(self) -> list[str]:
        verb = "would delete" if self.dry_run else "deleted"
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.cutoff))
        out = [f"{verb} {self.responses} responses created before {when} UTC"]
        for table in sorted(self.rows):
            out.append(f"  {table}: {self.rows[table]} rows")
        if self.conversations:
            out.append(f"  conversations expired: {self.conversations}")
        return out


_r = t.responses.c
# The tables holding a response's rows by `response_id` (webhook deliveries go by event).
_BY_RESPONSE = (
    t.input_items,
    t.output_items,
    t.events,
    t.checkpoints,
    t.checkpoint_log,
    t.pending_requests,
    t.takeovers,
    t.conversation_items,
    t.journal,
)


class Retention(StoreBase):
    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.dialect = db.dialect
        self.clock = clock
        self._older_than: float | None = None
        self._interval = 300.0
        self._batch = 50
        self._task: asyncio.Task[None] | None = None

    # -- the sweeper -----------------------------------------------------------------------

    def schedule(self, older_than: float | None, *, interval: float, batch: int) -> None:
        """Sweep every `interval` seconds once started (`older_than` None: never)."""
        self._older_than, self._interval, self._batch = older_than, interval, batch

    def start(self) -> None:
        if self._older_than is not None and self._task is None:
            self._task = asyncio.create_task(self._loop(), name="retention-sweeper")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def _loop(self) -> None:
        assert self._older_than is not None
        while True:
            try:
                report = await self.purge(self._older_than, batch=self._batch, pause=0.05)
                if report.responses:
                    log.info("retention: %s", "; ".join(line.strip() for line in report.lines()))
            except Exception as exc:  # the database may be away: the next sweep retries
                log.warning("retention sweep failed: %s", str(exc).splitlines()[0][:300] if str(exc) else exc)
            await asyncio.sleep(self._interval)

    def _eligible(self, cutoff: float) -> Any:
        p, e, d = t.pending_requests.c, t.webhook_events.c, t.webhook_deliveries.c
        r2 = t.responses.alias("later")
        ci, cv = t.conversation_items.c, t.conversations.c
        awaiting = exists().where(and_(p.response_id == _r.id, p.status == "pending"))
        undelivered = exists().where(and_(e.response_id == _r.id, d.event_id == e.id, d.status == "pending"))
        # A conversation is alive while a turn is newer than the cutoff, running or awaiting
        # input, an item was added after it, or it was created after it (and not deleted).
        p2 = t.pending_requests.alias("p2")
        alive_turn = exists().where(
            and_(
                r2.c.user_id == _r.user_id,
                r2.c.conversation_id == _r.conversation_id,
                or_(
                    r2.c.created_at >= cutoff,
                    r2.c.status.in_(ACTIVE_STATUSES),
                    exists().where(and_(p2.c.response_id == r2.c.id, p2.c.status == "pending")),
                ),
            )
        )
        new_item = exists().where(
            and_(ci.user_id == _r.user_id, ci.conversation_id == _r.conversation_id, ci.created_at >= cutoff)
        )
        new_conversation = exists().where(
            and_(
                cv.user_id == _r.user_id,
                cv.id == _r.conversation_id,
                cv.deleted_at.is_(None),
                cv.created_at >= cutoff,
            )
        )
        deleted = exists().where(
            and_(cv.user_id == _r.user_id, cv.id == _r.conversation_id, cv.deleted_at.is_not(None))
        )
        conversation_done = or_(
            _r.conversation_id.is_(None), deleted, not_(or_(alive_turn, new_item, new_conversation))
        )
        return and_(
            _r.status.in_(TERMINAL_STATUSES),
            _r.created_at < cutoff,
            not_(awaiting),
            not_(undelivered),
            conversation_done,
        )

    async def purge(
        self,
        older_than: float,
        *,
        dry_run: bool = False,
        batch: int = 50,
        pause: float = 0.0,
        max_batches: int | None = None,
    ) -> PurgeReport:
        """Delete (dry run: count) every eligible response created `older_than` seconds ago or
        earlier, `batch` responses per transaction, `pause` seconds between transactions."""
        cutoff = self.clock() - older_than
        rows: Counter[str] = Counter()
        responses = conversations = 0
        skipped_locked = False
        after: tuple[float, str] | None = None
        done = 0
        while max_batches is None or done < max_batches:
            done += 1
            if dry_run:
                after, n, counted = await self._count_batch(cutoff, batch, after)
                responses += n
                rows.update(counted)  # zero counts stay: the report names every table
                if n == 0:
                    break
                continue
            n, counted, expired = await self._delete_batch(cutoff, batch)
            if n < 0:
                skipped_locked = True
                break
            responses, conversations = responses + n, conversations + expired
            rows.update(counted)
            if n == 0:
                break
            if pause:
                await asyncio.sleep(pause)
        return PurgeReport(
            dry_run=dry_run,
            cutoff=cutoff,
            responses=responses,
            rows=rows,
            conversations=conversations,
            skipped_locked=skipped_locked,
        )

    async def _count_batch(
        self, cutoff: float, limit: int, after: tuple[float, str] | None
    ) -> tuple[tuple[float, str] | None, int, Counter[str]]:
        """The next page of eligible responses after `after`: where the page ends, how many it
        holds, and their rows per table."""
        q = select(_r.id, _r.created_at).where(self._eligible(cutoff))
        if after is not None:
            q = q.where(or_(_r.created_at > after[0], and_(_r.created_at == after[0], _r.id > after[1])))
        q = q.order_by(_r.created_at, _r.id).limit(limit)
        async with self._read() as conn:
            rows = (await conn.execute(q)).all()
            ids = [row[0] for row in rows]
            counted = await self._count_rows(conn, ids) if ids else Counter[str]()
        return ((float(rows[-1][1]), str(rows[-1][0])) if rows else after), len(ids), counted

    async def _count_rows(self, conn: AsyncConnection, ids: Sequence[str]) -> Counter[str]:
        counted: Counter[str] = Counter()
        for table in _BY_RESPONSE:
            n = (await conn.execute(select(func.count()).where(table.c.response_id.in_(ids)))).scalar()
            counted[table.name] = int(n or 0)
        e, d = t.webhook_events.c, t.webhook_deliveries.c
        events = select(e.id).where(e.response_id.in_(ids))
        n = (await conn.execute(select(func.count()).where(d.event_id.in_(events)))).scalar()
        counted["webhook_deliveries"] = int(n or 0)
        n = (await conn.execute(select(func.count()).where(e.response_id.in_(ids)))).scalar()
        counted["webhook_events"] = int(n or 0)
        counted["responses"] = len(ids)
        return counted

    async def _delete_batch(self, cutoff: float, limit: int) -> tuple[int, Counter[str], int]:
        """One transaction: how many responses it deleted (-1: another replica sweeps), the
        rows it deleted per table, and how many conversations it expired."""
        q = select(_r.id, _r.user_id, _r.conversation_id).where(self._eligible(cutoff))
        q = q.order_by(_r.created_at, _r.id).limit(limit)
        if self.dialect == POSTGRESQL:
            q = q.with_for_update(skip_locked=True, of=t.responses)
        deleted: Counter[str] = Counter()
        async with self._write() as conn:
            if self.dialect == POSTGRESQL:
                locked = (
                    await conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})
                ).scalar()
                if not locked:
                    return -1, deleted, 0
            rows = (await conn.execute(q)).all()
            ids = [row[0] for row in rows]
            if not ids:
                return 0, deleted, 0
            e, d = t.webhook_events.c, t.webhook_deliveries.c
            res = await conn.execute(
                delete(t.webhook_deliveries).where(d.event_id.in_(select(e.id).where(e.response_id.in_(ids))))
            )
            deleted["webhook_deliveries"] = res.rowcount or 0
            res = await conn.execute(delete(t.webhook_events).where(e.response_id.in_(ids)))
            deleted["webhook_events"] = res.rowcount or 0
            for table in _BY_RESPONSE:
                res = await conn.execute(delete(table).where(table.c.response_id.in_(ids)))
                deleted[table.name] = res.rowcount or 0
            res = await conn.execute(delete(t.responses).where(_r.id.in_(ids)))
            deleted["responses"] = res.rowcount or 0
            conversations = {(row[1], row[2]) for row in rows if row[2] is not None}
            expired = await self._expire_conversations(conn, conversations)
        metrics.PURGED.inc(len(ids))
        return len(ids), deleted, expired

    async def _expire_conversations(self, conn: AsyncConnection, keys: set[tuple[str, str]]) -> int:
        """Conversations whose last turn just went: mark them deleted, drop their items."""
        cv, ci, hi = t.conversations.c, t.conversation_items.c, t.conversation_hidden_items.c
        expired = 0
        now = self.clock()
        for user_id, conversation_id in keys:
            left = (
                await conn.execute(
                    select(func.count()).where(
                        and_(_r.user_id == user_id, _r.conversation_id == conversation_id)
                    )
                )
            ).scalar()
            if left:
                continue
            mine = and_(ci.user_id == user_id, ci.conversation_id == conversation_id)
            await conn.execute(delete(t.conversation_items).where(mine))
            await conn.execute(
                delete(t.conversation_hidden_items).where(
                    and_(hi.user_id == user_id, hi.conversation_id == conversation_id)
                )
            )
            res = await conn.execute(
                update(t.conversations)
                .where(and_(cv.user_id == user_id, cv.id == conversation_id, cv.deleted_at.is_(None)))
                .values(deleted_at=now, metadata="{}")
            )
            expired += res.rowcount or 0
        return expired
