"""Row builders and raw reads for the store suite."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from sqlalchemy import Table, func, select

from durable_responses.store import (
    CheckpointRow,
    EventRow,
    InputItemRow,
    OutputItemRow,
    PendingRequestRow,
    ResponseRow,
    Store,
)

_clock = itertools.count()


def response(
    rid: str,
    user: str = "alice",
    *,
    status: str = "in_progress",
    created_at: float | None = None,
    lease_owner: str | None = None,
    lease_expires_at: float | None = None,
    conversation_id: str | None = None,
    previous_response_id: str | None = None,
) -> ResponseRow:
    return ResponseRow(
        id=rid,
        user_id=user,
        status=status,
        background=True,
        stream=False,
        delivery="live",
        created_at=time.time() if created_at is None else created_at,
        completed_at=None,
        previous_response_id=previous_response_id,
        conversation_id=conversation_id,
        request=json.dumps({"input": "hi", "rid": rid}),
        request_hash="0" * 64,
        lease_owner=lease_owner,
        lease_expires_at=lease_expires_at,
    )


def owned(rid: str, owner: str, user: str = "alice", **kwargs: Any) -> ResponseRow:
    """An active response whose lease `owner` holds for a while."""
    return response(rid, user, lease_owner=owner, lease_expires_at=time.time() + 60, **kwargs)


def event(seq: int, type: str = "response.output_text.delta", **data: Any) -> EventRow:
    return EventRow(seq=seq, type=type, data=json.dumps({"type": type, "sequence_number": seq, **data}))


def events(start: int, stop: int, **data: Any) -> list[EventRow]:
    return [event(s, **data) for s in range(start, stop)]


def input_item(position: int, item_id: str | None = None) -> InputItemRow:
    iid = item_id or f"msg_{position:04d}"
    return InputItemRow(position=position, item_id=iid, data=json.dumps({"id": iid, "type": "message"}))


def output_item(index: int, *, included: bool = True, status: str = "completed") -> OutputItemRow:
    iid = f"out_{index:04d}"
    return OutputItemRow(
        output_index=index, item_id=iid, status=status, included=included, data=json.dumps({"id": iid})
    )


def checkpoint(
    cid: str,
    response_id: str,
    *,
    user: str = "alice",
    lineage: str | None = None,
    workflow_name: str = "wf",
    event_seq: int = -1,
    created_at: float | None = None,
    data: str | None = None,
) -> CheckpointRow:
    return CheckpointRow(
        checkpoint_id=cid,
        user_id=user,
        lineage=lineage or response_id,
        response_id=response_id,
        workflow_name=workflow_name,
        event_seq=event_seq,
        data=data or json.dumps({"checkpoint_id": cid, "n": next(_clock)}),
        created_at=time.time() if created_at is None else created_at,
    )


def pending(
    response_id: str, call_id: str, *, user: str = "alice", checkpoint_id: str = "cp"
) -> PendingRequestRow:
    return PendingRequestRow(
        response_id=response_id,
        call_id=call_id,
        user_id=user,
        checkpoint_id=checkpoint_id,
        status="pending",
        data=json.dumps({"call_id": call_id}),
    )


async def count(store: Store, table: Table, **where: Any) -> int:
    q = select(func.count()).select_from(table)
    for column, value in where.items():
        q = q.where(table.c[column] == value)
    async with store.db.reader.connect() as conn:
        return int((await conn.execute(q)).scalar_one())
