"""What `POST /responses` and a WebSocket `response.create` share: decoding and validating the
create body, and handing it to the host with the caller's session and request context.

Invariant: both transports create a response through `create_response` with a body validated
by `parse_create_body` / `parse_create_json`, so auth, tenancy, admission (429 past the
in-flight limit, 503 while draining or when the database cannot be used), continuations and
Foundry's session behave the same on both.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping

import orjson

from ..observability.logs import bind_response
from ..protocol import errors
from ..protocol.request import CreateRequest, parse_create_request
from ..runtime.apps.context import RequestContext, set_request_context
from ..runtime.host import Host
from ..runtime.turns.creation import Created

# Create bodies above this many bytes are decoded and validated in a worker thread.
LARGE_BODY_BYTES = 256 * 1024

# Far beyond any real request (tool schemas included), below orjson's limit of 254.
MAX_JSON_DEPTH = 128


def decode_json(raw: bytes | str, what: str = "The request body") -> object:
    """A JSON document, decoded and checked for what the layers below cannot take (400 otherwise).

    Decoded once: by orjson, which refuses lone surrogates itself, when it reads the document as
    `json` does (it refuses NaN, a byte order mark and the like, and reads an integer beyond 64
    bits as a float: such a body takes `json`'s path, with its check that the decoded document
    encodes as UTF-8). Pure CPU (no I/O, no event loop), so a large body can be decoded in a
    worker thread.
    """
    body = _decoded(raw)
    if body is _NOT_DECODED:
        try:
            body = json.loads(raw)
            # Lone surrogates (e.g. "\ud800") parse but can never be encoded as UTF-8 for storage.
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except RecursionError:
            raise _too_deep(what) from None
        except (ValueError, UnicodeError) as exc:
            raise errors.bad_request(f"{what} is not valid JSON: {exc}", code="invalid_json") from exc
    if _depth_exceeds(body, MAX_JSON_DEPTH):
        # Deeper values would overflow the recursive copies and encoders downstream (a 500).
        raise _too_deep(what)
    return body


_NOT_DECODED = object()
# Every ASCII digit to "0", every other byte to "x": a run of 20 digits (perhaps an integer
# beyond 64 bits, which orjson reads as a float) is then a plain substring search. A regular
# expression (`\d{20}`) took ~1 ms for a 100 KB body, longer than orjson's decoding of it.
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x78 for b in range(256))
_LONG_DIGITS = b"0" * 20


def _decoded(raw: bytes | str) -> object:
    """`raw` decoded by orjson, or `_NOT_DECODED` where it would not decode as `json` does."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if _LONG_DIGITS in data.translate(_DIGITS):
        return _NOT_DECODED
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _NOT_DECODED


def parse_create_body(raw: bytes) -> CreateRequest:
    """A `POST /responses` body, decoded and validated (400 on invalid JSON or an invalid request)."""
    return parse_create_request(decode_json(raw))


def _too_deep(what: str) -> errors.ProtocolError:
    return errors.bad_request(
        f"{what} nests objects and arrays more than {MAX_JSON_DEPTH} levels deep; flatten it.",
        code="invalid_json",
    )


def _depth_exceeds(value: object, limit: int) -> bool:
    """Whether `value` nests dicts/lists more than `limit` levels (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Iterable[object] = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def session_of(req: CreateRequest, headers: Mapping[str, str], default: str | None) -> str | None:
    """Foundry's session: the request's own, the platform's header, else the container's."""
    return req.agent_session_id or headers.get("x-agent-session-id") or default


def in_context(
    user: str, req: CreateRequest, headers: Mapping[str, str], default_session: str | None
) -> CreateRequest:
    """`req` with Foundry's session taken from the request's `headers`, the request context the
    app reads (`request_context()`) set for the creation."""
    session = session_of(req, headers, default_session)
    if session and session != req.agent_session_id:
        req = dataclasses.replace(req, agent_session_id=session)
    set_request_context(
        RequestContext(
            user_id=user,
            foundry_call_id=headers.get("x-agent-foundry-call-id"),
            session_id=session,
            request_id=headers.get("x-request-id"),
        )
    )
    return req


async def create_response(
    host: Host,
    user: str,
    req: CreateRequest,
    headers: Mapping[str, str],
    *,
    default_session: str | None,
    response_id: str | None = None,
    idempotency_key: bool = False,
) -> Created:
    """Create (and start) a response for `user`, with Foundry's session, the request context the
    app reads (`request_context()`) and the double-texting strategy (`x-double-texting`) taken
    from the request's `headers`."""
    req = in_context(user, req, headers, default_session)
    created = await host.create(
        user,
        req,
        response_id,
        idempotency_key=idempotency_key,
        double_texting=headers.get("x-double-texting"),
    )
    bind_response(created.response_id)
    return created
