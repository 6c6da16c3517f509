"""The store's exceptions, and the one place that turns driver errors into them.

Job: the layers above the store never see a driver's exception for a database that cannot be
used (down, full, refusing connections, refusing our credentials or our TLS): every `Store`
method and every outbox write raises `DatabaseUnavailable` instead, with a `reason` from a
fixed set, a `message` fit for a client, a `retry_after` hint, and a `detail` (the driver's
own words, passwords masked) plus `advice` for the operator's log.

Invariant: `classify` only recognizes conditions that say nothing about the request itself;
a constraint violation, a bug in a statement or a lost lease is never "unavailable" (it would
be retried forever). Anything it does not recognize is left as it is.
"""

from __future__ import annotations

import re
import sqlite3
import ssl
from enum import StrEnum

__all__ = [
    "AnswersTaken",
    "ConversationDeleted",
    "CreationRefused",
    "DatabaseSetupError",
    "DatabaseUnavailable",
    "DuplicateResponse",
    "ItemsTaken",
    "LeaseLost",
    "SchemaOutOfDate",
    "StoreError",
    "Unavailable",
    "classify",
    "translate",
]


class DuplicateResponse(Exception):
    """A response with this id already exists."""


class CreationRefused(Exception):
    """A creation's write refused for what it takes (the caller answers its client): it
    committed nothing, and nothing is wrong with the database."""


class AnswersTaken(CreationRefused):
    """A creation's answers (`records.Answers`) found a request no longer pending: another
    response answered it first. The creation committed nothing."""

    def __init__(self, response_id: str, refused: list[str]) -> None:
        super().__init__(f"the request(s) {', '.join(refused)} were answered by another response")
        self.response_id = response_id
        self.refused = refused


class ItemsTaken(CreationRefused):
    """A creation's claims (`records.Claims`) found an item added by hand that another turn
    took meanwhile. The creation committed nothing."""

    def __init__(self, response_id: str) -> None:
        super().__init__(f"items added by hand that {response_id} claims were taken by another turn")
        self.response_id = response_id


class ConversationDeleted(CreationRefused):
    """A stored turn's creation found its conversation deleted since the turn read it (live, or
    absent: then created by another turn's first use), by a client or by retention, before the
    creation's write (`records.Claims`). The creation committed nothing."""

    def __init__(self, response_id: str, conversation_id: str) -> None:
        super().__init__(f"conversation {conversation_id} of {response_id} was deleted")
        self.response_id = response_id
        self.conversation_id = conversation_id


class LeaseLost(Exception):
    """The response is now owned by another process (its lease expired and was taken)."""

    def __init__(self, response_id: str) -> None:
        super().__init__(f"lease on response {response_id} was lost to another process")
        self.response_id = response_id


class StoreError(Exception):
    """A write the store could not commit; the run that produced it must stop."""


class SchemaOutOfDate(Exception):
    """The database schema is not at the revision this server needs."""


class DatabaseSetupError(Exception):
    """The database cannot be used as configured (found at start-up); the message says what to do."""


class Unavailable(StrEnum):
    """Why the database cannot be used right now (`DatabaseUnavailable.reason`)."""

    UNREACHABLE = "unreachable"  # refused, reset, timed out, name not resolved, server shutting down
    REFUSED = "refused"  # too many connections, a pooler's limit or refusal, server starting up
    AUTH = "auth_failed"  # password or token refused, client certificate required
    TLS = "tls"  # certificate not trusted, host name mismatch, TLS not offered
    FULL = "full"  # disk (or memory) full
    IO = "io_error"  # the database's storage fails (SQLite: disk I/O error, cannot open the file)
    BUSY = "busy"  # SQLite locked beyond its busy timeout; every pooled connection in use
    READ_ONLY = "read_only"  # a standby, or a failover in progress
    POOLER = "pooler"  # prepared statements through a transaction-mode pooler


