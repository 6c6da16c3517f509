"""Driving a run: call the app's public `agent.run(stream=True)` and feed its updates to the mapper.

Invariants:
- The app is always entered through its own `agent.run(...)` (first run, continuation and
  recovery alike), so a `WorkflowAgent` subclass that overrides `run()` sees every entry.
- A failed write or save stops the drive: the sink's and the pairing's failures are checked
  after every update (the framework swallows exceptions from `save()`).
- Live streams keep pace with the workflow: the first output is committed at once; a run that
  keeps the loop to itself for `yield_every` gives it a turn (the outbox, its writer and the
  relays work meanwhile); a run whose oldest write is still uncommitted after `commit_lag`
  commits what it holds and waits, its executors held meanwhile (`pace`), so what a client
  sees trails what the workflow does by `commit_lag` at most and SQLite's writer thread is not
  starved of the GIL. Once the workflow's last event is taken, a live run commits what it
  holds (a `store=false` run gives its stream a turn to send it) before the framework's
  end-of-stream work (`on_events_end`), so that work does not delay it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent_framework import AgentSession

from ...observability import metrics
from ...protocol import events as ev
from ...protocol.response import build_response
from ...store import JournalRow
from .._af_private import on_events_end, pace_events
from ..apps.run_options import NO_REACH, AppReach, run_kwargs
from ..journal import RunJournal, activate, install
from .pairing import Pairing
from .plan import RunPlan, RunSpec
from .sinks import Sink
from .streamed_result import stream_results
from .usage import UsageMeter

log = logging.getLogger("durable_responses.drive")


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


async def _close(stream: Any, exc: BaseException) -> None:
    """Close the agent's stream that `exc` (raised by the host, not by the stream) left open,
    here, in the run's task. Left to the garbage collector, each of the framework's nested
    generators would be closed by a task of its own, in no order: an outer one's close then finds
    an inner one still closing ("aclose(): asynchronous generator is already running", an error
    no task retrieves)."""
    close = getattr(stream, "close", None)  # agent-framework's ResponseStream
    try:
        if callable(close):
            await close(exc)
        elif callable(aclose := getattr(stream, "aclose", None)):
            await aclose()
    except Exception as error:  # the original error is what the run reports
        log.debug("closing the agent's stream after %r failed: %r", exc, error)


@dataclass(frozen=True)
class AppEntry:
    """How a run enters its app: the factory of a fresh agent (called when the run starts, off
    the creation path: a workflow's build is not free, and a factory that fails fails the
    response instead of the request), its kind, and the request options it honours."""

    build_agent: Callable[[], Any]
    is_workflow: bool
    reach: AppReach = NO_REACH


@dataclass(frozen=True)
class Pacing:
    """How a run shares the event loop: `yield_every` (a turn for the loop after keeping it
    that long), `commit_lag` (commit what a live stream holds once its oldest write is that
    late), and the delivery mode its metrics are labelled with."""

    yield_every: float
    # Separate from `yield_every`: a commit takes a few ms (SQLite's writer waits for the
    # GIL at every statement), and waiting on each one at 4 ms throttled a countdown.
    commit_lag: float
    delivery: str = "live"


@dataclass(frozen=True)
class JournalUse:
    """The journal of a run's model and tool calls, and where an earlier life's records are read
    from (None: a first run has none)."""

    journal: RunJournal
    records: Callable[[], Awaitable[list[JournalRow]]] | None = None


class Driver:
    def __init__(
        self,
        spec: RunSpec,
        plan: RunPlan,
        sink: Sink,
        pairing: Pairing,
        entry: AppEntry,
        pacing: Pacing,
        meter: UsageMeter,
        journal: JournalUse,
    ) -> None:
        self._spec = spec
        self._journal = journal.journal
        self._journal_records = journal.records
        self._delivery = pacing.delivery
        self._meter = meter
        self._plan = plan
        self._sink = sink
        self._pairing = pairing
        self._mapper = pairing.mapper
        self._build_agent = entry.build_agent
        self._is_workflow = entry.is_workflow
        self._reach = entry.reach
        self._yield_every = pacing.yield_every
        self._commit_lag = pacing.commit_lag
        # Set while the run waits for a commit of what a live stream holds (`_commit_held`):
        # the workflow's executors wait at their next event until it resolves (`_pace`).
        self._holding: asyncio.Future[None] | None = None
        # `_pace` gives a turn after every event until the run has the first output (its
        # latency is the one a client sees), then only to an executor that has kept the loop
        # for `yield_every` (a turn per event made a 1000-output superstep ~15% slower end to
        # end; one per token of a model's stream, which suspends between tokens anyway, cost
        # ~4% of a live token's CPU).
        self._past_first_output = False
        self._executor_hogging: _Hogging | None = None  # made in `drive`, on the running loop
        # A plain agent's `AgentSession` for this run (made in `drive`), kept with its end.
        self.session: Any = None

    async def drive(self) -> None:
        spec, plan, sink = self._spec, self._plan, self._sink
        if spec.queued:
            snapshot = build_response(
                spec.request,
                response_id=spec.response_id,
                status="in_progress",
                created_at=int(spec.created_at),
            )
            sink.emit(ev.response_in_progress(snapshot))
            # Not awaited: the transition rides with the next commit (order is kept), so the
            # agent starts at once.
            sink.send(status="in_progress")
        agent = self._build_agent()
        kwargs: dict[str, Any] = {"stream": True}
        # Always streamed: an agent middleware that answers by itself is streamed too.
        stream_results(agent, is_workflow=self._is_workflow)
        if self._is_workflow:
            kwargs["checkpoint_storage"] = self._pairing.storage
            if plan.checkpoint_id is not None:
                kwargs["checkpoint_id"] = plan.checkpoint_id
        elif callable(getattr(agent, "create_session", None)):
            # A plain agent keeps its conversation (history, pending tool approvals) in its
            # session; the host restores the one the previous turn left and stores it at the end.
            session = AgentSession.from_dict(plan.session) if plan.session else agent.create_session()
            self.session = session
            kwargs["session"] = session
        if plan.tools:
            kwargs["tools"] = plan.tools
        # The request's options, as agent-framework takes them for this app (`run_options`).
        kwargs.update(run_kwargs(spec.request, self._reach, agent))
        journal = self._journal
        records = await self._journal_records() if self._journal_records is not None else []
        journal.start(plan.checkpoint_id or "", records)
        for key, value in install(agent, is_workflow=self._is_workflow).items():
            # After the host's own per-run middleware (a tool-call limit counts every call,
            # replayed or not).
            kwargs[key] = [*kwargs.get(key, ()), *value] if key == "middleware" else value
        # The agents' calls (in this task and every task it spawns) record in this journal.
        activate(journal)
        # The model calls of this task and of every task it spawns count for this response.
        self._meter.activate()
        live = sink.live
        if self._is_workflow and sink.paced:
            self._executor_hogging = _Hogging(asyncio.get_running_loop(), self._yield_every)
            # Each event of an executor reaches the stream when it is made, not when the
            # executor's handler returns.
            pace_events(agent, self._pace)
            # What the stream holds goes out before the framework's end-of-stream work (live
            # and `store=false` streams; durable delivery shows nothing before the checkpoint).
            on_events_end(agent, self._sink.settle)
        stream = agent.run(plan.messages or None, **kwargs)
        try:
            await self._consume(stream, live)
        except BaseException as exc:
            await _close(stream, exc)
            raise
        self._check()

    async def _consume(self, stream: Any, live: bool) -> None:
        spec, sink = self._spec, self._sink
        hogging = _Hogging(asyncio.get_running_loop(), self._yield_every)
        mapper = self._mapper
        first_output_at = mapper.next_output_index
        first_output = True
        async for update in stream:
            self._check()
            mapper.feed(update)
            if first_output and mapper.next_output_index > first_output_at:
                first_output = False
                if first_output_at == 0:
                    metrics.TIME_TO_FIRST_OUTPUT.observe(
                        time.time() - spec.created_at, delivery=self._delivery
                    )
                self._past_first_output = True
                if live:
                    # Live delivery: commit the first output at once, before the agent's burst.
                    await self._commit_held()
                    hogging.reset()
            elif live and sink.lagging(self._commit_lag):
                # The agent hands over updates faster than the outbox commits them (SQLite's
                # writer thread needs the GIL at every step of a commit, which a busy loop
                # gives it only every switch interval): wait for what is held to commit, the
                # executors held too (the relays go out first), so the stream trails the run
                # by `commit_lag` at most.
                await self._commit_held()
                hogging.reset()
            elif hogging():
                # A burst: the agent hands over updates faster than it suspends. A loop turn:
                # live, the sink hands over what it holds then (its `call_soon`), and the outbox,
                # its writer and the relays work while the run goes on (waiting for each commit
                # here left the loop idle for a third of a 1000-output superstep). Durable:
                # nothing to show before the checkpoint.
                await asyncio.sleep(0)
                hogging.reset()

    @property
    def truncated(self) -> bool:
        """Whether the model's last reply was cut at the token limit (`max_output_tokens`)."""
        return self._mapper.finish_reason == "length"

    def _check(self) -> None:
        if self._sink.failure is not None:
            raise self._sink.failure
        self._pairing.check()

    async def _commit_held(self) -> None:
        """Commit what the sink holds and wait for it; executors wait meanwhile (`_pace`)."""
        holding: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._holding = holding
        try:
            await self._sink.commit()
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
        hogging = self._executor_hogging
        assert hogging is not None  # made before the workflow is paced
        if not self._past_first_output or hogging():
            await asyncio.sleep(0)
            hogging.reset()
