"""Turn a batch of outbox `Write`s into the statements of one transaction (no I/O here).

Invariants:
- Per write, its creation (if any) comes before its lease fence, and every fence comes before
  the rows it guards; a fence is an UPDATE that must hit exactly one row, or the transaction is
  abandoned with `LeaseLost` (the executor checks `Op.fence`).
- Rows of the same table across the whole batch go in one executemany, so the number of
  statements per batch does not grow with the number of events.

The end of the module holds what the dialects' fast paths share (`_pg_writer`,
`_sqlite_writer`): which writes qualify, one fence per (response, owner), checkpoint rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, update
from sqlalchemy.sql import Executable

from . import _tables as t
from .records import CheckpointRow, ResponseRow, WebhookEvent, Write


@dataclass(slots=True)
class Op:
    stmt: Executable
    params: list[dict[str, Any]] | dict[str, Any] | None = None
    fence: str | None = None  # this UPDATE must hit one row, else the lease of `fence` was lost


# The statements, built once: constructing SQLAlchemy expressions cost more than executing
# them (~10% of a short response's event-loop time). Values travel as bound parameters
# (named b_*: a column's own name is reserved in an UPDATE's SET clause).
_r = t.responses.c
_INSERT_RESPONSE = insert(t.responses)
_FENCE = (
    update(t.responses)
    .where(and_(_r.id == bindparam("b_id"), _r.lease_owner == bindparam("b_owner")))
    .values(lease_expires_at=bindparam("b_until"))
)
_STATUS = update(t.responses).where(_r.id == bindparam("b_id")).values(status=bindparam("b_status"))
_FINISH = (
    update(t.responses)
    .where(_r.id == bindparam("b_id"))
    .values(
        status=bindparam("b_status"),
        completed_at=bindparam("b_completed_at"),
        error=bindparam("b_error"),
        incomplete_details=bindparam("b_incomplete_details"),
        usage=bindparam("b_usage"),
        lease_owner=None,
        lease_expires_at=None,
    )
)
_INSERT_WEBHOOK_EVENT = insert(t.webhook_events)
_INSERT_WEBHOOK_DELIVERY = insert(t.webhook_deliveries)
_INSERTS = {
    table.name: insert(table)
    for table in (t.input_items, t.events, t.output_items, t.checkpoints, t.pending_requests)
}


def _prune_statement() -> Executable:
    c = t.checkpoints.c
    mine = and_(c.user_id == bindparam("b_user"), c.response_id == bindparam("b_id"))
    kin = and_(c.user_id == bindparam("b_user"), c.lineage == bindparam("b_lineage"))
    newest_mine = select(func.coalesce(func.max(c.seq), -1)).where(mine).scalar_subquery()
    newest_kin = select(func.coalesce(func.max(c.seq), -1)).where(kin).scalar_subquery()
    return delete(t.checkpoints).where(or_(mine, kin), c.seq != newest_mine, c.seq != newest_kin)


_PRUNE = _prune_statement()


def response_values(row: ResponseRow) -> dict[str, Any]:
    return {k: getattr(row, k) for k in ResponseRow.__slots__}


def plan(writes: Iterable[Write], *, lease_seconds: float, now: float | None = None) -> list[Op]:
    now = time.time() if now is None else now
    ops: list[Op] = []
    events: list[dict[str, Any]] = []
    items: list[dict[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    inputs: list[dict[str, Any]] = []
    tail: list[Op] = []
    # Keyed by (response, owner), not by response: a stale owner's write that shares a batch
    # with the current owner's write to the same response must still be fenced off.
    fenced: set[tuple[str, str]] = set()
    for w in writes:
        rid = w.response_id
        if w.create is not None:
            row, input_rows = w.create
            ops.append(Op(_INSERT_RESPONSE, response_values(row)))
            inputs.extend(
                {"response_id": rid, "position": i.position, "item_id": i.item_id, "data": i.data}
                for i in input_rows
            )
        if w.owner is not None and (rid, w.owner) not in fenced:
            fenced.add((rid, w.owner))
            until = w.lease_until if w.lease_until is not None else now + lease_seconds
            ops.append(Op(_FENCE, {"b_id": rid, "b_owner": w.owner, "b_until": until}, fence=rid))
        events.extend({"response_id": rid, "seq": e.seq, "type": e.type, "data": e.data} for e in w.events)
        items.extend(
            {
                "response_id": rid,
                "output_index": it.output_index,
                "item_id": it.item_id,
                "status": it.status,
                "included": it.included,
                "data": it.data,
            }
            for it in w.items
        )
        if w.checkpoint is not None:
            c = w.checkpoint
            checkpoints.append(
                {
                    "checkpoint_id": c.checkpoint_id,
                    "user_id": c.user_id,
                    "lineage": c.lineage,
                    "response_id": c.response_id,
                    "workflow_name": c.workflow_name,
                    "event_seq": c.event_seq,
                    "data": c.data,
                    "created_at": c.created_at,
                    "awaits_input": c.awaits_input,
                }
            )
        pending.extend(
            {
                "response_id": p.response_id,
                "call_id": p.call_id,
                "user_id": p.user_id,
                "checkpoint_id": p.checkpoint_id,
                "status": p.status,
                "answered_by": p.answered_by,
                "data": p.data,
            }
            for p in w.pending
        )
        if w.status is not None:
            tail.append(Op(_STATUS, {"b_id": rid, "b_status": w.status}))
        if w.finish is not None:
            f = w.finish
            finish = {
                "b_id": rid,
                "b_status": f.status,
                "b_completed_at": f.completed_at,
                "b_error": f.error,
                "b_incomplete_details": f.incomplete_details,
                "b_usage": f.usage,
            }
            tail.append(Op(_FINISH, finish))
        if w.prune is not None:
            tail.append(prune_op(rid, *w.prune))
        if w.webhook is not None:
            tail.extend(webhook_ops(w.webhook, now))
    for table, rows in (
        (t.input_items, inputs),
        (t.events, events),
        (t.output_items, items),
        (t.checkpoints, checkpoints),
        (t.pending_requests, pending),
    ):
        if rows:
            ops.append(Op(_INSERTS[table.name], rows))
    ops.extend(tail)
    return ops


def prune_op(response_id: str, user_id: str, lineage: str | None) -> Op:
    """Delete every checkpoint of the response and its lineage but the newest of each.

    Both newest rows survive: the lineage's newest may belong to another response, and this
    response's own newest is what a later `previous_response_id` continues from.
    """
    return Op(_PRUNE, {"b_id": response_id, "b_user": user_id, "b_lineage": lineage})


def webhook_ops(event: WebhookEvent, now: float) -> list[Op]:
    """The webhook event of a response's end and one delivery per endpoint (due at once)."""
    row = {
        "id": event.event_id,
        "response_id": event.response_id,
        "type": event.type,
        "created_at": event.created_at,
        "data": event.data,
    }
    deliveries = [
        {
            "event_id": event.event_id,
            "endpoint": url,
            "status": "pending",
            "attempts": 0,
            "next_attempt_at": now,
        }
        for url in event.endpoints
    ]
    ops = [Op(_INSERT_WEBHOOK_EVENT, row)]
    if deliveries:
        ops.append(Op(_INSERT_WEBHOOK_DELIVERY, deliveries))
    return ops


