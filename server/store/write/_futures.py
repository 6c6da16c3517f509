"""The futures of the outbox's writes: one per write submitted and not yet settled.

A write stays as its submitter built it: its future is kept here, by the write's identity (the
entry holds the write, so its id is not reused while the entry lives).
"""

from __future__ import annotations

import asyncio

from ..records import Write


class Futures:
    def __init__(self) -> None:
        self._by_write: dict[int, tuple[Write, asyncio.Future[None]]] = {}

    def of(self, write: Write) -> asyncio.Future[None]:
        """The future of `write`: the one it was given when first submitted, while unsettled."""
        entry = self._by_write.get(id(write))
        if entry is None:
            entry = self._by_write[id(write)] = (write, asyncio.get_running_loop().create_future())
        return entry[1]

    def settle(self, write: Write, exc: BaseException | None = None) -> None:
        """Resolve `write`'s future (with `exc`, if given) and forget it."""
        entry = self._by_write.pop(id(write), None)
        if entry is None or entry[1].done():
            return
        if exc is None:
            entry[1].set_result(None)
        else:
            entry[1].set_exception(exc)
