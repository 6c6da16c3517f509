"""The store's human-in-the-loop and conversation queries.

Invariant: a pending request is answered by at most one response (all of a reply's calls or
none: marked in the answering response's creation, `Store.insert_response`), and every read is
scoped by `user_id`.
"""

from __future__ import annotations

from sqlalchemy import and_, select, update

from .. import _tables as t
from .._base import StoreBase, response_row
from ..records import (
    PendingRequestRow,
    ResponseRow,
)


class RequestsAndConversations(StoreBase):
    """Pending requests (read, release) and conversations."""

    # -- human in the loop --------------------------------------------------------------

    async def pending_requests(self, response_id: str, user_id: str) -> list[PendingRequestRow]:
        c = t.pending_requests.c
        q = select(t.pending_requests).where(and_(c.response_id == response_id, c.user_id == user_id))
        async with self._read() as conn:
            rows = (await conn.execute(q.order_by(c.call_id))).all()
        return [PendingRequestRow(**dict(r._mapping)) for r in rows]

    async def release_answers(self, answered_by: str) -> int:
        """Re-open the requests a response answered, when it ended without completing.

        A reply whose run failed or was cancelled must not burn the call: the client can send
        the same `function_call_output` again.
        """
        c = t.pending_requests.c
        async with self._write() as conn:
            res = await conn.execute(
                update(t.pending_requests)
                .where(and_(c.answered_by == answered_by, c.status == "answered"))
                .values(status="pending", answered_by=None)
            )
        return res.rowcount or 0

    # -- conversations ------------------------------------------------------------------

    async def conversation_responses(self, user_id: str, conversation_id: str) -> list[ResponseRow]:
        c = t.responses.c
        q = (
            select(t.responses)
            .where(and_(c.user_id == user_id, c.conversation_id == conversation_id))
            .order_by(c.created_at, c.id)
        )
        async with self._read() as conn:
            rows = (await conn.execute(q)).all()
        return [response_row(r) for r in rows]
