"""A new turn's facts: what it follows, and what it continues from, each read once.

Invariant: a continuation reads each of its facts once (the response it follows or the
conversation's turns, as `turns.Turns` read them while clearing the way; that response's pending
requests; the workflow checkpoint or agent session it continues) and hands them on as one
frozen `Turn`: checking, answering and planning read none of them again (`continuation`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...protocol import errors
from ...protocol.request import CreateRequest
from ...store import (
    ABANDONED_STATUSES,
    TERMINAL_STATUSES,
    CheckpointRow,
    PendingRequestRow,
    ResponseRow,
    Store,
)
from ..run.ending import SESSION_ROWS
from .history import MAX_HISTORY_RESPONSES


def _kind(item: Mapping[str, Any]) -> str:
    return str(item.get("type") or "message")


@dataclass(frozen=True)
class Followed:
    """What a new turn follows, as read when its way was cleared (`turns.Turns`): the previous
    response's row (None: not found), or the conversation's turns, oldest first."""

    previous: ResponseRow | None = None
    conversation: tuple[ResponseRow, ...] = ()


@dataclass(frozen=True)
class Turn:
    """A continuation's facts, read once (`Continuations.prepare`)."""

    # The response this turn continues (its pending requests), if any.
    prev: ResponseRow | None
    # The conversation's turns (a conversation's turn), as read.
    conversation: tuple[ResponseRow, ...]
    # The input, each item_reference replaced by the item it names.
    items: tuple[dict[str, Any], ...]
    # `prev`'s requests, and those of the conversation's earlier turns this input answers again.
    pending: tuple[PendingRequestRow, ...] = ()
    earlier: tuple[PendingRequestRow, ...] = ()
    # A workflow's turn: the checkpoint it continues, or why it cannot (a 409 raised where a
    # run needs it); a plain agent's: the session it continues, the response that left it and
    # that response's requests (the approvals the session asked for).
    checkpoint: CheckpointRow | None = None
    checkpoint_gone: errors.ProtocolError | None = None
    session: CheckpointRow | None = None
    session_from: str | None = None
    session_pending: tuple[PendingRequestRow, ...] = ()
    # A plain agent's turn without a stored session: its prior turns' messages, oldest first.
    history: tuple[Any, ...] = ()


async def follow(store: Store, user_id: str, req: CreateRequest) -> Followed:
    """Read what `req` follows: its previous response, or its conversation's turns."""
    if req.previous_response_id:
        return Followed(previous=await store.get_response(req.previous_response_id, user_id))
    if req.conversation_id:
        return Followed(conversation=tuple(await store.conversation_responses(user_id, req.conversation_id)))
    return Followed()


def previous_of(req: CreateRequest, followed: Followed) -> ResponseRow | None:
    """The response a new turn continues: 404 if it is missing, 409 while it (or a turn of the
    conversation) still runs; a conversation continues its last turn that did not stop."""
    if req.previous_response_id:
        prev = followed.previous
        if prev is None:
            raise errors.not_found(
                f"Previous response with id '{req.previous_response_id}' not found.",
                param="previous_response_id",
            )
        if prev.status not in TERMINAL_STATUSES:
            raise errors.conflict(
                f"Previous response '{prev.id}' is still {prev.status}; wait for it to finish "
                "(or cancel it) before continuing from it.",
                code="previous_response_in_progress",
            )
        return prev
    if req.conversation_id:
        prior = followed.conversation
        for r in prior:
            if r.status not in TERMINAL_STATUSES:
                raise errors.conflict(
                    f"Conversation '{req.conversation_id}' has a response in progress ({r.id}); "
                    "wait for it to finish before adding a turn.",
                    code="conversation_busy",
                )
        # A failed or cancelled turn's work was stopped: the next turn continues the last
        # turn that finished (its pending requests, its checkpoint).
        finished = [r for r in prior if r.status not in ABANDONED_STATUSES]
        return finished[-1] if finished else None
    return None


async def answered_earlier(
    store: Store,
    user_id: str,
    req: CreateRequest,
    prev: ResponseRow | None,
    rows: Sequence[PendingRequestRow],
    conversation: Sequence[ResponseRow],
) -> list[PendingRequestRow]:
    """The requests of the conversation's earlier turns that this input answers again and that
    were answered already. A conversation continues from its last turn (`prev`), but a request
    answered in it is the conversation's: answering it again is a 409 naming the response that
    answered it, not a 400 "unknown" (as with previous_response_id of the turn that asked)."""
    if prev is None or not req.conversation_id or req.previous_response_id:
        return []
    wanted = {str(i.get("call_id")) for i in req.input_items if _kind(i) == "function_call_output"}
    wanted |= {
        str(i.get("approval_request_id")) for i in req.input_items if _kind(i) == "mcp_approval_response"
    }
    wanted -= {r.call_id for r in rows}
    found: list[PendingRequestRow] = []
    if not wanted:
        return found
    for row in reversed(conversation[-MAX_HISTORY_RESPONSES:]):
        if row.id == prev.id:
            continue
        for p in await store.pending_requests(row.id, user_id):
            if p.call_id in wanted and p.status == "answered":
                found.append(p)
                wanted.discard(p.call_id)
        if not wanted:
            break
    return found


async def session_of(
    store: Store, user_id: str, req: CreateRequest, rid: str | None
) -> tuple[CheckpointRow | None, str | None]:
    """The session a plain agent's turn continues (and the response that left it), if stored."""
    if req.previous_response_id:
        row = await store.latest_checkpoint(
            user_id=user_id, response_id=req.previous_response_id, workflow_name=SESSION_ROWS
        )
        return row, req.previous_response_id
    if req.conversation_id:
        row = await store.latest_checkpoint(
            user_id=user_id,
            lineage=f"conv:{req.conversation_id}",
            workflow_name=SESSION_ROWS,
            skip_abandoned=True,
        )
        if row is not None and row.response_id == rid:
            row = None  # (a recovery of this very turn never stored one; be safe)
        return row, row.response_id if row is not None else None
    return None, None


async def checkpoint_of(
    store: Store, user_id: str, req: CreateRequest, rid: str | None, conversation: Sequence[ResponseRow]
) -> CheckpointRow | None:
    """The checkpoint a workflow turn continues from (None: a fresh start); 409 if it is gone."""
    if req.previous_response_id:
        cp = await store.latest_checkpoint(user_id=user_id, response_id=req.previous_response_id)
        if cp is None:
            raise errors.conflict(
                f"The workflow state of previous response '{req.previous_response_id}' is not "
                "available (no checkpoint is stored for it), so it cannot be continued; start a new "
                "response without previous_response_id.",
                code="checkpoint_not_found",
                param="previous_response_id",
            )
        return cp
    if req.conversation_id:
        prior = [r for r in conversation if r.id != rid and r.status not in ABANDONED_STATUSES]
        found = await store.latest_checkpoint(
            user_id=user_id, lineage=f"conv:{req.conversation_id}", skip_abandoned=True
        )
        if found is not None and found.response_id == rid:
            found = None  # recovery without own checkpoint: never happens (caller checks), be safe
        if prior and found is None:
            raise errors.conflict(
                f"The workflow state of conversation '{req.conversation_id}' is not available "
                "(no checkpoint is stored for it), so it cannot be continued; start a new conversation.",
                code="checkpoint_not_found",
                param="conversation",
            )
        return found
    return None
