"""WebSocket mode on `/responses` (and `/v1/responses`), as Open Responses 2026-04-24 defines it.

A client opens a WebSocket on the same path as `POST /responses` and sends `response.create`
events (`WebSocketResponseCreateEvent`: the create body plus `"type": "response.create"`,
without `stream`, `stream_options` or `background`). Each starts a turn whose events come back
as text messages, one event per message, the same JSON as the SSE stream's `data:`. A message
the server refuses gets the `WebSocketErrorEvent` envelope (`{"type": "error", "status": <HTTP
status>, "error": {"type", "code", "message", "param"}}`) and the socket stays open for the
next one.

Invariants:
- A turn is a foreground streamed response, created exactly as `POST /responses` with
  `"stream": true` creates one (`creating.create_response`: same auth, tenancy, admission,
  continuations), and its messages are the committed rows the SSE relay would send (commit
  before send): a client that lost the socket reads the rest with
  `GET /responses/{id}?stream=true&starting_after=N`.
- One turn at a time per socket: a `response.create` while a turn runs is refused (409
  `response_already_in_flight`); the running turn is not disturbed. Turns run one after the
  other on one socket, chained by `previous_response_id` as over HTTP.
- The caller is resolved once, at the upgrade, from its headers (a refused key is an HTTP 401
  answer to the upgrade, not a socket); every turn of the socket is that caller's. A browser
  page of another origin than the server's own or the CORS origins gets a 403 (`check_origin`).
- The socket closing before a turn's end cancels the turn, as an SSE client's disconnect does;
  when the server is stopping (SIGTERM: uvicorn closes every socket) the turn goes on to its
  end within the shutdown grace period, as a foreground SSE stream does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.responses import JSONResponse
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect, WebSocketDisconnected

from ..observability import metrics, tracing
from ..protocol import errors
from ..protocol.events import TERMINAL_EVENT_TYPES
from ..protocol.request import CreateRequest, parse_create_request
from ..protocol.sse import dumps
from ..runtime.faults import client_error
from ..runtime.host import Host
from ..runtime.turns.creation import Created
from .creating import LARGE_BODY_BYTES, create_response, decode_json
from .kit import state_of
from .settings import HttpSettings
from .telemetry import route_of

log = logging.getLogger("durable_responses.http.websocket")

CLIENT_EVENT = "response.create"
# HTTP-only fields a `response.create` must not carry (the schema's `x-openresponses-disallowed`).
DISALLOWED = {
    "stream": "every response.create is streamed back on the socket",
    "stream_options": "every response.create is streamed back on the socket",
    "background": "WebSocket turns are foreground; for a background response use POST /v1/responses "
    "with background=true",
}
# What a message may weigh beyond the body limit and still be answered with a 413 envelope; a
# larger one is refused by the WebSocket protocol itself (close code 1009, message too big).
WS_SIZE_MARGIN = 64 * 1024

_GONE = (WebSocketDisconnect, WebSocketDisconnected)
_PROPAGATOR = TraceContextTextMapPropagator()


def ws_max_size(settings: HttpSettings) -> int:
    """The largest message uvicorn takes (its `ws_max_size`)."""
    return settings.max_body_bytes + WS_SIZE_MARGIN


def error_event(exc: errors.ProtocolError) -> dict[str, Any]:
    """The `WebSocketErrorEvent` envelope of a refusal (its `code` is never null)."""
    error = exc.body()["error"]
    if error.get("code") is None:
        error["code"] = error.get("type") or "error"
    return {"type": "error", "status": exc.status, "error": error}


def _size_exceeds(raw: str | bytes, limit: int) -> bool:
    """Whether a message is over `limit` bytes (a text message counted in UTF-8, as sent)."""
    if len(raw) > limit:
        return True
    # A character is at most 4 bytes: most texts are decided without encoding them.
    return isinstance(raw, str) and len(raw) * 4 > limit and len(raw.encode()) > limit


def parse_client_event(raw: str | bytes) -> CreateRequest:
    """A `response.create` message as the create request it carries (400 otherwise)."""
    event = decode_json(raw, "The message")
    if not isinstance(event, dict):
        raise errors.bad_request(
            'A client event is a JSON object with a "type": send {"type": "response.create", ...}.',
            code="invalid_type",
        )
    kind = event.get("type")
    if kind != CLIENT_EVENT:
        if kind is None:
            raise errors.bad_request(
                'The message has no "type": send {"type": "response.create", ...}.',
                param="type",
                code="missing_required_parameter",
            )
        raise errors.bad_request(
            f"Unknown client event type {str(kind)[:64]!r}: WebSocket mode takes response.create events.",
            param="type",
            code="unknown_event_type",
        )
    for name, why in DISALLOWED.items():
        if name in event:
            raise errors.bad_request(
                f"{name} must not be sent in a WebSocket response.create: {why}.",
                param=name,
                code="unsupported_parameter",
            )
    body = {k: v for k, v in event.items() if k != "type"}
    body["stream"] = True
    return parse_create_request(body)


def check_origin(headers: Mapping[str, str], allowed: Sequence[str]) -> None:
    """403 for an upgrade a browser page of another origin asked for.

    A WebSocket is not subject to CORS: without this check any page a user visits could drive
    a server on their machine or network (the browser sends its cookies, and a server without
    keys asks for nothing else). Browsers always send `Origin`; other clients (the SDKs, the
    `websockets` package) send none unless told to. Allowed: no `Origin`, the server's own
    origin (same host and port), and what `DURABLE_RESPONSES_CORS_ORIGINS` allows over HTTP.
    """
    origin = headers.get("origin")
    if origin is None or "*" in allowed or origin in allowed:
        return
    host = headers.get("host", "")
    if host and origin.split("://", 1)[-1].rstrip("/") == host:
        return
    raise errors.ProtocolError(
        403,
        f"WebSocket upgrade from origin {origin[:128]!r} refused: the server accepts browser pages of "
        "its own origin and of DURABLE_RESPONSES_CORS_ORIGINS only.",
        type="permission_error",
        code="origin_not_allowed",
    )


async def websocket_endpoint(ws: WebSocket) -> None:
    """A socket on `/responses`: its caller resolved once at the upgrade, then its turns."""
    state = state_of(ws)
    try:
        check_origin(ws.headers, state.settings.cors_origins)
        user = state.auth.user_of(ws.headers)
    except errors.ProtocolError as exc:
        metrics.WEBSOCKET_CONNECTIONS.inc(outcome="denied")
        await _deny(ws, exc)
        return
    metrics.WEBSOCKET_CONNECTIONS.inc(outcome="accepted")
    await ws.accept()
    await _Socket(state.host, state.settings, ws, user).serve()


# The WebSocket route on `/responses` (beside the HTTP routes of the same path).
WEBSOCKET_ROUTES = [WebSocketRoute("/responses", websocket_endpoint)]


async def _deny(ws: WebSocket, exc: errors.ProtocolError) -> None:
    """Refuse the upgrade with the HTTP error an HTTP request would get; where the server cannot
    answer an upgrade with a response, accept, send the envelope and close (policy violation)."""
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        await ws.send_denial_response(JSONResponse(exc.body(), status_code=exc.status))
        return
    await ws.accept()
    with contextlib.suppress(*_GONE):
        await ws.send_text(dumps(error_event(exc)))
        await ws.close(code=1008)


class _Socket:
    """One accepted socket: reads client events, runs one turn at a time, sends its events."""

    def __init__(self, host: Host, settings: HttpSettings, ws: WebSocket, user: str) -> None:
        self._host = host
        self._settings = settings
        self._ws = ws
        self._user = user
        self._send_lock = asyncio.Lock()
        self._turns: set[asyncio.Task[None]] = set()
        # Whether the socket is closed (nothing more is sent on it).
        self._gone = False
        # Whether a turn's terminal event is still to be sent (cleared just before it is sent:
        # a client that saw it may start the next turn at once).
        self._busy = False

    async def serve(self) -> None:
        try:
            while True:
                message = await self._ws.receive()
                if message["type"] == "websocket.disconnect":
                    return
                raw = message.get("text")
                if raw is None:
                    raw = message.get("bytes") or b""
                started = await self._create(raw)
                if started is not None:
                    created, span = started
                    self._busy = True
                    task = asyncio.create_task(
                        self._turn(created, span), name=f"ws-turn-{created.response_id}"
                    )
                    self._turns.add(task)
                    task.add_done_callback(self._turns.discard)
        finally:
            self._gone = True
            if self._host.accepting:
                # The client went away: a turn still running ends its stream, which cancels
                # its (foreground) run, as an SSE client's disconnect does.
                for task in list(self._turns):
                    task.cancel()
            # Else the server is stopping (uvicorn closes every socket, 1012): a running turn
            # goes on to its end within the shutdown grace period, as a foreground SSE stream
            # does, its events committed for the client to read over HTTP.
            for task in list(self._turns):
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def _span(self) -> trace.Span | None:
        """A turn's span (tracing on): as a POST's request span, it continues the caller's
        `traceparent` (the upgrade's) and is the parent of the response's run span."""
        if not tracing.enabled():
            return None
        carrier = {k: v for k in ("traceparent", "tracestate") if (v := self._ws.headers.get(k))}
        route = route_of(self._ws.url.path)
        return tracing.tracer().start_span(
            f"WebSocket {route}",
            context=_PROPAGATOR.extract(carrier),
            kind=SpanKind.SERVER,
            attributes={
                "http.route": route,
                "url.path": self._ws.url.path,
                "url.scheme": self._ws.url.scheme,
            },
        )

    async def _create(self, raw: str | bytes) -> tuple[Created, trace.Span | None] | None:
        """The turn a message starts (and its span), or None after sending the error envelope
        that refuses it."""
        span = self._span()
        with trace.use_span(span, end_on_exit=False) if span is not None else contextlib.nullcontext():
            created = await self._created(raw, span)
        if created is None:
            if span is not None:
                span.end()
            return None
        return created, span

    async def _created(self, raw: str | bytes, span: trace.Span | None) -> Created | None:
        try:
            if _size_exceeds(raw, self._settings.max_body_bytes):
                raise errors.payload_too_large(self._settings.max_body_bytes)
            if len(raw) > LARGE_BODY_BYTES:
                # As for a large POST body: the event loop serves other streams meanwhile.
                req = await asyncio.to_thread(parse_client_event, raw)
            else:
                req = parse_client_event(raw)
            if self._busy:
                raise errors.conflict(
                    "A response is already in progress on this socket: wait for its terminal event "
                    "(response.completed, .failed or .incomplete), or open another WebSocket.",
                    code="response_already_in_flight",
                )
            created = await create_response(
                self._host, self._user, req, self._ws.headers, default_session=self._settings.agent_session_id
            )
        except errors.ProtocolError as exc:
            refusal = exc
        except Exception as exc:
            unavailable = client_error(exc)
            if unavailable is None:
                log.exception("unhandled error on a WebSocket response.create")
            refusal = unavailable or errors.server_error()
        else:
            metrics.WEBSOCKET_MESSAGES.inc(outcome="created")
            if span is not None:
                span.set_attribute("durable_responses.response_id", created.response_id)
            return created
        metrics.WEBSOCKET_MESSAGES.inc(outcome=str(refusal.status))
        if span is not None:
            span.set_attribute("http.response.status_code", refusal.status)
            if refusal.status >= 500:
                span.set_status(Status(StatusCode.ERROR))
        await self._send_error(refusal)
        return None

    async def _turn(self, created: Created, span: trace.Span | None) -> None:
        """Send the turn's committed events, one message each, up to its terminal event."""
        try:
            await self._relay(created)
        finally:
            if span is not None:
                span.end()

    async def _relay(self, created: Created) -> None:
        rid = created.response_id
        last = -1
        ended = False
        try:
            async with contextlib.aclosing(self._host.stream_created(created).rows()) as rows:
                async for batch in rows:
                    async with self._send_lock:
                        for row in batch:
                            if row.type in TERMINAL_EVENT_TYPES:
                                self._busy = False
                                ended = True
                            if not self._gone:
                                await self._send(row.data)
                            last = row.seq
        except _GONE:
            return  # the client went away: closing the stream cancelled the run
        except Exception:
            log.exception("a WebSocket turn of %s failed", rid)
        finally:
            if not ended:
                self._busy = False
        if not ended:
            # The stream stopped before the end (the database failed, the server is stopping);
            # what was sent is committed, and the rest can be read over HTTP.
            await self._send_error(
                errors.unavailable(
                    f"The events of response {rid} stopped before its end. Read the rest with "
                    f"GET /v1/responses/{rid}?stream=true&starting_after={last}.",
                    retry_after=1.0,
                )
            )

    async def _send(self, text: str) -> None:
        """Send a message; when the socket is gone while the server stops, drop it (the turn
        goes on: see `serve`), else raise."""
        try:
            await self._ws.send_text(text)
        except _GONE:
            self._gone = True
            if self._host.accepting:
                raise

    async def _send_error(self, exc: errors.ProtocolError) -> None:
        if self._gone:
            return
        with contextlib.suppress(*_GONE):
            async with self._send_lock:
                await self._ws.send_text(dumps(error_event(exc)))
