"""The operator's routes: `/v1/admin/...` (JSON and SSE), the page at `/ui/`, `GET /metrics`.

Invariants:
- Same authentication as the API: a caller sees its own partition (`x-agent-user-id`, or its
  key's principal); only `Authorization: Bearer <DURABLE_RESPONSES_ADMIN_KEY>` sees every
  tenant. Another tenant's response is a 404, as everywhere.
- The page is static files shipped in the package (no build step, no CDN, works offline); it
  holds no data of its own and reads everything through these routes.
- `/metrics` carries no tenant data (labels are bounded sets: `observability.metrics`).
"""

from __future__ import annotations

import hmac
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from ..observability import metrics
from ..protocol import errors
from .kit import host_of, read_json, response_id_of, state_of, user_of
from .sse import sse_response

UI_DIR = Path(__file__).resolve().parent / "ui"
STATUSES = ("queued", "in_progress", "completed", "failed", "cancelled", "incomplete")


def scope_of(request: Request) -> str | None:
    """None: the admin key (every tenant); else the caller's own partition."""
    admin_key = state_of(request).settings.admin_key
    if admin_key:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), admin_key.encode()):
            return None
    return user_of(request)


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise errors.bad_request(f"`{name}` must be an integer.", param=name) from None
    if not low <= value <= high:
        raise errors.bad_request(f"`{name}` must be between {low} and {high}.", param=name)
    return value


async def overview(request: Request) -> Response:
    return JSONResponse(await host_of(request).admin.overview(scope_of(request)))


async def list_responses(request: Request) -> Response:
    scope = scope_of(request)
    status = request.query_params.get("status") or None
    if status is not None and status not in STATUSES:
        raise errors.bad_request(f"`status` must be one of {', '.join(STATUSES)}.", param="status")
    limit = int_param(request, "limit", 50, 1, 500)
    before = request.query_params.get("before")
    return JSONResponse(await host_of(request).admin.list(scope, status=status, limit=limit, before=before))


async def detail(request: Request) -> Response:
    scope = scope_of(request)
    return JSONResponse(await host_of(request).admin.detail(scope, response_id_of(request, bind=False)))


async def events(request: Request) -> Response:
    after = int_param(request, "after", -1, -1, 2**31 - 1)
    limit = int_param(request, "limit", 1000, 1, 5000)
    scope, rid = scope_of(request), response_id_of(request, bind=False)
    return JSONResponse(await host_of(request).admin.events(scope, rid, after=after, limit=limit))


async def stream(request: Request) -> Response:
    after = int_param(request, "after", -1, -1, 2**31 - 1)
    last = request.headers.get("last-event-id")
    if last is not None and last.strip().lstrip("-").isdigit():
        after = max(after, int(last))
    state = state_of(request)
    frames = await state.host.admin.stream(scope_of(request), response_id_of(request, bind=False), after)
    return sse_response(frames, keepalive=state.settings.keepalive_seconds)


async def reply(request: Request) -> Response:
    scope = scope_of(request)
    body = await read_json(request, empty={})
    return JSONResponse(await host_of(request).admin.reply(scope, response_id_of(request, bind=False), body))


async def retire(request: Request) -> Response:
    version = request.path_params["version"]
    app = request.query_params.get("app") or None
    return JSONResponse(await host_of(request).admin.retire(scope_of(request), version, app))


async def metrics_text(request: Request) -> Response:
    return Response(metrics.text(), media_type=metrics.CONTENT_TYPE)


async def ui_root(request: Request) -> Response:
    return RedirectResponse(url="/ui/", status_code=307)


OPS_ROUTES: list[BaseRoute] = [
    Route("/metrics", metrics_text, methods=["GET"]),
    Route("/ui", ui_root, methods=["GET"]),
    Mount("/ui", app=StaticFiles(directory=UI_DIR, html=True), name="ui"),
    Mount(
        "/v1/admin",
        routes=[
            Route("/overview", overview, methods=["GET"]),
            Route("/responses", list_responses, methods=["GET"]),
            Route("/responses/{response_id}", detail, methods=["GET"]),
            Route("/responses/{response_id}/events", events, methods=["GET"]),
            Route("/responses/{response_id}/stream", stream, methods=["GET"]),
            Route("/responses/{response_id}/reply", reply, methods=["POST"]),
            Route("/versions/{version}/retire", retire, methods=["POST"]),
        ],
    ),
]
