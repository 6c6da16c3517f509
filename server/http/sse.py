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

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import anyio
from starlette.responses import StreamingResponse
from starlette.types import Message, Receive, Scope, Send

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
        lock = anyio.Lock()
        ended = False

        async def relay() -> None:
            nonlocal ended
            async for chunk in frames:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            async with lock:  # no keep-alive may follow the last message
                ended = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def keep_alive() -> None:
            while True:
                await anyio.sleep(self.keepalive)
                async with lock:
                    if ended:
                        return
                    await send({"type": "http.response.body", "body": KEEPALIVE, "more_body": True})

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass

        async def until_done(job: Callable[[], Awaitable[None]]) -> None:
            try:
                await job()
            except OSError:
                pass  # the peer is gone (an ASGI 2.4 server's ClientDisconnected): as a disconnect
            tasks.cancel_scope.cancel()

        try:
            async with anyio.create_task_group() as tasks:
                for job in (relay, keep_alive, watch):
                    tasks.start_soon(until_done, job)
        except BaseExceptionGroup as group:
            # One task's error, not anyio's wrapping: callers and middleware see the exception.
            if len(group.exceptions) == 1:
                raise group.exceptions[0] from None
            raise


async def _close(frames: Any) -> None:
    """Close `frames` (an async generator's cleanup runs now, not in the garbage collector)."""
    closer = getattr(frames, "aclose", None)
    if closer is None:
        return
    with anyio.move_on_after(_CLOSE_SECONDS, shield=True):
        await closer()


def sse_response(frames: AsyncIterable[bytes], *, keepalive: float) -> StreamResponse:
    """The response of one SSE stream of pre-formatted frames."""
    return StreamResponse(frames, keepalive=keepalive)