_CLIENT_MESSAGES: dict[Unavailable, str] = {
    Unavailable.UNREACHABLE: "the database is unreachable; retry",
    Unavailable.REFUSED: "the database refused a connection (too many connections); retry",
    Unavailable.AUTH: "the database refused the server's credentials; retry later",
    Unavailable.TLS: "the server could not open a secure connection to the database; retry later",
    Unavailable.FULL: "the database is full; retry later",
    Unavailable.IO: "the database cannot read or write its storage; retry later",
    Unavailable.BUSY: "the database is busy; retry",
    Unavailable.READ_ONLY: "the database accepts no writes right now; retry",
    Unavailable.POOLER: "the database connection is misconfigured; retry later",
}
_RETRY_AFTER: dict[Unavailable, float] = {
    Unavailable.UNREACHABLE: 1.0,
    Unavailable.REFUSED: 1.0,
    Unavailable.BUSY: 1.0,
    Unavailable.READ_ONLY: 2.0,
}
_ADVICE: dict[Unavailable, str] = {
    Unavailable.UNREACHABLE: "check that the database is up and that its host and port are right",
    Unavailable.REFUSED: (
        "the server (or the pooler) has no connection left: lower DURABLE_RESPONSES_PG_POOL_SIZE or "
        "raise the server's max_connections (the README gives the formula for N replicas)"
    ),
    Unavailable.AUTH: (
        "check the user and password of DATABASE_URL (or PGPASSWORD, or the token provider "
        "DURABLE_RESPONSES_PG_TOKEN_COMMAND / DURABLE_RESPONSES_PG_TOKEN_PROVIDER)"
    ),
    Unavailable.TLS: (
        "check sslmode, sslrootcert (the CA that signed the server's certificate) and the host name "
        "the certificate names (sslmode=verify-full checks it)"
    ),
    Unavailable.FULL: "free space on the database's volume",
    Unavailable.IO: "check the database file's volume (permissions, mount, errors in the kernel log)",
    Unavailable.BUSY: "another process holds the database; it is retried",
    Unavailable.READ_ONLY: "the database is a standby or is failing over; point DATABASE_URL at the primary",
    Unavailable.POOLER: (
        "a pooler in transaction mode stands between the server and PostgreSQL: add "
        "?prepared_statements=false to DATABASE_URL (or remove ?prepared_statements=true)"
    ),
}


class DatabaseUnavailable(StoreError):
    """The database cannot be used right now; retrying later may succeed.

    `str(exc)` is `message`, safe to show a client; `detail` (the driver's error, passwords
    masked) and `advice` are for the operator's log.
    """

    def __init__(
        self,
        reason: Unavailable,
        detail: str = "",
        *,
        advice: str | None = None,
        message: str | None = None,
    ) -> None:
        self.reason = reason
        self.message = message or _CLIENT_MESSAGES[reason]
        self.detail = _redact(detail)
        self.advice = advice if advice is not None else _ADVICE[reason]
        self.retry_after = _RETRY_AFTER.get(reason, 5.0)
        super().__init__(self.message)

    def log_text(self) -> str:
        """One line for the operator: what happened, the driver's words, what to do."""
        parts = [self.message.split(";")[0]]
        if self.detail:
            parts.append(f"({self.detail})")
        if self.advice:
            parts.append(f"- {self.advice}")
        return " ".join(parts)

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.reason, self.detail, self.advice, self.message))


def _rebuild(reason: Unavailable, detail: str, advice: str, message: str) -> DatabaseUnavailable:
    return DatabaseUnavailable(reason, detail, advice=advice, message=message)


def _redact(text: str) -> str:
    text = re.sub(r"(://[^:/@\s]*):[^@\s]*@", r"\1:***@", text)
    return re.sub(r"(password=)\S+", r"\1***", text, flags=re.IGNORECASE)


