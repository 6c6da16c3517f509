"""The runtime's facade for the HTTP layer: create, read, stream, cancel and delete responses.

The work is done by collaborators with one job each, composed here: the `RunRegistry` (live
runs, draining), the `Launcher` (builds and starts runs, for creation and recovery alike), the
`Relay` (committed events as SSE frames), the `LeaseKeeper`, `Recovery` and `Continuations`.

Invariants:
- Creation (`creation.Creator`) commits a response with its first events and this process's
  lease before its run starts; from then on only the lease holder appends to it.
- Continuations fail closed: a reply to an unknown or answered call, or a continuation whose
  checkpoint is gone, is refused with a 4xx; nothing silently restarts a workflow.
- The HTTP layer talks only to this class and to the `Created` / `ResponseStream` handles it
  returns: it never touches a run, a sink or SQL.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..observability import metrics
from ..observability.logs import bind_response
from ..protocol import errors
from ..protocol.request import CreateRequest, ListParams
from ..protocol.response import list_body
from ..store import (
    LIVE_MARK,
    TERMINAL_STATUSES,
    ResponseRow,
    Store,
)
from .admin import Admin
from .apps.apps import HostedApp
from .apps.lanes import Lane, Lanes
from .apps.versions import fingerprint, manifest_of
from .delivery.answering import Reply, reply
from .delivery.relay import Relay, ResponseStream
from .delivery.stored_response import response_object
from .delivery.webhooks import Webhooks
from .faults import database_error
from .recovery.leases import LeaseKeeper
from .recovery.recovery import Recovery
from .run.launcher import Launcher
from .run.registry import RunRegistry
from .run.run import StopKind
from .settings import RuntimeSettings
from .turns.continuation import Continuations
from .turns.conversations import ConversationService
from .turns.creation import Created, Creator

log = logging.getLogger("durable_responses.host")

# Seconds without a failed write after which `/readiness` probes writes itself (nothing else
# may be writing to tell it that they work again).
READINESS_PROBE_AFTER = 2.0
# Attempts at releasing our leases on shutdown while the database is unavailable (0.1 s, 0.2 s...).
RELEASE_ATTEMPTS = 4


def _new_owner(*, live: bool) -> str:
    """`hostname:pid:nonce`; the nonce starts with the liveness mark when `live`."""
    nonce = uuid.uuid4().hex[:8]
    return f"{socket.gethostname()}:{os.getpid()}{LIVE_MARK + nonce if live else ':' + nonce}"


class Host:
    def __init__(
        self,
        store: Store,
        app: HostedApp | Sequence[tuple[str, HostedApp]],
        settings: RuntimeSettings | None = None,
    ) -> None:
        """`app`: the one hosted app, or every app with the name requests pick it by (`model`)."""
        self.store = store
        named = [(app.name, app)] if isinstance(app, HostedApp) else list(app)
        self.app = named[0][1]
        settings = settings or RuntimeSettings()
        # The apps' own declared types (`apps.declared_types`) beside the operator's.
        declared = [t for _, a in named for t in a.checkpoint_types if t not in settings.checkpoint_types]
        if declared:
            extra = tuple(dict.fromkeys(declared))
            settings = settings.model_copy(update={"checkpoint_types": (*settings.checkpoint_types, *extra)})
        self.settings = settings
        self.registry = RunRegistry()
        # Each app's continuations and version (its launcher acts under the owner id: `_assemble`).
        self._apps = [
            (name, a, Continuations(store, a, self.settings.checkpoint_types), manifest_of(a))
            for name, a in named
        ]
        self.continuations = self._apps[0][2]
        self.relay = Relay(store, self.registry, remote_poll_seconds=self.settings.remote_poll_seconds)
        self.conversations = ConversationService(store, self.continuations)
        # PostgreSQL: the owner id carries the liveness mark when this process can hold its
        # liveness lock (store/db/_pg_liveness.py): its death is then known at once.
        self._assemble(_new_owner(live=store.liveness_possible))
        self._tasks: list[asyncio.Task[None]] = []
        self.admin = Admin(self)
        metrics.watch_runs(self.registry)
        metrics.watch_store(store)

    def _assemble(self, owner: str) -> None:
        """The collaborators that act under this process's lease owner id."""
        store, settings = self.store, self.settings
        self.owner = owner
        self.webhooks = Webhooks(store, settings, owner)
        self.lanes = Lanes(
            [
                Lane(
                    name,
                    a,
                    cont,
                    Launcher(store, a, settings, self.registry, owner, self.webhooks, name=name),
                    version,
                    tuple(dict.fromkeys((version, *settings.compatible_versions))),
                    manifest,
                )
                for name, a, cont, manifest, version in self._versions()
            ]
        )
        self.launcher = self.lanes.default.launcher
        self.leases = LeaseKeeper(store, self.registry, owner)
        self.recovery = Recovery(store, self.lanes, self.registry, settings)
        self.creator = Creator(store, self.registry, self.lanes, self.conversations, settings)

    def _versions(self) -> list[tuple[str, HostedApp, Continuations, dict[str, Any], str]]:
        """Each app with the version it runs: the configured one, else its fingerprint."""
        given = self.settings.app_version
        return [(name, a, cont, m, given or fingerprint(m)) for name, a, cont, m in self._apps]

    async def _record_versions(self) -> None:
        """Keep what each version served here is made of (a refusal names what changed)."""
        for (_name, _a, _cont, manifest), lane in zip(self._apps, self.lanes, strict=True):
            try:
                await self.store.versions.record(
                    lane.name, lane.version, json.dumps(manifest, sort_keys=True)
                )
            except Exception as exc:  # not worth failing a start over: refusals then say less
                log.warning("could not record app version %s of %s: %s", lane.version, lane.name, exc)
            log.info(
                "app %s runs version %s (also resumes: %s)",
                lane.name,
                lane.version,
                ", ".join(lane.compatible[1:]) or "none",
            )

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        await self.store.start(self.owner)
        if self.store.liveness_impossible:
            # The LISTEN URL is a transaction pooler: no session keeps the liveness lock, so the
            # owner id must not claim it (nothing ran under the marked one yet).
            await self.store.close_liveness()
            self._assemble(_new_owner(live=False))
        await self._record_versions()
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
        await self._release_leases()
        await self.store.close()

    async def _release_leases(self) -> None:
        """Release every lease of ours (another replica resumes at once), retried for a moment
        if the database is unavailable; after that the leases expire by themselves."""
        delay = 0.1
        for attempt in range(RELEASE_ATTEMPTS):
            try:
                await self.store.hand_off(self.owner)
                return
            except Exception as exc:
                if database_error(exc) is None or attempt == RELEASE_ATTEMPTS - 1:
                    log.warning("could not release our leases (%s); they expire by themselves", exc)
                    return
            await asyncio.sleep(delay)
            delay *= 2

    @property
    def accepting(self) -> bool:
        """Whether this process takes new responses (False once its shutdown began)."""
        return self.registry.accepting

    async def ready(self) -> bool:
        return await self.readiness() is None

    async def readiness(self) -> str | None:
        """None when this process can take work; else why not (for `/readiness`).

        Fails while writes fail, not only reads: a full SQLite disk still answers `SELECT 1`.
        The store's own writes tell (`health`); when none has been tried for a while since the
        last failure, a probe write does.
        """
        if not self.registry.accepting:
            return "shutting down"
        health = self.store.health
        try:
            await asyncio.wait_for(self.store.ping(), 5)
            if health.writes_failing and health.quiet_for() > READINESS_PROBE_AFTER:
                await asyncio.wait_for(self.store.probe_write(), 5)
        except Exception as exc:
            unavailable = database_error(exc)
            return unavailable.message if unavailable is not None else f"database check failed: {exc}"
        down = health.down
        if health.writes_failing and down is not None:
            return f"database writes fail: {down.message}"
        return None

    # -- create -------------------------------------------------------------------------

    async def create(
        self,
        user_id: str,
        req: CreateRequest,
        response_id: str | None,
        *,
        idempotency_key: bool = False,
        double_texting: str | None = None,
    ) -> Created:
        """Create (and start) a response (see `creation.Creator`; `double_texting`: the request's
        `x-double-texting` header, see `turns`)."""
        return await self.creator.create(
            user_id, req, response_id, idempotency_key=idempotency_key, double_texting=double_texting
        )

    async def respond(
        self,
        user_id: str,
        req: CreateRequest,
        response_id: str | None,
        *,
        disconnected: Callable[[], Awaitable[object]],
        idempotency_key: bool = False,
        double_texting: str | None = None,
    ) -> Reply:
        """Create (and start) a response and answer it in one call (`answering`): its stream, its
        body, or None when the client of a JSON request went away first (`disconnected`)."""
        created = await self.create(
            user_id, req, response_id, idempotency_key=idempotency_key, double_texting=double_texting
        )
        bind_response(created.response_id)
        return await reply(self, user_id, created, disconnected)

    # -- streams ------------------------------------------------------------------------

    def stream_created(self, created: Created) -> ResponseStream:
        """The creator's SSE stream: from `response.created` to the terminal event."""
        run = created.run
        rid = created.response_id
        on_first = run.start if run is not None else None
        if created.memory is not None:
            frames = self.relay.memory(created.memory)
            return ResponseStream(frames, on_first=on_first, on_abandoned=lambda: self.abandon(rid))
        frames = self.relay.committed(rid, -1, created.subscription)
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
        return response_object(row, await self.store.output_items(row.id))

    async def get(self, user_id: str, response_id: str) -> dict[str, Any]:
        found = await self.store.response_with_output(response_id, user_id)
        if found is None:
            raise errors.not_found(f"Response with id '{response_id}' not found.", param="response_id")
        return response_object(*found)

    async def wait(self, created: Created) -> dict[str, Any]:
        """The final Response of a foreground JSON request."""
        run = created.run
        if run is not None:
            await run.done.wait()
        if created.memory is not None:
            final = created.memory.terminal_response()
            if final is None:
                raise errors.server_error("The response ended without a terminal event.")
            return final
        found = await self.store.response_with_output(created.response_id, None)
        while found is not None and found[0].status not in TERMINAL_STATUSES:
            # Driven elsewhere (an idempotent retry while another process runs it).
            await asyncio.sleep(self.settings.remote_poll_seconds)
            found = await self.store.response_with_output(created.response_id, None)
        if found is None:
            raise errors.not_found(f"Response with id '{created.response_id}' not found.")
        return response_object(*found)

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
