"""Webhooks: the events a background response's end commits, and the loop that delivers them.

Job: `Webhooks.event_for` gives the sink of a background response the events to commit with its
terminal event in one transaction (`store.Write.webhooks`): its end's, and
`agent.session.action_required` when it waits for a person. `Webhooks.loop`, owned by the Host
like the lease keeper, delivers every due delivery of the store, whichever replica committed
it, with Standard Webhooks headers, retrying with exponential backoff.

Invariants:
- At least once: a delivery stays `pending` until an attempt got a 2xx; a process that dies
  mid-attempt leaves a lease that expires, and any replica attempts it again.
- One replica attempts a delivery at a time (`WebhookStore.claim_due` leases it for longer
  than an attempt may last), so when nothing fails each event reaches each endpoint once.
- Never in a run's way: attempts run in their own tasks with their own timeout; a run only
  adds rows to its end's write and wakes the loop after the commit.
- A delivery that exhausted its attempts ends `failed`, with one log line saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx
from opentelemetry.trace import Status, StatusCode

from ...observability import metrics, tracing
from ...protocol.webhooks import (
    ACTION_REQUIRED,
    EVENT_TYPES,
    WebhookType,
    event_payload,
    new_event_id,
    parse_secret,
    signature_headers,
)
from ...store import Delivery, Finish, Store, WebhookEvent
from ..faults import database_error
from ..run.telemetry import webhook_attempt
from ..settings import RuntimeSettings

log = logging.getLogger("durable_responses.webhooks")

# Attempts in flight at once, per process.
MAX_CONCURRENT = 16


class Webhooks:
    def __init__(self, store: Store, settings: RuntimeSettings, owner: str) -> None:
        self._store = store
        self._settings = settings
        self._owner = owner
        self.endpoints = settings.webhook_urls
        self._key = parse_secret(settings.webhook_secret) if settings.webhook_secret else None
        self._wake = asyncio.Event()
        self._inflight: set[asyncio.Task[None]] = set()
        self._client: httpx.AsyncClient | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.endpoints) and self._key is not None

    @property
    def lease_seconds(self) -> float:
        """How long an attempt is leased: beyond its timeout, so it never outlives its lease."""
        return 2 * self._settings.webhook_timeout_seconds + 1

    # -- the run's side -----------------------------------------------------------------

    def event_for(
        self, response_id: str, finish: Finish, waiting: Sequence[Mapping[str, Any]] = ()
    ) -> tuple[WebhookEvent, ...]:
        """The webhook events of a background response that ends with `finish`: the end's, and
        `agent.session.action_required` when `waiting` holds output items waiting for a person."""
        kind = EVENT_TYPES.get(finish.status)
        if kind is None or not self.enabled:
            return ()
        events = [self._event(response_id, kind)]
        if waiting and finish.status == "completed":
            events.append(self._event(response_id, ACTION_REQUIRED, waiting))
        return tuple(events)

    def _event(
        self, response_id: str, kind: WebhookType, waiting: Sequence[Mapping[str, Any]] = ()
    ) -> WebhookEvent:
        now = time.time()
        event_id = new_event_id()
        return WebhookEvent(
            event_id=event_id,
            response_id=response_id,
            type=kind,
            created_at=now,
            data=event_payload(event_id, kind, int(now), response_id, waiting),
            endpoints=self.endpoints,
        )

    def wake(self) -> None:
        """An event was just committed here: deliver it now rather than at the next poll."""
        self._wake.set()

    # -- delivery -----------------------------------------------------------------------

    async def loop(self) -> None:
        if not self.enabled:
            return
        self._client = httpx.AsyncClient(timeout=self._settings.webhook_timeout_seconds)
        try:
            while True:
                self._wake.clear()
                try:
                    await self.deliver_due()
                except Exception as exc:
                    if database_error(exc) is None:  # (else: in the store's health log, once)
                        log.exception("webhook delivery sweep failed")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._settings.webhook_poll_seconds)
        finally:
            await self.close()

    async def deliver_due(self) -> int:
        """Lease the due deliveries this process has room for and start their attempts."""
        room = MAX_CONCURRENT - len(self._inflight)
        if room <= 0:
            return 0
        due = await self._store.webhooks.claim_due(self._owner, lease_seconds=self.lease_seconds, limit=room)
        for delivery in due:
            task = asyncio.create_task(self._attempt(delivery), name=f"webhook-{delivery.event_id}")
            self._inflight.add(task)
            task.add_done_callback(self._attempt_done)
        return len(due)

    def _attempt_done(self, task: asyncio.Task[None]) -> None:
        self._inflight.discard(task)
        self._wake.set()  # room for another, and a retry may be due

    async def _attempt(self, delivery: Delivery) -> None:
        assert self._key is not None and self._client is not None
        body = delivery.data.encode()
        headers = signature_headers(self._key, delivery.event_id, int(time.time()), body)
        error: str | None = None
        stored = await self._trace_context(delivery.response_id) if tracing.enabled() else None
        with webhook_attempt(
            stored, headers, response_id=delivery.response_id, event=delivery.type, attempt=delivery.attempts
        ) as span:
            try:
                resp = await self._client.post(delivery.endpoint, content=body, headers=headers)
                if not 200 <= resp.status_code < 300:
                    error = f"HTTP {resp.status_code}"
            except httpx.TimeoutException:
                error = f"no answer within {self._settings.webhook_timeout_seconds:g} s"
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
            if span is not None and error is not None:
                span.set_status(Status(StatusCode.ERROR, error))
        try:
            await self._record(delivery, error)
        except Exception:
            log.exception(
                "webhook %s: could not record the attempt; its lease expires and it is retried",
                delivery.event_id,
            )

    async def _trace_context(self, response_id: str) -> str | None:
        try:
            found = await self._store.ops.summary(response_id, None)
        except Exception:  # the span goes without its parent; the attempt goes on
            return None
        return found.trace_context if found is not None else None

    async def _record(self, delivery: Delivery, error: str | None) -> None:
        hooks = self._store.webhooks
        if error is None:
            metrics.WEBHOOKS.inc(outcome="delivered")
            await hooks.finish_attempt(delivery, self._owner, delivered=True)
            return
        if delivery.attempts >= self._settings.webhook_max_attempts:
            metrics.WEBHOOKS.inc(outcome="failed")
            if await hooks.finish_attempt(delivery, self._owner, delivered=False, error=error):
                log.error(
                    "webhook %s (%s of response %s) to %s failed for good after %d attempts; last: %s",
                    delivery.event_id,
                    delivery.type,
                    delivery.response_id,
                    delivery.endpoint,
                    delivery.attempts,
                    error,
                )
            return
        delay = self.backoff(delivery.attempts)
        metrics.WEBHOOKS.inc(outcome="retried")
        log.warning(
            "webhook %s to %s: attempt %d failed (%s); next in %.1f s",
            delivery.event_id,
            delivery.endpoint,
            delivery.attempts,
            error,
            delay,
        )
        await hooks.finish_attempt(
            delivery, self._owner, delivered=False, error=error, retry_at=time.time() + delay
        )

    def backoff(self, attempts: int) -> float:
        """Seconds before the attempt after `attempts` failed ones: doubling, capped, jittered."""
        base = self._settings.webhook_retry_seconds * 2 ** max(attempts - 1, 0)
        return float(min(base, self._settings.webhook_max_retry_seconds) * random.uniform(0.9, 1.1))

    async def close(self) -> None:
        for task in list(self._inflight):
            task.cancel()
        for task in list(self._inflight):
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            await self._store.webhooks.release(self._owner)
        if self._client is not None:
            await self._client.aclose()
            self._client = None
