"""The store interface: every read and write the runtime and HTTP layers make.

Invariants:
- Every read of a user-visible row is scoped by `user_id` (tenants are walls: another user's
  row reads as absent, never as forbidden).
- Event writes go through the outbox (`submit`), which commits them before any relay can see
  them; the direct transactions here are the few that must be synchronous (creating a
  response with its first events, cancel flags, claims, deletes).
- Reads never scan what came before: event reads are index range reads from a sequence number.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, delete, func, insert, literal, or_, select, text, union_all, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from . import _pg_listen
from . import _tables as t
from ._engine import POSTGRESQL, Database, open_database
from ._plan import prune_op
from .conversations import ConversationStore
from .notify import Notifier
from .outbox import Outbox, write_all
from .records import (
    ABANDONED_STATUSES,
    ACTIVE_STATUSES,
    CheckpointRow,
    EventRow,
    InputItemRow,
    OutputItemRow,
    PendingRequestRow,
    ResponseRow,
    Write,
)
from .webhooks import WebhookStore


def _response(row: Any) -> ResponseRow:
    return ResponseRow(**dict(row._mapping))


def _checkpoint(row: Any) -> CheckpointRow:
    return CheckpointRow(**dict(row._mapping))


class Store:
    def __init__(
        self,
        db: Database,
        *,
        notifier: Notifier | None = None,
        commit_window: float = 0.002,
        max_batch: int = 256,
        lease_seconds: float = 15.0,
    ) -> None:
        self.db = db
        self.dialect = db.dialect
        self.notifier = notifier or Notifier()
        self.lease_seconds = lease_seconds
        self.instance = uuid.uuid4().hex
        self._listener: _pg_listen.PgListener | None = None
        self.outbox = Outbox(
            db, self.notifier, commit_window=commit_window, max_batch=max_batch, lease_seconds=lease_seconds
        )
        self.conversations = ConversationStore(db)
        self.webhooks = WebhookStore(db)

    @classmethod
    def open(cls, url: str, **kwargs: Any) -> Store:
        return cls(open_database(url), **kwargs)

    async def start(self) -> None:
        self.outbox.start()
        if self.dialect == POSTGRESQL and self._listener is None:
            instance = self.instance

            async def tell_others(conn: AsyncConnection, ids: set[str]) -> None:
                await _pg_listen.notify(conn, instance, ids)

            self.outbox.cross_process_notify = tell_others
            self.outbox.notify_replicas(_pg_listen.CHANNEL, instance + "|")
            self._listener = _pg_listen.PgListener(self.db.url, self.notifier, instance)
            self._listener.start()

    @property
    def cross_process_wakeups(self) -> bool:
        """Whether relays of responses driven elsewhere are woken (PostgreSQL) or must poll."""
        return self._listener is not None

    async def close(self) -> None:
        await self.outbox.close()
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        await self.db.dispose()

    async def ping(self) -> None:
        async with self.db.reader.connect() as conn:
            await conn.execute(text("SELECT 1"))

    # -- outbox -------------------------------------------------------------------------

    def submit(self, write: Write) -> asyncio.Future[None]:
        return self.outbox.submit(write)

    async def write_now(self, writes: Sequence[Write]) -> None:
        """Commit `writes` in one direct transaction (bypassing the group-commit queue)."""
        async with self.db.writer.begin() as conn:
            await write_all(conn, writes, lease_seconds=self.lease_seconds)
        self.notifier.publish_many({w.response_id for w in writes})

    # -- responses ----------------------------------------------------------------------

    async def insert_response(
        self, row: ResponseRow, inputs: Sequence[InputItemRow], events: Sequence[EventRow]
    ) -> None:
        """Create a response with its input and first events, group-committed with other writes."""
        await self.outbox.commit_now(
            Write(response_id=row.id, owner=None, create=(row, list(inputs)), events=list(events))
        )

    async def get_response(self, response_id: str, user_id: str | None) -> ResponseRow | None:
        """`user_id=None` is the runtime's own unscoped read (recovery); HTTP always scopes."""
        q = select(t.responses).where(t.responses.c.id == response_id)
        if user_id is not None:
            q = q.where(t.responses.c.user_id == user_id)
        async with self.db.reader.connect() as conn:
            row = (await conn.execute(q)).first()
        return _response(row) if row is not None else None

    async def output_items(self, response_id: str, *, included_only: bool = True) -> list[OutputItemRow]:
        q = select(
            t.output_items.c.output_index,
            t.output_items.c.item_id,
            t.output_items.c.status,
            t.output_items.c.included,
            t.output_items.c.data,
        ).where(t.output_items.c.response_id == response_id)
        if included_only:
            q = q.where(t.output_items.c.included.is_(True))
        q = q.order_by(t.output_items.c.output_index)
        async with self.db.reader.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [OutputItemRow(*r) for r in rows]

    async def input_items(self, response_id: str) -> list[InputItemRow]:
        q = (
            select(t.input_items.c.position, t.input_items.c.item_id, t.input_items.c.data)
            .where(t.input_items.c.response_id == response_id)
            .order_by(t.input_items.c.position)
        )
        async with self.db.reader.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [InputItemRow(*r) for r in rows]

    async def find_items(self, user_id: str, item_id: str, *, limit: int = 8) -> list[str]:
        """The stored JSON of the items with id `item_id` among `user_id`'s responses (at most `limit`).

        What an `item_reference` names: an output item (only ones kept in the output) or an input
        item. An id can occur more than once (a client may send an earlier item back with its id,
        or as an item_reference, which is stored under the id it names): output items come first,
        then input items oldest first, so the original precedes its copies. Scoped by `user_id`
        (another tenant's item reads as absent). The items are found by their id
        (`ix_output_items_by_item_id`, `ix_input_items_by_item_id`, migration 0003), then joined
        to their responses to keep only this user's.
        """
        r, o, i = t.responses.c, t.output_items.c, t.input_items.c
        outputs = (
            select(o.data.label("data"), literal(0).label("rank"), r.created_at.label("created_at"))
            .select_from(t.output_items.join(t.responses, r.id == o.response_id))
            .where(and_(r.user_id == user_id, o.item_id == item_id, o.included.is_(True)))
        )
        inputs = (
            select(i.data.label("data"), literal(1).label("rank"), r.created_at.label("created_at"))
            .select_from(t.input_items.join(t.responses, r.id == i.response_id))
            .where(and_(r.user_id == user_id, i.item_id == item_id))
        )
        both = union_all(outputs, inputs).subquery()
        q = select(both.c.data).order_by(both.c.rank, both.c.created_at).limit(limit)
        async with self.db.reader.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [str(row[0]) for row in rows]

    async def list_input_items(
        self,
        response_id: str,
        *,
        after: str | None,
        before: str | None,
        limit: int,
        order: str,
    ) -> tuple[list[InputItemRow], bool] | None:
        """A page of input items; `None` when a cursor id is not an item of this response."""
        c = t.input_items.c
        async with self.db.reader.connect() as conn:
            conds = [c.response_id == response_id]
            for cursor, op in ((after, "after"), (before, "before")):
                if cursor is None:
                    continue
                pos = (
                    await conn.execute(
                        select(c.position).where(and_(c.response_id == response_id, c.item_id == cursor))
                    )
                ).scalar()
                if pos is None:
                    return None
                forward = (op == "after") == (order == "asc")
                conds.append(c.position > pos if forward else c.position < pos)
            # `before` alone pages backwards: the `limit` items just before the cursor (the
            # previous page), still returned in `order`; `has_more` then means more before them.
            backward = before is not None and after is None
            ascending = (order == "asc") != backward
            q = (
                select(c.position, c.item_id, c.data)
                .where(and_(*conds))
                .order_by(c.position.asc() if ascending else c.position.desc())
                .limit(limit + 1)
            )
            rows = (await conn.execute(q)).all()
        page = [InputItemRow(*r) for r in rows[:limit]]
        if backward:
            page.reverse()
        return page, len(rows) > limit

    async def read_events(self, response_id: str, after_seq: int, limit: int = 1000) -> list[EventRow]:
        c = t.events.c
        q = (
            select(c.seq, c.type, c.data)
            .where(and_(c.response_id == response_id, c.seq > after_seq))
            .order_by(c.seq)
            .limit(limit)
        )
        async with self.db.reader.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [EventRow(*r) for r in rows]

    async def max_event_seq(self, response_id: str) -> int:
        q = select(func.max(t.events.c.seq)).where(t.events.c.response_id == response_id)
        async with self.db.reader.connect() as conn:
            v = (await conn.execute(q)).scalar()
        return -1 if v is None else int(v)

    async def max_output_index(self, response_id: str) -> int:
        """The highest output index ever announced (`output_item.added`), or -1."""
        q = select(func.max(t.output_items.c.output_index)).where(t.output_items.c.response_id == response_id)
        async with self.db.reader.connect() as conn:
            v = (await conn.execute(q)).scalar()
        return -1 if v is None else int(v)

    async def delete_response(self, response_id: str, user_id: str) -> bool:
        async with self.db.writer.begin() as conn:
            res = await conn.execute(
                delete(t.responses).where(
                    and_(t.responses.c.id == response_id, t.responses.c.user_id == user_id)
                )
            )
            if res.rowcount != 1:
                return False
            # (Items added to a conversation by hand that this response took as input go with it.)
            for table in (
                t.input_items,
                t.output_items,
                t.events,
                t.checkpoints,
                t.pending_requests,
                t.conversation_items,
            ):
                await conn.execute(delete(table).where(table.c.response_id == response_id))
        self.notifier.publish(response_id)
        return True

    async def request_cancel(self, response_id: str, user_id: str) -> ResponseRow | None:
        async with self.db.writer.begin() as conn:
            await conn.execute(
                update(t.responses)
                .where(
                    and_(
                        t.responses.c.id == response_id,
                        t.responses.c.user_id == user_id,
                        t.responses.c.status.in_(ACTIVE_STATUSES),
                    )
                )
                .values(cancel_requested=True)
            )
            row = (
                await conn.execute(
                    select(t.responses).where(
                        and_(t.responses.c.id == response_id, t.responses.c.user_id == user_id)
                    )
                )
            ).first()
        return _response(row) if row is not None else None

    async def cancel_requested(self, response_ids: Sequence[str]) -> set[str]:
        if not response_ids:
            return set()
        q = select(t.responses.c.id).where(
            and_(t.responses.c.id.in_(list(response_ids)), t.responses.c.cancel_requested.is_(True))
        )
        async with self.db.reader.connect() as conn:
            return {r[0] for r in (await conn.execute(q)).all()}

    # -- leases -------------------------------------------------------------------------

    async def claim_expired(self, owner: str, *, limit: int = 50) -> list[ResponseRow]:
        """Take over active responses whose lease expired (or that never had one)."""
        now = time.time()
        c = t.responses.c
        expired = and_(
            c.status.in_(ACTIVE_STATUSES), or_(c.lease_expires_at.is_(None), c.lease_expires_at < now)
        )
        pick = select(c.id).where(expired).order_by(c.created_at).limit(limit)
        if self.dialect == POSTGRESQL:
            pick = pick.with_for_update(skip_locked=True)
        # Two statements, not `UPDATE ... WHERE id IN (pick)`: PostgreSQL may plan that as a
        # nested-loop semi join that rescans the `LIMIT ... FOR UPDATE SKIP LOCKED` subquery per
        # row, skipping the rows it has just updated, and so claims every expired response
        # instead of `limit`. The picked rows stay locked (SQLite: the write lock) until commit.
        async with self.db.writer.begin() as conn:
            ids = list((await conn.execute(pick)).scalars())
            if not ids:
                return []
            stmt = (
                update(t.responses)
                .where(and_(c.id.in_(ids), expired))
                .values(
                    lease_owner=owner,
                    lease_expires_at=now + self.lease_seconds,
                    recovery_count=c.recovery_count + 1,
                )
                .returning(*t.responses.c)
            )
            rows = (await conn.execute(stmt)).all()
        return [_response(r) for r in rows]

    async def renew_leases(self, owner: str, response_ids: Sequence[str]) -> set[str]:
        """Extend the leases this owner still holds; returns the ids still owned."""
        if not response_ids:
            return set()
        c = t.responses.c
        stmt = (
            update(t.responses)
            .where(and_(c.id.in_(list(response_ids)), c.lease_owner == owner))
            .values(lease_expires_at=time.time() + self.lease_seconds)
            .returning(c.id)
        )
        async with self.db.writer.begin() as conn:
            return {r[0] for r in (await conn.execute(stmt)).all()}

    async def release_lease(self, response_id: str, owner: str) -> None:
        """Let recovery (any process, this one included) take this response at once."""
        c = t.responses.c
        async with self.db.writer.begin() as conn:
            await conn.execute(
                update(t.responses)
                .where(and_(c.id == response_id, c.lease_owner == owner, c.status.in_(ACTIVE_STATUSES)))
                .values(lease_expires_at=0.0)
            )

    async def release_leases(self, owner: str) -> None:
        """Let other processes recover our in-flight responses at once (graceful shutdown)."""
        c = t.responses.c
        async with self.db.writer.begin() as conn:
            await conn.execute(
                update(t.responses)
                .where(and_(c.lease_owner == owner, c.status.in_(ACTIVE_STATUSES)))
                .values(lease_expires_at=0.0)
            )

    # -- checkpoints --------------------------------------------------------------------

    async def load_checkpoint(self, checkpoint_id: str, user_id: str) -> CheckpointRow | None:
        c = t.checkpoints.c
        q = select(t.checkpoints).where(and_(c.checkpoint_id == checkpoint_id, c.user_id == user_id))
        async with self.db.reader.connect() as conn:
            row = (await conn.execute(q)).first()
        return _checkpoint(row) if row is not None else None

    async def list_checkpoints(
        self, *, user_id: str, lineage: str, workflow_name: str | None = None
    ) -> list[CheckpointRow]:
        c = t.checkpoints.c
        q = select(t.checkpoints).where(and_(c.lineage == lineage, c.user_id == user_id))
        if workflow_name is not None:
            q = q.where(c.workflow_name == workflow_name)
        async with self.db.reader.connect() as conn:
            rows = (await conn.execute(q.order_by(c.seq))).all()
        return [_checkpoint(r) for r in rows]

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
        async with self.db.reader.connect() as conn:
            row = (await conn.execute(q.order_by(c.seq.desc()).limit(1))).first()
        return _checkpoint(row) if row is not None else None

    async def delete_checkpoint(self, checkpoint_id: str, user_id: str) -> bool:
        c = t.checkpoints.c
        async with self.db.writer.begin() as conn:
            res = await conn.execute(
                delete(t.checkpoints).where(and_(c.checkpoint_id == checkpoint_id, c.user_id == user_id))
            )
        return bool(res.rowcount)

    async def prune_checkpoints(self, *, user_id: str, response_id: str, lineage: str) -> int:
        """Keep only the newest checkpoint of a finished response and of its lineage.

        Runs write this in their final transaction (`Write.prune`); this is the same statement.
        """
        op = prune_op(response_id, user_id, lineage)
        async with self.db.writer.begin() as conn:
            res = await conn.execute(op.stmt, op.params)
        return res.rowcount or 0

    # -- human in the loop --------------------------------------------------------------

    async def pending_requests(self, response_id: str, user_id: str) -> list[PendingRequestRow]:
        c = t.pending_requests.c
        q = select(t.pending_requests).where(and_(c.response_id == response_id, c.user_id == user_id))
        async with self.db.reader.connect() as conn:
            rows = (await conn.execute(q.order_by(c.call_id))).all()
        return [PendingRequestRow(**dict(r._mapping)) for r in rows]

    async def answer_pending(
        self, response_id: str, user_id: str, call_ids: Sequence[str], answered_by: str
    ) -> list[str]:
        """Mark `call_ids` answered, all or none; returns the ids that were not pending."""
        c = t.pending_requests.c
        async with self.db.writer.begin() as conn:
            refused: list[str] = []
            for call_id in call_ids:
                res = await conn.execute(
                    update(t.pending_requests)
                    .where(
                        and_(
                            c.response_id == response_id,
                            c.user_id == user_id,
                            c.call_id == call_id,
                            c.status == "pending",
                        )
                    )
                    .values(status="answered", answered_by=answered_by)
                )
                if res.rowcount != 1:
                    refused.append(call_id)
            if refused:
                await conn.rollback()
        return refused

    async def unanswer_pending(self, response_id: str, answered_by: str) -> None:
        """Undo `answer_pending` when the answering response could not be created."""
        c = t.pending_requests.c
        async with self.db.writer.begin() as conn:
            await conn.execute(
                update(t.pending_requests)
                .where(and_(c.response_id == response_id, c.answered_by == answered_by))
                .values(status="pending", answered_by=None)
            )

    async def release_answers(self, answered_by: str) -> int:
        """Re-open the requests a response answered, when it ended without completing.

        A reply whose run failed or was cancelled must not burn the call: the client can send
        the same `function_call_output` again.
        """
        c = t.pending_requests.c
        async with self.db.writer.begin() as conn:
            res = await conn.execute(
                update(t.pending_requests)
                .where(and_(c.answered_by == answered_by, c.status == "answered"))
                .values(status="pending", answered_by=None)
            )
        return res.rowcount or 0

    # -- conversations ------------------------------------------------------------------

    async def ensure_conversation(self, user_id: str, conversation_id: str) -> None:
        c = t.conversations.c
        try:
            async with self.db.writer.begin() as conn:
                exists = (
                    await conn.execute(
                        select(c.id).where(and_(c.user_id == user_id, c.id == conversation_id))
                    )
                ).first()
                if exists is None:
                    await conn.execute(
                        insert(t.conversations).values(
                            user_id=user_id, id=conversation_id, created_at=time.time()
                        )
                    )
        except IntegrityError:
            # A concurrent caller (PostgreSQL: another connection or process) inserted it
            # between our read and our insert: the conversation exists, which is all we ensure.
            pass

    async def conversation_responses(self, user_id: str, conversation_id: str) -> list[ResponseRow]:
        c = t.responses.c
        q = (
            select(t.responses)
            .where(and_(c.user_id == user_id, c.conversation_id == conversation_id))
            .order_by(c.created_at, c.id)
        )
        async with self.db.reader.connect() as conn:
            rows = (await conn.execute(q)).all()
        return [_response(r) for r in rows]
