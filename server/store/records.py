"""Plain records the store reads and writes: no SQL, no I/O.

Invariant: a record mirrors one row (or one write) exactly; JSON columns stay JSON text here so
the hot path never re-serializes what it already serialized once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from .errors import (
    AnswersTaken,
    ConversationDeleted,
    DuplicateResponse,
    ItemsTaken,
    LeaseLost,
    SchemaOutOfDate,
    StoreError,
)

__all__ = [
    "ABANDONED_STATUSES",
    "ACTIVE_STATUSES",
    "TERMINAL_STATUSES",
    "Answers",
    "AnswersTaken",
    "CheckpointRow",
    "Claims",
    "ConversationDeleted",
    "DuplicateResponse",
    "EventRow",
    "Finish",
    "InputItemRow",
    "ItemsTaken",
    "JournalRow",
    "LeaseLost",
    "OutputItemRow",
    "PendingRequestRow",
    "ResponseRow",
    "SchemaOutOfDate",
    "StoreError",
    "StoredEvents",
    "Write",
]

# A claim of an item added by hand older than this whose response does not exist was never
# committed: the item is free again (claims made before a creation carried its own, `Claims`).
STALE_CLAIM_SECONDS = 60.0

ACTIVE_STATUSES = ("queued", "in_progress")
TERMINAL_STATUSES = ("completed", "failed", "cancelled", "incomplete")
# Ended without finishing their work: a conversation's next turn does not continue from them.
ABANDONED_STATUSES = ("failed", "cancelled")


@dataclass(slots=True)
class ResponseRow:
    id: str
    user_id: str
    status: str
    background: bool
    stream: bool
    delivery: str
    created_at: float
    completed_at: float | None
    previous_response_id: str | None
    conversation_id: str | None
    request: str
    request_hash: str
    error: str | None = None
    incomplete_details: str | None = None
    usage: str | None = None
    cancel_requested: bool = False
    lease_owner: str | None = None
    lease_expires_at: float | None = None
    recovery_count: int = 0
    app: str | None = None
    created_by: str | None = None
    trace_context: str | None = None  # JSON (see `_tables.responses`)
    app_version: str | None = None
    journal: str | None = None  # JSON: the journal's counts (see `_tables.responses`)


@dataclass(frozen=True)
class Runnable:
    """The stored responses a replica can run: per app name, the app versions it runs (its own
    and those it declares compatible). A response without a recorded version is anyone's.
    `by_app`: several apps are hosted, so the response's app must match as well."""

    versions: Mapping[str, tuple[str, ...]]
    by_app: bool = False


class EventRow(NamedTuple):
    """One committed event: its sequence number, type and JSON. A named tuple, not a frozen
    dataclass: one is made per event on every path (the sink's emit, every page a relay reads),
    and a frozen dataclass's `__init__` sets each field through `object.__setattr__` (measured,
    1,000 rows: 0.81 ms against 0.22 ms)."""

    seq: int
    type: str
    data: str


class StoredEvents(NamedTuple):
    """One row of `events` as stored (`_events` says how): a run of `size` consecutive events
    ending at `seq`, or one event. A write's `events` become these as its batch is rendered."""

    seq: int  # the last event's sequence number
    type: str  # one event's type; empty for a run of several
    data: str  # one event's JSON, or a run's lines; empty when `packed`
    size: int  # how many events
    packed: bytes | None  # `data`'s text compressed (zlib), or None


@dataclass(slots=True, frozen=True)
class OutputItemRow:
    output_index: int
    item_id: str
    status: str
    included: bool
    data: str


@dataclass(slots=True, frozen=True)
class InputItemRow:
    position: int
    item_id: str
    data: str


@dataclass(slots=True, frozen=True)
class CheckpointRow:
    checkpoint_id: str
    user_id: str
    lineage: str
    response_id: str
    workflow_name: str
    event_seq: int
    data: str
    created_at: float
    awaits_input: bool = False  # saved before its run delivered the request's input
    seq: int | None = None  # assigned by the database


@dataclass(slots=True, frozen=True)
class PendingRequestRow:
    response_id: str
    call_id: str
    user_id: str
    checkpoint_id: str
    status: str
    data: str
    answered_by: str | None = None


