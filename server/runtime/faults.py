"""What a client is told when the database cannot be used: a 503 with `Retry-After`.

Job: the HTTP layer never sees the store's exceptions (it may not import the store); it asks
here whether an error means "the database is down, unreachable or full", and gets the 503 to
answer (`Retry-After`, `x-should-retry: true`: the openai SDKs retry it by themselves), or
None for anything else (a bug stays a 500).

Invariant: nothing here logs. The store's `DatabaseHealth` says in the log when the database
goes down, stays down and comes back, once per change: a traceback per request helps nobody.
"""

from __future__ import annotations

import math

from ..protocol import errors
from ..store import DatabaseUnavailable, Unavailable, classify

# What the client can do about each condition, after "retry in N s".
_WHAT_TO_DO: dict[Unavailable, str] = {
    Unavailable.FULL: "the operator must free space on the database's volume",
    Unavailable.AUTH: "the operator must fix the server's database credentials",
    Unavailable.TLS: "the operator must fix the server's TLS settings for its database",
    Unavailable.POOLER: "the operator must fix the server's database URL",
}


def database_error(exc: BaseException) -> DatabaseUnavailable | None:
    """`exc` as the database's unavailability, or None when it is about something else."""
    return classify(exc)


def client_error(exc: BaseException) -> errors.ProtocolError | None:
    """The 503 for an error that means the database cannot be used now, else None."""
    unavailable = classify(exc)
    if unavailable is None:
        return None
    seconds = max(1, math.ceil(unavailable.retry_after))
    why = unavailable.message.split(";")[0]
    extra = _WHAT_TO_DO.get(unavailable.reason)
    message = (
        f"The server cannot use its database right now ({why}). Retry in {seconds} s"
        + (f"; {extra}" if extra else "")
        + ". Nothing was lost: a POST retried with the same Idempotency-Key is not created twice, "
        "and a stream resumes where it stopped with Last-Event-ID."
    )
    return errors.database_unavailable(message, retry_after=seconds)