# SQLSTATE (PostgreSQL) -> reason. Class 08 is "connection exception"; PgBouncer reports its
# own refusals ("no more connections allowed", "server login has been failing") as 08P01.
_SQLSTATES: dict[str, Unavailable] = {
    "08000": Unavailable.UNREACHABLE,
    "08003": Unavailable.UNREACHABLE,
    "08006": Unavailable.UNREACHABLE,
    "08001": Unavailable.UNREACHABLE,
    "08004": Unavailable.REFUSED,
    "08007": Unavailable.UNREACHABLE,
    "08P01": Unavailable.REFUSED,
    "28000": Unavailable.AUTH,
    "28P01": Unavailable.AUTH,
    "53000": Unavailable.BUSY,
    "53100": Unavailable.FULL,
    "53200": Unavailable.FULL,
    "53300": Unavailable.REFUSED,
    "53400": Unavailable.BUSY,
    "57P01": Unavailable.UNREACHABLE,
    "57P02": Unavailable.UNREACHABLE,
    "57P03": Unavailable.REFUSED,
    "58030": Unavailable.IO,
    "25006": Unavailable.READ_ONLY,
    "42P05": Unavailable.POOLER,  # prepared statement "__asyncpg_stmt_1__" already exists
    "26000": Unavailable.POOLER,  # prepared statement "__asyncpg_stmt_1__" does not exist
}
# SQLite primary result codes (`sqlite3.Error.sqlite_errorcode & 0xff`).
_SQLITE_CODES: dict[int, Unavailable] = {
    5: Unavailable.BUSY,  # SQLITE_BUSY: locked beyond the busy timeout
    6: Unavailable.BUSY,  # SQLITE_LOCKED
    7: Unavailable.FULL,  # SQLITE_NOMEM
    8: Unavailable.READ_ONLY,  # SQLITE_READONLY
    10: Unavailable.IO,  # SQLITE_IOERR: disk I/O error
    13: Unavailable.FULL,  # SQLITE_FULL: database or disk is full
    14: Unavailable.IO,  # SQLITE_CANTOPEN: unable to open database file
}
_SQLITE_MESSAGES: tuple[tuple[str, Unavailable], ...] = (
    ("database is locked", Unavailable.BUSY),
    ("database or disk is full", Unavailable.FULL),
    ("disk i/o error", Unavailable.IO),
    ("unable to open database file", Unavailable.IO),
    ("attempt to write a readonly database", Unavailable.READ_ONLY),
)
_UNREACHABLE_TEXT = (
    "connection is closed",
    "connection was closed",
    "connection reset",
    "broken pipe",
    # asyncpg, on a connection the server ended while an operation was on it
    "another operation is in progress",
)
# asyncpg's errors about its own connection's state, never about a statement or its values: the
# connection was cut under an operation (pg_terminate_backend, a restart, a reset), e.g.
# "InternalClientError: cannot switch to state 11; another operation (2) is in progress".
# (Its DataError, a value it cannot encode, is an InterfaceError too, and stays a bug.)
_ASYNCPG_CUT = frozenset({"ConnectionDoesNotExistError", "InternalClientError", "ProtocolError"})


# What to tell the operator (and the client) where a condition is narrower than its reason:
# a PostgreSQL that is shutting down refuses connections too, but not for want of connections.
_STARTING_OR_STOPPING = (
    "the database is starting up, shutting down or recovering and accepts no connection yet",
    "connections are retried until it does (a restart that does not end needs the database's own log)",
)
_ENDED = (
    "the database ended the connection",
    "a shutdown, a restart, a failover or pg_terminate_backend ended it; it is retried on a new connection",
)
_CONDITIONS: dict[str, tuple[str, str]] = {
    "57P03": _STARTING_OR_STOPPING,  # cannot_connect_now
    "57P01": _ENDED,  # admin_shutdown (also pg_terminate_backend)
    "57P02": _ENDED,  # crash_shutdown
}


def _condition(exc: BaseException) -> tuple[str, str] | None:
    """(what happened, advice) for a condition narrower than its reason, else None."""
    sqlstate = _sqlstate(exc)
    if sqlstate is not None:
        return _CONDITIONS.get(sqlstate)
    if _asyncpg_cut(exc) or "another operation is in progress" in str(exc):
        return _ENDED
    return None


def _asyncpg_cut(exc: BaseException) -> bool:
    cls = type(exc)
    return cls.__name__ in _ASYNCPG_CUT and cls.__module__.startswith("asyncpg")


