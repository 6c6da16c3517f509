"""The SSE response every stream route returns: pre-formatted frames, keep-alive comments, and
the client's disconnect noticed while the stream is quiet.

Invariants:
- A keep-alive is one comment line, `: keep-alive\\n`, never followed by the blank line that
  dispatches an event. Every frame carries `id:` (what `Last-Event-ID` resumes from), and a
  decoder that follows the SSE spec keeps the last id: openai-python's `SSEDecoder` then
  dispatches an event for a bare blank line (empty data, the last id) and fails on its JSON,
  so the usual `: ping\\r\\n\\r\\n` ends every openai-python stream (and agent-framework's
  OpenAI clients, built on it) at the first keep-alive. A comment line alone is skipped by
  every decoder (openai-python, openai-node, eventsource-parser, browsers' `EventSource`) and
  still puts bytes on the wire for proxies' idle timers.
- Keep-alives go out only between whole frames (a frame batch ends with its blank line), never
  after the stream's last message.
- The stream ends when its frames end, when the client disconnects (noticed at once, even
  while no frame is due: a foreground run is cancelled then) or when a send fails. A send that
  fails because the peer is gone ends the response quietly, as a disconnect does.
- HEAD gets the headers and an empty body; the frames are never started.
- The frames' iterator is always closed before the response returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

from ..protocol.sse import LastFrames

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
KEEPALIVE = b": keep-alive\n"

# How long closing an interrupted stream's frames may take (its relay unsubscribes).
_CLOSE_SECONDS = 10.0


class StreamResponse(StreamingResponse):
    """A `text/event-stream` response of pre-formatted SSE frames (see the module docstring)."""

    def __init__(
        self,
        frames: AsyncIterable[bytes],
        *,
        keepalive: float,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(frames, headers={**SSE_HEADERS, **(headers or {})}, media_type="text/event-stream")
        if not keepalive > 0:
            raise ValueError("keepalive must be a positive number of seconds")
        self.keepalive = keepalive
        self._frames: AsyncIterable[bytes] = frames

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        start: Message = {
            "type": "http.response.start",
            "status": self.status_code,
            "headers": self.raw_headers,
        }
        if scope.get("method", "GET").upper() == "HEAD":
            await send(start)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            await _close(self._frames)
            return
        frames = aiter(self._frames)
        try:
            await send(start)
            await self._serve(frames, receive, send)
        except OSError:
            pass  # the peer went away before the first byte: as a disconnect
        finally:
            await _close(frames)
        if self.background is not None:
            await self.background()

    async def _serve(self, frames: AsyncIterator[bytes], receive: Receive, send: Send) -> None:
        """The frames are sent from this task; one more (`_Watch`) waits for the client's
        disconnect and sends the keep-alives. (An anyio task group of three tasks per stream
        was ~4% of the event loop's samples at 100 concurrent short responses.)"""
        main = asyncio.current_task()
        assert main is not None
        watch = _Watch(self.keepalive, receive, send, main)
        last = False
        try:
            async for chunk in frames:
                if isinstance(chunk, LastFrames):
                    # The terminal event's frames: the body ends with them, one write less.
                    # (The frames' iterator is still run to its end: it ends by itself.)
                    await watch.send_last(chunk)
                    last = True
                else:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if not last:
                await watch.send_last(b"")
        except asyncio.CancelledError:
            # The watch's own cancel (the client went away) ends the response quietly; any
            # other cancel goes on.
            if not watch.gone or main.uncancel() > 0:
                raise
            if watch.error is not None:
                raise watch.error from None
        except OSError:
            pass  # the peer is gone (an ASGI 2.4 server's ClientDisconnected): as a disconnect
        finally:
            watch.stop()


class _Watch:
    """The client's disconnect, waited for between keep-alives, in a task of its own: on a
    disconnect, or a keep-alive whose send fails, the stream's task is cancelled (`gone`)."""

    def __init__(self, keepalive: float, receive: Receive, send: Send, main: asyncio.Task[Any]) -> None:
        self._keepalive = keepalive
        self._receive = receive
        self._send = send
        self._main = main
        self._lock = asyncio.Lock()
        self._ended = False
        self.gone = False
        self.error: Exception | None = None  # a keep-alive's send failed (not as a peer gone)
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def send_last(self, chunk: bytes) -> None:
        """The body's last chunk (possibly empty); no keep-alive follows it."""
        async with self._lock:
            self._ended = True
            await self._send({"type": "http.response.body", "body": chunk, "more_body": False})

    def stop(self) -> None:
        self._ended = True
        self._task.cancel()

    async def _run(self) -> None:
        try:
            while not await self._disconnected():
                pass
        except OSError:
            pass  # a keep-alive to a peer that is gone
        except Exception as exc:
            self.error = exc
        if not self._ended:
            self.gone = True
            self._main.cancel()

    async def _disconnected(self) -> bool:
        """Whether the next message is the disconnect (or the stream ended); a keep-alive is
        sent, between whole frames, when none came for `keepalive` seconds."""
        try:
            async with asyncio.timeout(self._keepalive):
                message = await self._receive()
            return bool(message["type"] == "http.disconnect")
        except TimeoutError:
            async with self._lock:
                if self._ended:
                    return True
                await self._send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})
            return False


async def _close(frames: Any) -> None:
    """Close `frames` (an async generator's cleanup runs now, not in the garbage collector)."""
    closer = getattr(frames, "aclose", None)
    if closer is None or getattr(frames, "ag_frame", True) is None:
        return  # nothing to close, or an async generator that has finished
    with anyio.move_on_after(_CLOSE_SECONDS, shield=True):
        await closer()


def sse_response(frames: AsyncIterable[bytes], *, keepalive: float) -> StreamResponse:
    """The response of one SSE stream of pre-formatted frames."""
    return StreamResponse(frames, keepalive=keepalive)
