"""The transactional outbox writer: group commit of events, items, checkpoints and transitions.

Invariants:
- A `Write` is committed whole, in one transaction, or not at all. A checkpoint travels in the
  same `Write` as (or a later one than) every event its run produced before it, and a
  response's writes are committed in submission order, so a committed checkpoint always has
  its outputs committed.
- Every write is fenced by its owner's lease: a process that lost a response's lease cannot
  append to it (the write fails with `LeaseLost`).
- Relays are notified only after the commit (`Notifier.publish` runs after `COMMIT`).

Group commit: the writer task takes everything queued, waits a short window for more
(bounded batch), and commits the batch through the dialect's `Writer` in one transaction. If
a batch fails, each of its writes is retried alone so one bad write cannot fail its neighbours
(a fallback: logged once per cause and counted in `stats`); while the database is
unavailable, the first write's retry failing the same way fails the whole batch at once
instead of every write paying for it. The
writes of the same response and owner that were queued behind a failed write fail with it (no
sequence gap, no unpaired checkpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter

from ...observability import metrics
from ..db._engine import SQLITE, Database
from ..db.notify import Notifier
from ..errors import (
    CreationRefused,
    DuplicateResponse,
    LeaseLost,
    StoreError,
    classify,
    integrity_violation,
)
from ..ops.health import Op
from ..ops.stats import OutboxStats
from ..records import Write
from ..settings import LEASE_SECONDS
from ._failures import after_failure, describe_failure, failure_cause
from ._futures import Futures
from ._in_doubt import committed_anyway
from ._pg_writer import PgWriter
from ._sequences import Sequences
from ._sqlite_writer import SqliteWriter
from ._window import Window
from ._writer import Fenced, WriteKind, Writer

log = logging.getLogger("durable_responses.outbox")

# Times a group whose commit failed on its connection is looked up and retried whole.
IN_DOUBT_RETRIES = 2


class Outbox:
    def __init__(
        self,
        db: Database,
        notifier: Notifier,
        *,
        commit_window: float = 0.002,
        max_batch: int = 256,
        lease_seconds: float = LEASE_SECONDS,
        writer: Writer | None = None,
    ) -> None:
        self._db = db
        self._notifier = notifier
        self._window = Window(commit_window)
        self._max_batch = max_batch
        self._lease_seconds = lease_seconds
        self._queue: asyncio.Queue[Write] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._writer = writer if writer is not None else _writer_for(db, lease_seconds)
        # Held while a batch commits: by the writer task, or by `commit_now` when it finds the
        # outbox idle (writes still commit one batch at a time, in submission order).
        self._busy = asyncio.Lock()
        self.stats = OutboxStats()
        self._futures = Futures()
        self._sequences = Sequences()
        # FIFO numbering: a write's number is its submission order (`_queued` at submit time).
        self._queued = 0
        self._taken = 0
        # (response id, owner) -> (writes numbered below this were queued before it failed, error)
        self._poisoned: dict[tuple[str, str | None], tuple[int, BaseException]] = {}

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="outbox-writer")

    async def flush(self) -> None:
        """Wait until every write submitted before this call has committed or failed (an empty
        write behind them: the outbox commits in submission order; a closed one fails it). It is
        awaited (`urgent`): the window of the writes before it ends at once."""
        with contextlib.suppress(Exception):
            await self.submit(Write(response_id="", owner=None, urgent=True))

    async def close(self) -> None:
        """Commit what is queued, then stop."""
        if self._task is None:
            return
        await self.flush()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        await self._writer.close()

    @property
    def commits(self) -> int:
        """Transactions committed (every kind), for benchmarks and `Store.stats`."""
        return self.stats.commits

    def notify_replicas(self, channel: str, prefix: str) -> None:
        """PostgreSQL: tell other replicas what committed, inside each transaction."""
        self._writer.notify_replicas(channel, prefix)

    def submit(self, write: Write) -> asyncio.Future[None]:
        future = self._futures.of(write)
        if self._task is None:
            self._futures.settle(write, StoreError("the outbox is closed"))
            return future
        self._put(write)
        return future

    def busy(self) -> bool:
        """Whether a batch is committing now."""
        return self._busy.locked()

    async def commit_now(self, write: Write) -> None:
        """`submit(write)` and wait for it; a creation on an idle outbox commits in the caller's
        task instead of waking the writer task: one event-loop hop less on the way to a
        response's first byte (after an idle moment each hop costs far more than its work).

        Order holds per response, which is all writes promise: the queue is empty, whatever
        is submitted meanwhile waits for `_busy`, and a batch the writer task is still
        gathering (its window) can only hold other responses' writes, as a creation is the
        first write of its response. Only for callers that are not cancelled mid-commit (a
        request awaiting its creation): a cancelled commit skips the bookkeeping after it, so
        a run's writes, which `stop()` may cancel, always go through the writer task.
        """
        idle = self._task is not None and self._queue.empty() and not self._busy.locked()
        if write.create is None or not idle:
            await self.submit(write)
            return
        future = self._futures.of(write)
        async with self._busy:
            # Numbered as if queued and taken at once (the queue is empty: nothing overtakes it).
            self._queued += 1
            batch: list[Write] = []
            self._take(batch, write)
            if batch:
                await self._commit_batch(batch)
        await future

    def _put(self, write: Write) -> None:
        self._queue.put_nowait(write)
        self._queued += 1
        if _awaited(write):
            self._window.cut()

    def _take(self, batch: list[Write], write: Write) -> None:
        """Add a dequeued write to `batch`, unless an earlier write of its response failed.

        A write that was already queued when an earlier write of the same response (and owner)
        failed must not commit: its events would leave a gap in the sequence, and its
        checkpoint would be committed without the outputs before it.
        """
        number = self._taken
        self._taken += 1
        if self._poisoned:
            self._poisoned = {r: v for r, v in self._poisoned.items() if v[0] > number}
        poisoned = self._poisoned.get((write.response_id, write.owner))
        if poisoned is not None:
            self._fail([write], after_failure(write.response_id, poisoned[1]))
            return
        batch.append(write)

    def _poison(self, write: Write, exc: BaseException) -> None:
        """Fail the writes of `write`'s response and owner that are queued behind it now.

        Writes submitted from now on commit as usual: their submitter can know of the failure
        (the sink stops submitting once a write of its run failed).
        """
        self._poisoned[(write.response_id, write.owner)] = (self._queued, exc)

    async def _run(self) -> None:
        while True:
            first = await self._queue.get()
            batch: list[Write] = []
            self._take(batch, first)
            self._drain(batch)
            # Wait a moment for more only when nobody waits on this batch: creations and ends
            # are awaited by their request and run, and so is a write marked urgent; live events
            # and checkpoints are not (a run goes on while its checkpoint commits: `pairing`),
            # and gain from sharing a transaction: consecutive supersteps commit together.
            # (The window is cut short when an awaited write comes in: `_put`.)
            if len(batch) < self._max_batch and self._window.seconds > 0 and not any(map(_awaited, batch)):
                await self._window.wait()
                self._drain(batch)
            if batch:
                async with self._busy:
                    await self._commit_batch(batch)

    def _drain(self, batch: list[Write]) -> None:
        while len(batch) < self._max_batch:
            try:
                write = self._queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            self._take(batch, write)

    async def _commit_batch(self, batch: list[Write]) -> None:
        real = [w for w in batch if w.response_id]
        if real:
            await self._commit_group(real)
        for w in batch:
            if not w.response_id:
                self._futures.settle(w)

    async def _commit_group(self, writes: list[Write]) -> dict[tuple[str, str | None], BaseException]:
        """Commit a batch; returns the (response, owner) pairs that failed, with the error."""
        failed: dict[tuple[str, str | None], BaseException] = {}
        try:
            lost = await self._commit(writes)
        except Exception as exc:
            if classify(exc) is not None:
                writes = await self._in_doubt(writes, failed)
                if not writes:
                    return failed
            if len(writes) == 1:
                self._fail(writes, exc)
                self._poison(writes[0], exc)
                return {(writes[0].response_id, writes[0].owner): exc}
            await self._alone(writes, exc, failed)
            return failed
        self._settle(writes, lost, failed)
        return failed

    async def _alone(
        self, writes: list[Write], exc: Exception, failed: dict[tuple[str, str | None], BaseException]
    ) -> None:
        """Retry each write alone, so one bad write cannot fail its neighbours; the writes of a
        response behind a failed one fail with it."""
        down: BaseException | None = None  # the database is unavailable: stop trying
        for w in writes:
            self._fell_back(WriteKind.of(w), failure_cause(exc), exc)
            key = (w.response_id, w.owner)
            if key in failed:
                self._fail([w], after_failure(w.response_id, failed[key]))
                continue
            if down is not None:
                failed[key] = down
                self._fail([w], down)
                self._poison(w, down)
                continue
            try:
                lost = await self._commit([w])
            except Exception as one_exc:
                failed[key] = one_exc
                self._fail([w], one_exc)
                self._poison(w, one_exc)
                if classify(one_exc) is not None:
                    down = one_exc  # no write can commit now: do not make each one wait
            else:
                self._settle([w], lost, failed)

    def _settle(
        self, writes: list[Write], lost: Fenced, failed: dict[tuple[str, str | None], BaseException]
    ) -> None:
        """A group committed: its writes succeed, but those fenced off (`lost`) fail."""
        if not lost:
            self._succeed(writes)
            return
        self._succeed([w for w in writes if (w.response_id, w.owner) not in lost])
        for w in writes:
            if (w.response_id, w.owner) in lost:
                fenced_off = LeaseLost(w.response_id)
                failed[(w.response_id, w.owner)] = fenced_off
                self._fail([w], fenced_off)
                self._poison(w, fenced_off)

    async def _in_doubt(
        self, writes: list[Write], failed: dict[tuple[str, str | None], BaseException]
    ) -> list[Write]:
        """A group's commit failed on the connection: settle what can be told (`_in_doubt`
        module); returns the writes left to retry one by one.

        Committed after all (the reply was lost): those writes succeed, retrying them would
        fail on their own rows. Not committed, and the database answers: the group again, at
        once, on a new connection (a reset is not an outage: write by write over a slow
        network would take seconds). Twice at most; otherwise, as before."""
        for _ in range(IN_DOUBT_RETRIES):
            if self._writer.reads_back:
                found = await self._writer.committed(writes)
            else:
                found = await committed_anyway(self._db, writes)
            if found is None:
                return writes  # cannot tell (still unreachable): one by one, failing as it does
            if found:
                self._sequences.advance(self._sequences.check(found), set())
                self._succeed(found)
                settled = {id(w) for w in found}
                return [w for w in writes if id(w) not in settled]
            try:
                lost = await self._commit(writes)
            except Exception as exc:
                if classify(exc) is None:
                    return writes
                continue
            self._settle(writes, lost, failed)
            return []
        return writes

    def _fell_back(self, kind: WriteKind, cause: str, exc: BaseException) -> None:
        """Count a `kind` write retried alone; log it the first time for its cause."""
        if self.stats.fell_back(kind, cause):
            log.warning(
                "outbox: a batch with a %s write failed (%s: %s); its writes are retried one by one. "
                "Logged once per cause, counted in store.stats.fallbacks",
                kind.value,
                cause,
                describe_failure(exc),
            )

    def _succeed(self, writes: list[Write]) -> None:
        self._db.health.succeeded(Op.WRITE)
        # Relays first: waking them before the writers' futures puts them ahead in the event
        # loop's queue, so what just committed goes out before a run resumes its burst.
        for w in writes:
            self._notifier.committed(w.response_id, w.events)
        self._notifier.publish_committed({w.response_id for w in writes})
        for w in writes:
            self._futures.settle(w)

    def _fail(self, writes: list[Write], exc: BaseException) -> None:
        if len(writes) == 1 and writes[0].create is not None and integrity_violation(exc):
            exc = DuplicateResponse(writes[0].response_id)
        unavailable = classify(exc)
        if unavailable is not None:
            # One line per condition change (`health`), not one per failed write.
            if unavailable is not exc:
                metrics.database_error(unavailable.reason.value)
            self._db.failed(unavailable, Op.WRITE)
            exc = unavailable
        elif not isinstance(exc, LeaseLost | StoreError | DuplicateResponse | CreationRefused):
            log.error("outbox commit failed: %s", exc)
            exc = StoreError(f"could not commit to the database: {exc}")
        self.stats.failed(len(writes))
        for w in writes:
            self._futures.settle(w, exc)
        # Wake relays so they re-read the truth from the database.
        self._notifier.publish_many({w.response_id for w in writes})

    def forget(self, response_id: str) -> None:
        """A response changed hands (recovery claimed it): its sequence restarts from the store."""
        self._sequences.forget(response_id)

    async def _commit(self, writes: list[Write]) -> Fenced:
        """Commit `writes`; return the (response, owner) pairs fenced off."""
        advanced = self._sequences.check(writes)
        started = time.perf_counter()
        lost = await self._writer.commit(writes)
        elapsed = time.perf_counter() - started
        events = sum(len(w.events) for w in writes if not lost or (w.response_id, w.owner) not in lost)
        kinds = Counter(map(WriteKind.of, writes))
        self.stats.committed(kinds, events)
        metrics.commit(WriteKind.of_commit(kinds).value, elapsed, len(writes), events)
        self._sequences.advance(advanced, {rid for rid, _owner in lost})
        return lost

    async def write_now(self, writes: list[Write]) -> None:
        """Commit `writes` in one transaction at once, outside the queue (a run's checkpoint
        storage: its own write, whose order against the run's queued writes it keeps itself);
        raises `LeaseLost` when a write's fence does not match (nothing commits then)."""
        try:
            await self._writer.commit(writes, whole=True)
        except Exception as exc:
            unavailable = classify(exc)
            if unavailable is None:
                raise
            self._db.failed(unavailable, Op.WRITE)
            raise unavailable from exc
        self._succeed(writes)


def _writer_for(db: Database, lease_seconds: float) -> Writer:
    if db.dialect == SQLITE:
        return SqliteWriter(db.url, lease_seconds=lease_seconds)
    assert db.connect_raw is not None and db.pg is not None
    return PgWriter(db.connect_raw, lease_seconds=lease_seconds, pooler_seen=db.pg.pooler_seen)


def _awaited(w: Write) -> bool:
    return w.urgent or w.create is not None or w.finish is not None
