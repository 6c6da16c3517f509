"""The pairing: every checkpoint committed with the items it closes and the events before it.

Invariants:
- When the framework saves checkpoint C (after the host took every update of the superstep),
  the items still open are closed `completed` and handed to the sink in the same write as C's
  row, behind every event handed over before: C commits with its outputs or not at all.
- A live stream whose superstep made `SHOW_FIRST_EVENTS` or more events waits at the save until
  they are committed (they need no checkpoint to be shown), so a large superstep's last outputs
  do not wait for the closing events of all its items.
- Saves are pipelined: the next supersteps run while C commits; a save waits only once
  `CHECKPOINT_PIPELINE` writes are in flight (back-pressure). Reads of this run's checkpoints
  wait for its writes first (`settle`), so a read never misses a checkpoint it saved.
- The framework swallows exceptions from `save()`; the storage keeps the failure and the run
  raises it itself (`check`).

`store=false` runs pair the same way in memory (`memory.MemoryPairing`).
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable
from typing import Any

from agent_framework import WorkflowCheckpoint

from ...observability import metrics
from ...store import Store
from ..pauses.approval_calls import PendingApproval
from .checkpoint_storage import SqlCheckpointStorage
from .mapping import ItemMapper, MapperSetup
from .open_items import ClosedItem
from .plan import RunPlan, RunSpec
from .sinks import Sink
from .telemetry import NO_TRACE, RunTrace

# Checkpoint writes a run may have in flight before a save waits (see `SqlPairing._on_save`).
# Deep enough that a run whose supersteps are shorter than a commit never waits at a save:
# the outbox groups the writes in flight into one transaction, and on SQLite that commit
# waits for the GIL at each of its statements while the run keeps the loop busy (a batch of
# ~7 supersteps takes ~4.7 ms), so a shallower pipeline fills and the run waits on it. Only
# such runs ever fill it; how far a live stream trails its run is bounded in time by the
# driver (`commit_lag`) either way. The measurements behind the figure are in the commit that
# set it (4d80317).
CHECKPOINT_PIPELINE = 64
# A live stream whose superstep made at least this many events (many outputs at once) has them
# committed before its items are closed (`SqlPairing._on_save`). Counted from the previous save,
# not from what the sink still holds: a busy run hands its events over at every loop turn, and
# writes handed over but not committed would commit with the closing events all the same.
SHOW_FIRST_EVENTS = 64


class CheckpointSaveFailed(Exception):
    """The framework swallowed a failed `save()`; the host stops the run instead."""


class Pairing(ABC):
    """A run's checkpoint storage, its mapper (built here from `mapping`, its items closed
    early told to the pairing) and what it closed (the interface both kinds share)."""

    def __init__(self, mapping: MapperSetup) -> None:
        self.mapper = ItemMapper(mapping, on_closed=self._closed_early)
        self.closed: list[ClosedItem] = []  # every item this run closed, in order
        self.last_checkpoint: WorkflowCheckpoint | None = None
        # Items the mapper closed before a commit point (a tool the server ran), whose rows
        # have not been handed to the sink yet: they go with the next write.
        self._held: list[ClosedItem] = []

    @property
    @abstractmethod
    def storage(self) -> Any:
        """The `CheckpointStorage` the run hands to `agent.run`."""

    @abstractmethod
    def check(self) -> None:
        """Raise `CheckpointSaveFailed` if a save failed (the framework swallowed it)."""

    @property
    def approvals(self) -> list[PendingApproval]:
        """A plain agent's tool calls awaiting approval (kept with a completed end)."""
        return self.mapper.approvals

    def close_open(self, status: str) -> list[ClosedItem]:
        """Close every open item (emitting its closing events) and remember it; with them, the
        items closed earlier whose rows are still held."""
        closed = self.mapper.close_all(status)
        self.closed.extend(closed)
        if self._held:
            closed = [*self._held, *closed]
            self._held = []
        return closed

    def _closed_early(self, item: ClosedItem) -> None:
        """An item closed between commit points: its row goes with the next write that carries
        its closing event (`_hand_over`)."""
        self.closed.append(item)
        self._held.append(item)
        self._hand_over()

    def _hand_over(self) -> None:
        """Hand the held rows over now if the stream shows events before a commit point (live);
        otherwise they wait for the next commit point, with the events before it."""
        return None


