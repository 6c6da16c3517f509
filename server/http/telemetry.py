"""HTTP telemetry: a span per request (continuing the caller's W3C `traceparent`) and the
request metrics, as one ASGI middleware.

Invariants:
- Tracing off: no span, no header parsing; the metrics cost a clock read and two increments.
- Labels are route templates (`/v1/responses/{id}`), never a path as sent: an id or an
  unknown path cannot grow the metrics without bound (unknown paths are `other`).
- Health and metrics scrapes are counted but never traced (they would drown the traces).
"""

from __future__ import annotations

import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..observability import metrics, tracing

_PROPAGATOR = TraceContextTextMapPropagator()
_UNTRACED = frozenset({"/readiness", "/liveness", "/metrics", "/ui"})
# Path segments that are route words, not ids.
_WORDS = frozenset(
    {"responses", "conversations", "items", "models", "cancel", "input_items", "compact", "input_tokens"}
    | {"admin", "events", "stream", "reply", "overview"}
)
_ROOTS = frozenset({"responses", "conversations", "models", "admin"})


def route_of(path: str) -> str:
    """The route template of `path` (ids as `{id}`); `other` for what no route serves."""
    prefix = ""
    if path == "/v1" or path.startswith("/v1/"):
        prefix, path = "/v1", path[3:]
    parts = [p for p in path.split("/") if p]
    if not parts:
        return prefix or "/"
    head = parts[0]
    if head in ("readiness", "liveness", "metrics") and len(parts) == 1 and not prefix:
        return "/" + head
    if head == "ui" and not prefix:
        return "/ui"
    if head not in _ROOTS or len(parts) > 5:
        return "other"
    return prefix + "/" + "/".join(p if p in _WORDS else "{id}" for p in parts)


class HttpTelemetry:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method = scope["method"]
        route = route_of(scope["path"])
        started = time.perf_counter()
        answered: list[int] = []
        span: trace.Span | None = None

        async def send_first(message: Message) -> None:
            if message["type"] == "http.response.start" and not answered:
                status = int(message["status"])
                answered.append(status)
                metrics.HTTP_SECONDS.observe(time.perf_counter() - started, method=method, route=route)
                metrics.HTTP_REQUESTS.inc(method=method, route=route, status=str(status))
                if span is not None:
                    span.set_attribute("http.response.status_code", status)
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
            await send(message)

        if not tracing.enabled() or route in _UNTRACED:
            try:
                await self.app(scope, receive, send_first)
            finally:
                if not answered:
                    metrics.HTTP_REQUESTS.inc(method=method, route=route, status="none")
            return
        carrier = _carrier(scope)
        parent = _PROPAGATOR.extract(carrier)
        attributes: dict[str, Any] = {
            "http.request.method": method,
            "http.route": route,
            "url.path": scope["path"],
            "url.scheme": scope.get("scheme", "http"),
        }
        with tracing.tracer().start_as_current_span(
            f"{method} {route}", context=parent, kind=SpanKind.SERVER, attributes=attributes
        ) as current:
            span = current
            try:
                await self.app(scope, receive, send_first)
            finally:
                if not answered:
                    metrics.HTTP_REQUESTS.inc(method=method, route=route, status="none")


def _carrier(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        if name in (b"traceparent", b"tracestate"):
            out[name.decode("latin-1")] = value.decode("latin-1")
    return out
