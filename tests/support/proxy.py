"""A loopback TCP proxy that a test can break: cut, pause, slow, reset, block, restore.

It sits between server replicas and their database server (PostgreSQL), so a test can make
the network fail the way production networks fail without touching the database process:

- `cut()`: nothing gets through. The listening socket is closed (new connections are
  refused, ECONNREFUSED) and every open connection is reset (RST, both sides).
- `pause()`: a black hole. Connections stay open and new ones are accepted, but no byte is
  forwarded either way until `restore()`; what was held then flows on, in order.
- `slow(seconds)`: every chunk is delivered `seconds` after it arrived, each direction.
- `reset(marker=None)`: RST every open connection (or only those whose client sent `marker`),
  once; the proxy keeps accepting new connections.
- `block(marker)`: RST, now and until `restore()`, every connection whose client sends
  `marker`, before that chunk reaches the server. `LISTEN_MARKER` identifies the PostgreSQL
  LISTEN connection (`LISTEN "channel"` is sent as query text), so a test can cut the
  notification channel alone while queries and commits go on.
- `restore()`: listen again, forward again, no latency, no blocks.

Runs an asyncio loop in a daemon thread; every public method is thread-safe and returns once
the fault is in place. Loopback only: it binds 127.0.0.1 and connects to 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
import threading
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .servers import free_port

T = TypeVar("T")

LISTEN_MARKER = b"LISTEN "
"""What a PostgreSQL client sends to subscribe to notifications (asyncpg: `LISTEN "name"`)."""

_CHUNK = 65536


@dataclass
class ProxyStats:
    """Counters since the proxy started (connections, resets done by faults, bytes forwarded)."""

    accepted: int = 0
    refused_upstream: int = 0
    reset: int = 0
    # Resets of a connection waiting for the server's answer (its client spoke last): a
    # statement cut in flight, not an idle pooled connection.
    reset_in_flight: int = 0
    open: int = 0
    bytes_up: int = 0
    bytes_down: int = 0
    # How many connections sent each marker the proxy was asked about (sniffed client bytes).
    tagged: dict[bytes, int] = field(default_factory=dict)


class _Conn:
    """One proxied connection: the client's and the upstream's writers, and what it sent."""

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.tags: set[bytes] = set()
        self._sniff_tail = b""
        self.closed = False
        self.opened_at = time.monotonic()
        self.awaiting_answer = False  # the client spoke last (request/response protocols)

    def sniff(self, data: bytes, markers: set[bytes]) -> set[bytes]:
        """Markers seen for the first time in the client's bytes (across chunk boundaries)."""
        if not markers:
            return set()
        window = self._sniff_tail + data
        new = {m for m in markers if m not in self.tags and m in window}
        self.tags |= new
        longest = max(len(m) for m in markers)
        self._sniff_tail = window[-(longest - 1) :] if longest > 1 else b""
        return new


