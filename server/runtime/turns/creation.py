"""Creating a response: admission, idempotent retries, the stored request, the first events.

Invariants:
- A response is inserted with its `response.created` event and this process's lease in one
  transaction, before its run starts; from then on only the lease holder appends to it.
- A retry with the same client-chosen id (`x-agent-response-id`, or one derived from an
  `Idempotency-Key`) and the same body gets the same response, never a second run.
- A turn's facts are read once and its run planned before anything is written
  (`Continuations.prepare`, `plan_for`): everything a run would refuse is refused (4xx) before
  anything is created or a pending request is marked answered; the requests it answers are
  marked in the creation's own transaction (`Store.insert_response`), so a creation that does
  not commit leaves them pending. Only a conversation's hand-added items, claimed before, are
  given back when the creation does not commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from dataclasses import dataclass, field

from ...observability import metrics
from ...protocol import errors
from ...protocol import events as ev
from ...protocol.ids import new_response_id
from ...protocol.request import CreateRequest
from ...protocol.response import build_response
from ...protocol.sse import dumps
from ...store import (
    Answers,
    AnswersTaken,
    Claims,
    ConversationDeleted,
    DuplicateResponse,
    EventRow,
    ItemsTaken,
    ResponseRow,
    Store,
    Subscription,
)
from ..apps.lanes import Lane, Lanes
from ..apps.run_options import applied
from ..apps.versions import changes
from ..run.memory import MemorySink
from ..run.plan import RunPlan, RunSpec, lineage_for
from ..run.registry import RunRegistry
from ..run.run import OnFinished, ResponseRun
from ..settings import Delivery, DoubleTexting, RuntimeSettings
from ._offload import for_input
from .conversations import ConversationService, conversation_not_found
from .stored_request import Encoded, encode, stored, with_added
from .turn_facts import Followed, Turn
from .turns import Turns, strategy_of

# Creations of a turn whose hand-added items another turn took meanwhile (`ItemsTaken`), the
# last answered 409: each retry follows the turn that took them.
_CLAIM_ATTEMPTS = 3

# Seconds after its run ends before a creator's subscription whose stream never started is
# dropped (a live relay closes its own long before).
_ABANDONED_SUB = 30.0


@dataclass
class Created:
    """A response just created (or found again by an idempotent retry): what the HTTP layer
    answers with `Host.stream_created` (SSE) or `Host.wait` (JSON)."""

    response_id: str
    request: CreateRequest
    existing: bool = False
    # For the runtime only (`Host.stream_created`, `Host.wait`): the HTTP layer hands `Created`
    # back to the host and never touches a run.
    run: ResponseRun | None = field(default=None, repr=False)
    memory: MemorySink | None = field(default=None, repr=False)
    # The creator's stream: watching since before the creation committed (see `Relay`).
    subscription: Subscription | None = field(default=None, repr=False)


class Creator:
    def __init__(
        self,
        store: Store,
        registry: RunRegistry,
        lanes: Lanes,
        conversations: ConversationService,
        settings: RuntimeSettings,
    ) -> None:
        self.store = store
        self.registry = registry
        self.lanes = lanes
        self.conversations = conversations
        self.settings = settings
        self.owner = lanes.default.launcher.owner
        self.turns = Turns(store, registry, settings.double_texting_wait_seconds)

    async def create(
        self,
        user_id: str,
        req: CreateRequest,
        response_id: str | None,
        *,
        idempotency_key: bool = False,
        double_texting: str | None = None,
    ) -> Created:
        """Create (and start) a response; `response_id` chosen by the client (`x-agent-response-id`,
        or derived from an `Idempotency-Key`): a retry with the same id and body gets the same one.
        `double_texting`: the request's `x-double-texting` header (see `turns`)."""
        if not self.registry.accepting:
            raise errors.unavailable("The server is shutting down; retry on another instance.")
        if len(self.registry) >= self.settings.max_inflight:
            raise errors.rate_limited(
                f"This server is running {len(self.registry)} responses, its limit "
                "(DURABLE_RESPONSES_MAX_INFLIGHT); retry shortly or on another replica.",
                retry_after=1.0,
            )
        lane = self.lanes.pick(req.model)
        # The request as the run applies it (what the response echoes): options this app cannot
        # honour are refused here, those it ignores set to null (`run_options`).
        req = applied(req, lane.app.reach)
        rid = response_id or new_response_id()
        # Ids, stored form and hash: ~10 us per input item, in a worker thread for a large input.
        encoded = await for_input(len(req.input_items), encode, req, rid)
        if response_id is not None and req.store:
            existing = await self._existing(user_id, rid, encoded.request_hash, idempotency_key)
            if existing is not None:
                return existing
        strategy = strategy_of(req, double_texting, self.settings.double_texting)
        for _ in range(_CLAIM_ATTEMPTS - 1):
            with contextlib.suppress(ItemsTaken):
                # (Another turn of the conversation took its items between this one's read and
                # its commit: that turn exists now, and this one clears its way again, by its
                # strategy: waits for it, cancels it or is refused, and reads what is left.)
                return await self._turn(lane, user_id, req, rid, encoded, strategy)
        try:
            return await self._turn(lane, user_id, req, rid, encoded, strategy)
        except ItemsTaken as exc:
            raise errors.conflict(
                "Other turns of this conversation took the items added to it meanwhile; retry the request.",
                code="conversation_busy",
            ) from exc

    async def _turn(
        self,
        lane: Lane,
        user_id: str,
        req: CreateRequest,
        rid: str,
        encoded: Encoded,
        strategy: DoubleTexting,
    ) -> Created:
        """Create `req` as a turn: the turn it follows must have ended (or be ended) first."""
        cleared, followed = await self.turns.clear(user_id, req, strategy)
        if cleared is not req:
            # Re-pointed past a rolled-back turn: stored so (recovery reads it); a retry is
            # still the client's request. Its input items keep their ids and their JSON.
            req = dataclasses.replace(cleared, input_items=encoded.request.input_items)
            encoded = await for_input(len(req.input_items), stored, req, encoded.items, encoded.request_hash)
        # Items added to the conversation by hand since its last turn begin this turn's input.
        # (Claimed in the creation's own write: nothing to give back if it fails.)
        added, claims = await self.conversations.take(user_id, req)
        if added:
            # A retry is the same request without them: the client's hash stays.
            encoded = await for_input(len(added) + len(req.input_items), with_added, encoded, added, rid)
        return await self._create(lane, user_id, rid, encoded, followed, claims)

    async def _create(
        self, lane: Lane, user_id: str, rid: str, encoded: Encoded, followed: Followed, claims: Claims | None
    ) -> Created:
        """Prepare the turn (its facts read once, 4xx for what its run would refuse), plan its
        run, then create it: nothing is written before the plan stands."""
        continuations, req = lane.continuations, encoded.request
        turn = await continuations.prepare(user_id, req, followed)
        prev = turn.prev
        if prev is not None and self.lanes.several and prev.app != lane.name:
            raise errors.bad_request(
                f"Response '{prev.id}' was made by the app '{prev.app}', not '{lane.name}'; continue it "
                f"with model '{prev.app}'.",
                param="model",
                code="model_mismatch",
            )
        if prev is not None and prev.app_version and prev.app_version not in lane.compatible:
            await self._check_version(lane, prev, turn)
        plan = await for_input(len(turn.items), continuations.plan_for, req, turn)
        if not req.store:
            return self._create_in_memory(lane, user_id, req, rid, plan)
        takes = _Takes(continuations.answers(user_id, req, turn), claims)
        return await self._insert(lane, user_id, rid, encoded, plan, takes)

    async def _insert(
        self, lane: Lane, user_id: str, rid: str, encoded: Encoded, plan: RunPlan, takes: _Takes
    ) -> Created:
        """Commit the response (row, input, first events, lease, the pending requests it
        answers, the items added by hand it takes: one transaction, nothing to undo if it
        fails) and launch its run."""
        req, launcher, now = encoded.request, lane.launcher, time.time()
        delivery = self.settings.delivery.of_response(stream=req.stream, background=req.background)
        trace, trace_context = launcher.telemetry.first_life(
            rid, delivery=delivery.value, background=req.background
        )
        row, events = self._first_write(lane, user_id, req, rid, encoded, now, trace_context, delivery)
        # A streaming creator watches before the commit: its relay starts from the committed
        # tail (no read back of the rows just written).
        sub = self.store.notifier.subscribe(rid) if req.stream else None
        try:
            with trace.committing("create"):
                await self.store.insert_response(
                    row, encoded.input_rows, events, answers=takes.answers, claims=takes.claims
                )
        except BaseException as exc:
            trace.close(None)
            if sub is not None:
                sub.close()
            refusal = _refusal(exc, rid)
            if refusal is not None:
                raise refusal from exc
            raise
        spec = RunSpec(
            response_id=rid,
            user_id=user_id,
            created_at=now,
            request=req,
            background=req.background,
            lineage=lineage_for(req, rid),
            queued=row.status == "queued",
        )
        sink = launcher.sink(rid, len(events), delivery, background=req.background)
        metrics.RESPONSES_CREATED.inc(mode=_mode(req))
        metrics.APP_CREATIONS.inc(app=lane.name)
        run = launcher.launch(
            spec, plan, sink=sink, defer=req.stream, trace=trace, on_finished=_dropped_later(sub)
        )
        return Created(rid, req, run=run, subscription=sub)

    def _first_write(
        self,
        lane: Lane,
        user_id: str,
        req: CreateRequest,
        rid: str,
        encoded: Encoded,
        now: float,
        trace_context: str | None,
        delivery: Delivery,
    ) -> tuple[ResponseRow, list[EventRow]]:
        """The response row and its first events (`response.created`, then queued or in progress)."""
        status = "queued" if req.background else "in_progress"
        row = ResponseRow(
            id=rid,
            user_id=user_id,
            status=status,
            background=req.background,
            stream=req.stream,
            delivery=delivery,
            created_at=now,
            completed_at=None,
            previous_response_id=req.previous_response_id,
            conversation_id=req.conversation_id,
            request=encoded.request_json,
            request_hash=encoded.request_hash,
            lease_owner=self.owner,
            lease_expires_at=now + self.store.lease_seconds,
            app=lane.launcher.app_name,
            app_version=lane.version or None,
            created_by=self.owner,
            trace_context=trace_context,
        )
        snapshot = build_response(req, response_id=rid, status=status, created_at=int(now))
        first = [ev.response_created(snapshot)]
        first.append(ev.response_queued(snapshot) if req.background else ev.response_in_progress(snapshot))
        events = []
        for seq, e in enumerate(first):
            e["sequence_number"] = seq
            events.append(EventRow(seq, e["type"], dumps(e)))
        return row, events

    async def _check_version(self, lane: Lane, prev: ResponseRow, turn: Turn) -> None:
        """Refuse (409, before anything is consumed) a turn this app version cannot continue:
        one that restores a workflow checkpoint of another graph, or answers another version's
        pending requests. A plain agent's (or a typed workflow's) fresh turn needs neither."""
        restores = lane.app.is_workflow and not lane.app.typed_input
        if not restores and not turn.pending:
            return
        old = await self.store.versions.manifest(prev.app or lane.name, str(prev.app_version))
        changed = changes(json.loads(old) if old else None, dict(lane.manifest))
        raise errors.conflict(
            f"Response '{prev.id}' was made by version {prev.app_version} of the app '{lane.name}'; this "
            f"replica runs version {lane.version}, which cannot continue it ({changed}). Send this turn "
            f"to a replica of version {prev.app_version} (the response stays answerable), or, if the "
            "change keeps what it needs, declare the old version compatible "
            "(DURABLE_RESPONSES_COMPATIBLE_VERSIONS).",
            code="app_version_mismatch",
        )

    async def _existing(
        self, user_id: str, rid: str, request_hash: str, idempotency_key: bool
    ) -> Created | None:
        """A client retry with the same client-chosen id gets the same response (idempotency)."""
        row = await self.store.get_response(rid, None)
        if row is None:
            return None
        if idempotency_key and row.request_hash != request_hash:
            raise errors.unprocessable(
                "This Idempotency-Key was already used with a different request body; use a new key "
                "for a new request.",
                param="Idempotency-Key",
                code="idempotency_key_reused",
            )
        if row.user_id != user_id or row.request_hash != request_hash:
            raise errors.conflict(
                f"A response with id '{rid}' already exists with a different request; choose a new id.",
                code="duplicate_response_id",
            )
        stored = CreateRequest.from_json_dict(json.loads(row.request))
        return Created(rid, stored, existing=True, run=self.registry.get(rid))

    def _create_in_memory(
        self, lane: Lane, user_id: str, req: CreateRequest, rid: str, plan: RunPlan
    ) -> Created:
        launcher, now = lane.launcher, time.time()
        sink = MemorySink()
        snapshot = build_response(req, response_id=rid, status="in_progress", created_at=int(now))
        sink.emit(ev.response_created(snapshot))
        sink.emit(ev.response_in_progress(snapshot))
        spec = RunSpec(
            response_id=rid,
            user_id=user_id,
            created_at=now,
            request=req,
            background=False,
            lineage=lineage_for(req, rid),
        )
        trace, _ = launcher.telemetry.first_life(rid, delivery="live", background=False)
        metrics.RESPONSES_CREATED.inc(mode=_mode(req))
        metrics.APP_CREATIONS.inc(app=lane.name)
        run = launcher.launch_in_memory(spec, plan, sink, defer=req.stream, trace=trace)
        return Created(rid, req, run=run, memory=sink)


