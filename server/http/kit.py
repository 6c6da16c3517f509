"""What every route module shares: the app's collaborators, the caller's user id, bodies.

Invariants:
- Endpoints are module-level functions; each reads its collaborators from the app's state
  (`request.app.state.http`, an `HttpState` that `app.create_app` puts there once), so one
  authenticator and one body limit serve every route, and an endpoint runs alone against any
  app whose state holds an `HttpState`.
- A JSON body is read and decoded once per request (`read_json`), with the same limits
  everywhere: 413 beyond `max_body_bytes`, 415 if it is not JSON, 400 if it does not parse.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from starlette.requests import HTTPConnection, Request

from ..observability.logs import bind_response
from ..protocol import errors
from ..protocol.ids import is_valid_response_id
from ..runtime.host import Host
from .auth import Authenticator
from .creating import decode_json
from .settings import HttpSettings


@dataclass(frozen=True)
class HttpState:
    """The collaborators of every endpoint (`request.app.state.http`)."""

    host: Host
    settings: HttpSettings
    auth: Authenticator
    # The model id `/models` names a single app by (Foundry's agent name and version, else the app's).
    model_id: str
    # When this app was built: the `created` time of its models.
    started: int = field(default_factory=lambda: int(time.time()))

    @classmethod
    def of(cls, host: Host, settings: HttpSettings) -> HttpState:
        model_id = ":".join(p for p in (settings.agent_name, settings.agent_version) if p) or host.app.name
        return cls(host, settings, Authenticator(settings.api_key, settings.principal_keys), model_id)


def state_of(conn: HTTPConnection) -> HttpState:
    state: HttpState = conn.app.state.http
    return state


def host_of(conn: HTTPConnection) -> Host:
    return state_of(conn).host


def user_of(conn: HTTPConnection) -> str:
    """The caller's partition (`auth.py`): 401 for a missing or wrong key."""
    return state_of(conn).auth.user_of(conn.headers)


def response_id_of(request: Request, *, bind: bool = True) -> str:
    """The path's `response_id`; one we could not have issued is a 404, as a missing one is."""
    rid: str = request.path_params["response_id"]
    if not is_valid_response_id(rid):
        raise errors.not_found(f"Response with id '{rid[:128]}' not found.", param="response_id")
    if bind:
        bind_response(rid)
    return rid


async def read_body(request: Request) -> bytes:
    """The raw body of a JSON request: 413 beyond `max_body_bytes`, 415 if not JSON."""
    limit = state_of(request).settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise errors.payload_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise errors.payload_too_large(limit)
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


async def read_json(request: Request, *, empty: object = None) -> object:
    """The decoded JSON body (`empty` for an empty body); 400 if it is not JSON."""
    raw = await read_body(request)
    if not raw.strip():
        return empty
    return decode_json(raw)