def _rst(writer: asyncio.StreamWriter | None) -> None:
    """Close with RST (SO_LINGER 0), not FIN: the peer sees 'connection reset by peer'."""
    if writer is None:
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class Proxy:
    """`Proxy(upstream_port).start()`; point clients at `proxy.port`; `close()` when done."""

    def __init__(
        self,
        upstream_port: int,
        *,
        upstream_host: str = "127.0.0.1",
        port: int | None = None,
        name: str = "proxy",
        markers: tuple[bytes, ...] = (LISTEN_MARKER,),
    ) -> None:
        if upstream_host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the chaos proxy is loopback only")
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.port = port or free_port()
        self.name = name
        self.stats = ProxyStats(tagged={m: 0 for m in markers})
        self._markers: set[bytes] = set(markers)
        self._blocked: set[bytes] = set()
        self._latency = 0.0
        self._conns: set[_Conn] = set()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"{name}-loop", daemon=True)
        self._server: asyncio.Server | None = None
        self._flowing: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.cut_count = 0

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> Proxy:
        self._thread.start()
        self._call(self._init())
        self._call(self._listen())
        return self

    def close(self) -> None:
        """Stop listening, reset every connection, stop the loop thread (idempotent)."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self._call(self._shutdown(), timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        with contextlib.suppress(Exception):
            self._loop.close()

    def __enter__(self) -> Proxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url_host_port(self) -> str:
        return f"127.0.0.1:{self.port}"

    # -- faults ---------------------------------------------------------------------

    def cut(self) -> int:
        """Refuse new connections and reset every open one; returns how many were reset."""
        self.cut_count += 1
        return self._call(self._cut())

    def pause(self) -> None:
        """Hold every byte (both ways, open and new connections) until `restore()`."""
        self._call(self._set_flowing(False))

    def slow(self, seconds: float) -> None:
        """Deliver every chunk `seconds` after it arrived (each direction) until `restore()`."""
        self._latency = max(0.0, seconds)

    def reset(self, marker: bytes | None = None) -> int:
        """RST every open connection (only those that sent `marker`, if given), once."""
        return self._call(self._reset(marker))

    def block(self, marker: bytes) -> int:
        """Reset, now and until `restore()`, every connection whose client sends `marker`."""
        self._markers.add(marker)
        self.stats.tagged.setdefault(marker, 0)
        self._blocked.add(marker)
        return self._call(self._reset(marker))

    def restore(self) -> None:
        """Undo every fault: listen, forward held bytes, no latency, no blocks."""
        self._blocked.clear()
        self._latency = 0.0
        self._call(self._listen())
        self._call(self._set_flowing(True))

    # -- observation ----------------------------------------------------------------

    def open_connections(self, marker: bytes | None = None) -> int:
        """Open connections now (those that sent `marker`, if given)."""
        return self._call(self._count(marker))

    def wait_open(self, count: int, marker: bytes | None = None, timeout: float = 10) -> float:
        """Wait until at least `count` connections (that sent `marker`) are open; returns the
        monotonic time it happened. Raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while True:
            if self.open_connections(marker) >= count:
                return time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{self.name}: fewer than {count} open connections (marker {marker!r}) after {timeout}s"
                )
            time.sleep(0.02)

    # -- inside the loop ------------------------------------------------------------

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _init(self) -> None:
        self._flowing = asyncio.Event()
        self._flowing.set()

    async def _listen(self) -> None:
        if self._server is not None:
            return
        self._server = await asyncio.start_server(
            self._handle, "127.0.0.1", self.port, reuse_address=True, backlog=256
        )

    async def _unlisten(self) -> None:
        if self._server is None:
            return
        self._server.close()
        self._server = None

    async def _cut(self) -> int:
        await self._unlisten()
        return await self._reset(None)

    async def _reset(self, marker: bytes | None) -> int:
        victims = [c for c in self._conns if marker is None or marker in c.tags]
        for conn in victims:
            self._kill(conn)
        return len(victims)

    async def _set_flowing(self, flowing: bool) -> None:
        assert self._flowing is not None
        if flowing:
            self._flowing.set()
        else:
            self._flowing.clear()

    async def _count(self, marker: bytes | None) -> int:
        return sum(1 for c in self._conns if marker is None or marker in c.tags)

    async def _shutdown(self) -> None:
        await self._unlisten()
        await self._reset(None)
        for task in list(self._tasks):
            task.cancel()

    def _kill(self, conn: _Conn) -> None:
        if conn.closed:
            return
        conn.closed = True
        self.stats.reset += 1
        self.stats.reset_in_flight += conn.awaiting_answer
        _rst(conn.client)
        _rst(conn.upstream)
        self._forget(conn)

    def _forget(self, conn: _Conn) -> None:
        if conn in self._conns:
            self._conns.discard(conn)
            self.stats.open = len(self._conns)

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.stats.accepted += 1
        conn = _Conn(client_w)
        self._conns.add(conn)
        self.stats.open = len(self._conns)
        try:
            up_r, up_w = await asyncio.open_connection(self.upstream_host, self.upstream_port)
        except OSError:
            self.stats.refused_upstream += 1
            conn.closed = True
            _rst(client_w)
            self._forget(conn)
            return
        if conn.closed:  # reset while connecting
            _rst(up_w)
            return
        conn.upstream = up_w
        up = asyncio.create_task(self._pump(client_r, up_w, conn, from_client=True))
        down = asyncio.create_task(self._pump(up_r, client_w, conn, from_client=False))
        for t in (up, down):
            self._tasks.add(t)
            t.add_done_callback(self._tasks.discard)
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        # One side ended (FIN or error): end the other gracefully, unless a fault reset it.
        if not conn.closed:
            conn.closed = True
            for w in (client_w, up_w):
                with contextlib.suppress(Exception):
                    w.close()
            self._forget(conn)
        for t in (up, down):
            t.cancel()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        conn: _Conn,
        *,
        from_client: bool,
    ) -> None:
        """Forward one direction, chunk by chunk: sniff markers, hold while paused, delay."""
        assert self._flowing is not None
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
        held = 0  # chunks queued or being delivered by `deliver` (order: they go first)

        async def write(data: bytes) -> None:
            conn.awaiting_answer = from_client
            writer.write(data)
            await writer.drain()
            if from_client:
                self.stats.bytes_up += len(data)
            else:
                self.stats.bytes_down += len(data)

        async def deliver() -> None:
            nonlocal held
            assert self._flowing is not None
            while True:
                item = await queue.get()
                if item is None:
                    with contextlib.suppress(Exception):
                        writer.write_eof()
                    return
                due, data = item
                await self._flowing.wait()
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self._flowing.wait()
                if conn.closed:
                    return
                await write(data)
                held -= 1

        sender = asyncio.create_task(deliver())
        try:
            while True:
                try:
                    data = await reader.read(_CHUNK)
                except (ConnectionError, OSError):
                    break
                if not data:
                    break
                if from_client:
                    for marker in conn.sniff(data, self._markers):
                        self.stats.tagged[marker] = self.stats.tagged.get(marker, 0) + 1
                    if conn.tags & self._blocked:
                        self._kill(conn)
                        break
                if not held and not self._latency and self._flowing.is_set():
                    try:
                        await write(data)  # no fault in place: straight through, no task hop
                    except (ConnectionError, OSError):
                        break
                    continue
                held += 1
                queue.put_nowait((time.monotonic() + self._latency, data))
            queue.put_nowait(None)
            with contextlib.suppress(ConnectionError, OSError):
                await sender
        finally:
            sender.cancel()
