"""What an operator reads (the admin API and `/ui/`), and the record of each response's lives.

Job: list responses across tenants (or within one), read a response's takeovers, the
checkpoints it ever paired (`checkpoint_log`), its pending requests, and how much the
database holds; record a takeover when recovery starts a response's next life.

Invariant: reads are scoped by `user_id` whenever one is given (`None` only for the admin
key's callers, which the HTTP layer decides); the request column (which may hold megabytes of
input) is never read by a listing.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, exists, func, insert, select, text

from .. import _tables as t
from .._base import StoreBase
from ..db._engine import POSTGRESQL, SQLITE, Database, sqlite_path
from ..records import PendingRequestRow

__all__ = ["LoggedCheckpoint", "OpsStore", "ResponseSummary", "Takeover"]


@dataclass(slots=True, frozen=True)
class ResponseSummary:
    id: str
    user_id: str
    status: str
    background: bool
    delivery: str
    created_at: float
    completed_at: float | None
    app: str | None
    created_by: str | None
    lease_owner: str | None
    recovery_count: int
    conversation_id: str | None
    previous_response_id: str | None
    trace_context: str | None
    app_version: str | None = None
    awaiting_input: bool = False  # a pending request waits for its answer


@dataclass(slots=True, frozen=True)
class Takeover:
    """One recovery of a response: a new life, by `owner`, from `checkpoint_id` (None: input)."""

    attempt: int
    at: float
    owner: str
    previous_owner: str | None = None
    checkpoint_id: str | None = None
    span_id: str | None = None


@dataclass(slots=True, frozen=True)
class LoggedCheckpoint:
    seq: int
    checkpoint_id: str
    workflow_name: str
    event_seq: int
    bytes: int
    created_at: float


_r = t.responses.c
_COLUMNS = (
    _r.id,
    _r.user_id,
    _r.status,
    _r.background,
    _r.delivery,
    _r.created_at,
    _r.completed_at,
    _r.app,
    _r.created_by,
    _r.lease_owner,
    _r.recovery_count,
    _r.conversation_id,
    _r.previous_response_id,
    _r.trace_context,
    _r.app_version,
)
_p = t.pending_requests.c
_AWAITING = exists().where(and_(_p.response_id == _r.id, _p.status == "pending")).label("awaiting_input")
_SUMMARY: tuple[Any, ...] = (*_COLUMNS, _AWAITING)
_TABLES_MEASURED = tuple(tbl.name for tbl in t.ALL_TABLES)


class OpsStore(StoreBase):
    def __init__(self, db: Database) -> None:
        self.db = db
        self.dialect = db.dialect

    async def list_responses(
        self,
        *,
        user_id: str | None,
        status: str | None = None,
        before: tuple[float, str] | None = None,
        limit: int = 50,
    ) -> list[ResponseSummary]:
        """Newest first; `before`: the (created_at, id) of the last row of the previous page."""
        q = select(*_SUMMARY)
        if user_id is not None:
            q = q.where(_r.user_id == user_id)
        if status is not None:
            q = q.where(_r.status == status)
        if before is not None:
            at, rid = before
            q = q.where((_r.created_at < at) | and_(_r.created_at == at, _r.id < rid))
        q = q.order_by(_r.created_at.desc(), _r.id.desc()).limit(limit)
        async with self._read() as conn:
            rows = (await conn.execute(q)).all()
        return [ResponseSummary(**dict(row._mapping)) for row in rows]

    async def summary(self, response_id: str, user_id: str | None) -> ResponseSummary | None:
        q = select(*_SUMMARY).where(_r.id == response_id)
        if user_id is not None:
            q = q.where(_r.user_id == user_id)
        async with self._read() as conn:
            row = (await conn.execute(q)).first()
        return ResponseSummary(**dict(row._mapping)) if row is not None else None

    async def status_counts(self, user_id: str | None) -> dict[str, int]:
        q = select(_r.status, func.count()).group_by(_r.status)
        if user_id is not None:
            q = q.where(_r.user_id == user_id)
        async with self._read() as conn:
            return {str(s): int(n) for s, n in (await conn.execute(q)).all()}

    async def takeovers(self, response_id: str) -> list[Takeover]:
        c = t.takeovers.c
        q = (
            select(c.attempt, c.at, c.owner, c.previous_owner, c.checkpoint_id, c.span_id)
            .where(c.response_id == response_id)
            .order_by(c.attempt)
        )
        async with self._read() as conn:
            return [Takeover(*row) for row in (await conn.execute(q)).all()]

    async def record_takeover(self, response_id: str, takeover: Takeover) -> None:
        await self.record_takeovers([(response_id, takeover)])

    async def record_takeovers(self, takeovers: Sequence[tuple[str, Takeover]]) -> None:
        """Record these takeovers (response id, takeover) in one transaction."""
        if not takeovers:
            return
        c = t.takeovers.c
        async with self._write() as conn:
            # A claim counted twice (a crash between the claim and this insert): keep the first.
            ids = sorted({rid for rid, _ in takeovers})
            present = await conn.execute(select(c.response_id, c.attempt).where(c.response_id.in_(ids)))
            seen = {(rid, attempt) for rid, attempt in present.all()}
            rows = []
            for rid, tk in takeovers:
                if (rid, tk.attempt) not in seen:
                    seen.add((rid, tk.attempt))
                    rows.append(
                        {
                            "response_id": rid,
                            "attempt": tk.attempt,
                            "at": tk.at,
                            "owner": tk.owner,
                            "previous_owner": tk.previous_owner,
                            "checkpoint_id": tk.checkpoint_id,
                            "span_id": tk.span_id,
                        }
                    )
            if rows:
                await conn.execute(insert(t.takeovers), rows)

    async def checkpoint_log(self, response_id: str) -> list[LoggedCheckpoint]:
        c = t.checkpoint_log.c
        q = (
            select(c.seq, c.checkpoint_id, c.workflow_name, c.event_seq, c.bytes, c.created_at)
            .where(c.response_id == response_id)
            .order_by(c.seq)
        )
        async with self._read() as conn:
            return [LoggedCheckpoint(*row) for row in (await conn.execute(q)).all()]

    async def pending_requests(self, response_id: str) -> list[PendingRequestRow]:
        c = t.pending_requests.c
        q = select(t.pending_requests).where(c.response_id == response_id).order_by(c.call_id)
        async with self._read() as conn:
            return [PendingRequestRow(**dict(r._mapping)) for r in (await conn.execute(q)).all()]

    async def database_bytes(self) -> dict[str, int]:
        """How much the database holds: `used` (bytes in use) and `file` (SQLite: the file,
        which keeps freed pages for reuse; PostgreSQL: the database's size on disk)."""
        async with self._read() as conn:
            if self.dialect == SQLITE:
                pages = (await conn.execute(text("PRAGMA page_count"))).scalar() or 0
                free = (await conn.execute(text("PRAGMA freelist_count"))).scalar() or 0
                size = (await conn.execute(text("PRAGMA page_size"))).scalar() or 0
                path = sqlite_path(self.db.url)
                file_bytes = int(pages) * int(size)
                if path is not None:
                    file_bytes += await asyncio.to_thread(_size, path + "-wal")
                return {"used": (int(pages) - int(free)) * int(size), "file": file_bytes}
            assert self.dialect == POSTGRESQL
            used = 0
            for name in _TABLES_MEASURED:
                v = (await conn.execute(text("SELECT pg_total_relation_size(:n)"), {"n": name})).scalar()
                used += int(v or 0)
            total = (await conn.execute(text("SELECT pg_database_size(current_database())"))).scalar()
            return {"used": used, "file": int(total or 0)}


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
