"""In-process wake-ups for relays: "response R has committed new events".

Invariant: a notification is published only after the commit it announces, so a relay that
wakes and reads finds the rows. Each subscriber has its own flag, so one relay clearing its
flag never swallows another's wake-up. Waiters never poll; a relay for a response driven by
another process wakes through the cross-process channel (PostgreSQL LISTEN/NOTIFY) or, on
SQLite, through the relay's slow fallback timer.

Two kinds of wake-up: the outbox's own commits (`publish_committed`, after `committed()` put
their rows in the tail: the tail tells the whole story) and every other one (`publish`: rows
committed another way, a run that ended, a deletion, shutdown), after which a relay must read
the table. Telling them apart keeps a live relay off the database while its run streams (a
checkpoint's commit, which carries no events, used to cost every relay a read).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..records import EventRow

TAIL_LIMIT = 8192


# Not a response id (ids are [A-Za-z0-9_-]): the key whose subscribers are woken when another
# replica hands its responses off (its graceful shutdown's `pg_notify`), i.e. recovery.
RECOVERY_WAKE = "!recovery"


class Notifier:
    def __init__(self) -> None:
        self._subs: dict[str, set[Subscription]] = {}
        # Committed events of watched responses, so a local relay need not read them back.
        self._tails: dict[str, list[EventRow]] = {}

    def committed(self, response_id: str, rows: list[EventRow]) -> None:
        """Keep rows the outbox just committed, while someone watches the response."""
        if not rows or response_id not in self._subs:
            return
        tail = self._tails.get(response_id)
        if tail is None or tail[-1].seq + 1 != rows[0].seq:
            tail = []  # a gap (rows committed by another path): start over from these
            self._tails[response_id] = tail
        tail.extend(rows)
        if len(tail) > TAIL_LIMIT:
            del tail[: len(tail) - TAIL_LIMIT // 2]

    def tail_after(self, response_id: str, seq: int) -> list[EventRow] | None:
        """Rows this process committed after `seq` (maybe none yet); None if the tail
        does not reach back to `seq` (read the store)."""
        tail = self._tails.get(response_id)
        if not tail:
            return None
        first = tail[0].seq
        if seq + 1 < first:
            return None
        return tail[seq + 1 - first :]

    def publish(self, response_id: str) -> None:
        """Wake the response's relays; they re-read the table (something changed elsewhere)."""
        subs = self._subs.get(response_id)
        if subs:
            for sub in subs:
                sub.wake(read=True)

    def publish_many(self, response_ids: Iterable[str]) -> None:
        for rid in response_ids:
            self.publish(rid)

    def publish_committed(self, response_ids: Iterable[str]) -> None:
        """Wake the relays of responses whose commits went through `committed()`: the tail
        holds every new row, no read needed."""
        for rid in response_ids:
            subs = self._subs.get(rid)
            if subs:
                for sub in subs:
                    sub.wake(read=False)

    def publish_all(self) -> None:
        """Wake every subscriber (shutdown: relays re-check whether to go on)."""
        for subs in self._subs.values():
            for sub in subs:
                sub.wake(read=True)

    def has_subscribers(self, response_id: str) -> bool:
        return bool(self._subs.get(response_id))

    def subscribe(self, response_id: str) -> Subscription:
        sub = Subscription(self, response_id)
        self._subs.setdefault(response_id, set()).add(sub)
        return sub

    def release(self, sub: Subscription) -> None:
        """`sub` stops watching (`Subscription.close`)."""
        subs = self._subs.get(sub.response_id)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.response_id]
                self._tails.pop(sub.response_id, None)


class Subscription:
    """A relay's handle: `clear()` before reading, then `wait()` if the read found nothing new.

    Clearing before the read closes the race where a commit lands between the read and the wait.
    """

    def __init__(self, notifier: Notifier, response_id: str) -> None:
        self._notifier = notifier
        self.response_id = response_id
        self._event = asyncio.Event()
        self._foreign = False
        self.closed = False

    def wake(self, *, read: bool) -> None:
        """End a `wait()`; `read`: the rows are in the table only (not in the tail)."""
        if read:
            self._foreign = True
        self._event.set()

    def clear(self) -> bool:
        """Reset the flag; returns whether a wake-up since the last clear asked for a read of
        the table (`Notifier.publish`) rather than only announcing rows now in the tail."""
        foreign = self._foreign
        self._foreign = False
        self._event.clear()
        return foreign

    async def wait(self, timeout: float | None) -> bool:  # noqa: ASYNC109 - a wake-up with a fallback
        if self._event.is_set():
            # Python 3.11's wait_for(..., 0) times out before the inner wait() ever runs.
            return True
        try:
            await asyncio.wait_for(self._event.wait(), timeout)
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        """Stop watching (idempotent)."""
        if not self.closed:
            self.closed = True
            self._notifier.release(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
