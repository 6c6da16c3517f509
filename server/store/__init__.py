"""The store layer: one SQL schema, two dialects (SQLite, PostgreSQL), the event outbox.

It knows nothing of HTTP or agent-framework; rows go in and out as plain records.
"""

from ._engine import BadDatabaseURL, Database, normalize_url, open_database
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
    Write,
)
from .store import Store

__all__ = [
    "ABANDONED_STATUSES",
    "ACTIVE_STATUSES",
    "TERMINAL_STATUSES",
    "BadDatabaseURL",
    "CheckpointRow",
    "Database",
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
    "Write",
    "normalize_url",
    "open_database",
]
