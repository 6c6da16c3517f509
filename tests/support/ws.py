"""WebSocket mode from the client's side: a real client (`websockets`' synchronous one) on a
server's `/responses`, reading one turn's events, or the error envelope a message gets.

Invariant: every message the server sends is JSON; a helper that reads a turn stops at its
terminal event and fails on an `error` envelope or a message it did not expect (nothing is
skipped silently).
"""

from __future__ import annotations

import json
from typing import Any

from websockets.sync.client import ClientConnection, connect

from .sse import TERMINAL_EVENT_TYPES

__all__ = ["recv_json", "send_create", "turn", "ws_connect", "ws_url"]


def ws_url(server: Any, path: str = "/v1/responses") -> str:
    base = server if isinstance(server, str) else str(server.base_url)
    return base.replace("http://", "ws://", 1).rstrip("/") + path


def ws_connect(
    server: Any, path: str = "/v1/responses", headers: dict[str, str] | None = None
) -> ClientConnection:
    return connect(ws_url(server, path), additional_headers=headers, open_timeout=30, close_timeout=5)


def recv_json(ws: ClientConnection, timeout: float = 60) -> dict[str, Any]:
    message = ws.recv(timeout=timeout)
    assert isinstance(message, str), f"a binary message: {message!r:.200}"
    data: dict[str, Any] = json.loads(message)
    return data


def send_create(ws: ClientConnection, **body: Any) -> None:
    ws.send(json.dumps({"type": "response.create", **body}, ensure_ascii=False))


def turn(ws: ClientConnection, timeout: float = 60, **body: Any) -> list[dict[str, Any]]:
    """Send a `response.create` and read its events up to its terminal event."""
    send_create(ws, **body)
    return read_turn(ws, timeout)


def read_turn(ws: ClientConnection, timeout: float = 60) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        event = recv_json(ws, timeout)
        assert event.get("type") != "error", f"an error instead of the turn's events: {event}"
        events.append(event)
        if event["type"] in TERMINAL_EVENT_TYPES:
            return events
