"""PostgreSQL LISTEN/NOTIFY: wake relays in every replica when events commit anywhere.

Invariant: the notification is sent inside the committing transaction (`pg_notify` is
delivered only on COMMIT), so a replica that wakes and reads finds the rows. A process ignores
its own notifications (it already woke its relays in-process). If the listening connection
drops, it reconnects; relays meanwhile fall back to their slow timer, so nothing is missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection

from ._engine import raw_pg_dsn
from .notify import Notifier

log = logging.getLogger("durable_responses.pg_listen")

CHANNEL = "durable_responses_events"
_MAX_PAYLOAD = 7000  # PostgreSQL's limit is 8000 bytes


async def notify(conn: AsyncConnection, instance: str, response_ids: Iterable[str]) -> None:
    chunk: list[str] = []
    size = 0
    for rid in sorted(set(response_ids)):
        if size + len(rid) + 1 > _MAX_PAYLOAD and chunk:
            await _send(conn, instance, chunk)
            chunk, size = [], 0
        chunk.append(rid)
        size += len(rid) + 1
    if chunk:
        await _send(conn, instance, chunk)


async def _send(conn: AsyncConnection, instance: str, ids: list[str]) -> None:
    await conn.execute(text("SELECT pg_notify(:c, :p)"), {"c": CHANNEL, "p": instance + "|" + ",".join(ids)})


class PgListener:
    def __init__(self, url: URL, notifier: Notifier, instance: str) -> None:
        self._dsn = raw_pg_dsn(url)
        self._notifier = notifier
        self._instance = instance
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="pg-listen")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        sender, _, ids = payload.partition("|")
        if sender == self._instance:
            return
        self._notifier.publish_many(ids.split(","))

    async def _run(self) -> None:
        import asyncpg

        delay = 0.5
        while True:
            conn: Any = None
            try:
                conn = await asyncpg.connect(self._dsn, timeout=10)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _c, ev=lost: ev.set())
                await conn.add_listener(CHANNEL, self._on_notify)
                delay = 0.5
                # Everyone re-reads once after a (re)connect: notifications may have been missed.
                self._notifier.publish_all()
                await lost.wait()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("LISTEN connection failed (%s); relays poll until it is back", exc)
            finally:
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close(timeout=2)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10)
