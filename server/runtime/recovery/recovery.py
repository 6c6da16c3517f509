"""Crash recovery: take over responses whose owner died, and resume them (`resume.Resumer`).

The loop sweeps now, then when the next lease expires, at once when another replica hands its
responses off (its NOTIFY), when a run of ours stops on a database error, or (PostgreSQL with
liveness locks) when a dead owner's responses are due (`dead_owners.DeadOwners`).

Invariants:
- Only responses whose lease expired, whose owner is known dead (its liveness lock gone), or
  that are our own stranded runs are claimed (PostgreSQL: `FOR UPDATE SKIP LOCKED`), so at
  most one process drives a response at a time; the lease stays the fence of every write.
- A graceful hand-off is not counted as a recovery (`Leases.claim_some`).
- Every claimed response is resumed through the app's public `agent.run` (`resume`), once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time

from ...observability import metrics
from ...store import DatabaseUnavailable, ResponseRow, Store, Subscription
from ..apps.lanes import Lanes
from ..faults import database_error
from ..run.registry import RunRegistry
from ..settings import RuntimeSettings
from .dead_owners import LIVENESS_POLL, DeadOwners
from .resume import RESUME_BATCH, Outcome, Resumer

log = logging.getLogger("durable_responses.recovery")

# Responses claimed per statement, and the pause between two claims of one sweep: a dead
# replica's responses are shared among the survivors that sweep at the same time.
# A couple at a time with a pause between claims while other replicas may be claiming too (the
# first FAIR_WINDOW seconds of a sweep, and for good once another one is seen claiming), so
# that the survivors alternate; alone, batches double (up to MAX_BATCH) without pauses.
FAIR_WINDOW = 0.2
FAIR_BATCH = 2
BATCH_PAUSE = (0.01, 0.03)
MAX_BATCH = 16
# Alone (no other replica to share with: the only live member by the liveness locks, or an
# SQLite process that found itself alone on its file at start), a sweep claims this many at a
# time without pauses: a restart's whole backlog in a few claims, each batch read at once.
ALONE_BATCH = RESUME_BATCH
# How often recovery counts the responses waiting for another app version (one read).
WAITING_EVERY = 5.0
# Seconds after a lease's expiry at which a sweep claims it, at most (spread among replicas,
# less than a pause: the first awake cannot take many batches before the others wake).
EXPIRY_JITTER = 0.005
# After a sweep that claimed N, this replica sweeps again no sooner than N times this: the
# next leases to expire go to a survivor that has claimed less (a replica ahead of the others,
# the least loaded, took 9 of 12 in CI without it). Alone it costs a few tens of milliseconds
# per lease expiry at most.
CLAIM_YIELD = 0.025
# A sweep for the next lease to expire also waits this long per run this replica drives (up to
# the cap): the survivor with fewer runs wakes first and claims it, so takeovers even out over
# a dead replica's leases expiring one by one (CI still saw 9 of 12 go to one of two survivors
# with CLAIM_YIELD alone, which only counts the last sweep's claims).
LOAD_DELAY = 0.004
LOAD_DELAY_CAP = 0.1
# After a failed sweep (the database unusable), retry after this long, doubling up to the cap.
RETRY_FIRST = 0.05
RETRY_CAP = 0.25


class _Pace:
    """How many to claim next, and how long to pause after a claim (see FAIR_WINDOW)."""

    def __init__(self, *, alone: bool = False) -> None:
        self._started = time.monotonic()
        self._alone = alone
        self._size = ALONE_BATCH if alone else FAIR_BATCH
        self._left: int | None = None
        self.contended = False

    def batch(self) -> int:
        return self._size

    def claimed(self, claimed: int, left: int) -> float:
        """After claiming `claimed`, `left` still wait: fewer than expected means another
        replica claims too. Returns the pause before the next claim."""
        if self._left is not None and left < self._left - claimed:
            self.contended = True
        self._left = left
        if self._alone and not self.contended:
            return 0.0
        if self.contended or time.monotonic() - self._started < FAIR_WINDOW:
            return random.uniform(*BATCH_PAUSE)
        self._size = min(self._size * 2, MAX_BATCH)
        return 0.0


class Recovery:
    def __init__(
        self,
        store: Store,
        lanes: Lanes,
        registry: RunRegistry,
        settings: RuntimeSettings,
    ) -> None:
        self._store = store
        self._lanes = lanes
        self._owner = lanes.default.launcher.owner  # (the owner every lane shares)
        self._registry = registry
        self._settings = settings
        self.recovered = 0
        self._waiting_counted = -WAITING_EVERY
        self._dead = DeadOwners(store, lanes, self._owner)
        self._resumer = Resumer(store, lanes, registry, settings)
        self._wake: Subscription | None = None
        self._swept = False  # a sweep ran already

    async def loop(self) -> None:
        """Sweep now, then when the next lease expires (plus a little jitter, so that replicas
        do not all claim at the same instant), at the latest every `recovery_interval`; at
        once when a run of ours stops on a database error; after a failure, again with a
        short backoff (the database may be back any moment: resume then, not a lease later;
        but a full disk is not hammered either)."""
        backoff = RETRY_FIRST
        wait = 0.0
        while True:
            strand_wakes = True
            try:
                claimed = await self.sweep()
                await self._count_waiting()
                backoff = RETRY_FIRST
                wait = await self._until_next_expiry()
                if claimed:
                    wait = max(wait, min(claimed * CLAIM_YIELD, self._settings.recovery_interval))
                if self._registry.stranded:  # some could not be claimed yet
                    wait = min(wait, backoff)
            except Exception as exc:
                if database_error(exc) is None:
                    log.exception("recovery sweep failed")
                # (A database that cannot be used is in the store's health log, once.)
                wait, backoff = backoff, min(backoff * 2, self._retry_cap)
                strand_wakes = False  # more runs stopping on the same outage change nothing
            await self._sleep(wait, strand_wakes)

    async def _count_waiting(self) -> None:
        """Every WAITING_EVERY seconds: the responses of versions no lane runs (a metric)."""
        now = time.monotonic()
        if now - self._waiting_counted < WAITING_EVERY:
            return
        self._waiting_counted = now
        metrics.waiting_for_version(await self._store.versions.waiting(self._lanes.runnable))

    @property
    def _retry_cap(self) -> float:
        return min(RETRY_CAP, self._settings.recovery_interval)

    async def _until_next_expiry(self) -> float:
        interval = self._settings.recovery_interval
        expiry = await self._store.next_lease_expiry(self._owner)
        if expiry is None:
            return interval
        load = min(LOAD_DELAY * len(self._registry), LOAD_DELAY_CAP)
        return min(interval, max(0.0, expiry - time.time()) + load + random.uniform(0.0, EXPIRY_JITTER))

    async def _sleep(self, seconds: float, strand_wakes: bool) -> None:
        """Sleep `seconds`; another replica's hand-off (its NOTIFY) ends it, and, while this
        process judges liveness (PostgreSQL), so does a response whose owner died (looked for
        every LIVENESS_POLL)."""
        if self._wake is None:
            self._wake = self._store.recovery_wake()
        wake = self._wake
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            slice_ = min(left, LIVENESS_POLL) if self._store.liveness_held else left
            wake.clear()
            sleeper = asyncio.ensure_future(self._sleep_slice(slice_, strand_wakes))
            woken = asyncio.ensure_future(wake.wait(slice_))
            try:
                done, _ = await asyncio.wait({sleeper, woken}, return_when=asyncio.FIRST_COMPLETED)
            finally:  # (cancelled too: shutdown leaves no waiter behind)
                for f in (sleeper, woken):
                    if not f.done():
                        f.cancel()
            if woken in done and woken.result():
                return  # a hand-off: its leases are free now
            if sleeper in done and sleeper.result():
                return  # a run of ours stranded
            if self._store.judges_liveness:
                with contextlib.suppress(Exception):
                    if await self._dead.due():
                        return

    async def _sleep_slice(self, seconds: float, strand_wakes: bool) -> bool:
        """Sleep `seconds`; True when a run of ours stopping on a database error (meanwhile,
        or during the sweep just done) ended the sleep (with `strand_wakes`)."""
        stranded = self._registry.stranded_added
        if strand_wakes and stranded.is_set():
            stranded.clear()
            return True
        stranded.clear()
        if not strand_wakes:
            await asyncio.sleep(seconds)
            return False
        try:
            await asyncio.wait_for(stranded.wait(), seconds)
        except TimeoutError:
            return False
        stranded.clear()
        return True

    async def sweep(self) -> int:
        """Claim and resume expired responses, and our own stranded ones; returns how many.
        Raises the database's unavailability (the loop retries soon).

        Claims come in small batches with a pause between them, so that the survivors of a
        dead replica share its responses (each claims a few, pauses, claims again: `FOR UPDATE
        SKIP LOCKED` gives each batch to one of them) instead of the first to sweep taking
        them all. Each claimed batch resumes at once (`Resumer.resume_all`) while the next is
        claimed: a survivor's last takeover does not wait for all the others' reads."""
        registry = self._registry
        own = {rid for rid in registry.stranded if registry.get(rid) is None}
        tasks: list[asyncio.Task[list[Outcome]]] = []

        def resume(rows: list[ResponseRow]) -> None:
            tasks.append(asyncio.create_task(self._resumer.resume_all(rows), name=f"resume-{rows[0].id}"))

        try:
            if registry.accepting and self._store.judges_liveness:
                dead = await self._dead.claim()
                if dead:
                    resume(dead)
            first, self._swept = not self._swept, True
            pace = _Pace(alone=self._dead.alone or (first and self._store.alone_at_start))
            while registry.accepting:
                batch = pace.batch()
                rows, left = await self._store.claim_some(
                    self._owner,
                    limit=batch,
                    own=own,
                    runnable=self._lanes.runnable,
                    busy=[run.response_id for run in registry],
                )
                if not rows:
                    # What is left of `own` is no longer ours to resume (ended, or taken over).
                    registry.stranded.difference_update(own)
                    break
                metrics.TAKEOVERS.inc(len(rows))
                for row in rows:
                    own.discard(row.id)
                    registry.stranded.discard(row.id)
                resume(rows)
                if len(rows) < batch:
                    break
                pause = pace.claimed(len(rows), left)
                if pause:
                    await asyncio.sleep(pause)
        finally:
            outcomes = [o for batch in await asyncio.gather(*tasks) for o in batch]
        total = sum(1 for o in outcomes if o is True)
        self.recovered += total
        if total:
            log.info("recovery resumed %d responses", total)
        down = next((o for o in outcomes if isinstance(o, DatabaseUnavailable)), None)
        if down is not None:
            raise down
        return total

    async def retire(self, version: str, app: str | None = None) -> int:
        """End `failed` every waiting response (no live owner) of a retired app version, saying
        so; returns how many. Those still running on a replica of that version are left to it."""
        rows = await self._store.versions.claim_retired(self._owner, version, app)

        def message(row: ResponseRow) -> str:
            return (
                f"Version {version} of the app '{row.app}' was retired by an operator before this response "
                "could finish, and no replica runs that version any more. Retry the request."
            )

        outcomes = await self._resumer.resume_all(rows, end_with=message)
        if rows:
            log.warning("ended %d responses of retired app version %s", len(rows), version)
        down = next((o for o in outcomes if isinstance(o, DatabaseUnavailable)), None)
        if down is not None:
            raise down
        return len(rows)