def _one(exc: BaseException) -> Unavailable | None:
    """The reason `exc` itself (not its causes) names, if any."""
    if isinstance(exc, DatabaseUnavailable):
        return exc.reason
    if isinstance(exc, ssl.SSLError | ssl.CertificateError):
        return Unavailable.TLS
    sqlite_code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(sqlite_code, int) and sqlite_code & 0xFF in _SQLITE_CODES:
        return _SQLITE_CODES[sqlite_code & 0xFF]
    if isinstance(exc, sqlite3.OperationalError):
        text = str(exc).lower()
        for needle, reason in _SQLITE_MESSAGES:
            if needle in text:
                return reason
        return None
    sqlstate = _sqlstate(exc)
    if sqlstate is not None and sqlstate in _SQLSTATES:
        return _SQLSTATES[sqlstate]
    name = type(exc).__name__
    text = str(exc).lower()
    if name == "TimeoutError" and "queuepool limit" in text:  # sqlalchemy.exc.TimeoutError
        return Unavailable.BUSY
    if isinstance(exc, ConnectionError) and ("ssl" in text or "tls" in text):
        return Unavailable.TLS  # asyncpg: "server ... rejected SSL upgrade"
    if isinstance(exc, ConnectionError | TimeoutError):
        return Unavailable.UNREACHABLE
    if isinstance(exc, FileNotFoundError | PermissionError | IsADirectoryError):
        return None  # a file of ours (a certificate, a key): a configuration error
    if isinstance(exc, OSError) and exc.errno is not None:
        return Unavailable.UNREACHABLE  # no route to host, name not resolved, ...
    cut_text = any(t in text for t in _UNREACHABLE_TEXT)
    if _asyncpg_cut(exc) or (name in ("InterfaceError", "ConnectionDoesNotExistError") and cut_text):
        return Unavailable.UNREACHABLE
    return None


def _sqlstate(exc: BaseException) -> str | None:
    """PostgreSQL's SQLSTATE of `exc` itself (asyncpg: `sqlstate`; SQLAlchemy's adapter: `pgcode`)."""
    state = getattr(exc, "sqlstate", None) or getattr(exc, "pgcode", None)
    return state if isinstance(state, str) else None


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc`, then what it wraps: SQLAlchemy's `.orig`, `__cause__`, `__context__`."""
    seen: list[BaseException] = []
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 12:
        e = todo.pop(0)
        if any(e is s for s in seen):
            continue
        seen.append(e)
        orig = getattr(e, "orig", None)
        for nxt in (orig, e.__cause__, e.__context__):
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return seen


def classify(exc: BaseException) -> DatabaseUnavailable | None:
    """`exc` as `DatabaseUnavailable` when it (or what it wraps) says the database cannot be used."""
    if isinstance(exc, DatabaseUnavailable):
        return exc
    if isinstance(exc, LeaseLost | DuplicateResponse | SchemaOutOfDate):
        return None
    for e in _chain(exc):
        reason = _one(e)
        if reason is not None:
            condition = _condition(e)
            if condition is None:
                return DatabaseUnavailable(reason, f"{type(e).__name__}: {e}".strip())
            what, advice = condition
            return DatabaseUnavailable(
                reason, f"{type(e).__name__}: {e}".strip(), advice=advice, message=f"{what}; retry"
            )
    return None


# Transactions PostgreSQL aborted to let a concurrent one go on: worth running again at once.
_CONCURRENCY_SQLSTATES = frozenset({"40P01", "40001"})  # deadlock detected, serialization failure


def lost_to_concurrency(exc: BaseException) -> bool:
    """Whether `exc` (or what it wraps) is PostgreSQL aborting the transaction in favour of a
    concurrent one (a deadlock, a serialization failure): nothing is wrong, run it again."""
    return any(_sqlstate(e) in _CONCURRENCY_SQLSTATES for e in _chain(exc))


def translate(exc: BaseException) -> BaseException:
    """`classify(exc)`, or `exc` itself when it is not about the database's availability."""
    return classify(exc) or exc


def integrity_violation(exc: BaseException) -> bool:
    """Whether `exc` (or what it wraps) is a constraint the rows broke (a duplicate key): from
    SQLite's driver, PostgreSQL's (SQLSTATE class 23) or SQLAlchemy's wrapping of either."""
    import sqlite3

    from sqlalchemy.exc import IntegrityError

    return any(
        isinstance(e, IntegrityError | sqlite3.IntegrityError) or (_sqlstate(e) or "").startswith("23")
        for e in _chain(exc)
    )
