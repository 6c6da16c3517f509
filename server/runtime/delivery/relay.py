"""Relays: committed events, from a sequence number to the end, as SSE frames or as rows.

Invariants:
- A relay only ever sends rows read back from the outbox or handed over by its commit (commit
  before send); the live stream and a replay are the same rows.
- It never polls a response this process runs: it sleeps until the outbox announces a commit.
  For a response driven by another replica it wakes on PostgreSQL NOTIFY, with a slow timer as
  a safety net (SQLite: a short timer).
- Each read becomes one write to the socket (frames joined), so per-event cost stays flat.
- The HTTP layer sees only a `ResponseStream`: frames to send (SSE) or the rows themselves
  (WebSocket mode sends one message per event), and the end of the stream.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import TypeVar

from ...protocol import events as ev
from ...protocol.sse import LastFrames, frames
from ...store import TERMINAL_STATUSES, EventRow, Store, Subscription
from ..faults import database_error
from ..run.memory import MemorySink
from ..run.registry import RunRegistry

log = logging.getLogger("durable_responses.relay")

# Rows read from the table per batch: the first read of a relay, for a prompt first byte;
# each full page after it doubles the next, up to READ_BATCH_MAX, as a page has a fixed cost (the
# pool's checkout and ping, a round trip each: ~0.3 ms of the server's CPU and ~0.1 of the
# database's). Measured on a 100,000-event replay, pages of 4,000 against 2,000: 4-6% less CPU
# per event; the first byte of a long replay 7.4 against 4.7 ms with 4,000 from the start.
READ_BATCH = 2000
READ_BATCH_MAX = 8000
# With cross-process wake-ups (PostgreSQL NOTIFY) a relay of a remote response re-checks this
# often anyway.
REMOTE_SAFETY_NET = 5.0


def _frames(rows: list[EventRow]) -> bytes:
    data = frames(rows)
    # The terminal event's batch is the stream's last chunk: the body ends with it.
    return LastFrames(data) if rows[-1].type in ev.TERMINAL_EVENT_TYPES else data


def _rows(rows: list[EventRow]) -> list[EventRow]:
    return rows


_Chunk = TypeVar("_Chunk")


class ResponseStream:
    """The events of one response: iterate it for SSE frames, or `rows()` for the committed
    rows; either ends after the terminal event. Iterate it once, one way.

    `on_first` runs once the first events are on their way (a creator's run starts then);
    `on_abandoned` runs if the stream ends before the terminal event (the client went away:
    a foreground run is cancelled).
    """

    def __init__(
        self,
        batches: AsyncIterator[list[EventRow]],
        *,
        on_first: Callable[[], None] | None = None,
        on_abandoned: Callable[[], None] | None = None,
    ) -> None:
        self._batches = batches
        self._on_first = on_first
        self._on_abandoned = on_abandoned

    def __aiter__(self) -> AsyncIterator[bytes]:
        """SSE frames, one chunk (one socket write) per read."""
        return self._each(_frames)

    def rows(self) -> AsyncGenerator[list[EventRow]]:
        """The committed rows, a batch per read (close it to end the stream early)."""
        return self._each(_rows)

    async def _each(self, render: Callable[[list[EventRow]], _Chunk]) -> AsyncGenerator[_Chunk]:
        finished = False
        try:
            async for batch in self._batches:
                yield render(batch)
                if self._on_first is not None:
                    on_first, self._on_first = self._on_first, None
                    on_first()
            finished = True
        except Exception as exc:
            # A store error ends the stream normally (a clean end of the chunked body), never
            # an exception out of the ASGI app: the client reconnects with Last-Event-ID, and
            # while the database is down that reconnect is a 503 with Retry-After. What it
            # missed is committed, so nothing is lost.
            if database_error(exc) is None:
                log.warning("an SSE stream ended on an error: %s: %s", type(exc).__name__, exc)
        finally:
            if not finished and self._on_abandoned is not None:
                self._on_abandoned()
            # Close the relay here, where it is not running: left to the garbage collector, a
            # generator is closed by a task of its own, whose error nobody would retrieve.
            closer = getattr(self._batches, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await closer()


class Relay:
    def __init__(self, store: Store, registry: RunRegistry, *, remote_poll_seconds: float) -> None:
        self._store = store
        self._registry = registry
        self._remote_poll = remote_poll_seconds

    async def committed(
        self, response_id: str, after: int, sub: Subscription | None = None
    ) -> AsyncIterator[list[EventRow]]:
        """Committed events after `after`, a batch per read, until the terminal event.

        `sub`: a subscription taken before the response was created (the creator's own stream),
        so its first events come from the committed tail instead of a read. The relay closes it.
        """
        store, notifier = self._store, self._store.notifier
        if sub is None or sub.closed:
            sub = notifier.subscribe(response_id)
        try:
            last = after
            check_store = True
            # Ask for the row when nothing is left to send: at once (a reconnect after the end of
            # a finished response ends now), then each time the timer fires.
            ask_row = True
            batch = READ_BATCH
            while True:
                if sub.clear():
                    check_store = True
                # The outbox keeps what it just committed for watched responses: same rows, no
                # read. The table is read when the tail does not reach back far enough, or after
                # a wake-up the tail cannot explain (rows committed by another path or process,
                # a run that ended, the fallback timer).
                rows = notifier.tail_after(response_id, last)
                if rows is None or (not rows and check_store):
                    rows = await store.read_events(response_id, last, limit=batch)
                    if len(rows) == batch:
                        batch = min(batch * 2, READ_BATCH_MAX)  # a backlog: read more at once
                check_store = False
                if rows:
                    yield rows
                    last = rows[-1].seq
                    if rows[-1].type in ev.TERMINAL_EVENT_TYPES:
                        return
                    continue
                if self._registry.stream_should_end(response_id):
                    return  # shutting down: the client resumes elsewhere with Last-Event-ID
                local = self._registry.get(response_id) is not None
                if not local and ask_row:
                    tail = await self._finished(response_id, last)
                    if tail is not None:
                        if tail:
                            yield tail
                        return
                # Driven by another process: PostgreSQL's NOTIFY wakes us; the timer is a safety net.
                fallback = REMOTE_SAFETY_NET if store.cross_process_wakeups else self._remote_poll
                woke = await sub.wait(None if local else fallback)
                check_store = ask_row = not woke
        finally:
            sub.close()

    async def _finished(self, response_id: str, last: int) -> list[EventRow] | None:
        """None while the response may still make events; once it is gone or finished (terminal,
        no lease), its events after `last` (one last read catches a terminal event that was
        missed), possibly none."""
        row = await self._store.get_response(response_id, None)
        if row is None:
            return []  # deleted
        if row.status in TERMINAL_STATUSES and row.lease_owner is None:
            return await self._store.read_events(response_id, last, limit=READ_BATCH)
        return None

    async def memory(self, sink: MemorySink, after: int = -1) -> AsyncIterator[list[EventRow]]:
        """A `store=false` response's events, from memory, until the terminal event."""
        sent = 0
        while True:
            sink.changed.clear()
            rows = sink.events[sent:]
            if rows:
                sent += len(rows)
                chunk = [r for r in rows if r.seq > after]
                if chunk:
                    yield chunk
                if rows[-1].type in ev.TERMINAL_EVENT_TYPES:
                    return
                continue
            await sink.changed.wait()
