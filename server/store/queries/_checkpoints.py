"""The store's checkpoint queries (the runtime's SQL `CheckpointStorage` reads through them).

Invariant: checkpoints are ordered by the host's own `seq`, never by the framework's
`iteration_count` or timestamps, and every read is scoped by `user_id`.
"""

from __future__ import annotations

from sqlalchemy import and_, delete, select, text

from .. import _tables as t
from .._base import StoreBase, checkpoint_row
from ..records import (
    ABANDONED_STATUSES,
    CheckpointRow,
)
from ..write import _sql

# The pruning of a finished response's old checkpoints (`Write.prune` is the same statement).
_PRUNE = text(_sql.PRUNE)


class Checkpoints(StoreBase):
    """Load, list, find the newest of, delete and prune workflow checkpoints."""

    # -- checkpoints --------------------------------------------------------------------

    async def load_checkpoint(self, checkpoint_id: str, user_id: str) -> CheckpointRow | None:
        c = t.checkpoints.c
        q = select(t.checkpoints).where(and_(c.checkpoint_id == checkpoint_id, c.user_id == user_id))
        async with self._read() as conn:
            row = (await conn.execute(q)).first()
        return checkpoint_row(row) if row is not None else None

    async def list_checkpoints(
        self, *, user_id: str, lineage: str, workflow_name: str | None = None
    ) -> list[CheckpointRow]:
        c = t.checkpoints.c
        q = select(t.checkpoints).where(and_(c.lineage == lineage, c.user_id == user_id))
        if workflow_name is not None:
            q = q.where(c.workflow_name == workflow_name)
        async with self._read() as conn:
            rows = (await conn.execute(q.order_by(c.seq))).all()
        return [checkpoint_row(r) for r in rows]

    async def latest_checkpoint(
        self,
        *,
        user_id: str,
        response_id: str | None = None,
        lineage: str | None = None,
        workflow_name: str | None = None,
        skip_abandoned: bool = False,
    ) -> CheckpointRow | None:
        """The newest checkpoint matching the filters; `skip_abandoned`: not one of a response
        that ended failed or cancelled (its work was stopped, not finished)."""
        c = t.checkpoints.c
        q = select(t.checkpoints).where(c.user_id == user_id)
        if skip_abandoned:
            r = t.responses.c
            q = q.join(t.responses, r.id == c.response_id).where(r.status.not_in(ABANDONED_STATUSES))
        if response_id is not None:
            q = q.where(c.response_id == response_id)
        if lineage is not None:
            q = q.where(c.lineage == lineage)
        if workflow_name is not None:
            q = q.where(c.workflow_name == workflow_name)
        async with self._read() as conn:
            row = (await conn.execute(q.order_by(c.seq.desc()).limit(1))).first()
        return checkpoint_row(row) if row is not None else None

    async def delete_checkpoint(self, checkpoint_id: str, user_id: str) -> bool:
        c = t.checkpoints.c
        async with self._write() as conn:
            res = await conn.execute(
                delete(t.checkpoints).where(and_(c.checkpoint_id == checkpoint_id, c.user_id == user_id))
            )
        return bool(res.rowcount)

    async def prune_checkpoints(self, *, user_id: str, response_id: str, lineage: str) -> int:
        """Keep only the newest checkpoint of a finished response and of its lineage.

        Runs write this in their final transaction (`Write.prune`); this is the same statement.
        """
        params = {"b_id": response_id, "b_user": user_id, "b_lineage": lineage}
        async with self._write() as conn:
            res = await conn.execute(_PRUNE, params)
        return res.rowcount or 0
