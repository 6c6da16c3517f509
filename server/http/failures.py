"""How an HTTP request that fails is answered: exception handlers by class, and the middleware
for everything no handler names.

Invariants:
- Every error has the body `{"error": {"message", "type", "param", "code"}}`.
- A database that cannot be used is a 503 with `Retry-After` and `x-should-retry: true`
  (`runtime.faults.client_error`), never a 500; an unexpected error is a 500 whose POST the
  SDKs are told not to retry (a retried POST could create the response twice).
- A client that went away mid-body gets a 499 nobody reads, and no error is logged.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..protocol import errors
from ..runtime.faults import client_error

log = logging.getLogger("durable_responses.http")


def error_response(exc: errors.ProtocolError, headers: dict[str, str] | None = None) -> JSONResponse:
    h = dict(headers or {})
    # The openai SDKs retry 409 and 5xx unless told not to: none of these gets better by itself.
    if exc.status in (400, 401, 404, 409, 413, 422, 501):
        h.setdefault("x-should-retry", "false")
    if exc.retry_after is not None:
        # Whole seconds (RFC 9110); the openai SDKs honour both headers.
        h["retry-after"] = str(max(1, math.ceil(exc.retry_after)))
        h["x-should-retry"] = "true"
    return JSONResponse(exc.body(), status_code=exc.status, headers=h)


async def protocol_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, errors.ProtocolError)
    return error_response(exc)


async def client_gone(request: Request, exc: Exception) -> Response:
    # The client went away mid-body: nobody reads the answer, and it is not our error.
    log.info("client disconnected mid-body: %s %s", request.method, request.url.path)
    return Response(status_code=499)


async def no_route(request: Request, exc: Exception) -> Response:
    return error_response(errors.not_found(f"No route for {request.method} {request.url.path}."))


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    allowed = ", ".join(sorted(allowed_methods(request.app.routes, request.scope)))
    return error_response(
        errors.ProtocolError(405, f"Method {request.method} not allowed here; allowed: {allowed}."),
        {"allow": allowed},
    )


HANDLERS = {
    errors.ProtocolError: protocol_error,
    ClientDisconnect: client_gone,
    404: no_route,
    405: method_not_allowed,
}


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> set[str]:
    """Every method some route serves at this request's path (a 405's `Allow`): the path may
    have several routes, one per method (`GET` and `DELETE /responses/{id}`)."""
    methods: set[str] = set()
    for route in routes:
        match, child = route.matches(scope)
        if match == Match.NONE:
            continue
        if isinstance(route, Mount):
            methods |= allowed_methods(route.routes, {**scope, **child})
        elif isinstance(route, Route) and route.methods:
            methods |= route.methods
    return methods


def unexpected(exc: Exception, method: str) -> errors.ProtocolError:
    """The answer to an exception no handler names: 503 when the database cannot be used
    (the store's health log says it once per change: no traceback per request), else 500."""
    unavailable = client_error(exc)
    if unavailable is not None:
        return unavailable
    return errors.server_error()


class Unexpected:
    """Innermost middleware: an exception no handler names, raised before the response
    started, becomes its JSON error (`unexpected`); after the start it propagates."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if started:
                raise
            method = scope.get("method", "")
            answer = unexpected(exc, method)
            if answer.status >= 500 and answer.retry_after is None:
                log.exception("unhandled error on %s %s", method, scope.get("path", ""))
            # A retried POST could create the response twice: tell SDKs not to retry it.
            retried = method == "POST" and answer.retry_after is None
            no_retry = {"x-should-retry": "false"} if retried else None
            await error_response(answer, no_retry)(scope, receive, send)
