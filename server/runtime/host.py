"""The runtime's facade: create, read, cancel, delete and stream responses; own leases.

Invariants:
- A response is inserted with its `response.created` event and this process's lease in one
  transaction, before its run starts; from then on only the lease holder appends to it.
- Continuations fail closed: a reply to an unknown or answered call, or a continuation whose
  checkpoint is gone, is refused with a 4xx; nothing silently restarts a workflow.
- The HTTP layer talks only to this class (never to SQL).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ..protocol import errors
from ..protocol import events as ev
from ..protocol.ids import input_item_id, new_response_id
from ..protocol.request import CreateRequest, ListParams
from ..protocol.response import build_response, list_body
from ..protocol.sse import dumps
from ..store import (
    TERMINAL_STATUSES,
    DuplicateResponse,
    EventRow,
    InputItemRow,
    ResponseRow,
    Store,
    Subscription,
)
from ._offload import for_input
from .apps import HostedApp
from .continuation import Continuations
from .mapping import ItemMapper
from .recovery import Recovery
from .relay import relay_committed, relay_memory
from .run import ResponseRun, RunPlan
from .sinks import MemorySink, SqlSink

log = logging.getLogger("durable_responses.host")

# Seconds after its run ends before a creator's subscription whose stream never started is
# dropped (a live relay closes its own long before).
_ABANDONED_SUB = 30.0


@dataclass
class HostSettings:
    delivery: str = "live"
    lease_seconds: float = 15.0
    recovery_interval: float = 2.0
    allowed_checkpoint_types: tuple[str, ...] = ()
    shutdown_grace_seconds: float = 10.0
    remote_poll_seconds: float = 0.5
    cancel_wait_seconds: float = 10.0
    max_recoveries: int = 10
    max_inflight: int = 1000


@dataclass
class Created:
    response_id: str
    request: CreateRequest
    run: ResponseRun | None
    memory: MemorySink | None = None
    existing: bool = False
    # The creator's stream: watching since before the creation committed (see `relay`).
    subscription: Subscription | None = None


def _hash_of(request_json: str) -> str:
    return hashlib.sha256(request_json.encode()).hexdigest()


def lineage_for(req: CreateRequest, response_id: str) -> str:
    return f"conv:{req.conversation_id}" if req.conversation_id else f"resp:{response_id}"


class Host:
    def __init__(self, store: Store, app: HostedApp, settings: HostSettings | None = None) -> None:
        self.store = store
        self.app = app
        self.settings = settings or HostSettings()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.runs: dict[str, ResponseRun] = {}
        self.accepting = True
        self.recovery = Recovery(self)
        self.continuations = Continuations(store, app, self.settings.allowed_checkpoint_types)
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[None]] = set()
        self.draining = asyncio.Event()

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.start()
        self._tasks.append(asyncio.create_task(self._lease_loop(), name="lease-loop"))
        self._tasks.append(asyncio.create_task(self.recovery.loop(), name="recovery-loop"))

    def begin_shutdown(self) -> None:
        """SIGTERM: refuse new responses (503) and end the streams of background responses.

        Their clients reconnect (`Last-Event-ID`) to a replica that recovers them; foreground
        streams stay open while their runs finish within the grace period (`stop`).
        """
        if self.draining.is_set():
            return
        self.accepting = False
        self.draining.set()
        self.store.notifier.publish_all()

    async def stop(self) -> None:
        """Graceful: refuse new work, let foreground runs finish, leave background to recovery."""
        self.begin_shutdown()
        deadline = time.monotonic() + self.settings.shutdown_grace_seconds
        while True:
            foreground = [r for r in self.runs.values() if not r.background and not r.done.is_set()]
            if not foreground or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        for run in list(self.runs.values()):
            if run.background:
                run.stop("abandon")
            else:
                run.stop("failed", "The server shut down before this response finished; retry it.")
        for run in list(self.runs.values()):
            if run.task is not None:
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(asyncio.shield(run.task), 5)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            await self.store.release_leases(self.owner)
        await self.store.close()

    async def ready(self) -> bool:
        try:
            await asyncio.wait_for(self.store.ping(), 5)
        except Exception:
            return False
        return self.accepting

    # -- create -------------------------------------------------------------------------

    async def create(self, user_id: str, req: CreateRequest, response_id: str | None) -> Created:
        if not self.accepting:
            raise errors.unavailable("The server is shutting down; retry on another instance.")
        if len(self.runs) >= self.settings.max_inflight:
            raise errors.rate_limited(
                f"This server is running {len(self.runs)} responses, its limit "
                "(DURABLE_RESPONSES_MAX_INFLIGHT); retry shortly or on another replica."
            )
        rid = response_id or new_response_id()
        # Ids, stored form and hash: ~10 us per input item, in a worker thread for a large input.
        encoded = await for_input(len(req.input_items), _encode_sync, req, rid)
        if response_id is not None and req.store:
            existing = await self._existing(user_id, rid, encoded.request_hash)
            if existing is not None:
                return existing
        prev = await self.continuations.check(user_id, req)
        req = encoded.request
        now = time.time()
        answered: str | None = None
        if prev is not None and req.store:
            answered = await self.continuations.answer_pending(user_id, prev, req, rid)
        if not req.store:
            return await self._create_in_memory(user_id, req, rid, now)
        if req.conversation_id:
            await self.store.ensure_conversation(user_id, req.conversation_id)
        status = "queued" if req.background else "in_progress"
        row = ResponseRow(
            id=rid,
            user_id=user_id,
            status=status,
            background=req.background,
            stream=req.stream,
            delivery=self.settings.delivery,
            created_at=now,
            completed_at=None,
            previous_response_id=req.previous_response_id,
            conversation_id=req.conversation_id,
            request=encoded.request_json,
            request_hash=encoded.request_hash,
            lease_owner=self.owner,
            lease_expires_at=now + self.settings.lease_seconds,
        )
        snapshot = build_response(req, response_id=rid, status=status, created_at=int(now))
        first = [ev.response_created(snapshot)]
        first.append(ev.response_queued(snapshot) if req.background else ev.response_in_progress(snapshot))
        events = []
        for seq, e in enumerate(first):
            e["sequence_number"] = seq
            events.append(EventRow(seq, e["type"], dumps(e)))
        input_rows = encoded.input_rows
        # A streaming creator watches before the commit: its relay starts from the committed
        # tail (no read back of the rows just written).
        sub = self.store.notifier.subscribe(rid) if req.stream else None
        try:
            plan = await self._plan(user_id, req, rid)
            await self.store.insert_response(row, input_rows, events)
        except DuplicateResponse as exc:
            if sub is not None:
                sub.close()
            if answered is not None:
                await self.store.unanswer_pending(answered, rid)
            raise errors.conflict(
                f"A response with id '{rid}' already exists.", code="duplicate_response_id"
            ) from exc
        except BaseException:
            if sub is not None:
                sub.close()
            if answered is not None:
                await self.store.unanswer_pending(answered, rid)
            raise
        run = self._make_run(
            row, req, plan, start_seq=len(events), next_index=0, status=status, defer=req.stream
        )
        if sub is not None:
            # Normally the relay closes it; this is for a stream that never started.
            def drop_later(_run: ResponseRun, sub: Subscription = sub) -> None:
                asyncio.get_running_loop().call_later(_ABANDONED_SUB, sub.close)

            run.on_finished.append(drop_later)
        return Created(rid, req, run, subscription=sub)

    async def _existing(self, user_id: str, rid: str, request_hash: str) -> Created | None:
        """A client retry with the same client-chosen id gets the same response (idempotency)."""
        row = await self.store.get_response(rid, None)
        if row is None:
            return None
        if row.user_id != user_id or row.request_hash != request_hash:
            raise errors.conflict(
                f"A response with id '{rid}' already exists with a different request; choose a new id.",
                code="duplicate_response_id",
            )
        stored = CreateRequest.from_json_dict(json.loads(row.request))
        return Created(rid, stored, self.runs.get(rid), existing=True)

    async def _plan(self, user_id: str, req: CreateRequest, rid: str) -> RunPlan:
        return await self.continuations.plan(user_id, req, rid)

    async def _create_in_memory(self, user_id: str, req: CreateRequest, rid: str, now: float) -> Created:
        plan = await self._plan(user_id, req, rid)
        sink = MemorySink()
        snapshot = build_response(req, response_id=rid, status="in_progress", created_at=int(now))
        sink.emit(ev.response_created(snapshot))
        sink.emit(ev.response_in_progress(snapshot))
        run = ResponseRun(
            store=None,
            request=req,
            response_id=rid,
            user_id=user_id,
            created_at=now,
            lineage=lineage_for(req, rid),
            sink=sink,
            mapper=ItemMapper(rid, sink.emit),
            build_agent=self.app.build,
            is_workflow=self.app.is_workflow,
            plan=plan,
            background=False,
            allowed_types=self.settings.allowed_checkpoint_types,
            reader=self.store,
        )
        if req.stream:
            run.start_soon(0.05)
        else:
            run.start()
        return Created(rid, req, run, memory=sink)

    def _make_run(
        self,
        row: ResponseRow,
        req: CreateRequest,
        plan: RunPlan,
        *,
        start_seq: int,
        next_index: int,
        status: str,
        sink: SqlSink | None = None,
        defer: bool = False,
    ) -> ResponseRun:
        if sink is None:
            sink = SqlSink(
                self.store, row.id, self.owner, live=self.settings.delivery == "live", start_seq=start_seq
            )
        run = ResponseRun(
            store=self.store,
            request=req,
            response_id=row.id,
            user_id=row.user_id,
            created_at=row.created_at,
            lineage=lineage_for(req, row.id),
            sink=sink,
            mapper=ItemMapper(
                row.id, sink.emit, next_output_index=next_index, announced_calls=plan.announced_calls
            ),
            build_agent=self.app.build,
            is_workflow=self.app.is_workflow,
            plan=plan,
            background=row.background,
            allowed_types=self.settings.allowed_checkpoint_types,
            owner=self.owner,
        )
        run.queued = status == "queued"
        self.runs[row.id] = run
        run.on_finished.append(self._on_run_finished)
        if defer:
            run.start_soon(0.05)
        else:
            run.start()
        return run

    def _on_run_finished(self, run: ResponseRun) -> None:
        if self.runs.get(run.response_id) is run:
            del self.runs[run.response_id]
        # Relays that waited on this local run re-check (it may have ended without a commit).
        self.store.notifier.publish(run.response_id)
        if run.final_status in ("failed", "cancelled") and run.store is not None:
            task = asyncio.get_running_loop().create_task(self._after_run(run))
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _after_run(self, run: ResponseRun) -> None:
        # (Checkpoints were pruned in the run's final transaction.)
        try:
            if run.final_status in ("failed", "cancelled"):
                await self.store.release_answers(run.response_id)
        except Exception:
            log.exception("response %s: clean-up after the run failed", run.response_id)

    # -- read ---------------------------------------------------------------------------

    async def get_row(self, user_id: str, response_id: str) -> ResponseRow:
        row = await self.store.get_response(response_id, user_id)
        if row is None:
            raise errors.not_found(f"Response with id '{response_id}' not found.", param="response_id")
        return row

    async def response_json(self, row: ResponseRow) -> dict[str, Any]:
        req = CreateRequest.from_json_dict(json.loads(row.request))
        output = [json.loads(o.data) for o in await self.store.output_items(row.id)]
        return build_response(
            req,
            response_id=row.id,
            status=row.status,
            created_at=int(row.created_at),
            completed_at=int(row.completed_at) if row.completed_at is not None else None,
            output=output,
            error=json.loads(row.error) if row.error else None,
            incomplete_details=json.loads(row.incomplete_details) if row.incomplete_details else None,
            usage=json.loads(row.usage) if row.usage else None,
            conversation_id=row.conversation_id,
        )

    async def get(self, user_id: str, response_id: str) -> dict[str, Any]:
        return await self.response_json(await self.get_row(user_id, response_id))

    async def wait(self, created: Created) -> dict[str, Any]:
        """The final Response of a foreground JSON request."""
        run = created.run
        if run is not None:
            await run.done.wait()
        if created.memory is not None:
            return _terminal_response(created.memory.events)
        row = await self.store.get_response(created.response_id, None)
        while row is not None and row.status not in TERMINAL_STATUSES:
            # Driven elsewhere (an idempotent retry while another process runs it).
            await asyncio.sleep(self.settings.remote_poll_seconds)
            row = await self.store.get_response(created.response_id, None)
        if row is None:
            raise errors.not_found(f"Response with id '{created.response_id}' not found.")
        return await self.response_json(row)

    async def input_items(self, user_id: str, response_id: str, params: ListParams) -> dict[str, Any]:
        await self.get_row(user_id, response_id)
        page = await self.store.list_input_items(
            response_id, after=params.after, before=params.before, limit=params.limit, order=params.order
        )
        if page is None:
            cursor = params.after if params.after is not None else params.before
            raise errors.bad_request(
                f"No input item with id '{cursor}' in response '{response_id}'.",
                param="after" if params.after is not None else "before",
            )
        rows, has_more = page
        return list_body([json.loads(r.data) for r in rows], has_more=has_more)

    # -- cancel / delete ----------------------------------------------------------------

    async def cancel(self, user_id: str, response_id: str) -> dict[str, Any]:
        row = await self.get_row(user_id, response_id)
        if not row.background:
            raise errors.bad_request(
                "Only background responses can be cancelled (this one was created without background=true).",
                param="response_id",
                code="not_background",
            )
        if row.status in TERMINAL_STATUSES and row.status != "cancelled":
            raise errors.conflict(f"Cannot cancel a {row.status} response.", code="response_not_cancellable")
        if row.status != "cancelled":
            await self.store.request_cancel(response_id, user_id)
            run = self.runs.get(response_id)
            if run is not None:
                run.stop("cancelled")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(run.done.wait(), self.settings.cancel_wait_seconds)
            else:
                deadline = time.monotonic() + self.settings.cancel_wait_seconds
                while time.monotonic() < deadline:
                    current = await self.store.get_response(response_id, user_id)
                    if current is None or current.status in TERMINAL_STATUSES:
                        break
                    await asyncio.sleep(0.1)
        return await self.get(user_id, response_id)

    async def delete(self, user_id: str, response_id: str) -> None:
        await self.get_row(user_id, response_id)
        run = self.runs.get(response_id)
        if run is not None:
            run.stop("abandon")
        if not await self.store.delete_response(response_id, user_id):
            raise errors.not_found(f"Response with id '{response_id}' not found.", param="response_id")

    # -- stream -------------------------------------------------------------------------

    def relay(self, response_id: str, after: int, sub: Subscription | None = None) -> AsyncIterator[bytes]:
        """Committed events after `after`, as SSE frames, until the terminal event."""
        return relay_committed(self, response_id, after, sub)

    def relay_memory(self, sink: MemorySink, after: int = -1) -> AsyncIterator[bytes]:
        return relay_memory(sink, after)

    def stop_foreground(self, response_id: str) -> None:
        """The client of a foreground response went away: cancel it (background runs go on)."""
        run = self.runs.get(response_id)
        if run is not None and not run.background and not run.done.is_set():
            run.stop("cancelled")

    # -- leases -------------------------------------------------------------------------

    async def _lease_loop(self) -> None:
        interval = max(self.settings.lease_seconds / 3, 0.2)
        while True:
            await asyncio.sleep(interval)
            try:
                owned = [rid for rid, r in self.runs.items() if r.store is not None and not r.done.is_set()]
                if not owned:
                    continue
                kept = await self.store.renew_leases(self.owner, owned)
                for rid in owned:
                    if rid not in kept and rid in self.runs:
                        log.warning("response %s: lease lost; stopping our run", rid)
                        self.runs[rid].stop("abandon")
                for rid in await self.store.cancel_requested(list(kept)):
                    run = self.runs.get(rid)
                    if run is not None:
                        run.stop("cancelled")
            except Exception:
                log.exception("lease renewal failed")


@dataclass(frozen=True)
class _Encoded:
    """A create request as stored: input item ids assigned, its JSON, hash and input rows."""

    request: CreateRequest
    request_json: str
    request_hash: str
    input_rows: list[InputItemRow]


def _encode_sync(req: CreateRequest, rid: str) -> _Encoded:
    inputs = _ids(req, rid)
    encoded = _with_inputs(req, inputs)
    if not req.store:
        return _Encoded(encoded, "", "", [])  # never stored: only its ids are needed
    request_json = encoded.to_json()
    rows = [InputItemRow(i, item["id"], dumps(item)) for i, item in enumerate(inputs)]
    return _Encoded(encoded, request_json, _hash_of(request_json), rows)


def _ids(req: CreateRequest, rid: str) -> list[dict[str, Any]]:
    inputs = [dict(item) for item in req.input_items]
    for pos, item in enumerate(inputs):
        if not item.get("id"):
            item["id"] = input_item_id(rid, pos)
    return inputs


def _with_inputs(req: CreateRequest, inputs: list[dict[str, Any]]) -> CreateRequest:
    return dataclasses.replace(req, input_items=inputs)


def _terminal_response(events: list[EventRow]) -> dict[str, Any]:
    for e in reversed(events):
        if e.type in ev.TERMINAL_EVENT_TYPES:
            data: dict[str, Any] = json.loads(e.data)["response"]
            return data
    raise errors.server_error("The response ended without a terminal event.")
