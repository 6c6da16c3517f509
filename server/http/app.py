"""The ASGI app: routes for the Responses protocol at `/` and under `/v1`, health, auth.

Invariants:
- Every route resolves the caller's user id first (`x-agent-user-id`, else the API key's
  principal) and passes it to every read and write: another tenant's response is a 404.
- Errors always have the body `{"error": {"message", "type", "param", "code"}}` (`failures`).
- SSE frames are pre-formatted `event:`/`id:`/`data:` blocks read from committed rows, batched
  into one write per read; `sse.py` adds keep-alive comment lines and watches for
  disconnects.
- Endpoints are module-level functions reading their collaborators from the app's state
  (`kit.HttpState`); this layer never touches SQL: it calls the runtime's `Host`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from ..protocol import errors
from ..protocol.ids import idempotent_response_id, is_valid_idempotency_key, is_valid_response_id
from ..protocol.request import CreateRequest, parse_list_params, parse_stream_params
from ..protocol.response import deleted_body
from ..runtime.delivery.relay import ResponseStream
from ..runtime.host import Host
from .admin import OPS_ROUTES
from .conversations import CONVERSATION_ROUTES
from .creating import LARGE_BODY_BYTES, in_context, parse_create_body, session_of
from .failures import HANDLERS, Unexpected
from .failures import allowed_methods as allowed_methods
from .failures import error_response as error_response
from .kit import HttpState, host_of, read_body, response_id_of, state_of, user_of
from .platform import PlatformHeaders, server_version
from .settings import HttpSettings
from .sse import sse_response
from .surface import SURFACE_ROUTES
from .telemetry import HttpTelemetry
from .websocket import WEBSOCKET_ROUTES


async def parse_body(request: Request) -> CreateRequest:
    """The create request: the body read, decoded and validated once (400 with the parameter)."""
    raw = await read_body(request)
    if len(raw) > LARGE_BODY_BYTES:
        # ~3 us of CPU per input item: seconds for a large input, in which the event loop
        # would serve no stream, renew no lease and answer no /liveness.
        return await asyncio.to_thread(parse_create_body, raw)
    return parse_create_body(raw)  # no thread hop: a small request's first byte waits on it


def chosen_id(request: Request, user: str) -> tuple[str | None, bool]:
    """The response id the client chose (`x-agent-response-id`, else one derived from its
    `Idempotency-Key`) and whether a key chose it."""
    chosen = request.headers.get("x-agent-response-id")
    if chosen is not None and not is_valid_response_id(chosen):
        raise errors.bad_request(
            "Invalid x-agent-response-id header: use resp_ followed by letters, digits, _ or -.",
            param="x-agent-response-id",
        )
    key = request.headers.get("idempotency-key")
    if chosen is not None or key is None:
        return chosen, False
    if not is_valid_idempotency_key(key):
        raise errors.bad_request(
            "Invalid Idempotency-Key header: use 1 to 255 printable characters.",
            param="Idempotency-Key",
        )
    # A retry with the same key gets the same response: the key names the response id.
    return idempotent_response_id(user, key), True


async def create(request: Request) -> Response:
    state = state_of(request)
    user = user_of(request)
    req = await parse_body(request)
    chosen, keyed = chosen_id(request, user)
    default_session = state.settings.agent_session_id
    # One call: the response created and its answer (its stream, its body, or its end).
    reply = await state.host.respond(
        user,
        in_context(user, req, request.headers, default_session),
        chosen,
        disconnected=lambda: _wait_disconnect(request),
        idempotency_key=keyed,
        double_texting=request.headers.get("x-double-texting"),
    )
    response: Response
    if isinstance(reply, ResponseStream):
        response = sse_response(reply, keepalive=state.settings.keepalive_seconds)
    else:
        response = Response(status_code=499) if reply is None else JSONResponse(reply)
    session = session_of(req, request.headers, default_session)
    if session:
        response.headers["x-agent-session-id"] = session
    return response


async def retrieve(request: Request) -> Response:
    state = state_of(request)
    user = user_of(request)
    rid = response_id_of(request)
    params = parse_stream_params(request.query_params, request.headers.get("last-event-id"))
    if not params.stream:
        return JSONResponse(await state.host.get(user, rid))
    after = params.starting_after if params.starting_after is not None else -1
    stream = await state.host.stream(user, rid, after)
    return sse_response(stream, keepalive=state.settings.keepalive_seconds)


async def cancel(request: Request) -> Response:
    return JSONResponse(await host_of(request).cancel(user_of(request), response_id_of(request)))


async def delete(request: Request) -> Response:
    user = user_of(request)
    rid = response_id_of(request)
    await host_of(request).delete(user, rid)
    return JSONResponse(deleted_body(rid))


async def input_items(request: Request) -> Response:
    user = user_of(request)
    rid = response_id_of(request)
    params = parse_list_params(request.query_params)
    return JSONResponse(await host_of(request).input_items(user, rid, params))


async def readiness(request: Request) -> Response:
    problem = await host_of(request).readiness()
    if problem is None:
        return JSONResponse({"status": "ready"})
    return JSONResponse(
        {"status": "unavailable", "reason": problem}, status_code=503, headers={"retry-after": "1"}
    )


async def liveness(request: Request) -> Response:
    return JSONResponse({"status": "alive"})


API_ROUTES: list[BaseRoute] = [
    # Before `/responses/{response_id}`: `compact` and `input_tokens` are not response ids.
    *SURFACE_ROUTES,
    *CONVERSATION_ROUTES,
    Route("/responses", create, methods=["POST"]),
    # The same path's WebSocket upgrade (WebSocket mode; Starlette routes it by scope type).
    *WEBSOCKET_ROUTES,
    Route("/responses/{response_id}", retrieve, methods=["GET"]),
    Route("/responses/{response_id}", delete, methods=["DELETE"]),
    Route("/responses/{response_id}/cancel", cancel, methods=["POST"]),
    Route("/responses/{response_id}/input_items", input_items, methods=["GET"]),
]
HEALTH_ROUTES: list[BaseRoute] = [
    Route("/readiness", readiness, methods=["GET"]),
    Route("/liveness", liveness, methods=["GET"]),
]
ROUTES: list[BaseRoute] = [
    *API_ROUTES,
    # Before the `/v1` mount: `/v1/admin/...` is not part of the Responses API.
    *OPS_ROUTES,
    # Health under `/v1` too: a client configured with a `.../v1` base URL finds it there.
    Mount("/v1", routes=[*API_ROUTES, *HEALTH_ROUTES]),
    *HEALTH_ROUTES,
]


def create_app(host: Host, settings: HttpSettings | None = None, *, manage_host: bool = True) -> Starlette:
    cfg = settings or HttpSettings()

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

    app = Starlette(
        routes=ROUTES,
        lifespan=lifespan,
        exception_handlers=dict(HANDLERS),
        middleware=_middleware(cfg),
    )
    app.state.host = host
    app.state.http = HttpState.of(host, cfg)
    return app


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
    # Innermost: an unexpected error becomes its JSON answer (`failures.Unexpected`).
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
    stack.append(Middleware(Unexpected))
    return stack


async def _wait_disconnect(request: Request) -> None:
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