@dataclass(slots=True, frozen=True)
class Answers:
    """The pending requests of `response_id` (of `user_id`) that a creation answers: marked
    answered by the created response in the creation's own transaction, all of them or, when one
    is no longer pending, nothing at all (the creation fails with `AnswersTaken`)."""

    response_id: str
    user_id: str
    call_ids: tuple[str, ...]


@dataclass(slots=True, frozen=True)
class Claims:
    """What a stored turn takes of its conversation `conversation_id` (of `user_id`), in the
    creation's own transaction: the conversation itself, live (created there when the turn read
    it absent, a platform's own id used first; when it was deleted since the turn read it, by a
    client or by retention, the creation fails with `ConversationDeleted`), and the items added
    by hand, by `seq`, that the turn starts its input with: marked taken by the created
    response, all of them or, when another turn took one meanwhile, nothing at all (the creation
    fails with `ItemsTaken`)."""

    user_id: str
    conversation_id: str
    seqs: tuple[int, ...] = ()


@dataclass(slots=True, frozen=True)
class JournalRow:
    """One record of a response's journal (`_tables.journal`): a model call's updates when its
    stream ended, or a tool call's intent (before it runs) or its result (`state` "done").

    Rows are only appended: the newest row of a (checkpoint, executor, place) is the one that
    counts, so a write retried after a commit in doubt does no harm."""

    checkpoint_id: str  # the checkpoint the superstep started from ("" for a plain agent)
    executor: str  # the executor (or plain agent) that made the call
    place: str  # "model:<n>" (the n-th model call of the scope) or "tool:<call_id>"
    state: str  # "done" or "intent" (tool calls only)
    digest: str  # of the call's input: a record replays only for the same input
    data: str  # JSON: the model call's updates, or the tool's result
    created_at: float


@dataclass(slots=True, frozen=True)
class Finish:
    """The terminal transition of a response, written with its terminal event."""

    status: str
    completed_at: float | None
    error: str | None = None
    incomplete_details: str | None = None
    usage: str | None = None


@dataclass(slots=True, frozen=True)
class WebhookEvent:
    """A webhook event (OpenAI's payload, `data` exactly the body sent) and the endpoints it
    goes to: committed with the terminal event of the response it reports."""

    event_id: str
    response_id: str
    type: str
    created_at: float
    data: str
    endpoints: tuple[str, ...]


@dataclass(slots=True)
class Write:
    """One unit of the outbox: everything one response commits together.

    `owner` fences the write: it commits only while that process holds the response's lease,
    so a process that lost its lease can never append to a response another process drives.
    """

    response_id: str
    owner: str | None
    events: list[EventRow] = field(default_factory=list)
    items: list[OutputItemRow] = field(default_factory=list)
    checkpoint: CheckpointRow | None = None
    pending: list[PendingRequestRow] = field(default_factory=list)
    create: tuple[ResponseRow, list[InputItemRow]] | None = None  # insert the response first
    answers: Answers | None = None  # a creation's: the pending requests it answers
    claims: Claims | None = None  # a creation's: the items added by hand it takes
    status: str | None = None  # a non-terminal status change (queued -> in_progress)
    # The response's token usage so far (its Response `usage` JSON), set when it changed: kept on
    # the response row with the write, so recovery (and a retrieve meanwhile) sees it.
    usage: str | None = None
    finish: Finish | None = None
    # (user id, lineage): keep only the newest checkpoint of this response and of its lineage
    # (lineage None: leave the lineage's other checkpoints alone).
    prune: tuple[str, str | None] | None = None
    lease_until: float | None = None
    # A background response's end: its webhook events (the end's, and one more when the response
    # waits for a person), committed in the same transaction.
    webhooks: tuple[WebhookEvent, ...] = ()
    # Journal records of model and tool calls, and the deletion of records no re-run needs:
    # `journal_keep` deletes the response's records of every checkpoint but this one (with the
    # checkpoint that supersedes them), `journal_clear` all of them (with the end).
    journal: list[JournalRow] = field(default_factory=list)
    journal_keep: str | None = None
    journal_clear: bool = False
    # The journal's counts so far (JSON), set when they changed: kept on the response row.
    journal_stats: str | None = None
    # Someone waits on this write (a first output, a creation): the writer commits it at once
    # instead of waiting its group-commit window for more.
    urgent: bool = False
