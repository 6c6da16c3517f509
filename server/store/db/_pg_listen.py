"""PostgreSQL LISTEN/NOTIFY: wake relays in every replica when events commit anywhere.

Invariant: the notification is sent inside the committing transaction (`pg_notify` is
delivered only on COMMIT), so a replica that wakes and reads finds the rows. A process ignores
its own notifications (it already woke its relays in-process). LISTEN runs on a connection of
its own (`DURABLE_RESPONSES_LISTEN_DATABASE_URL`, by default the main URL); while it is down,
or where it cannot work at all (through a pooler in transaction mode, whose sessions change
hands between transactions), `listening` is False and relays poll at their bounded interval
(`Store.cross_process_wakeups`); that is said once in the log, and every loss and return of
the connection too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from typing import Any

from ..errors import classify
from ._pg_connect import PgConnector
from .notify import Notifier

log = logging.getLogger("durable_responses.pg_listen")

CHANNEL = "durable_responses_events"
_MAX_PAYLOAD = 7000  # PostgreSQL's limit is 8000 bytes


def payloads(prefix: str, response_ids: Iterable[str]) -> list[str]:
    """`prefix` + comma-separated ids, in chunks that fit a notification."""
    out: list[str] = []
    chunk: list[str] = []
    size = 0
    for rid in sorted(set(response_ids)):
        if size + len(rid) + 1 > _MAX_PAYLOAD and chunk:
            out.append(prefix + ",".join(chunk))
            chunk, size = [], 0
        chunk.append(rid)
        size += len(rid) + 1
    if chunk:
        out.append(prefix + ",".join(chunk))
    return out


class PgListener:
    def __init__(self, connector: PgConnector, notifier: Notifier, instance: str) -> None:
        self._connector = connector
        self._notifier = notifier
        self._instance = instance
        self._task: asyncio.Task[None] | None = None
        self.listening = False
        self.impossible = False  # through a transaction pooler: relays poll for good

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="pg-listen")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None
        self.listening = False

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        sender, _, ids = payload.partition("|")
        if sender == self._instance:
            return
        self._notifier.publish_many(ids.split(","))

    async def _possible(self) -> bool:
        """Whether LISTEN can work on this URL (probed once, retried while the database is down)."""
        delay = 0.5
        reported = False
        while True:
            try:
                pooled = await self._connector.transaction_pooled()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not reported:
                    log.warning("LISTEN: cannot reach %s (%s); retrying", self._connector.where, _why(exc))
                    reported = True
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10)
                continue
            if pooled:
                log.warning(
                    "LISTEN is impossible through the connection pooler in transaction mode at %s: relays of "
                    "responses driven by other replicas poll (DURABLE_RESPONSES_REMOTE_POLL_SECONDS). Set "
                    "DURABLE_RESPONSES_LISTEN_DATABASE_URL to a direct (or session-mode) URL of the same "
                    "database for immediate wake-ups",
                    self._connector.where,
                )
            return not pooled

    async def _run(self) -> None:
        if not await self._possible():
            self.impossible = True
            return
        delay = 0.5
        ever_up = False
        reported = False  # a failure since the last success is in the log
        while True:
            conn: Any = None
            try:
                conn = await self._connector.connect(prepared=False)
                lost = asyncio.Event()
                conn.add_termination_listener(lambda _c, ev=lost: ev.set())
                await conn.add_listener(CHANNEL, self._on_notify)
                delay = 0.5
                self.listening = True
                if ever_up:
                    log.warning("LISTEN connection to %s is back", self._connector.where)
                ever_up, reported = True, False
                # Everyone re-reads once after a (re)connect: notifications may have been missed.
                self._notifier.publish_all()
                await lost.wait()
                log.warning(
                    "LISTEN connection to %s was lost; relays poll until it is back", self._connector.where
                )
                reported = True
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not reported:
                    log.warning(
                        "LISTEN connection to %s failed (%s); relays poll until it is back",
                        self._connector.where,
                        _why(exc),
                    )
                    reported = True
            finally:
                self.listening = False
                if conn is not None:
                    with contextlib.suppress(Exception):
                        await conn.close(timeout=2)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 10)


def _why(exc: BaseException) -> str:
    unavailable = classify(exc)
    return unavailable.log_text() if unavailable is not None else f"{type(exc).__name__}: {exc}"
