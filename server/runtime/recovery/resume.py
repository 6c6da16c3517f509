"""Resuming claimed responses, each from its newest paired checkpoint.

A *paired checkpoint* is a checkpoint row committed in the same transaction as every event
the run produced before it (see `pairing.SqlPairing._on_save`). Checkpoint rows are only ever
written that way, so every stored checkpoint of a response is paired, and the newest one by
the host's sequence is where its workflow resumes: nothing it produced before is lost (it is
committed), and nothing after it is duplicated (those supersteps rerun, and their partial
events from the dead process are closed `incomplete` and left out of the output). A
continuation's run that sends a new message saves a checkpoint after restoring the one it
continues and before the message reaches the workflow; such a checkpoint is marked
`awaits_input`, and recovery from it delivers the stored input again (an answer to pending
requests is delivered by the run that restores: its first checkpoint holds it).

What a batch of claimed responses needs is read at once (`Store.resume_states`: one query per
table for the batch) and their takeovers recorded in one write (`Lives.begin_all`); then each
resumes on its own, a run launched as soon as its items are closed: the run restores the
checkpoint recovery read (`RunPlan.checkpoint_data`) without reading it again.

Invariants:
- Only claimed responses are resumed (the claim holds their lease: the fence of every write),
  and never one this process resumes or runs already.
- Recovery continues the response's one sequence: no second `response.created` or
  `response.in_progress`, output indexes continue after the highest ever announced.
- Recovery enters the app through its public `agent.run(checkpoint_id=...)`.
- A foreground response cannot be resumed (its client is gone): it ends `failed`, saying so.
- A background response with no checkpoint yet restarts from its stored input.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import time
from collections.abc import Callable, Sequence

from ...observability import metrics
from ...observability.logs import bind_response
from ...protocol import events as ev
from ...protocol.request import CreateRequest
from ...protocol.response import build_response
from ...store import DatabaseUnavailable, ResponseRow, ResumeState, Store
from ..apps.context import RequestContext, set_request_context
from ..apps.lanes import Lane, Lanes
from ..faults import database_error
from ..journal import recorded_call_ids, recorded_message_ids
from ..run.ending import Ending, Interrupted
from ..run.open_items import (
    FUNCTION_CALL,
    MESSAGE,
    ClosedItem,
    OpenItem,
    announced,
    message_item_id,
    message_key,
    reopen_from_events,
)
from ..run.plan import RunPlan, RunSpec, lineage_for
from ..run.registry import RunRegistry
from ..run.sinks import SqlSink
from ..run.telemetry import NO_TRACE, RunTrace
from ..run.usage import RunUsage
from ..settings import RuntimeSettings
from ..turns.continuation import Continuations
from .lives import Lives

log = logging.getLogger("durable_responses.recovery")

# Claimed responses whose reads are made together (one query per table for all of them): a
# dead replica's hundreds are read in a few such batches, at once, not one by one.
RESUME_BATCH = 50
# Responses of one batch resuming at the same time once read: what is left is closing items
# (one commit through the outbox, grouped with the others) and launching, CPU-light waiting.
RESUME_CONCURRENCY = 64

# A resume's outcome: True (launched or ended), False (an error, logged), or the database's
# unavailability (the response is ours: stranded, resumed once writes work).
Outcome = DatabaseUnavailable | bool
# What ends a response instead of resuming it, given its row (a retired version's message).
EndWith = Callable[[ResponseRow], str]

INTERRUPTED_FOREGROUND = (
    "The server stopped while this response was running. It was not a background response, so it "
    "could not be resumed after the restart; retry the request, or create it with background=true "
    "(over HTTP: a WebSocket turn is always foreground) to have it survive restarts."
)


class Resumer:
    def __init__(self, store: Store, lanes: Lanes, registry: RunRegistry, settings: RuntimeSettings) -> None:
        self._store = store
        self._lanes = lanes
        self._registry = registry
        self._settings = settings
        launcher = lanes.default.launcher
        self._owner = launcher.owner
        self._lives = Lives(store, launcher.telemetry, launcher.owner)
        # Responses this process is resuming now (claimed, not yet launched).
        self._resuming: set[str] = set()

    async def resume_all(
        self, rows: Sequence[ResponseRow], *, end_with: EndWith | None = None
    ) -> list[Outcome]:
        """Resume claimed responses (or, `end_with` their message, end them `failed` with it), in
        batches of RESUME_BATCH read at once; one outcome per row."""
        batches = [rows[i : i + RESUME_BATCH] for i in range(0, len(rows), RESUME_BATCH)]
        outcomes = await asyncio.gather(*(self._batch(b, end_with) for b in batches))
        return [o for batch in outcomes for o in batch]

    async def _batch(self, rows: Sequence[ResponseRow], end_with: EndWith | None) -> list[Outcome]:
        outcomes: dict[str, Outcome] = {}
        todo: list[tuple[ResponseRow, Lane]] = []
        try:
            for row in rows:
                lane = self._lanes.of_response(row.app)
                if row.id in self._resuming or self._registry.get(row.id) is not None:
                    # Claimed again while this process resumes or runs it (its lease lapsed while
                    # the process was busy, or two claims raced): a second run would write beside
                    # the first under the same owner, which no fence tells apart.
                    log.warning("response %s: claimed again while it runs here; not resumed twice", row.id)
                    outcomes[row.id] = False
                elif lane is None:
                    outcomes[row.id] = await self._not_hosted(row)
                else:
                    self._resuming.add(row.id)
                    todo.append((row, lane))
            if todo:
                outcomes.update(await self._resume_read(todo, end_with))
        finally:
            self._resuming.difference_update(row.id for row, _lane in todo)
        return [outcomes[row.id] for row in rows]

    async def _not_hosted(self, row: ResponseRow) -> Outcome:
        # (Claims ask for this server's apps only: an app dropped since the claim.)
        log.warning("response %s belongs to app %r, which this server does not host", row.id, row.app)
        try:
            await self._store.release_lease(row.id, self._owner)
        except Exception as exc:
            return self._failed(row, exc)
        return False

    async def _resume_read(
        self, todo: list[tuple[ResponseRow, Lane]], end_with: EndWith | None
    ) -> dict[str, Outcome]:
        """Read what the claimed responses need and record their takeovers (both at once for
        all of them), then resume each, RESUME_CONCURRENCY at a time."""
        rows = [row for row, _lane in todo]
        for row in rows:
            self._store.outbox.forget(row.id)
        try:
            states = await self._store.resume_states(rows, journal=self._settings.journal)
            traces = await self._lives.begin_all(rows, states)
        except Exception as exc:
            return {row.id: self._failed(row, exc, strand=end_with is None) for row in rows}
        gate = asyncio.Semaphore(RESUME_CONCURRENCY)

        async def one(row: ResponseRow, lane: Lane) -> Outcome:
            async with gate:
                try:
                    await self._resume(row, lane, states[row.id], traces[row.id], end_with)
                    return True
                except Exception as exc:
                    return self._failed(row, exc, strand=end_with is None)

        outcomes = await asyncio.gather(*(one(row, lane) for row, lane in todo))
        return {row.id: outcome for row, outcome in zip(rows, outcomes, strict=True)}

    def _failed(self, row: ResponseRow, exc: Exception, *, strand: bool = True) -> Outcome:
        """The outcome of an error: logged (False), or the database's unavailability, the
        response stranded (`strand`: our recovery takes it back once writes work)."""
        down = database_error(exc)
        if down is None:
            log.error("could not recover response %s", row.id, exc_info=exc)
            return False
        if strand:
            self._registry.strand(row.id)
        return down

    async def _resume(
        self, row: ResponseRow, lane: Lane, state: ResumeState, trace: RunTrace, end_with: EndWith | None
    ) -> None:
        """Close what the crash left open, then end the response or launch its run."""
        began = time.monotonic()
        req = CreateRequest.from_json_dict(json.loads(row.request))
        bind_response(row.id)
        recover = trace.child("durable_responses.recover", response_id=row.id)
        start_seq = max(state.max_seq, state.events[-1].seq if state.events else -1) + 1
        # The usage and journal counts the killed run's last committed write kept: earlier lives'.
        sink = lane.launcher.sink(
            row.id,
            start_seq,
            row.delivery,
            background=row.background,
            prior_usage=row.usage,
            prior_journal=row.journal,
        )
        closed, resumed, highest = self._reopen(row, state, sink)
        stop = self._stop(row, end_with)
        if stop is not None:
            await self._end(row, req, sink, closed, status=stop[0], message=stop[1], trace=trace)
            return
        status: str | None = None
        if row.status == "queued":
            snapshot = build_response(
                req, response_id=row.id, status="in_progress", created_at=int(row.created_at)
            )
            sink.emit(ev.response_in_progress(snapshot))
            status = "in_progress"
        if closed or status is not None:
            await sink.commit(closed, status=status)
        plan = await self._plan(lane.continuations, row, req, state)
        cp = state.checkpoint
        log.info(
            "recovering response %s from %s (prepared in %.0f ms)",
            row.id,
            f"checkpoint {cp.checkpoint_id}" if cp is not None else "its stored input",
            (time.monotonic() - began) * 1000,
        )
        # The run task copies this context: the app sees whose response it resumes.
        set_request_context(RequestContext(user_id=row.user_id))
        next_index = max(state.max_index, highest) + 1
        spec = self._spec(row, req, all_output_here=next_index == 0)
        recover.end()
        metrics.RECOVERIES.inc(outcome="resumed")
        lane.launcher.launch(
            spec,
            plan,
            sink=sink,
            next_index=next_index,
            trace=trace,
            resumed=True,
            journal_rows=state.journal,
            resumed_items=resumed,
        )

    def _reopen(
        self, row: ResponseRow, state: ResumeState, sink: SqlSink
    ) -> tuple[list[ClosedItem], list[OpenItem], int]:
        """The items the crash left open, from the events after the checkpoint: those closed
        `incomplete` now (never completed, never part of the output; their events emitted on
        `sink`), the message items a recorded model call's replay continues, and the highest
        output index those events announced."""
        parsed = [(e.type, json.loads(e.data)) for e in state.events]
        open_items, highest = reopen_from_events(row.id, parsed)
        # A message whose model call the journal recorded goes on as the same item when the
        # re-run replays that call.
        # So does a function call shown while it streamed (`mapping`: a call is shown as soon as
        # another content follows it): the replay announces it again.
        replayed = {message_item_id(row.id, m): m for m in recorded_message_ids(state.journal)}
        calls = recorded_call_ids(state.journal)
        resumed: list[OpenItem] = []
        closed: list[ClosedItem] = []
        for item in open_items:
            if item.kind == MESSAGE and item.item_id in replayed:
                key = message_key(replayed[item.item_id])
                resumed.append(dataclasses.replace(item, key=key, replay_pending=len(item.text)))
                continue
            if item.kind == FUNCTION_CALL and item.call_id in calls:
                # Pending until the replay announces the call again.
                resumed.append(dataclasses.replace(item, key=f"fc:{item.call_id}", replay_pending=1))
                continue
            final = item.final("incomplete")
            sink.emit(ev.output_item_done(item.output_index, final))
            closed.append(ClosedItem(item.output_index, item.item_id, "incomplete", False, final))
        return closed, resumed, highest

    def _stop(self, row: ResponseRow, end_with: EndWith | None) -> tuple[str, str | None] | None:
        """(status, message) when the response is to end instead of resuming."""
        if row.cancel_requested:
            return "cancelled", None
        if end_with is not None:
            return "failed", end_with(row)
        if not row.background:
            return "failed", INTERRUPTED_FOREGROUND
        limit = self._settings.max_recoveries
        if row.recovery_count > limit:
            return "failed", (
                f"The response was taken over by recovery {row.recovery_count} times without finishing "
                f"(limit {limit}); it is stopped so it cannot loop forever. Check the server logs for the "
                "error that interrupts it, then retry the request."
            )
        return None

    async def _plan(
        self, continuations: Continuations, row: ResponseRow, req: CreateRequest, state: ResumeState
    ) -> RunPlan:
        own_cp = state.checkpoint
        if own_cp is not None and own_cp.awaits_input:
            # Saved after the run restored the checkpoint it continues and before it delivered
            # the request's input (a reply, a new message): resuming alone would lose the input.
            plan = await continuations.plan_delivery(row.user_id, req, own_cp)
        elif own_cp is not None:
            tools = (await continuations.plan(row.user_id, req, row.id)).tools if req.tools else []
            plan = RunPlan(messages=[], checkpoint_id=own_cp.checkpoint_id, tools=tools)
        else:
            plan = await continuations.plan(row.user_id, req, row.id)
        restores = own_cp is not None and plan.checkpoint_id == own_cp.checkpoint_id
        return dataclasses.replace(
            plan,
            checkpoint_data=own_cp.data if own_cp is not None and restores else plan.checkpoint_data,
            announced=announced(json.loads(o.data) for o in state.outputs),
        )

    @staticmethod
    def _spec(row: ResponseRow, req: CreateRequest, *, all_output_here: bool) -> RunSpec:
        return RunSpec(
            response_id=row.id,
            user_id=row.user_id,
            created_at=row.created_at,
            request=req,
            background=row.background,
            lineage=lineage_for(req, row.id),
            all_output_here=all_output_here,
        )

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
        """End a response recovery will not resume (cancelled, interrupted foreground, looping,
        retired) through the one `Ending`, with the usage its dead owner committed (kept on the row)."""
        spec = self._spec(row, req, all_output_here=False)
        usage = RunUsage.stored(row.usage)
        ending = Ending(spec, sink, Interrupted(closed), self._store.output_items, usage, trace=trace)
        error = None if message is None else {"code": "server_error", "message": message}
        await ending.finish(status, close_status="incomplete", error=error)
        await self._store.release_answers(row.id)
        metrics.RECOVERIES.inc(outcome="ended")
        metrics.RESPONSES_ENDED.inc(status=status)
        trace.close(status)
