"""The store layer: one SQL schema, two dialects (SQLite, PostgreSQL), the event outbox.

It knows nothing of HTTP or agent-framework; rows go in and out as plain records, and a
database that cannot be used comes out as `DatabaseUnavailable` (a `StoreError`), never as a
driver's exception.
"""

from .db._engine import BadDatabaseURL, ConnectionOptions, Database, normalize_url, open_database
from .db._pg_liveness import LIVE_MARK
from .db.notify import Notifier, Subscription
from .errors import DatabaseUnavailable, Unavailable, classify
from .ops.stats import StoreStats
from .queries._resume_reads import ResumeState
from .queries.conversations import AddedItem, ConversationRow
from .queries.webhooks import Delivery, DeliveryStatus
from .records import (
    ABANDONED_STATUSES,
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    Answers,
    AnswersTaken,
    CheckpointRow,
    Claims,
    ConversationDeleted,
    DuplicateResponse,
    EventRow,
    Finish,
    InputItemRow,
    ItemsTaken,
    JournalRow,
    LeaseLost,
    OutputItemRow,
    PendingRequestRow,
    ResponseRow,
    Runnable,
    SchemaOutOfDate,
    StoreError,
    WebhookEvent,
    Write,
)
from .store import Store
from .write._writer import WriteKind

__all__ = [
    "ABANDONED_STATUSES",
    "ACTIVE_STATUSES",
    "LIVE_MARK",
    "TERMINAL_STATUSES",
    "AddedItem",
    "Answers",
    "AnswersTaken",
    "BadDatabaseURL",
    "CheckpointRow",
    "Claims",
    "ConnectionOptions",
    "ConversationDeleted",
    "ConversationRow",
    "Database",
    "DatabaseUnavailable",
    "Delivery",
    "DeliveryStatus",
    "DuplicateResponse",
    "EventRow",
    "Finish",
    "InputItemRow",
    "ItemsTaken",
    "JournalRow",
    "LeaseLost",
    "Notifier",
    "OutputItemRow",
    "PendingRequestRow",
    "ResponseRow",
    "ResumeState",
    "Runnable",
    "SchemaOutOfDate",
    "Store",
    "StoreError",
    "StoreStats",
    "Subscription",
    "Unavailable",
    "WebhookEvent",
    "Write",
    "WriteKind",
    "classify",
    "normalize_url",
    "open_database",
]
