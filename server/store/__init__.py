"""The store layer: one SQL schema, two dialects (SQLite, PostgreSQL), the event outbox.

It knows nothing of HTTP or agent-framework; rows go in and out as plain records.
"""

from ._engine import BadDatabaseURL, Database, normalize_url, open_database
from .conversations import AddedItem, ConversationRow
from .notify import Notifier, Subscription
from .records import (
    ABANDONED_STATUSES,
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    CheckpointRow,
    DuplicateResponse,
    EventRow,
    Finish,
    InputItemRow,
    LeaseLost,
    OutputItemRow,
    PendingRequestRow,
    ResponseRow,
    SchemaOutOfDate,
    StoreError,
    WebhookEvent,
    Write,
)
from .store import Store
from .webhooks import Delivery, DeliveryStatus

__all__ = [
    "ABANDONED_STATUSES",
    "ACTIVE_STATUSES",
    "TERMINAL_STATUSES",
    "AddedItem",
    "BadDatabaseURL",
    "CheckpointRow",
    "ConversationRow",
    "Database",
    "Delivery",
    "DeliveryStatus",
    "DuplicateResponse",
    "EventRow",
    "Finish",
    "InputItemRow",
    "LeaseLost",
    "Notifier",
    "OutputItemRow",
    "PendingRequestRow",
    "ResponseRow",
    "SchemaOutOfDate",
    "Store",
    "StoreError",
    "Subscription",
    "WebhookEvent",
    "Write",
    "normalize_url",
    "open_database",
]
