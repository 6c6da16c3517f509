"""App versions in the store: each version's manifest, the responses waiting for a version no
replica runs, and the end an operator gives those of a retired version.

Invariant: a response's `app_version` is written once, with its creation; nothing here changes
it. Retiring claims the waiting responses (their leases expired or absent) like a takeover, so
a replica that could run them and the retiring process never both drive one.
"""

from __future__ import annotations

import time

from sqlalchemy import and_, func, not_, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite

from .. import _tables as t
from .._base import StoreBase, response_row
from ..db._engine import POSTGRESQL, Database
from ..records import ACTIVE_STATUSES, ResponseRow, Runnable
from ._leases import runnable_condition

_r = t.responses.c


class VersionStore(StoreBase):
    def __init__(self, db: Database, lease_seconds: float) -> None:
        self.db = db
        self.dialect = db.dialect
        self.lease_seconds = lease_seconds

    async def record(self, app: str, version: str, manifest: str) -> None:
        """Keep `manifest` as what `version` of `app` is made of (the first one recorded stays)."""
        row = {"app": app, "version": version, "manifest": manifest, "first_seen": time.time()}
        dialect = postgresql if self.dialect == POSTGRESQL else sqlite
        stmt = dialect.insert(t.app_versions).values(row).on_conflict_do_nothing()
        async with self._write() as conn:
            await conn.execute(stmt)

    async def manifest(self, app: str, version: str) -> str | None:
        v = t.app_versions.c
        async with self._read() as conn:
            found = await conn.execute(select(v.manifest).where(and_(v.app == app, v.version == version)))
            return found.scalar()

    async def waiting(self, runnable: Runnable) -> dict[tuple[str, str], int]:
        """Active responses, of an app and version no `runnable` covers, whose lease expired or
        was never taken: those waiting for a replica of their version, by (app, version)."""
        lapsed = or_(_r.lease_expires_at.is_(None), _r.lease_expires_at < time.time())
        q = (
            select(_r.app, _r.app_version, func.count())
            .where(
                and_(
                    _r.status.in_(ACTIVE_STATUSES),
                    lapsed,
                    _r.app_version.is_not(None),
                    not_(runnable_condition(runnable)),
                )
            )
            .group_by(_r.app, _r.app_version)
        )
        async with self._read() as conn:
            rows = (await conn.execute(q)).all()
        return {(str(app or ""), str(version)): int(n) for app, version, n in rows}

    async def claim_retired(self, owner: str, version: str, app: str | None = None) -> list[ResponseRow]:
        """Take the active responses of `version` (of `app`, if given) whose lease expired or was
        never taken, to end them: not a crash takeover (no recovery counted)."""
        now = time.time()
        lapsed = or_(_r.lease_expires_at.is_(None), _r.lease_expires_at < now)
        which = and_(_r.status.in_(ACTIVE_STATUSES), lapsed, _r.app_version == version)
        if app is not None:
            which = and_(which, _r.app == app)
        pick = select(_r.id).where(which).order_by(_r.created_at)
        if self.dialect == POSTGRESQL:
            pick = pick.with_for_update(skip_locked=True)
        async with self._write() as conn:
            ids = list((await conn.execute(pick)).scalars())
            if not ids:
                return []
            stmt = (
                update(t.responses)
                .where(and_(_r.id.in_(ids), which))
                .values(lease_owner=owner, lease_expires_at=now + self.lease_seconds)
                .returning(*t.responses.c)
            )
            rows = (await conn.execute(stmt)).all()
        return [response_row(r) for r in rows]
