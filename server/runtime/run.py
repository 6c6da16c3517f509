"""One run of one response: drive the app's public `agent.run(stream=True)` into a sink.

Invariants:
- The app is always entered through its own `agent.run(...)` (first run, continuation and
  recovery alike), so a `WorkflowAgent` subclass that overrides `run()` sees every entry.
- Every checkpoint the framework saves is committed together with the events produced before
  it, and the items open at that point are closed `completed` in that same transaction.
- A failed save stops the run: the framework swallows exceptions from `save()`, so the run
  checks the sink's failure after every update and raises it.
- Exactly one terminal event per response: `finish_*` is called once, by `execute()`.
- Live streams pace the workflow (`_pace`): an executor's events reach the run as they are made,
  and executors wait while the run waits for a commit, so what a client sees keeps pace with
  what the workflow does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_framework import InMemoryCheckpointStorage, Message, WorkflowCheckpoint

from ..protocol import events as ev
from ..protocol.request import CreateRequest
from ..protocol.response import build_response, usage
from ..protocol.sse import dumps
from ..store import ABANDONED_STATUSES, Finish, LeaseLost, PendingRequestRow, Store
from ._af_private import pace_events, pending_request_payloads
from .checkpoint_storage import SqlCheckpointStorage
from .mapping import ClosedItem, ItemMapper
from .sinks import Sink

log = logging.getLogger("durable_responses.run")

# How long a run may process updates without suspending before it lets the writer and the
# relays catch up (see `_drive`).
YIELD_EVERY = float(os.environ.get("DURABLE_RESPONSES_YIELD_EVERY_MS", "4")) / 1000

# Checkpoint writes a run may have in flight before a save waits (see `_on_save`).
CHECKPOINT_PIPELINE = 4


class _Hogging:
    """Whether the calling task has kept the event loop to itself for `limit` seconds.

    A callback queued with `call_soon` runs only once the loop turns; until it has run, the
    task has not suspended since it was queued. Costs a `call_soon` per check while the loop
    does turn, and nothing more.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, limit: float) -> None:
        self._loop = loop
        self._limit = limit
        self._turned = False
        self._since = 0.0
        self.reset()

    def _turn(self) -> None:
        self._turned = True

    def reset(self) -> None:
        self._turned = False
        self._since = self._loop.time()
        self._loop.call_soon(self._turn)

    def __call__(self) -> bool:
        if self._turned:
            self.reset()
            return False
        return self._loop.time() - self._since > self._limit


@dataclass
class RunPlan:
    """What to call `agent.run` with: restore a checkpoint, give messages, or both."""

    messages: list[Message]
    checkpoint_id: str | None = None
    tools: list[Any] = field(default_factory=list)
    # call_ids of request_info calls the response already announced (see `ItemMapper`).
    announced_calls: frozenset[str] = frozenset()


class CheckpointSaveFailed(Exception):
    """The framework swallowed a failed `save()`; the host stops the run instead."""


class StopRun(Exception):
    """Raised into a run to stop it; `kind` says how the response ends."""

    def __init__(self, kind: str, message: str = "") -> None:
        super().__init__(message or kind)
        self.kind = kind  # "cancelled" | "failed" | "abandon"
        self.message = message