class SqlPairing(Pairing):
    def __init__(
        self,
        store: Store,
        spec: RunSpec,
        plan: RunPlan,
        sink: Sink,
        mapping: MapperSetup,
        allowed_types: Iterable[str],
        *,
        trace: RunTrace = NO_TRACE,
    ) -> None:
        super().__init__(mapping)
        self._sink = sink
        self._trace = trace
        self._writes: deque[asyncio.Future[None]] = deque()
        # The sink's sequence number when the current superstep began (the previous save).
        self._superstep_seq = sink.seq
        self._storage = SqlCheckpointStorage(
            store,
            user_id=spec.user_id,
            lineage=spec.lineage,
            response_id=spec.response_id,
            allowed_types=allowed_types,
            on_save=self._on_save,
            settle=self._settle,
            # A continuation restores a checkpoint, then delivers its input: what it saves before
            # the input reaches the workflow is marked, so recovery delivers the input again.
            awaiting_input=plan.checkpoint_id is not None and bool(plan.messages),
            preloaded=(plan.checkpoint_id, plan.checkpoint_data)
            if plan.checkpoint_id is not None and plan.checkpoint_data is not None
            else None,
        )

    @property
    def storage(self) -> SqlCheckpointStorage:
        return self._storage

    def _hand_over(self) -> None:
        if self._sink.live:
            held, self._held = self._held, []
            self._sink.send(held)

    def check(self) -> None:
        failure = self._storage.failure
        if failure is not None:
            # A checkpoint that could not be encoded (e.g. a type not on the allow-list).
            raise CheckpointSaveFailed(f"the workflow checkpoint could not be saved: {failure}") from failure

    async def _on_save(self, checkpoint: WorkflowCheckpoint, data: str) -> None:
        """Close this superstep's items and commit them with the checkpoint (one write).

        The pairing does not depend on waiting: the checkpoint, its closed items and the events
        before it are one write, and writes commit in order; a failed write surfaces at most
        `CHECKPOINT_PIPELINE` supersteps later, and recovery resumes from the newest checkpoint
        that did commit. So the write is not urgent: like live events, it waits the outbox's
        group-commit window for more, and consecutive supersteps share a commit (one fsync, one
        round trip for several; on PostgreSQL a countdown's time per superstep fell from
        1.77-1.94x to 1.34-1.47x the framework floor's). A run that waits on its checkpoints (a
        full pipeline, a read of them) waits at most that window more; its end is urgent and
        commits the checkpoints queued before it at once.
        """
        sink = self._sink
        if sink.live and sink.seq - self._superstep_seq >= SHOW_FIRST_EVENTS:
            # A large superstep's last outputs go out now, not behind the closing events of all
            # its items and their commit (a 1000-output superstep: 3,000 events, ~15 ms).
            await sink.settle()
        closed = self.close_open("completed")
        row = self._storage.row(checkpoint, data, event_seq=sink.last_seq)
        write = sink.send(closed, checkpoint=row)
        metrics.CHECKPOINT_BYTES.observe(len(data))
        superstep = self._trace.superstep(
            checkpoint_id=row.checkpoint_id,
            iteration=checkpoint.iteration_count,
            event_seq=row.event_seq,
        )
        self._trace.checkpoint_commit(write, superstep)
        self.last_checkpoint = checkpoint
        self._superstep_seq = sink.seq
        writes = self._writes
        writes.append(write)
        while writes and (writes[0].done() or len(writes) > CHECKPOINT_PIPELINE):
            await asyncio.shield(writes.popleft())  # raises if that write failed

    async def _settle(self) -> None:
        """Wait until this run's checkpoints are committed (before reading checkpoints)."""
        if self._writes:
            await asyncio.shield(self._writes[-1])
