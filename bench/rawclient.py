"""A minimal HTTP/1.1 streaming client for the 100-concurrent-streams scenario.

Why: with httpx, the benchmark's client used a whole core at 100 concurrent streams (about
14 ms of CPU per response) and capped every host, ours and the existing one alike, at the same
~60 responses/s on this 2-core machine: the figure measured the client. This client does the
least a client can (one keep-alive connection per stream, a pre-built request, chunked
decoding, counting `event: ` lines), so the hosts' own costs decide the figure. It is used for
every host alike. The tally of the events is `bench.stream.EventLines`, shared with the
httpx client.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlsplit

from bench.stream import EventLines, Stream


class RawConnection:
    """One keep-alive HTTP/1.1 connection that POSTs /responses and reads the SSE stream."""

    def __init__(self, base_url: str) -> None:
        parts = urlsplit(base_url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.prefix = parts.path.rstrip("/")
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def open(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def request_bytes(self, body: dict[str, Any]) -> bytes:
        payload = json.dumps({**body, "stream": True}).encode()
        head = (
            f"POST {self.prefix}/responses HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        return head.encode() + payload

    async def stream(self, request: bytes, record: bool = False) -> Stream:
        res = Stream(delta_ms=[] if record else None)
        t0 = time.perf_counter()
        try:
            await self._stream(request, res, t0)
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            res.error = f"{type(exc).__name__}: {exc}"
        res.total_ms = (time.perf_counter() - t0) * 1000
        return res

    async def _stream(self, request: bytes, res: Stream, t0: float) -> None:
        if self._writer is None:
            await self.open()
        reader, writer = self._reader, self._writer
        assert reader is not None and writer is not None
        writer.write(request)
        status = await reader.readline()
        if not status.startswith(b"HTTP/1.1 200"):
            res.error = f"status {status.strip()!r}"
        chunked = False
        length: int | None = None
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"content-length":
                length = int(value.strip())
        lines = EventLines(res, t0)

        def feed(data: bytes) -> None:
            lines.feed(data, time.perf_counter())

        if chunked:
            while True:
                size = int((await reader.readline()).split(b";")[0].strip(), 16)
                if size == 0:
                    await reader.readline()  # the blank line after the last chunk
                    break
                feed(await reader.readexactly(size))
                await reader.readexactly(2)
        elif length is not None:
            feed(await reader.readexactly(length))
        else:  # read to the end; the connection cannot be reused
            feed(await reader.read())
            self.close()
            self._writer = None
        lines.finish()