def response_ids(writes: Sequence[Write]) -> set[str]:
    return {w.response_id for w in writes}


# -- the fast paths (`_pg_writer`, `_sqlite_writer`): one contract, rows as tuples -----------


def qualifies(w: Write) -> bool:
    """Whether `w` may take a dialect's fast path: an owned write of events, closed items, a
    checkpoint and a status change (the writes of every superstep)."""
    return (
        w.owner is not None
        and w.create is None
        and w.finish is None
        and w.prune is None
        and not w.pending
        and w.webhook is None
    )


def is_plain_creation(w: Write) -> bool:
    """A creation with its first events and nothing else (`Store.insert_response`)."""
    return (
        w.create is not None
        and w.owner is None
        and not w.items
        and w.checkpoint is None
        and not w.pending
        and w.status is None
        and w.finish is None
        and w.prune is None
        and w.webhook is None
    )


def is_plain_end(w: Write) -> bool:
    """An owned write that ends its response: the terminal transition with the last events,
    closed items and the pruning of old checkpoints, no checkpoint, no pending requests."""
    return (
        w.owner is not None
        and w.finish is not None
        and w.create is None
        and w.checkpoint is None
        and not w.pending
        and w.webhook is None  # (a webhook event takes the general path: `webhook_ops`)
    )


@dataclass(slots=True)
class Fence:
    """The lease fence of one (response, owner) in a batch of qualifying writes."""

    response_id: str
    owner: str
    until: float
    status: str | None  # the last status change of the batch, if any


def fences(writes: Iterable[Write], *, lease_seconds: float, now: float) -> list[Fence]:
    """One fence per (response, owner): the latest lease renewal and the last status change."""
    by_key: dict[tuple[str, str], Fence] = {}
    for w in writes:
        assert w.owner is not None
        until = w.lease_until if w.lease_until is not None else now + lease_seconds
        fence = by_key.get((w.response_id, w.owner))
        if fence is None:
            by_key[(w.response_id, w.owner)] = Fence(w.response_id, w.owner, until, w.status)
        else:
            fence.until = max(fence.until, until)
            if w.status is not None:
                fence.status = w.status
    return list(by_key.values())


RESPONSE_COLUMNS = tuple(f.name for f in fields(ResponseRow))


def creation_rows(
    writes: Iterable[Write],
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Plain creations (`is_plain_creation`) as rows: responses (`RESPONSE_COLUMNS` order),
    input items (response_id, position, item_id, data), events (response_id, seq, type, data)."""
    rows: list[tuple[Any, ...]] = []
    inputs: list[tuple[Any, ...]] = []
    events: list[tuple[Any, ...]] = []
    for w in writes:
        assert w.create is not None
        row, input_rows = w.create
        rows.append(tuple(getattr(row, name) for name in RESPONSE_COLUMNS))
        inputs.extend((row.id, i.position, i.item_id, i.data) for i in input_rows)
        events.extend((row.id, e.seq, e.type, e.data) for e in w.events)
    return rows, inputs, events


CHECKPOINT_COLUMNS = (
    "checkpoint_id",
    "user_id",
    "lineage",
    "response_id",
    "workflow_name",
    "event_seq",
    "data",
    "created_at",
    "awaits_input",
)


def checkpoint_row(c: CheckpointRow) -> tuple[Any, ...]:
    """A checkpoint's values in `CHECKPOINT_COLUMNS` order."""
    return (
        c.checkpoint_id,
        c.user_id,
        c.lineage,
        c.response_id,
        c.workflow_name,
        c.event_seq,
        c.data,
        c.created_at,
        c.awaits_input,
    )
