"""The SSE response class: sse-starlette's, with the per-send cancel scope left out (server/http/sse.py)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import EventSourceResponse

from durable_responses.http.sse import SSE_HEADERS, StreamResponse, sse_response

_SCOPE = {"type": "http", "method": "GET", "path": "/", "headers": [], "asgi": {"version": "3.0"}}


def test_the_overridden_private_method_is_still_sse_starlettes() -> None:
    """`StreamResponse` overrides `EventSourceResponse._send_with_timeout(send, message)`: an
    sse-starlette that renamed or reshaped it would leave the override unused (each send paying
    the scope again), so this pins the name and the parameters."""
    assert "_send_with_timeout" in vars(EventSourceResponse)
    params = list(inspect.signature(EventSourceResponse._send_with_timeout).parameters)
    assert params == ["self", "send", "message"]
    assert "_send_with_timeout" in vars(StreamResponse)


async def _run(response: StreamResponse) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    done = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await response(_SCOPE, receive, send)
    done.set()
    return sent


async def test_frames_go_out_in_order_with_the_stream_headers() -> None:
    frames = [b"event: a\nid: 0\ndata: {}\n\n", b"event: b\nid: 1\ndata: {}\n\n"]

    async def body() -> AsyncIterator[bytes]:
        for f in frames:
            yield f

    sent = await _run(sse_response(body(), keepalive=15))
    start = sent[0]
    assert start["type"] == "http.response.start" and start["status"] == 200
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    assert headers["content-type"].startswith("text/event-stream")
    for name, value in SSE_HEADERS.items():
        assert headers[name.lower()] == value
    bodies = [m["body"] for m in sent[1:] if m["type"] == "http.response.body" and m["body"]]
    assert bodies == frames


async def test_a_send_timeout_still_applies() -> None:
    """With a send timeout the scope is sse-starlette's own again: a send that never returns ends
    the response instead of hanging it."""

    async def body() -> AsyncIterator[bytes]:
        yield b"event: a\nid: 0\ndata: {}\n\n"

    response = StreamResponse(body(), ping=15, send_timeout=0.05)
    started = False

    async def send(message: dict[str, Any]) -> None:
        nonlocal started
        if message["type"] == "http.response.body":
            await asyncio.sleep(3600)
        started = True

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    try:
        await asyncio.wait_for(response(_SCOPE, receive, send), 5)
    except Exception as exc:  # sse-starlette's SendTimeoutError, or the cancellation it leads to
        assert type(exc).__name__ != "TimeoutError", "the send timeout did not apply"
    assert started
