"""The runtime's facade for the HTTP layer: create, read, stream, cancel and delete responses.

The work is done by collaborators with one job each, composed here: the `RunRegistry` (live
runs, draining), the `Launcher` (builds and starts runs, for creation and recovery alike), the
`Relay` (committed events as SSE frames), the `LeaseKeeper`, `Recovery` and `Continuations`.

Invariants:
- A response is inserted with its `response.created` event and this process's lease in one
  transaction, before its run starts; from then on only the lease holder appends to it.
- Continuations fail closed: a reply to an unknown or answered call, or a continuation whose
  checkpoint is gone, is refused with a 4xx; nothing silently restarts a workflow.
- The HTTP layer talks only to this class and to the `Created` / `ResponseStream` handles it
  returns: it never touches a run, a sink or SQL.
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
from dataclasses import dataclass, field
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
from .conversations import ConversationService
from .launcher import Launcher
from .leases import LeaseKeeper
from .memory import MemorySink
from .plan import RunSpec, lineage_for
from .recovery import Recovery
from .registry import RunRegistry
from .relay import Relay, ResponseStream
from .run import ResponseRun, StopKind
from .settings import RuntimeSettings
from .webhooks import Webhooks

log = logging.getLogger("durable_responses.host")

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
    _run: ResponseRun | None = field(default=None, repr=False)
    _memory: MemorySink | None = field(default=None, repr=False)
    # The creator's stream: watching since before the creation committed (see `Relay`).
    _subscription: Subscription | None = field(default=None, repr=False)


def _hash_of(request_json: str) -> str:
    return hashlib.sha256(request_json.encode()).hexdigest()


class Host:
    def __init__(self, store: Store, app: HostedApp, settings: RuntimeSettings | None = None) -> None:
        self.store = store
        self.app = app
        self.settings = settings or RuntimeSettings()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.registry = RunRegistry()
        self.continuations = Continuations(store, app, self.settings.checkpoint_types)
        self.webhooks = Webhooks(store, self.settings, self.owner)
        self.launcher = Launcher(store, app, self.settings, self.registry, self.owner, self.webhooks)
        self.relay = Relay(store, self.registry, remote_poll_seconds=self.settings.remote_poll_seconds)
        self.leases = LeaseKeeper(store, self.registry, self.owner)
        self.recovery = Recovery(store, self.launcher, self.continuations, self.registry, self.settings)
        self.conversations = ConversationService(store, self.continuations)
        self._tasks: list[asyncio.Task[None]] = []

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.start()
        self._tasks.append(asyncio.create_task(self.leases.loop(), name="lease-loop"))
        self._tasks.append(asyncio.create_task(self.recovery.loop(), name="recovery-loop"))
        self._tasks.append(asyncio.create_task(self.webhooks.loop(), name="webhook-loop"))

    def begin_shutdown(self) -> None:
        """SIGTERM: refuse new responses (503) and end the streams of background responses.

        Their clients reconnect (`Last-Event-ID`) to a replica that recovers them; foreground
        streams stay open while their runs finish within the grace period (`stop`).
        """
        if self.registry.begin_drain():
            self.store.notifier.publish_all()

    async def stop(self) -> None:
        """Graceful: refuse new work, let foreground runs finish, leave background to recovery."""
        self.begin_shutdown()
        await self.registry.stop_all(self.settings.shutdown_grace_seconds)
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
        return self.registry.accepting

    # -- create -------------------------------------------------------------------------

    async def create(
        self, user_id: str, req: CreateRequest, response_id: str | None, *, idempotency_key: bool = False
    ) -> Created:
        """Create (and start) a response; `response_id` chosen by the client (`x-agent-response-id`,
        or derived from an `Idempotency-Key`): a retry with the same id and body gets the same one."""
        if not self.registry.accepting:
            raise errors.unavailable("The server is shutting down; retry on another instance.")
        if len(self.registry) >= self.settings.max_inflight:
            raise errors.rate_limited(
                f"This server is running {len(self.registry)} responses, its limit "
                "(DURABLE_RESPONSES_MAX_INFLIGHT); retry shortly or on another replica."
            )
        rid = response_id or new_response_id()
        # Ids, stored form and hash: ~10 us per input item, in a worker thread for a large input.
        encoded = await for_input(len(req.input_items), _encode_sync, req, rid)
        if response_id is not None and req.store:
            existing = await self._existing(user_id, rid, encoded.request_hash, idempotency_key)
            if existing is not None:
                return existing
        # Items added to the conversation by hand since its last turn begin this turn's input.
        added = await self.conversations.take(user_id, req, rid)
        if not added:
            return await self._create(user_id, req, rid, encoded)
        client_hash = encoded.request_hash  # a retry is the same request without them
        req = dataclasses.replace(encoded.request, input_items=[*added, *encoded.request.input_items])
        encoded = dataclasses.replace(
            await for_input(len(req.input_items), _encode_sync, req, rid), request_hash=client_hash
        )
        created = False
        try:
            result = await self._create(user_id, req, rid, encoded)
            created = True
            return result
        finally:
            if not created and req.store:
                await self.conversations.give_back(rid)

    async def _create(self, user_id: str, req: CreateRequest, rid: str, encoded: _Encoded) -> Created:
        prev = await self.continuations.check(user_id, req)
        req = encoded.request
        now = time.time()
        answered: str | None = None
        if prev is not None and req.store:
            answered = await self.continuations.answer_pending(user_id, prev, req, rid)
        if not req.store:
            return await self._create_in_memory(user_id, req, rid, now)
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
            lease_expires_at=now + self.store.lease_seconds,
        )
        snapshot = build_response(req, response_id=rid, status=status, created_at=int(now))
        first = [ev.response_created(snapshot)]
        first.append(ev.response_queued(snapshot) if req.background else ev.response_in_progress(snapshot))
        events = []
        for seq, e in enumerate(first):
            e["sequence_number"] = seq
            events.append(EventRow(seq, e["type"], dumps(e)))
        # A streaming creator watches before the commit: its relay starts from the committed
        # tail (no read back of the rows just written).
        sub = self.store.notifier.subscribe(rid) if req.stream else None
        try:
            plan = await self.continuations.plan(user_id, req, rid)
            await self.store.insert_response(row, encoded.input_rows, events)
        except BaseException as exc:
            if sub is not None:
                sub.close()
            if answered is not None:
                await self.store.unanswer_pending(answered, rid)
            if isinstance(exc, DuplicateResponse):
                raise errors.conflict(
                    f"A response with id '{rid}' already exists.", code="duplicate_response_id"
                ) from exc
            raise
        spec = RunSpec(
            response_id=rid,
            user_id=user_id,
            created_at=now,
            request=req,
            background=req.background,
            lineage=lineage_for(req, rid),
            queued=status == "queued",
        )
        sink = self.launcher.sink(rid, len(events), background=req.background)
        run = self.launcher.launch(spec, plan, sink=sink, defer=req.stream)
        if sub is not None:
            # Normally the relay closes it; this is for a stream that never started.
            def drop_later(_run: ResponseRun, sub: Subscription = sub) -> None:
                asyncio.get_running_loop().call_later(_ABANDONED_SUB, sub.close)

            run.on_finished.append(drop_later)
        return Created(rid, req, _run=run, _subscription=sub)

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
        return Created(rid, stored, existing=True, _run=self.registry.get(rid))

    async def _create_in_memory(self, user_id: str, req: CreateRequest, rid: str, now: float) -> Created:
        plan = await self.continuations.plan(user_id, req, rid)
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
        run = self.launcher.launch_in_memory(spec, plan, sink, defer=req.stream)
        return Created(rid, req, _run=run, _memory=sink)

    # -- streams ------------------------------------------------------------------------

    def stream_created(self, created: Created) -> ResponseStream:
        """The creator's SSE stream: from `response.created` to the terminal event."""
        run = created._run
        rid = created.response_id
        on_first = run.start if run is not None else None
        if created._memory is not None:
            frames = self.relay.memory(created._memory)
            return ResponseStream(frames, on_first=on_first, on_abandoned=lambda: self.abandon(rid))
        frames = self.relay.committed(rid, -1, created._subscription)
        on_abandoned = None if created.request.background else (lambda: self.abandon(rid))
        return ResponseStream(frames, on_first=on_first, on_abandoned=on_abandoned)

    async def stream(self, user_id: str, response_id: str, after: int) -> ResponseStream:
        """A replay or a reconnect: committed events after `after`, then live ones."""
        await self.get_row(user_id, response_id)
        return ResponseStream(self.relay.committed(response_id, after))

    def abandon(self, response_id: str) -> None:
        """The client of a foreground response went away: cancel it (background runs go on)."""
        self.registry.stop_foreground(response_id)

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
        run = created._run
        if run is not None:
            await run.done.wait()
        if created._memory is not None:
            final = created._memory.terminal_response()
            if final is None:
                raise errors.server_error("The response ended without a terminal event.")
            return final
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
            # 400, as OpenAI and Foundry's hosting library answer it.
            raise errors.bad_request(
                f"Cannot cancel a {row.status} response.",
                param="response_id",
                code="response_not_cancellable",
            )
        if row.status != "cancelled":
            await self.store.request_cancel(response_id, user_id)
            run = self.registry.stop(response_id, StopKind.CANCELLED)
            if run is not None:
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
        row = await self.get_row(user_id, response_id)
        if row.background and row.status not in TERMINAL_STATUSES:
            raise errors.bad_request(
                "Cannot delete an in-flight response: cancel it first, or wait for it to end.",
                param="response_id",
                code="response_in_progress",
            )
        self.registry.stop(response_id, StopKind.ABANDON)
        if not await self.store.delete_response(response_id, user_id):
            raise errors.not_found(f"Response with id '{response_id}' not found.", param="response_id")


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
