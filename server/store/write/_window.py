"""The group-commit window: the outbox's wait for more writes, cut short by an awaited one.

A wait is one future and one timer. `asyncio.wait_for` on an `Event` made a task for the inner
wait and, when the window ran out (the usual case under load), cancelled it, another loop turn:
52-117 us of CPU per window against 29-33 (measured, 2,000 windows of 0.5 ms each way), and
under load the live events of every stream commit once per window.
"""

from __future__ import annotations

import asyncio


class Window:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._waiter: asyncio.Future[None] | None = None

    async def wait(self) -> None:
        """Wait `seconds`, or less if `cut()` is called meanwhile."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(self.seconds, _end, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None

    def cut(self) -> None:
        """End the wait in progress, if any (a write someone awaits came in)."""
        _end(self._waiter)


def _end(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)