@dataclass(frozen=True)
class _Takes:
    """What a creation's own write takes besides its rows: the pending requests it answers, the
    items added by hand it claims."""

    answers: Answers | None
    claims: Claims | None


def _refusal(exc: BaseException, rid: str) -> errors.ProtocolError | None:
    """The 409 (404: its conversation was deleted) of a creation whose write was refused (None:
    not a refusal)."""
    if isinstance(exc, ConversationDeleted):
        return conversation_not_found(exc.conversation_id)
    if isinstance(exc, AnswersTaken):
        return errors.conflict(
            f"The request(s) {', '.join(exc.refused)} were answered concurrently by another response.",
            code="call_already_answered",
            param="input",
        )
    if isinstance(exc, DuplicateResponse):
        return errors.conflict(f"A response with id '{rid}' already exists.", code="duplicate_response_id")
    return None


def _mode(req: CreateRequest) -> str:
    """The metrics label of a creation: how the client waits for it (a fixed set)."""
    if not req.store:
        return "unstored"
    return "background" if req.background else "stream" if req.stream else "json"


def _dropped_later(sub: Subscription | None) -> tuple[OnFinished, ...]:
    """A streaming creator's subscription, closed a while after its run finished: normally the
    relay closes it; this is for a stream that never started."""
    if sub is None:
        return ()

    def drop_later(_run: ResponseRun) -> None:
        asyncio.get_running_loop().call_later(_ABANDONED_SUB, sub.close)

    return (drop_later,)
