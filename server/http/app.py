"""The ASGI app: routes for the Responses protocol at `/` and under `/v1`, health, auth.

Invariants:
- Every route resolves the caller's user id first (`x-agent-user-id`, else the API key's
  principal) and passes it to every read and write: another tenant's response is a 404.
- Errors always have the body `{"error": {"message", "type", "param", "code"}}`.
- SSE frames are pre-formatted `event:`/`id:`/`data:` blocks read from committed rows, batched
  into one write per read; `sse.py` adds keep-alive comment lines and watches for
  disconnects.
- This layer never touches SQL: it calls the runtime's `Host`.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import Scope

from ..observability.logs import bind_response
from ..protocol import errors
from ..protocol.ids import idempotent_response_id, is_valid_idempotency_key, is_valid_response_id
from ..protocol.request import (
    parse_list_params,
    parse_stream_params,
)
from ..protocol.response import deleted_body
from ..runtime.creation import Created
from ..runtime.faults import client_error
from ..runtime.host import Host
from ..runtime.relay import ResponseStream
from .admin import ops_routes
from .auth import Authenticator
from .conversations import conversation_routes
from .creating import LARGE_BODY_BYTES, create_response, parse_create_body, session_of
from .kit import Kit
from .platform import PlatformHeaders, server_version
from .settings import HttpSettings
from .sse import StreamResponse, sse_response
from .surface import surface_routes
from .telemetry import HttpTelemetry
from .websocket import websocket_routes

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


Handler = Callable[[Request], Awaitable[Response]]


def create_app(host: Host, settings: HttpSettings | None = None, *, manage_host: bool = True) -> Starlette:
    cfg = settings or HttpSettings()
    auth = Authenticator(cfg.api_key, cfg.principal_keys)

    def user_of(request: Request) -> str:
        return auth.user_of(request.headers)

    def response_id_of(request: Request) -> str:
        rid: str = request.path_params["response_id"]
        if not is_valid_response_id(rid):
            # Not an id we could have issued: same answer as a missing one.
            raise errors.not_found(f"Response with id '{rid[:128]}' not found.", param="response_id")
        bind_response(rid)
        return rid

    def guarded(handler: Handler) -> Handler:
        async def wrapped(request: Request) -> Response:
            try:
                return await handler(request)
            except errors.ProtocolError as exc:
                return error_response(exc)
            except ClientDisconnect:
                # The client went away mid-body: nobody reads the answer, and it is not our error.
                log.info("client disconnected mid-body: %s %s", request.method, request.url.path)
                return Response(status_code=499)
            except Exception as exc:
                unavailable = client_error(exc)
                if unavailable is not None:
                    # The store's health log says it once per change; no traceback per request.
                    return error_response(unavailable)
                log.exception("unhandled error on %s %s", request.method, request.url.path)
                # A retried POST could create the response twice: tell SDKs not to retry it.
                no_retry = {"x-should-retry": "false"} if request.method == "POST" else None
                return error_response(errors.server_error(), no_retry)

        return wrapped

    async def read_body(request: Request) -> bytes:
        """The raw body of a JSON request: 413 beyond `max_body_bytes`, 415 if not JSON."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > cfg.max_body_bytes:
            raise errors.payload_too_large(cfg.max_body_bytes)
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > cfg.max_body_bytes:
                raise errors.payload_too_large(cfg.max_body_bytes)
            chunks.append(chunk)
        raw = b"".join(chunks)
        ctype = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
        if ctype not in ("application/json", "", "text/json") and not ctype.endswith("+json"):
            raise errors.ProtocolError(
                415,
                f"Unsupported content type {ctype!r}: send application/json.",
                code="unsupported_media_type",
            )
        return raw

    def sse(stream: ResponseStream) -> StreamResponse:
        return sse_response(stream, keepalive=cfg.keepalive_seconds)

    async def create(request: Request) -> Response:
        user = user_of(request)
        raw = await read_body(request)
        if len(raw) > LARGE_BODY_BYTES:
            # ~3 us of CPU per input item: seconds for a large input, in which the event loop
            # would serve no stream, renew no lease and answer no /liveness.
            req = await asyncio.to_thread(parse_create_body, raw)
        else:
            req = parse_create_body(raw)  # no thread hop: a small request's first byte waits on it
        chosen = request.headers.get("x-agent-response-id")
        if chosen is not None and not is_valid_response_id(chosen):
            raise errors.bad_request(
                "Invalid x-agent-response-id header: use resp_ followed by letters, digits, _ or -.",
                param="x-agent-response-id",
            )
        key = request.headers.get("idempotency-key")
        if chosen is None and key is not None:
            if not is_valid_idempotency_key(key):
                raise errors.bad_request(
                    "Invalid Idempotency-Key header: use 1 to 255 printable characters.",
                    param="Idempotency-Key",
                )
            # A retry with the same key gets the same response: the key names the response id.
            chosen = idempotent_response_id(user, key)
        else:
            key = None
        created = await create_response(
            host,
            user,
            req,
            request.headers,
            default_session=cfg.agent_session_id,
            response_id=chosen,
            idempotency_key=key is not None,
        )
        response = await respond(request, created)
        session = session_of(req, request.headers, cfg.agent_session_id)
        if session:
            response.headers["x-agent-session-id"] = session
        return response

    async def respond(request: Request, created: Created) -> Response:
        req = created.request
        if req.stream:
            return sse(host.stream_created(created))
        if req.background:
            user = user_of(request)
            try:
                return JSONResponse(await host.get(user, created.response_id))
            except Exception as exc:
                if client_error(exc) is None:
                    raise
                # The response is saved: its read failed on a connection the database ended
                # (the pool replaced it). Read it back once rather than answer an error that a
                # client without a key would retry into a second response.
                await asyncio.sleep(0.05)
                return JSONResponse(await host.get(user, created.response_id))
        waiter = asyncio.ensure_future(host.wait(created))
        disconnect = asyncio.ensure_future(_wait_disconnect(request))
        done, _ = await asyncio.wait({waiter, disconnect}, return_when=asyncio.FIRST_COMPLETED)
        if waiter not in done:
            host.abandon(created.response_id)
            waiter.cancel()
            return Response(status_code=499)
        disconnect.cancel()
        return JSONResponse(waiter.result())

    async def retrieve(request: Request) -> Response:
        user = user_of(request)
        rid = response_id_of(request)
        params = parse_stream_params(request.query_params, request.headers.get("last-event-id"))
        if not params.stream:
            return JSONResponse(await host.get(user, rid))
        after = params.starting_after if params.starting_after is not None else -1
        return sse(await host.stream(user, rid, after))

    async def cancel(request: Request) -> Response:
        return JSONResponse(await host.cancel(user_of(request), response_id_of(request)))

    async def delete(request: Request) -> Response:
        user = user_of(request)
        rid = response_id_of(request)
        await host.delete(user, rid)
        return JSONResponse(deleted_body(rid))

    async def input_items(request: Request) -> Response:
        user = user_of(request)
        rid = response_id_of(request)
        params = parse_list_params(request.query_params)
        return JSONResponse(await host.input_items(user, rid, params))

    async def readiness(request: Request) -> Response:
        problem = await host.readiness()
        if problem is None:
            return JSONResponse({"status": "ready"})
        return JSONResponse(
            {"status": "unavailable", "reason": problem}, status_code=503, headers={"retry-after": "1"}
        )

    async def liveness(request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    kit = Kit(guarded=guarded, user_of=user_of, read_body=read_body)
    model_id = ":".join(p for p in (cfg.agent_name, cfg.agent_version) if p) or host.app.name
    api = [
        # Before `/responses/{response_id}`: `compact` and `input_tokens` are not response ids.
        *surface_routes(host, kit, model_id=model_id),
        *conversation_routes(host, kit),
        Route("/responses", guarded(create), methods=["POST"]),
        # The same path's WebSocket upgrade (WebSocket mode; Starlette routes it by scope type).
        *websocket_routes(host, cfg, auth),
        Route("/responses/{response_id}", guarded(retrieve), methods=["GET"]),
        Route("/responses/{response_id}", guarded(delete), methods=["DELETE"]),
        Route("/responses/{response_id}/cancel", guarded(cancel), methods=["POST"]),
        Route("/responses/{response_id}/input_items", guarded(input_items), methods=["GET"]),
    ]
    health = [
        Route("/readiness", readiness, methods=["GET"]),
        Route("/liveness", liveness, methods=["GET"]),
    ]
    routes = [
        *api,
        # Before the `/v1` mount: `/v1/admin/...` is not part of the Responses API.
        *ops_routes(host, kit, admin_key=cfg.admin_key, keepalive=cfg.keepalive_seconds),
        # Health under `/v1` too: a client configured with a `.../v1` base URL finds it there.
        Mount("/v1", routes=[*api, *health]),
        *health,
    ]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if manage_host:
            await host.start()
        try:
            yield
        finally:
            if manage_host:
                await host.stop()
            # Our relays end by themselves once the host has stopped: on SIGTERM the host ends
            # background streams at once (their runs go on elsewhere) and lets foreground
            # streams finish with their runs.

    async def not_found_handler(request: Request, exc: Exception) -> Response:
        return error_response(errors.not_found(f"No route for {request.method} {request.url.path}."))

    async def method_not_allowed(request: Request, exc: Exception) -> Response:
        allowed = ", ".join(sorted(allowed_methods(request.app.routes, request.scope)))
        return error_response(
            errors.ProtocolError(405, f"Method {request.method} not allowed here; allowed: {allowed}."),
            {"allow": allowed},
        )

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={404: not_found_handler, 405: method_not_allowed},
        middleware=_middleware(cfg),
    )
    app.state.host = host
    return app


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


# What a browser page may read of a response (the SDKs read these; SSE needs none).
EXPOSED_HEADERS = [
    "x-request-id",
    "x-agent-session-id",
    "x-agent-foundry-call-id",
    "x-should-retry",
    "retry-after",
    "x-platform-server",
]


def _middleware(cfg: HttpSettings) -> list[Middleware]:
    # Outermost: request spans and metrics see every request, CORS preflights included.
    stack = [Middleware(HttpTelemetry), Middleware(PlatformHeaders, version=server_version())]
    if cfg.cors_origins:
        stack.insert(
            1,
            Middleware(
                CORSMiddleware,
                allow_origins=list(cfg.cors_origins),
                allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                # Every header a client asks for (Authorization, Last-Event-ID, Content-Type, the
                # SDKs' x-stainless-*, Foundry's x-agent-*) is reflected in the preflight.
                allow_headers=["*"],
                expose_headers=EXPOSED_HEADERS,
                max_age=600,
            ),
        )
    return stack


async def _wait_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
