"""The client of every HTTP host: httpx for single streams, bench/rawclient.py for many at once.

One `httpx.AsyncClient` per scenario, warmed (a connection and a response or two before timing), in
the benchmark process; it reads raw bytes and tallies `event: ` lines itself (`EventLines`) so that
its own cost stays small next to the server's on a shared 2-core machine. With httpx the client
itself used a whole core at 100 concurrent streams and capped every host at the same figure, so
`many` (the concurrent scenario) uses the raw-socket client instead.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import httpx

from bench.cpu import ProcessCPU
from bench.rawclient import RawConnection
from bench.stream import EventLines, Many, Stream


def client(base_url: str, connections: int = 10, timeout: float = 300) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(base_url=base_url, timeout=timeout, limits=limits)


async def stream_once(
    client: httpx.AsyncClient, body: dict[str, Any], deadline: float | None = None
) -> Stream:
    """POST /responses with stream=true; time the first event, the first output and the end
    (raw bytes, tallied by `EventLines`)."""
    res = Stream()
    t0 = time.perf_counter()
    lines = EventLines(res, t0)
    try:
        async with client.stream("POST", "/responses", json={**body, "stream": True}) as r:
            res.status = r.status_code
            if r.status_code != 200:
                res.error = f"HTTP {r.status_code}: {(await r.aread())[:200]!r}"
                return res
            async for chunk in r.aiter_raw():
                now = time.perf_counter()
                lines.feed(chunk, now)
                if deadline is not None and now > deadline:
                    res.aborted = True
                    break
    except httpx.HTTPError as exc:
        res.error = f"{type(exc).__name__}: {exc}"
    res.total_ms = (time.perf_counter() - t0) * 1000
    lines.finish()
    return res


# httpx errors of a request that met a connection the server had just closed.
_RACED = ("ReadError", "RemoteProtocolError", "WriteError")


class HttpDriver:
    """Responses of one HTTP host: `{"model": "bench", "input": text, **body}`, streamed.

    With `cpu`, each stream after `ready()` also records the server's CPU over it (read before and after the
    request, outside its timing). The httpx client is opened on the first stream, so a driver used
    only for `many` opens none.
    """

    def __init__(
        self,
        base_url: str,
        body: dict[str, Any],
        *,
        connections: int = 10,
        timeout: float = 300,
        cpu: ProcessCPU | None = None,
    ) -> None:
        self.base_url = base_url
        self.body = body
        self.connections = connections
        self.timeout = timeout
        self.cpu = cpu
        self._measuring = False
        self._client: httpx.AsyncClient | None = None

    def ready(self) -> None:
        if self.cpu is not None:
            self.cpu.refresh()  # the server's processes and database backends, once warm
            self._measuring = True

    def request(self, text: str) -> dict[str, Any]:
        return {"model": "bench", "input": text, **self.body}

    async def stream(self, text: str, deadline: float | None = None) -> Stream:
        res = await self._stream(text, deadline)
        if res.status == 0 and res.events == 0 and res.error.startswith(_RACED):
            # The server closed this keep-alive connection as the request went out: uvicorn and
            # Hypercorn close one idle for 5 s, and in the interleaved burst a host's connection
            # waits for every other host's request (the plain existing host's takes seconds).
            # Nothing reached the server; send it again, on a fresh connection, once.
            res = await self._stream(text, deadline)
            res.retried = True
        return res

    async def _stream(self, text: str, deadline: float | None) -> Stream:
        if self._client is None:
            self._client = client(self.base_url, self.connections, self.timeout)
        if self.cpu is None or not self._measuring:
            return await stream_once(self._client, self.request(text), deadline)
        cpu0 = self.cpu.seconds()
        res = await stream_once(self._client, self.request(text), deadline)
        res.server_cpu_ms = (self.cpu.seconds() - cpu0) * 1000
        return res

    async def many(self, n: int, text: str, *, record: bool = False, warm_text: str | None = None) -> Many:
        conns = [RawConnection(self.base_url) for _ in range(n)]
        try:
            request_bytes = conns[0].request_bytes(self.request(text))
            warm_bytes = (
                request_bytes if warm_text is None else conns[0].request_bytes(self.request(warm_text))
            )
            # Open the connections first and use each once (a warm client), then fire all N at once.
            await asyncio.gather(*(conn.open() for conn in conns))
            warmups = await asyncio.gather(*(conn.stream(warm_bytes) for conn in conns))
            if not all(r.ok for r in warmups):
                raise RuntimeError(
                    f"warm-up failed: {[r.error or r.terminal for r in warmups if not r.ok][:3]}"
                )
            if self.cpu is not None:
                self.cpu.refresh()  # outside the timed window: a scan of /proc
            server0 = self.cpu.seconds() if self.cpu is not None else math.nan
            cpu0 = time.process_time()
            t0 = time.perf_counter()
            runs = await asyncio.gather(*(conn.stream(request_bytes, record) for conn in conns))
            wall = time.perf_counter() - t0
            client_cpu = time.process_time() - cpu0
            server = self.cpu.seconds() - server0 if self.cpu is not None else math.nan
        finally:
            for conn in conns:
                conn.close()
        return Many(runs, wall, client_cpu, server)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
