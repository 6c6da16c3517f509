"""Webhook deliveries: which are due, who is attempting one (a lease), and how each ended.

Job: the state of every delivery of every webhook event. Events are written by the outbox,
in the transaction of the terminal event they report (`_pg_render`, `_sqlite_render`); this module is
how the delivery loops of every replica share them.

Invariants:
- An attempt is leased like a run: `claim_due` takes due deliveries whose lease is free or
  expired (PostgreSQL: `FOR UPDATE SKIP LOCKED`, so two replicas never take the same one) and
  leases them to the caller for longer than an attempt may last. Only the lease holder
  records the outcome (`finish_attempt` is fenced by the owner), so a delivery whose attempt
  outlived its lease is counted once.
- A delivery ends `delivered` or, after its last attempt, `failed`; it is never deleted here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import and_, func, or_, select, update

from .. import _tables as t
from .._base import StoreBase
from ..db._engine import POSTGRESQL, Database

DeliveryStatus = Literal["pending", "delivered", "failed"]

_d = t.webhook_deliveries.c
_e = t.webhook_events.c


@dataclass(slots=True, frozen=True)
class Delivery:
    """One delivery of one event to one endpoint, as it stands."""

    event_id: str
    endpoint: str
    response_id: str
    type: str
    data: str  # the body to send
    status: DeliveryStatus
    attempts: int
    next_attempt_at: float
    last_error: str | None
    delivered_at: float | None


_COLUMNS = (
    _d.event_id,
    _d.endpoint,
    _e.response_id,
    _e.type,
    _e.data,
    _d.status,
    _d.attempts,
    _d.next_attempt_at,
    _d.last_error,
    _d.delivered_at,
)
_JOINED = t.webhook_deliveries.join(t.webhook_events, _e.id == _d.event_id)


class WebhookStore(StoreBase):
    def __init__(self, db: Database) -> None:
        self._db = db
        self.db = db
        self.dialect = db.dialect

    async def claim_due(self, owner: str, *, lease_seconds: float, limit: int = 20) -> list[Delivery]:
        """Lease up to `limit` due deliveries to `owner` (their attempt counted now)."""
        now = time.time()
        due = and_(
            _d.status == "pending",
            _d.next_attempt_at <= now,
            or_(_d.lease_expires_at.is_(None), _d.lease_expires_at < now),
        )
        pick = select(_d.event_id, _d.endpoint).where(due).order_by(_d.next_attempt_at).limit(limit)
        if self._db.dialect == POSTGRESQL:
            pick = pick.with_for_update(skip_locked=True)
        async with self._write() as conn:
            keys = [(r[0], r[1]) for r in (await conn.execute(pick)).all()]
            for event_id, endpoint in keys:
                await conn.execute(
                    update(t.webhook_deliveries)
                    .where(and_(_d.event_id == event_id, _d.endpoint == endpoint, due))
                    .values(lease_owner=owner, lease_expires_at=now + lease_seconds, attempts=_d.attempts + 1)
                )
            if not keys:
                return []
            rows = (
                await conn.execute(
                    select(*_COLUMNS)
                    .select_from(_JOINED)
                    .where(and_(_d.event_id.in_([k[0] for k in keys]), _d.lease_owner == owner))
                )
            ).all()
        wanted = set(keys)
        return [Delivery(**dict(r._mapping)) for r in rows if (r[0], r[1]) in wanted]

    async def finish_attempt(
        self,
        delivery: Delivery,
        owner: str,
        *,
        delivered: bool,
        error: str | None = None,
        retry_at: float | None = None,
    ) -> bool:
        """Record an attempt's outcome: delivered, to retry at `retry_at`, or (no `retry_at`)
        failed for good. False when `owner` no longer held the lease (nothing recorded)."""
        if delivered:
            values: dict[str, object] = {
                "status": "delivered",
                "delivered_at": time.time(),
                "last_error": None,
            }
        elif retry_at is not None:
            values = {"next_attempt_at": retry_at, "last_error": error}
        else:
            values = {"status": "failed", "last_error": error}
        where = and_(
            _d.event_id == delivery.event_id,
            _d.endpoint == delivery.endpoint,
            _d.lease_owner == owner,
            _d.status == "pending",
        )
        async with self._write() as conn:
            res = await conn.execute(
                update(t.webhook_deliveries)
                .where(where)
                .values(lease_owner=None, lease_expires_at=None, **values)
            )
        return res.rowcount == 1

    async def release(self, owner: str) -> None:
        """Give up `owner`'s leases at once (shutdown): another replica attempts them now."""
        async with self._write() as conn:
            await conn.execute(
                update(t.webhook_deliveries)
                .where(and_(_d.lease_owner == owner, _d.status == "pending"))
                .values(lease_owner=None, lease_expires_at=None)
            )

    async def next_due(self) -> float | None:
        """When the next pending delivery is due (its lease ignored), or None."""
        q = select(func.min(_d.next_attempt_at)).where(_d.status == "pending")
        async with self._read() as conn:
            v = (await conn.execute(q)).scalar()
        return None if v is None else float(v)

    async def deliveries(
        self, *, response_id: str | None = None, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]:
        """The state of deliveries (an operator's view): of one response, of one status, newest first."""
        q = select(*_COLUMNS).select_from(_JOINED)
        if response_id is not None:
            q = q.where(_e.response_id == response_id)
        if status is not None:
            q = q.where(_d.status == status)
        q = q.order_by(_e.created_at.desc(), _d.endpoint).limit(limit)
        async with self._read() as conn:
            return [Delivery(**dict(r._mapping)) for r in (await conn.execute(q)).all()]
