"""The SSE response (server/http/sse.py): frames in order, keep-alive comment lines between
whole frames and never after the end, a quiet stream ended at once by the client's disconnect,
HEAD without a stream, and the frames' iterator closed on every path."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from durable_responses.http.sse import KEEPALIVE, SSE_HEADERS, StreamResponse, sse_response
from durable_responses.protocol.sse import LastFrames

_SCOPE = {"type": "http", "method": "GET", "path": "/", "headers": [], "asgi": {"version": "3.0"}}


class Frames:
    """An async generator of frames with a pause before each, recording whether it started and
    whether its cleanup ran."""

    def __init__(self, frames: list[bytes], pause: float = 0.0) -> None:
        self.frames, self.pause = frames, pause
        self.started = self.closed = self.finished = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        self.started = True
        try:
            for f in self.frames:
                await asyncio.sleep(self.pause)
                yield f
            self.finished = True
        finally:
            self.closed = True


async def _run(response: StreamResponse, scope: dict[str, Any] = _SCOPE) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)  # the client stays
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(response(scope, receive, send), 10)
    return sent


def _bodies(sent: list[dict[str, Any]]) -> list[bytes]:
    return [m["body"] for m in sent if m["type"] == "http.response.body" and m["body"]]


FRAMES = [
    b"event: a\nid: 0\ndata: {}\n\n",
    b"event: b\nid: 1\ndata: {}\n\n",
    b"event: c\nid: 2\ndata: {}\n\n",
]


async def test_frames_go_out_in_order_with_the_stream_headers() -> None:
    body = Frames(FRAMES)
    sent = await _run(sse_response(body, keepalive=15))
    start = sent[0]
    assert start["type"] == "http.response.start" and start["status"] == 200
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    assert headers["content-type"] == "text/event-stream; charset=utf-8"
    for name, value in SSE_HEADERS.items():
        assert headers[name.lower()] == value
    assert _bodies(sent) == FRAMES
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
    assert body.closed


async def test_the_last_frames_end_the_body_in_their_own_message() -> None:
    """A chunk marked as the stream's last (its terminal event's frames) goes out with
    `more_body: False`: no empty message after it, and the frames' iterator still runs to its
    end (a relay's stream that stops early counts as abandoned)."""
    body = Frames([FRAMES[0], LastFrames(FRAMES[1] + FRAMES[2])])
    sent = await _run(sse_response(body, keepalive=15))
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body", "http.response.body"]
    assert sent[1] == {"type": "http.response.body", "body": FRAMES[0], "more_body": True}
    assert sent[2] == {"type": "http.response.body", "body": FRAMES[1] + FRAMES[2], "more_body": False}
    assert body.finished and body.closed


async def test_keepalives_are_comment_lines_between_frames_and_never_after_the_end() -> None:
    """0.3 s between frames, a keep-alive every 0.05 s: several in every gap, each exactly one
    comment line (no blank line: a decoder that keeps the last `id:` would dispatch an event)."""
    assert KEEPALIVE.startswith(b":") and KEEPALIVE.endswith(b"\n") and KEEPALIVE.count(b"\n") == 1
    sent = await _run(sse_response(Frames(FRAMES, pause=0.3), keepalive=0.05))
    bodies = _bodies(sent)
    assert [b for b in bodies if b != KEEPALIVE] == FRAMES
    gaps: list[int] = [0]
    for b in bodies:
        if b == KEEPALIVE:
            gaps[-1] += 1
        else:
            gaps.append(0)
    assert all(n >= 2 for n in gaps[:3]), gaps  # before each frame
    # After the last frame the stream ends; on a loaded loop the keep-alive timer may fire once
    # while the end is noticed (harmless: a comment line dispatches nothing), never more often.
    assert gaps[3] <= 1, gaps
    assert sent[-1]["more_body"] is False
    assert all(m.get("more_body") for m in sent[1:-1])


async def test_a_disconnect_ends_a_quiet_stream_at_once_and_closes_the_frames() -> None:
    body = Frames(FRAMES, pause=3600)
    gone = asyncio.Event()
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    task = asyncio.ensure_future(sse_response(body, keepalive=15)(_SCOPE, receive, send))
    await asyncio.sleep(0.1)
    assert body.started and not task.done()
    gone.set()
    await asyncio.wait_for(task, 2)
    assert body.closed
    assert [m["type"] for m in sent] == ["http.response.start"]


@pytest.mark.parametrize("fail_on", ["frame", "keep-alive"])
async def test_a_send_to_a_peer_that_is_gone_ends_the_response_quietly(fail_on: str) -> None:
    """An ASGI 2.4 server raises an OSError (ClientDisconnected) from `send` once the peer has
    gone: the response ends without an error, as on a disconnect, and the frames are closed."""
    body = Frames(FRAMES, pause=0.2)

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        chunk = message.get("body")
        if chunk and (chunk == KEEPALIVE) == (fail_on == "keep-alive"):
            raise OSError("peer gone")

    await asyncio.wait_for(sse_response(body, keepalive=0.05)(_SCOPE, receive, send), 5)
    assert body.closed


async def test_an_error_of_the_frames_reaches_the_caller_unwrapped() -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield FRAMES[0]
        raise LookupError("broken relay")

    with pytest.raises(LookupError, match="broken relay"):
        await _run(sse_response(broken(), keepalive=15))


async def test_head_gets_the_headers_and_no_stream() -> None:
    body = Frames(FRAMES)
    sent = await _run(sse_response(body, keepalive=15), {**_SCOPE, "method": "HEAD"})
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[-1]["body"] == b"" and not sent[-1].get("more_body")
    assert not body.started
