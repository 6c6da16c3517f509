"""Where a run's events go: the interface, and the SQL outbox's sink (stored responses).

`store=false` responses have their own sink (`memory.MemorySink`), which writes nothing.

Invariants:
- A run's events are numbered by its sink: `sequence_number` is assigned in `emit`, strictly
  increasing and gap-free from the response's current position (the creation's first events
  and recovery's position are numbered by those who write them, before the sink takes over).
- `live` delivery hands events to the outbox as soon as the event loop is free (one write per
  burst of updates, coalesced with `call_soon`), so they are group-committed within
  milliseconds; `durable` delivery holds them until the next commit point (a checkpoint or
  the end), so a client only ever sees events whose superstep is checkpointed.
- `send()` hands a write to the outbox without waiting and `commit()` waits for it: either way
  a checkpoint row is committed in the same transaction as the events still held, and after
  every event handed over earlier (the outbox commits in submission order).
- Nothing is handed over after a failed write of the same sink: `send()` raises instead, so a
  checkpoint can never be committed behind outputs that were lost.
- Journal records (`journal.RunJournal`) go through the same writes: `record()` hands them over
  alone (a durable stream's held events stay held); a checkpoint that starts a superstep
  deletes the records of the one before in its own write, the end all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...observability import metrics
from ...protocol.sse import dumps
from ...store import (
    CheckpointRow,
    EventRow,
    Finish,
    JournalRow,
    OutputItemRow,
    PendingRequestRow,
    Store,
    WebhookEvent,
    Write,
)
from ..journal import JournalStats, RunJournal
from .open_items import ClosedItem
from .usage import RunUsage, StreamUsage, UsageMeter

# Given a response's end (and the output items that wait for a person), the webhook events to
# commit with it (none: nothing is sent).
WebhookFor = Callable[[str, Finish, Sequence[Mapping[str, Any]]], tuple[WebhookEvent, ...]]


class Sink(ABC):
    """Interface of a run's event destination."""

    seq: int
    failure: BaseException | None = None
    # Live delivery: events are handed to the outbox as the loop frees, and the run commits
    # what it holds when it has kept the loop too long (see `drive`).
    live: bool = False
    # Whether the workflow's executors are paced so each event reaches the stream as it is
    # made (live streams and `store=false` streams; durable delivery shows nothing before the
    # checkpoint anyway).
    paced: bool = False

    @abstractmethod
    def emit(self, event: dict[str, Any]) -> None:
        """Number `event` and take it (serialized at once: the caller may reuse its dicts)."""

    @abstractmethod
    def send(
        self,
        closed: Sequence[ClosedItem] = (),
        *,
        checkpoint: CheckpointRow | None = None,
        pending: Sequence[PendingRequestRow] = (),
        status: str | None = None,
        finish: Finish | None = None,
        prune: tuple[str, str | None] | None = None,
        urgent: bool = False,
        waiting: Sequence[Mapping[str, Any]] = (),
    ) -> asyncio.Future[None]:
        """Hand the events held so far, plus these rows, to the outbox as one write; do not wait.

        The returned future resolves once the write is committed. Raises the sink's failure if
        an earlier write of this sink failed: nothing may commit after a gap.
        """

    async def commit(
        self,
        closed: Sequence[ClosedItem] = (),
        *,
        checkpoint: CheckpointRow | None = None,
        pending: Sequence[PendingRequestRow] = (),
        status: str | None = None,
        finish: Finish | None = None,
        prune: tuple[str, str | None] | None = None,
        waiting: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """`send()` at once (no group-commit window) and wait until it is committed."""
        fut = self.send(
            closed,
            checkpoint=checkpoint,
            pending=pending,
            status=status,
            finish=finish,
            prune=prune,
            urgent=True,
            waiting=waiting,
        )
        try:
            await fut
        except Exception as exc:
            # (A cancelled await is not a failed write: the outbox still commits it.)
            if self.failure is None:
                self.failure = exc
            raise

    async def settle(self) -> None:
        """Wait until every event emitted so far is committed, handing over what is held."""
        await self.commit()

    def record(self, rows: list[JournalRow], urgent: bool) -> asyncio.Future[None]:
        """Hand journal records to the outbox as one write of their own; do not wait. A sink
        that stores nothing records nothing."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    def lagging(self, limit: float) -> bool:
        """Whether a write handed over more than `limit` seconds ago is still not committed."""
        return False

    @property
    def last_seq(self) -> int:
        return self.seq - 1


def _counts(stats: JournalStats) -> tuple[int, int, int]:
    return (stats.recorded, stats.replayed, stats.rerun)


def _item_row(c: ClosedItem) -> OutputItemRow:
    return OutputItemRow(c.output_index, c.item_id, c.status, c.included, dumps(c.item))


class SqlSink(Sink):
    """A stored run's sink, built complete: beside its events, every write carries the usage so
    far when it changed (`usage`, kept on the response row), a background response's end its
    webhook events (`webhook_for`, then `on_webhook` once committed), and the journal's rows and
    counts (`journal`: recorded through this sink when `journaling`, its counts from
    `journal_stats`, what earlier lives left)."""

    def __init__(
        self,
        store: Store,
        response_id: str,
        owner: str,
        *,
        live: bool,
        start_seq: int,
        usage: RunUsage | None = None,
        webhook_for: WebhookFor | None = None,
        on_webhook: Callable[[], None] | None = None,
        journaling: bool = False,
        journal_stats: JournalStats | None = None,
    ) -> None:
        self._store = store
        self._rid = response_id
        self._owner = owner
        self._live = live
        self.live = live
        self.paced = live
        self.seq = start_seq
        self._pending: list[EventRow] = []
        self._flush_scheduled = False
        # Writes handed over and not yet seen to complete, oldest first (they complete in order),
        # with the loop time they were handed over at.
        self._inflight: deque[tuple[float, asyncio.Future[None]]] = deque()
        self.failure = None
        # The response's usage so far, asked at every write: its JSON sent when it changed.
        self.usage = usage if usage is not None else RunUsage(UsageMeter(), StreamUsage())
        self._carries_usage = usage is not None
        self._usage_sent: str | None = None
        self._webhook_for = webhook_for
        self._on_webhook = on_webhook
        # The run's journal (see `journal`), and its counts as last sent (a write carries them
        # when they changed).
        self.journal = RunJournal(
            response_id, self.record if journaling else None, stats=journal_stats or JournalStats()
        )
        # The counts a write last carried (at first, those the response's row holds already).
        self._journal_sent = _counts(self.journal.baseline)

    def emit(self, event: dict[str, Any]) -> None:
        seq = self.seq
        event["sequence_number"] = seq
        self._pending.append(EventRow(seq, event["type"], dumps(event)))
        self.seq = seq + 1
        if self._live and not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if self._pending and self.failure is None:
            with contextlib.suppress(Exception):  # the failure is kept in `self.failure`
                self.send()

    def _check(self) -> None:
        """Raise if a write of this sink failed, including one that failed a moment ago.

        The done-callback that records a failure runs a loop turn later; in between, another
        write must not slip in behind the failed one (a checkpoint after lost outputs).
        """
        self._forget_done()
        if self.failure is not None:
            raise self.failure

    def _forget_done(self) -> None:
        inflight = self._inflight
        while inflight and inflight[0][1].done():
            self._on_done(inflight.popleft()[1])

    async def settle(self) -> None:
        if self._pending:
            await self.commit()
            return
        self._forget_done()
        if self._inflight:
            # The newest write commits last (the outbox keeps submission order). `wait` leaves
            # it alone if this task is cancelled; a failure is the sink's (`_on_done`).
            await asyncio.wait((self._inflight[-1][1],))

    def lagging(self, limit: float) -> bool:
        self._forget_done()
        inflight = self._inflight
        return bool(inflight) and asyncio.get_running_loop().time() - inflight[0][0] > limit

    def _on_done(self, fut: asyncio.Future[None]) -> None:
        if not fut.cancelled() and fut.exception() is not None and self.failure is None:
            self.failure = fut.exception()

    def send(
        self,
        closed: Sequence[ClosedItem] = (),
        *,
        checkpoint: CheckpointRow | None = None,
        pending: Sequence[PendingRequestRow] = (),
        status: str | None = None,
        finish: Finish | None = None,
        prune: tuple[str, str | None] | None = None,
        urgent: bool = False,
        waiting: Sequence[Mapping[str, Any]] = (),
    ) -> asyncio.Future[None]:
        self._check()
        usage = self._usage_update()
        keep, clear = None, False
        journal = self.journal
        if finish is not None or (checkpoint is not None and not checkpoint.awaits_input):
            # The end, or a checkpoint that starts a superstep (not one a continuation saves
            # before its input, whose superstep is still the one before it): the records held
            # so far serve no re-run once this write commits.
            if journal.dirty:
                clear = finish is not None
                keep = None if clear or checkpoint is None else checkpoint.checkpoint_id
            if finish is None and checkpoint is not None:
                journal.new_superstep(checkpoint.checkpoint_id)
        write = Write(
            response_id=self._rid,
            owner=self._owner,
            events=self._pending,
            items=[_item_row(c) for c in closed],
            checkpoint=checkpoint,
            pending=list(pending),
            status=status,
            finish=finish,
            prune=prune,
            urgent=urgent,
            webhooks=self._webhook_for(self._rid, finish, waiting)
            if finish is not None and self._webhook_for
            else (),
            usage=usage,
            journal_keep=keep,
            journal_clear=clear,
            journal_stats=self._journal_stats(),
        )
        self._pending = []
        fut = self._store.submit(write)
        fut.add_done_callback(self._on_done)
        if write.webhooks and self._on_webhook is not None:
            wake = self._on_webhook
            fut.add_done_callback(lambda f: wake() if not f.cancelled() and f.exception() is None else None)
        self._inflight.append((asyncio.get_running_loop().time(), fut))
        return fut

    def _usage_update(self) -> str | None:
        """The usage so far, when it changed since a write last carried it."""
        usage = self.usage.json() if self._carries_usage else None
        if usage == self._usage_sent:
            return None
        self._usage_sent = usage
        return usage

    def _journal_stats(self) -> str | None:
        """The journal's counts, when they changed since a write last carried them."""
        if self.journal.record is None:
            return None
        counts = _counts(self.journal.stats)
        if counts == self._journal_sent:
            return None  # compared as numbers: a write per superstep made their JSON each time
        self._journal_sent = counts
        return self.journal.stats.json()

    def record(self, rows: list[JournalRow], urgent: bool) -> asyncio.Future[None]:
        self._check()
        for row in rows:
            metrics.JOURNAL_BYTES.observe(len(row.data))
        write = Write(
            response_id=self._rid,
            owner=self._owner,
            journal=rows,
            urgent=urgent,
            # A model call's record carries its usage: a re-run replays the call and reports
            # no usage for it, so the usage must commit with the record.
            usage=self._usage_update(),
            journal_stats=self._journal_stats(),
        )
        fut = self._store.submit(write)
        fut.add_done_callback(self._on_done)
        self._inflight.append((asyncio.get_running_loop().time(), fut))
        return fut
