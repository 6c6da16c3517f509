"""Crash recovery: take over responses whose owner died, resume each from its newest paired checkpoint.

A *paired checkpoint* is a checkpoint row committed in the same transaction as every event
the run produced before it (see `pairing.SqlPairing._on_save`). Checkpoint rows are only ever
written that way, so every stored checkpoint of a response is paired, and the newest one by
the host's sequence is where its workflow resumes: nothing it produced before is lost (it is
committed), and nothing after it is duplicated (those supersteps rerun, and their partial
events from the dead process are closed `incomplete` and left out of the output). A
continuation's run saves a checkpoint after restoring the one it continues and before its
input (a reply, a new message) reaches the workflow; such a checkpoint is marked
`awaits_input`, and recovery from it delivers the stored input again.

Invariants:
- Only responses whose lease expired are claimed (PostgreSQL: `FOR UPDATE SKIP LOCKED`), so
  at most one process drives a response at a time.
- Recovery continues the response's one sequence: no second `response.created` or
  `response.in_progress`, output indexes continue after the highest ever announced.
- Recovery enters the app through its public `agent.run(checkpoint_id=...)`.
- A foreground response cannot be resumed (its client is gone): it ends `failed`, saying so.
- A background response with no checkpoint yet restarts from its stored input.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from typing import Any

from ..observability import metrics
from ..observability.logs import bind_response
from ..protocol import events as ev
from ..protocol.request import CreateRequest
from ..protocol.response import build_response
from ..store import DatabaseUnavailable, ResponseRow, Store, Subscription
from .context import RequestContext, set_request_context
from .continuation import Continuations
from .ending import Ending, Interrupted
from .faults import database_error
from .journal import recorded_message_ids
from .lanes import Lanes
from .lives import Lives
from .open_items import (
    MESSAGE,
    ClosedItem,
    OpenItem,
    announced,
    message_item_id,
    message_key,
    reopen_from_events,
)
from .plan import RunPlan, RunSpec, lineage_for
from .registry import RunRegistry
from .settings import RuntimeSettings
from .sinks import SqlSink
from .telemetry import NO_TRACE, RunTrace
from .usage import RunUsage

log = logging.getLogger("durable_responses.recovery")

# Responses claimed per statement, and the pause between two claims of one sweep: a dead
# replica's responses are shared among the survivors that sweep at the same time.
# A couple at a time with a pause between claims while other replicas may be claiming too (the
# first FAIR_WINDOW seconds of a sweep, and for good once another one is seen claiming), so
# that the survivors alternate; alone, batches double (up to MAX_BATCH) without pauses.
FAIR_WINDOW = 0.2
# How often recovery counts the responses waiting for another app version (one read).
WAITING_EVERY = 5.0
FAIR_BATCH = 2
BATCH_PAUSE = (0.01, 0.03)
MAX_BATCH = 16
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
# Claimed responses resumed at the same time by one sweep (each resume is a few reads).
RESUME_CONCURRENCY = 8
# PostgreSQL with liveness locks (store/_pg_liveness.py): how often a sleeping recovery reads the
# live members (one read of the lock table), how often it also reads the active responses for
# dead owners when no member went away, and how long a survivor leaves a dead owner's response
# to the survivor whose share it is before it claims it itself.
LIVENESS_POLL = 0.2
FULL_LOOK = 2.0
SHARE_AT = 0.3
DEAD_GRACE = 0.6
# After a failed sweep (the database unusable), retry after this long, doubling up to the cap.
RETRY_FIRST = 0.05
RETRY_CAP = 0.25


class _Pace:
    """How many to claim next, and how long to pause after a claim (see FAIR_WINDOW)."""

    def __init__(self) -> None:
        self._started = time.monotonic()
        self._size = FAIR_BATCH
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
        if self.contended or time.monotonic() - self._started < FAIR_WINDOW:
            return random.uniform(*BATCH_PAUSE)
        self._size = min(self._size * 2, MAX_BATCH)
        return 0.0


INTERRUPTED_FOREGROUND = (
    "The server stopped while this response was running. It was not a background response, so it "
    "could not be resumed after the restart; retry the request, or create it with background=true "
    "(over HTTP: a WebSocket turn is always foreground) to have it survive restarts."
)


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
        launcher = lanes.default.launcher
        self._launcher = launcher  # (the owner and telemetry every lane shares)
        self._registry = registry
        self._settings = settings
        self.recovered = 0
        self._waiting_counted = -WAITING_EVERY
        self._lives = Lives(store, launcher.telemetry, launcher.owner)
        self._dead_seen: dict[str, float] = {}  # dead-owned response id -> when to claim it (wall)
        # Responses this process is resuming now (claimed, not yet launched): see `_resume_one`.
        self._resuming: set[str] = set()
        self._wake: Subscription | None = None
        self._last_members: list[int] | None = None
        self._lost_member = False
        self._full_look = 0.0  # when the responses were last looked at for dead owners (monotonic)

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
        expiry = await self._store.next_lease_expiry(self._launcher.owner)
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
                    if await self._look_for_dead():
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
        them all. The claimed responses resume concurrently (a few at a time): a survivor's
        last takeover does not wait for all the others' reads."""
        registry = self._registry
        own = {rid for rid in registry.stranded if registry.get(rid) is None}
        gate = asyncio.Semaphore(RESUME_CONCURRENCY)
        tasks: list[asyncio.Task[DatabaseUnavailable | bool]] = []
        pace = _Pace()
        try:
            if registry.accepting and self._store.judges_liveness:
                for row in await self._claim_dead():
                    tasks.append(asyncio.create_task(self._resume_one(row, gate), name=f"resume-{row.id}"))
            while registry.accepting:
                batch = pace.batch()
                rows, left = await self._store.claim_some(
                    self._launcher.owner,
                    limit=batch,
                    own=own,
                    runnable=self._lanes.runnable,
                )
                if not rows:
                    # What is left of `own` is no longer ours to resume (ended, or taken over).
                    registry.stranded.difference_update(own)
                    break
                metrics.TAKEOVERS.inc(len(rows))
                for row in rows:
                    own.discard(row.id)
                    registry.stranded.discard(row.id)
                    tasks.append(asyncio.create_task(self._resume_one(row, gate), name=f"resume-{row.id}"))
                if len(rows) < batch:
                    break
                pause = pace.claimed(len(rows), left)
                if pause:
                    await asyncio.sleep(pause)
        finally:
            outcomes = await asyncio.gather(*tasks)
        total = sum(1 for o in outcomes if o is True)
        self.recovered += total
        if total:
            log.info("recovery resumed %d responses", total)
        down = next((o for o in outcomes if isinstance(o, DatabaseUnavailable)), None)
        if down is not None:
            raise down
        return total

    async def _dead_plan(self) -> list[tuple[str, str]]:
        """Read the responses whose owner is dead by its liveness lock and plan their claims;
        returns those due now (this process's share, and any left to another survivor for
        DEAD_GRACE more).

        Shares stay fair because nobody claims before SHARE_AT after it first saw a dead owner's
        responses: every survivor (each looks every LIVENESS_POLL) has then seen the same list,
        and the i-th in id order is the share of the live member ranked i modulo their number.
        Alone, a survivor claims at once."""
        members = await self._members()
        if members is None:
            return []
        dead = await self._store.dead_owned(self._launcher.owner, members)
        self._full_look = time.monotonic()
        now = time.time()
        found = dict(dead)
        plan = self._dead_seen
        for rid in [r for r in plan if r not in found]:
            del plan[rid]
        key = self._store.liveness_key
        rank = members.index(key) if key is not None and key in members else -1
        alone = rank < 0 or len(members) <= 1
        for i, (rid, _old) in enumerate(dead):
            if rid not in plan:
                mine = alone or i % len(members) == rank
                plan[rid] = (now if alone else now + SHARE_AT) + (0.0 if mine else DEAD_GRACE)
        return [(rid, old) for rid, old in dead if plan[rid] <= now]

    async def _members(self) -> list[int] | None:
        """The live members' lock keys (None: this process holds no lock to judge by)."""
        database = self._store.liveness_database
        if database is None:
            return None
        members = await self._store.live_members(database)
        self._lost_member = self._last_members is not None and not set(self._last_members) <= set(members)
        self._last_members = members
        return members

    async def _look_for_dead(self) -> bool:
        """Between sweeps (every LIVENESS_POLL): whether a dead owner's responses are due now.
        Only the lock table is read, unless a member went away since the last look, some are
        planned already, or FULL_LOOK passed since the last look at the responses (an owner that
        never held its lock)."""
        members = await self._members()
        if members is None:
            return False
        if not (self._lost_member or self._dead_seen or time.monotonic() - self._full_look >= FULL_LOOK):
            return False
        return bool(await self._dead_plan())

    async def _claim_dead(self) -> list[ResponseRow]:
        """Claim the responses of dead owners that are due (`_dead_plan`)."""
        due = await self._dead_plan()
        rows = await self._store.claim_dead(self._launcher.owner, due, self._lanes.runnable)
        if rows:
            metrics.TAKEOVERS.inc(len(rows))
            log.info("took over %d responses of dead replicas at once (liveness lock gone)", len(rows))
        return rows

    async def _resume_one(self, row: ResponseRow, gate: asyncio.Semaphore) -> DatabaseUnavailable | bool:
        """Resume one claimed response: True, False (an error, logged), or the database's
        unavailability (the response is ours: stranded, resumed once writes work)."""
        if row.id in self._resuming or self._registry.get(row.id) is not None:
            # Claimed again while this process resumes or runs it (its lease lapsed while the
            # process was busy, or two claims raced): a second run would write beside the first
            # under the same owner, which no fence tells apart.
            log.warning("response %s: claimed again while it runs here; not resumed twice", row.id)
            return False
        self._resuming.add(row.id)
        try:
            return await self._resume_claimed(row, gate)
        finally:
            self._resuming.discard(row.id)

    async def _resume_claimed(self, row: ResponseRow, gate: asyncio.Semaphore) -> DatabaseUnavailable | bool:
        async with gate:
            try:
                await self.resume(row)
                return True
            except Exception as exc:
                down = database_error(exc)
                if down is None:
                    log.exception("could not recover response %s", row.id)
                    return False
                self._registry.strand(row.id)
                return down

    async def retire(self, version: str, app: str | None = None) -> int:
        """End `failed` every waiting response (no live owner) of a retired app version, saying
        so; returns how many. Those still running on a replica of that version are left to it."""
        rows = await self._store.versions.claim_retired(self._launcher.owner, version, app)
        for row in rows:
            message = (
                f"Version {version} of the app '{row.app}' was retired by an operator before this response "
                "could finish, and no replica runs that version any more. Retry the request."
            )
            await self.resume(row, end_with=message)
        if rows:
            log.warning("ended %d responses of retired app version %s", len(rows), version)
        return len(rows)

    async def resume(self, row: ResponseRow, *, end_with: str | None = None) -> None:
        """Resume a claimed response (or, `end_with` a message, end it `failed` with it)."""
        store = self._store
        lane = self._lanes.of_response(row.app)
        if lane is None:
            # (Claims ask for this server's apps only: an app dropped since the claim.)
            log.warning("response %s belongs to app %r, which this server does not host", row.id, row.app)
            await store.release_lease(row.id, self._launcher.owner)
            return
        launcher = lane.launcher
        began = time.monotonic()
        req = CreateRequest.from_json_dict(json.loads(row.request))
        store.outbox.forget(row.id)
        own_cp = await store.latest_checkpoint(user_id=row.user_id, response_id=row.id)
        bind_response(row.id)
        after = own_cp.event_seq if own_cp is not None else -1
        # Independent reads (and the takeover's record) at once: one round trip's wait, not
        # five, before the response resumes (the closed items below are never `included`,
        # so the output read now is the output after their commit too).
        begin = asyncio.ensure_future(
            self._lives.begin(row, own_cp.checkpoint_id if own_cp is not None else None)
        )
        events = asyncio.ensure_future(store.read_events(row.id, after, limit=1_000_000))
        max_index = asyncio.ensure_future(store.max_output_index(row.id))
        max_seq = asyncio.ensure_future(store.max_event_seq(row.id))
        outputs = asyncio.ensure_future(store.output_items(row.id))
        reads: list[asyncio.Future[Any]] = [begin, events, max_index, max_seq, outputs]
        await asyncio.wait(reads)
        # Every error retrieved (the first one raised): none left for asyncio to report.
        errors = [e for e in (f.exception() for f in reads) if e is not None]
        if errors:
            raise errors[0]
        trace, raw = begin.result(), events.result()
        recover = trace.child("durable_responses.recover", response_id=row.id)
        parsed: list[tuple[str, dict[str, Any]]] = [(e.type, json.loads(e.data)) for e in raw]
        open_items, highest = reopen_from_events(row.id, parsed)
        next_index = max(max_index.result(), highest) + 1
        start_seq = max(max_seq.result(), raw[-1].seq if raw else -1) + 1
        sink = launcher.sink(row.id, start_seq, row.delivery, background=row.background)
        # A message whose model call the journal recorded goes on as the same item when the
        # re-run replays that call; close the rest of what the crash interrupted: never
        # completed, never part of the output.
        journal_rows = await store.journal(row.id) if self._settings.journal else []
        replayed = {message_item_id(row.id, m): m for m in recorded_message_ids(journal_rows)}
        resumed: list[OpenItem] = []
        for item in open_items:
            if item.kind == MESSAGE and item.item_id in replayed:
                item.key = message_key(replayed[item.item_id])
                item.replay_pending = len(item.text)
                resumed.append(item)
        open_items = [item for item in open_items if item not in resumed]
        closed: list[ClosedItem] = []
        for item in open_items:
            final = item.final("incomplete")
            sink.emit(ev.output_item_done(item.output_index, final))
            closed.append(ClosedItem(item.output_index, item.item_id, "incomplete", False, final))
        if row.cancel_requested:
            await self._end(row, req, sink, closed, status="cancelled", message=None, trace=trace)
            return
        if end_with is not None:
            await self._end(row, req, sink, closed, status="failed", message=end_with, trace=trace)
            return
        if not row.background:
            await self._end(
                row, req, sink, closed, status="failed", message=INTERRUPTED_FOREGROUND, trace=trace
            )
            return
        limit = self._settings.max_recoveries
        if row.recovery_count > limit:
            message = (
                f"The response was taken over by recovery {row.recovery_count} times without finishing "
                f"(limit {limit}); it is stopped so it cannot loop forever. Check the server logs for the "
                "error that interrupts it, then retry the request."
            )
            await self._end(row, req, sink, closed, status="failed", message=message, trace=trace)
            return
        status = None
        if row.status == "queued":
            snapshot = build_response(
                req, response_id=row.id, status="in_progress", created_at=int(row.created_at)
            )
            sink.emit(ev.response_in_progress(snapshot))
            status = "in_progress"
        if closed or status is not None:
            await sink.commit(closed, status=status)
        plan = await self._plan(lane.continuations, row, req, own_cp)
        # The usage the killed run's last committed write kept: the model calls of earlier lives.
        plan.prior_usage = row.usage
        plan.prior_journal = row.journal
        plan.announced = announced(json.loads(o.data) for o in outputs.result())
        log.info(
            "recovering response %s from %s (prepared in %.0f ms)",
            row.id,
            f"checkpoint {own_cp.checkpoint_id}" if own_cp else "its stored input",
            (time.monotonic() - began) * 1000,
        )
        # The run task copies this context: the app sees whose response it resumes.
        set_request_context(RequestContext(user_id=row.user_id))
        spec = RunSpec(
            response_id=row.id,
            user_id=row.user_id,
            created_at=row.created_at,
            request=req,
            background=row.background,
            lineage=lineage_for(req, row.id),
            all_output_here=next_index == 0,
        )
        recover.end()
        metrics.RECOVERIES.inc(outcome="resumed")
        launcher.launch(
            spec,
            plan,
            sink=sink,
            next_index=next_index,
            trace=trace,
            resumed=True,
            journal_rows=journal_rows,
            resumed_items=resumed,
        )

    async def _plan(
        self, continuations: Continuations, row: ResponseRow, req: CreateRequest, own_cp: Any
    ) -> RunPlan:
        if own_cp is not None and own_cp.awaits_input:
            # Saved after the run restored the checkpoint it continues and before it delivered
            # the request's input (a reply, a new message): resuming alone would lose the input.
            return await continuations.plan_delivery(row.user_id, req, own_cp)
        if own_cp is not None:
            plan = RunPlan(messages=[], checkpoint_id=own_cp.checkpoint_id)
            if req.tools:
                plan.tools = (await continuations.plan(row.user_id, req, row.id)).tools
            return plan
        return await continuations.plan(row.user_id, req, row.id)

    async def _end(
        self,
        row: ResponseRow,
        req: CreateRequest,
        sink: SqlSink,
        closed: list[ClosedItem],
        *,
        status: str,
        message: str | None,
        trace: RunTrace = NO_TRACE,
    ) -> None:
        """End a response recovery will not resume (cancelled, interrupted foreground, looping)
        through the one `Ending`, with the usage its dead owner committed (kept on the row)."""
        spec = RunSpec(
            response_id=row.id,
            user_id=row.user_id,
            created_at=row.created_at,
            request=req,
            background=row.background,
            lineage=lineage_for(req, row.id),
            all_output_here=False,
        )
        usage = RunUsage.stored(row.usage)
        ending = Ending(spec, sink, Interrupted(closed), self._store.output_items, usage, trace=trace)
        error = None if message is None else {"code": "server_error", "message": message}
        await ending.finish(status, close_status="incomplete", error=error)
        await self._store.release_answers(row.id)
        metrics.RECOVERIES.inc(outcome="ended")
        metrics.RESPONSES_ENDED.inc(status=status)
        trace.close(status)
