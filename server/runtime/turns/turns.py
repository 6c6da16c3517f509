"""Double-texting: what a new turn does while the turn it follows still runs.

A turn follows another when it names it as `previous_response_id` or joins its `conversation`.
If that turn is still running, the request's strategy decides (the `x-double-texting` header,
else the `double_texting` metadata key, else `DURABLE_RESPONSES_DOUBLE_TEXTING`):
- `enqueue`: the request waits until the running turn ends, then runs after it;
- `reject`: 409 at once (`conversation_busy` / `previous_response_in_progress`);
- `interrupt`: the running turn is cancelled (its output so far stays in the history), then the
  new turn runs;
- `rollback`: the running turn is cancelled and forgotten (deleted with its items), then the new
  turn runs as if it had never been sent.

Invariants:
- Nothing of the new turn is created before the running one has ended: at any moment at most
  one turn of a conversation or chain runs, and a crash while a request waits leaves nothing of
  it behind (the client's retry, with its `Idempotency-Key`, creates it once).
- Cancelling and forgetting go through the store like `POST /responses/{id}/cancel` and
  `DELETE /responses/{id}`: the turn's owner, on any replica, sees the cancel and ends it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from ...observability import metrics
from ...protocol import errors
from ...protocol.request import CreateRequest
from ...store import TERMINAL_STATUSES, ResponseRow, Store
from ..run.registry import RunRegistry
from ..run.run import StopKind
from ..settings import DoubleTexting
from .turn_facts import Followed, follow

# The metadata key (and, as `x-double-texting`, the header) a request chooses its strategy by.
METADATA_KEY = "double_texting"
HEADER = "x-double-texting"


def strategy_of(req: CreateRequest, header: str | None, default: DoubleTexting) -> DoubleTexting:
    """The request's strategy: its header, else its metadata key, else the server's default."""
    for value, param in ((header, HEADER), (req.metadata.get(METADATA_KEY), f"metadata.{METADATA_KEY}")):
        if value is None:
            continue
        try:
            return DoubleTexting(value.strip().lower())
        except ValueError:
            choices = ", ".join(s.value for s in DoubleTexting)
            raise errors.bad_request(
                f"Unknown double-texting strategy {value[:40]!r} in {param}; use one of {choices}.",
                param=param,
            ) from None
    return default


def running(followed: Followed) -> ResponseRow | None:
    """The unfinished turn a request follows, if any."""
    prev = followed.previous
    if prev is not None:
        return prev if prev.status not in TERMINAL_STATUSES else None
    return next((row for row in followed.conversation if row.status not in TERMINAL_STATUSES), None)


class Turns:
    """Clears the way for a new turn by its strategy (see the module's docstring)."""

    def __init__(self, store: Store, registry: RunRegistry, wait_seconds: float) -> None:
        self._store = store
        self._registry = registry
        self._wait_seconds = wait_seconds

    async def clear(
        self, user_id: str, req: CreateRequest, strategy: DoubleTexting
    ) -> tuple[CreateRequest, Followed]:
        """Return once no turn `req` follows is running: the request (re-pointed past a
        rolled-back turn) and what it follows as last read (the continuation's facts start
        from it). `reject` returns at once: the continuation refuses the turn."""
        followed = await follow(self._store, user_id, req)
        if strategy is DoubleTexting.REJECT:
            if running(followed) is not None:
                metrics.DOUBLE_TEXTING.inc(strategy=strategy.value)
            return req, followed
        deadline = time.monotonic() + self._wait_seconds
        counted = False
        while (busy := running(followed)) is not None:
            if not counted:
                metrics.DOUBLE_TEXTING.inc(strategy=strategy.value)
                counted = True
            if strategy is not DoubleTexting.ENQUEUE:
                await self._cancel(busy)
            await self._until_ended(user_id, busy, deadline, strategy)
            if strategy is DoubleTexting.ROLLBACK:
                req = await self._forget(user_id, req, busy)
            followed = await follow(self._store, user_id, req)
        return req, followed

    async def _cancel(self, row: ResponseRow) -> None:
        await self._store.request_cancel(row.id, row.user_id)
        # Ours: stop it now; another replica's owner sees the request at its next lease renewal.
        self._registry.stop(row.id, StopKind.CANCELLED)

    async def _until_ended(
        self, user_id: str, row: ResponseRow, deadline: float, strategy: DoubleTexting
    ) -> None:
        pause = 0.05
        while True:
            current = await self._store.get_response(row.id, user_id)
            if current is None or current.status in TERMINAL_STATUSES:
                return
            if time.monotonic() >= deadline:
                raise errors.conflict(
                    f"Response '{row.id}', which this turn follows, is still {current.status} after "
                    f"{self._wait_seconds:g} s ({strategy.value}); retry later, or choose another "
                    f"strategy with the {HEADER} header.",
                    code="conversation_busy",
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.5)

    async def _forget(self, user_id: str, req: CreateRequest, row: ResponseRow) -> CreateRequest:
        await self._store.delete_response(row.id, user_id)
        if req.previous_response_id == row.id:
            return dataclasses.replace(req, previous_response_id=row.previous_response_id)
        return req