class ResponseRun:
    def __init__(
        self,
        *,
        store: Store | None,
        request: CreateRequest,
        response_id: str,
        user_id: str,
        created_at: float,
        lineage: str,
        sink: Sink,
        mapper: ItemMapper,
        build_agent: Callable[[], Any],
        is_workflow: bool,
        plan: RunPlan,
        background: bool,
        allowed_types: tuple[str, ...] = (),
        reader: Store | None = None,
        owner: str = "",
    ) -> None:
        self.owner = owner
        self.store = store
        self.reader = reader if reader is not None else store
        self.request = request
        self.response_id = response_id
        self.user_id = user_id
        self.created_at = created_at
        self.lineage = lineage
        self.sink = sink
        self.mapper = mapper
        # Built when the run starts, off the creation path (a workflow's build is not free);
        # a factory that fails fails the response instead of the request.
        self.build_agent = build_agent
        self.agent: Any = None
        self.is_workflow = is_workflow
        self.plan = plan
        self.background = background
        self.allowed_types = allowed_types
        self.task: asyncio.Task[None] | None = None
        self.done = asyncio.Event()
        self.stop_reason: StopRun | None = None
        self.final_status: str | None = None
        self._last_checkpoint: WorkflowCheckpoint | None = None
        self._last_checkpoint_id: str | None = None
        self._closed_this_run: list[ClosedItem] = []
        self._all_output_here = mapper.next_output_index == 0
        self.storage: Any = None
        self.on_finished: list[Callable[[ResponseRun], None]] = []
        self.queued = False  # a background response still `queued`: announce in_progress first
        self._end_task: asyncio.Future[None] | None = None
        self._checkpoint_writes: deque[asyncio.Future[None]] = deque()
        # Set while the run waits for a commit of what a live stream holds (`_commit_held`):
        # the workflow's executors wait at their next event until it resolves (`_pace`).
        self._holding: asyncio.Future[None] | None = None
        self._paced_at = -math.inf  # loop time of the last turn `_pace` gave
        # `_pace` gives a turn after every event until the run has the first output (its
        # latency is the one a client sees), then at most every YIELD_EVERY (a turn per event
        # made a 1000-output superstep ~15% slower end to end).
        self._pace_every = 0.0

    # -- control ------------------------------------------------------------------------

    def start(self) -> None:
        """Start the run (idempotent)."""
        if self.task is None:
            self.task = asyncio.create_task(self.execute(), name=f"run-{self.response_id}")

    def start_soon(self, at_most: float) -> None:
        """Start when the caller says (`start()`), or after `at_most` seconds, whichever is first.

        A streaming client's relay starts the run once `response.created` is on its way, so an
        agent that hogs the event loop cannot hold back the first events.
        """
        asyncio.get_running_loop().call_later(at_most, self.start)

    def stop(self, kind: str, message: str = "") -> None:
        """Stop the run; `abandon` leaves the response to recovery (shutdown, lost lease).

        Only the first stop counts, and the task is cancelled once: a second cancellation would
        land in the middle of recording the end.
        """
        if self.stop_reason is not None:
            return
        self.stop_reason = StopRun(kind, message)
        if self.task is not None and not self.task.done():
            self.task.cancel()

    # -- the run ------------------------------------------------------------------------

    async def execute(self) -> None:
        ending: Any = None
        try:
            if self.stop_reason is not None:  # stopped before it started
                raise asyncio.CancelledError
            await self._drive()
            stopping = self._stopping()
            ending = self._end_completed() if stopping is None else self._end_after_stop(stopping)
        except asyncio.CancelledError:
            reason = self.stop_reason
            if reason is None or reason.kind == "abandon":
                self._finished()
                raise
            ending = self._end_after_stop(reason)
        except LeaseLost:
            log.warning("response %s: lease lost, another process continues it", self.response_id)
        except Exception as exc:
            failure = self.sink.failure
            if isinstance(failure, LeaseLost):
                log.warning("response %s: lease lost, another process continues it", self.response_id)
            elif (stopping := self._stopping()) is not None:
                # Stopped (cancel) while the framework turned the cancellation into its own error.
                ending = self._end_after_stop(stopping)
            elif failure is not None:
                # The database refused a write: what this run did since its last paired
                # checkpoint is not durable, so it must not go on. Recovery resumes the response
                # from that checkpoint once the database takes writes again.
                log.error(
                    "response %s: could not commit (%s); stopping the run and leaving the response "
                    "to recovery from its newest paired checkpoint",
                    self.response_id,
                    failure,
                )
                await self._hand_over()
            else:
                log.exception("response %s failed", self.response_id)
                ending = self._end_failed(exc)
        if ending is not None:
            # The end is recorded whatever happens to this task from now on (a late cancel).
            end_task = asyncio.ensure_future(ending)
            self._end_task = end_task
            while not end_task.done():
                try:
                    await asyncio.shield(end_task)
                except asyncio.CancelledError:
                    continue
                except Exception:
                    break  # inspected just below
            problem = "cancelled" if end_task.cancelled() else end_task.exception()
            if problem is not None:
                log.error("response %s: could not record its end: %s", self.response_id, problem)
                await self._hand_over()
        self._finished()

    def _finished(self) -> None:
        self.done.set()
        for cb in self.on_finished:
            try:
                cb(self)
            except Exception:  # a callback must not turn a finished run into a failed one
                log.exception("on_finished callback failed")

    def _stopping(self) -> StopRun | None:
        reason = self.stop_reason
        return reason if reason is not None and reason.kind != "abandon" else None

    async def _hand_over(self) -> None:
        if self.store is None:
            return
        with contextlib.suppress(Exception):
            await self.store.release_lease(self.response_id, self.owner)

    async def _end_after_stop(self, reason: StopRun) -> None:
        if reason.kind == "cancelled":
            await self._finish("cancelled", close_status="incomplete")
        else:
            await self._finish(
                "failed",
                close_status="incomplete",
                error={"code": "server_error", "message": reason.message or "The response was stopped."},
            )

    async def _end_failed(self, exc: BaseException) -> None:
        message = f"The agent run failed: {type(exc).__name__}: {exc}"
        await self._finish(
            "failed", close_status="incomplete", error={"code": "server_error", "message": message}
        )

    async def _end_completed(self) -> None:
        await self._finish("completed", close_status="completed")

    async def _drive(self) -> None:
        if self.queued:
            self.queued = False
            snapshot = build_response(
                self.request,
                response_id=self.response_id,
                status="in_progress",
                created_at=int(self.created_at),
            )
            self.sink.emit(ev.response_in_progress(snapshot))
            # Not awaited: the transition rides with the next commit (order is kept), so the
            # agent starts at once.
            self.sink.send(status="in_progress")
        self.agent = self.build_agent()
        kwargs: dict[str, Any] = {"stream": True}
        if self.is_workflow:
            self.storage = self._make_storage()
            if isinstance(self.storage, SqlCheckpointStorage):
                self.storage.awaiting_input = self.plan.checkpoint_id is not None and bool(self.plan.messages)
            kwargs["checkpoint_storage"] = self.storage
            if self.plan.checkpoint_id is not None:
                kwargs["checkpoint_id"] = self.plan.checkpoint_id
        if self.plan.tools:
            kwargs["tools"] = self.plan.tools
        live = getattr(self.sink, "live", False)
        if self.is_workflow and (live or self.store is None):
            # Streams that show events as they come: each event of an executor reaches the
            # stream when it is made, not when the executor's handler returns.
            pace_events(self.agent, self._pace)
        stream = self.agent.run(self.plan.messages or None, **kwargs)
        hogging = _Hogging(asyncio.get_running_loop(), YIELD_EVERY)
        first_output_at = self.mapper.next_output_index
        first_output = True
        async for update in stream:
            self._check_failures()
            self.mapper.feed(update)
            if first_output and self.mapper.next_output_index > first_output_at:
                first_output = False
                self._pace_every = YIELD_EVERY
                if live:
                    # Live delivery: commit the first output at once, before the agent's burst.
                    await self._commit_held()
                    hogging.reset()
            elif hogging() or (live and self.sink.lagging(YIELD_EVERY)):
                # The agent hands over updates faster than it suspends (a burst), or faster
                # than the outbox commits them (SQLite's writer thread needs the GIL at every
                # step of a commit, which a busy loop gives it only every switch interval).
                # Live: wait for what is held to commit, the executors held too (the relays
                # go out first), so the stream keeps pace with the run. Durable: nothing to
                # show before the checkpoint; just a turn.
                if live:
                    await self._commit_held()
                else:
                    await asyncio.sleep(0)
                hogging.reset()
        self._check_failures()

    async def _commit_held(self) -> None:
        """Commit what the sink holds and wait for it; executors wait meanwhile (`_pace`)."""
        holding: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._holding = holding
        try:
            await self.sink.commit()
        finally:
            self._holding = None
            if not holding.done():
                holding.set_result(None)

    async def _pace(self) -> None:
        """Awaited by the workflow after each event it emits (`pace_events`): a loop turn, so
        the run takes the event at once; or, while the run waits for a commit, that commit (a
        busy loop would starve SQLite's writer thread and stretch the wait)."""
        holding = self._holding
        if holding is not None:
            # `wait` does not cancel `holding` if this executor is cancelled.
            await asyncio.wait((holding,))
            return
        loop = asyncio.get_running_loop()
        if loop.time() - self._paced_at >= self._pace_every:
            await asyncio.sleep(0)
            self._paced_at = loop.time()

    def _check_failures(self) -> None:
        if self.sink.failure is not None:
            raise self.sink.failure
        failure = getattr(self.storage, "failure", None)
        if failure is not None:
            # A checkpoint that could not be encoded (e.g. a type not on the allow-list).
            raise CheckpointSaveFailed(f"the workflow checkpoint could not be saved: {failure}") from failure

    def _make_storage(self) -> Any:
        if self.store is None:
            return _MemoryStorage(self)
        return SqlCheckpointStorage(
            self.store,
            user_id=self.user_id,
            lineage=self.lineage,
            response_id=self.response_id,
            allowed_types=self.allowed_types,
            on_save=self._on_save,
            settle=self._settle,
        )

    async def _on_save(self, checkpoint: WorkflowCheckpoint, data: str) -> None:
        """The pairing: close this superstep's items, commit them with the checkpoint.

        Pipelined: the checkpoint's write is handed to the outbox and the next supersteps run
        while it commits; a save waits only once `CHECKPOINT_PIPELINE` writes are in flight
        (back-pressure; a failed write surfaces that many supersteps later at most, and
        recovery resumes from the newest checkpoint that did commit). Commits that overlap are
        group-committed: one fsync for several supersteps. The pairing does not depend on the
        wait: the checkpoint, its closed items and the events before it are one write, and
        writes commit in order. Reads of this run's checkpoints wait for them (`_settle`).
        """
        closed = self.mapper.close_all("completed")
        self._closed_this_run.extend(closed)
        assert isinstance(self.storage, SqlCheckpointStorage)
        row = self.storage.row(checkpoint, data, event_seq=self.sink.last_seq)
        write = self.sink.send(closed, checkpoint=row, urgent=True)
        self._last_checkpoint = checkpoint
        self._last_checkpoint_id = checkpoint.checkpoint_id
        writes = self._checkpoint_writes
        writes.append(write)
        while writes and (writes[0].done() or len(writes) > CHECKPOINT_PIPELINE):
            await asyncio.shield(writes.popleft())  # raises if that write failed

    async def _settle(self) -> None:
        """Wait until this run's checkpoints are committed (before reading checkpoints)."""
        if self._checkpoint_writes:
            await asyncio.shield(self._checkpoint_writes[-1])

    # -- the end ------------------------------------------------------------------------

    async def _finish(self, status: str, *, close_status: str, error: dict[str, Any] | None = None) -> None:
        closed = self.mapper.close_all(close_status)
        for c in closed:
            c.included = c.status == "completed"
        self._closed_this_run.extend(closed)
        now = time.time()
        output = await self._final_output()
        use = usage(self.mapper.usage_in, self.mapper.usage_out)
        response = build_response(
            self.request,
            response_id=self.response_id,
            status=status,
            created_at=int(self.created_at),
            completed_at=int(now) if status == "completed" else None,
            output=output,
            error=error,
            usage=use,
            conversation_id=self.request.conversation_id,
        )
        if status == "completed":
            terminal = ev.response_completed(response)
        else:
            terminal = ev.response_failed(response)
        self.sink.emit(terminal)
        pending = self._pending_rows() if status == "completed" else []
        await self.sink.commit(
            closed,
            pending=pending,
            # A failed or cancelled run keeps its lineage's checkpoints: a conversation's next
            # turn continues from the last turn that finished, not from this one.
            prune=(self.user_id, None if status in ABANDONED_STATUSES else self.lineage),
            finish=Finish(
                status=status,
                completed_at=now if status == "completed" else None,
                error=dumps(error) if error is not None else None,
                usage=dumps(use),
            ),
        )
        self.final_status = status

    async def _final_output(self) -> list[dict[str, Any]]:
        if self.store is None or self._all_output_here:
            # Every item of this response was closed by this run: no need to read them back.
            return [c.item for c in self._closed_this_run if c.included]
        # Items of earlier runs come from the table; this run's own come from memory, as its
        # last checkpoint writes (which close them) may still be in flight: read alone, the
        # terminal event of a recovered response missed the last superstep's outputs.
        by_index = {
            r.output_index: json.loads(r.data) for r in await self.store.output_items(self.response_id)
        }
        for c in self._closed_this_run:
            if c.included:
                by_index[c.output_index] = c.item
            else:
                by_index.pop(c.output_index, None)
        return [by_index[i] for i in sorted(by_index)]

    def _pending_rows(self) -> list[PendingRequestRow]:
        cp = self._last_checkpoint
        if cp is None or self._last_checkpoint_id is None:
            return []
        payloads = pending_request_payloads(cp)
        return [
            PendingRequestRow(
                response_id=self.response_id,
                call_id=call_id,
                user_id=self.user_id,
                checkpoint_id=self._last_checkpoint_id,
                status="pending",
                data=dumps(payload),
            )
            for call_id, payload in payloads.items()
        ]


class _MemoryStorage(InMemoryCheckpointStorage):
    """`store=false` workflows: checkpoints in memory, still closing items at each one.

    A `store=false` turn may continue a stored workflow: loads fall back to the database
    (read only; nothing of this response is written).
    """

    def __init__(self, run: ResponseRun) -> None:
        super().__init__()
        self._run = run

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        try:
            return await super().load(checkpoint_id)
        except Exception:
            reader = self._run.reader
            if reader is None:
                raise
            return await SqlCheckpointStorage(
                reader,
                user_id=self._run.user_id,
                lineage=self._run.lineage,
                response_id=self._run.response_id,
                allowed_types=self._run.allowed_types,
            ).load(checkpoint_id)

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        cid = await super().save(checkpoint)
        closed = self._run.mapper.close_all("completed")
        self._run._closed_this_run.extend(closed)
        await self._run.sink.commit(closed)
        return cid
