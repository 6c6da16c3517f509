"""Foundry's platform headers on every response: `x-request-id`, `x-agent-foundry-call-id`,
`x-platform-server`.

Invariant: every HTTP response carries an `x-request-id` (the caller's, else a fresh one, as
Foundry's own hosting library does) and `x-platform-server` (this server and the protocol
version it speaks); a request's `x-agent-foundry-call-id` is echoed back for tracing.
"""

from __future__ import annotations

import uuid
from importlib import metadata

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The Foundry container protocol version this server speaks (deploy/foundry/azure.yaml).
PROTOCOL_VERSION = "2.0.0"


def server_version() -> str:
    try:
        version = metadata.version("durable-responses")
    except metadata.PackageNotFoundError:
        version = "0"
    return f"durable-responses/{version} (responses/{PROTOCOL_VERSION}; python)"


class PlatformHeaders:
    def __init__(self, app: ASGIApp, version: str) -> None:
        self.app = app
        self._server = (b"x-platform-server", version.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id: bytes | None = None
        call_id: bytes | None = None
        for k, v in scope["headers"]:
            if k == b"x-request-id" and v:
                request_id = v[:256]
            elif k == b"x-agent-foundry-call-id":
                call_id = v
        extra = [(b"x-request-id", request_id or uuid.uuid4().hex.encode()), self._server]
        if call_id is not None:
            extra.append((b"x-agent-foundry-call-id", call_id))

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
