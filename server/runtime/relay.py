"""SSE relays: committed events, as pre-formatted frames, from a sequence number to the end.

Invariants:
- A relay only ever sends rows read back from the outbox (commit before send); the live
  stream and a replay are the same read.
- It never polls a response this process runs: it sleeps until the outbox announces a commit.
  For a response driven by another replica it wakes on PostgreSQL NOTIFY, with a slow timer as
  a safety net (SQLite: a short timer).
- Each read becomes one write to the socket (frames joined), so per-event cost stays flat.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..protocol import events as ev
from ..protocol.sse import frame
from ..store import TERMINAL_STATUSES, Subscription
from .sinks import MemorySink

if TYPE_CHECKING:
    from .host import Host


async def relay_committed(
    host: Host, response_id: str, after: int, sub: Subscription | None = None
) -> AsyncIterator[bytes]:
    """Committed events after `after`, as SSE frames, until the terminal event.

    `sub`: a subscription taken before the response was created (the creator's own stream),
    so its first events come from the committed tail instead of a read. The relay closes it.
    """
    if sub is None or sub.closed:
        sub = host.store.notifier.subscribe(response_id)
    try:
        last = after
        check_store = True
        while True:
            if sub.clear():
                check_store = True
            # The outbox keeps what it just committed for watched responses: same rows, no read.
            # The table is read when the tail does not reach back far enough, or after a wake-up
            # the tail cannot explain (rows committed by another path or another process, a run
            # that ended, the fallback timer).
            rows = host.store.notifier.tail_after(response_id, last)
            if rows is None or (not rows and check_store):
                rows = await host.store.read_events(response_id, last, limit=2000)
            check_store = False
            if rows:
                yield b"".join(frame(r.type, r.seq, r.data) for r in rows)
                last = rows[-1].seq
                if rows[-1].type in ev.TERMINAL_EVENT_TYPES:
                    return
                continue
            run = host.runs.get(response_id)
            if host.draining.is_set() and (run is None or run.background):
                return  # shutting down: the client resumes elsewhere with Last-Event-ID
            local = run is not None
            # Driven by another process: PostgreSQL's NOTIFY wakes us; the timer is a safety net.
            fallback = 5.0 if host.store.cross_process_wakeups else host.settings.remote_poll_seconds
            woke = await sub.wait(None if local else fallback)
            check_store = not woke
            if not woke and not local:
                row = await host.store.get_response(response_id, None)
                if row is None:
                    return  # deleted
                if row.status in TERMINAL_STATUSES and row.lease_owner is None:
                    # Terminal: one last read catches the terminal event if it was missed.
                    tail = await host.store.read_events(response_id, last, limit=2000)
                    if tail:
                        yield b"".join(frame(r.type, r.seq, r.data) for r in tail)
                    return
    finally:
        sub.close()


async def relay_memory(sink: MemorySink, after: int = -1) -> AsyncIterator[bytes]:
    sent = 0
    while True:
        sink.changed.clear()
        rows = sink.events[sent:]
        if rows:
            sent += len(rows)
            chunk = [frame(r.type, r.seq, r.data) for r in rows if r.seq > after]
            if chunk:
                yield b"".join(chunk)
            if rows[-1].type in ev.TERMINAL_EVENT_TYPES:
                return
            continue
        await sink.changed.wait()
