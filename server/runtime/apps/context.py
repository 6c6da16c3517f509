"""What an app may read about the request that started its run (Foundry headers, user).

Invariant: the values are those of the HTTP request that created the response; the run task
inherits them (asyncio copies the context into tasks). A run resumed by recovery has no HTTP
request: it sees `None`, except for the user id, which recovery restores from the store.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class RequestContext:
    user_id: str | None = None
    foundry_call_id: str | None = None  # `x-agent-foundry-call-id`: forward it on outbound Foundry calls
    session_id: str | None = None  # `x-agent-session-id`
    request_id: str | None = None  # `x-request-id`


_EMPTY = RequestContext()
_current: ContextVar[RequestContext | None] = ContextVar("durable_responses_request", default=None)


def request_context() -> RequestContext:
    """The context of the response being run (call it from inside your agent or executors)."""
    return _current.get() or _EMPTY


def set_request_context(ctx: RequestContext) -> None:
    _current.set(ctx)
