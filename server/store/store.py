"""The store interface: every read and write the runtime and HTTP layers make.

`Store` is the one class they use; its lease, checkpoint, human-in-the-loop, item and event
queries and recovery reads live in `_leases`, `_checkpoints`, `_requests`, `_reads` and
`_resume_reads` (mixins over `_base.StoreBase`).

Invariants:
- Every read of a user-visible row is scoped by `user_id` (tenants are walls: another user's
  row reads as absent, never as forbidden).
- Event writes go through the outbox (`submit`), which commits them before any relay can see
  them; the direct transactions here are the few that must be synchronous (creating a
  response with its first events, cancel flags, claims, deletes).
- Reads never scan what came before: event reads are index range reads from a sequence number.
- A database that cannot be used (down, full, refusing connections or credentials) is
  `DatabaseUnavailable` from every method (`_read`/`_write` translate the driver's errors, the
  outbox its commits'), never a driver's exception: callers answer 503 without knowing SQL.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, delete, select, text, update

from . import _tables as t
from ._base import response_row
from .db import _pg_listen
from .db._engine import POSTGRESQL, ConnectionOptions, Database, open_database, sqlite_path
from .db._lockfile import LockFile
from .db._pg_liveness import LIVE_MARK, Liveness
from .db.notify import RECOVERY_WAKE, Notifier, Subscription
from .errors import classify
from .ops.health import DatabaseHealth
from .ops.ops import OpsStore
from .ops.retention import Retention
from .ops.stats import StoreStats
from .queries._checkpoints import Checkpoints
from .queries._leases import Leases
from .queries._reads import ResponseReads
from .queries._requests import RequestsAndConversations
from .queries._resume_reads import ResumeReads
from .queries.conversations import ConversationStore
from .queries.versions import VersionStore
from .queries.webhooks import WebhookStore
from .records import (
    ACTIVE_STATUSES,
    Answers,
    Claims,
    EventRow,
    InputItemRow,
    ResponseRow,
    Write,
)
from .settings import LEASE_SECONDS
from .write.outbox import Outbox

log = logging.getLogger("durable_responses.store")


class Store(Leases, Checkpoints, RequestsAndConversations, ResponseReads, ResumeReads):
    def __init__(
        self,
        db: Database,
        *,
        notifier: Notifier | None = None,
        commit_window: float = 0.002,
        max_batch: int = 256,
        lease_seconds: float = LEASE_SECONDS,
    ) -> None:
        self.db = db
        self.dialect = db.dialect
        self.notifier = notifier or Notifier()
        self.lease_seconds = lease_seconds
        self.instance = uuid.uuid4().hex
        self._listener: _pg_listen.PgListener | None = None
        self._liveness: Liveness | None = None
        self._lock: LockFile | None = None
        # SQLite: this store found itself alone on its file at start (the lock file's proof).
        self.alone_at_start = False
        self.outbox = Outbox(
            db, self.notifier, commit_window=commit_window, max_batch=max_batch, lease_seconds=lease_seconds
        )
        self.conversations = ConversationStore(db)
        self.webhooks = WebhookStore(db)
        # The operator's reads and the record of takeovers; the deletion of old responses.
        self.ops = OpsStore(db)
        self.retention = Retention(db)
        # Which version of an app made what, and the responses waiting for a version.
        self.versions = VersionStore(db, lease_seconds)

    @classmethod
    def open(cls, url: str, *, connection: ConnectionOptions | None = None, **kwargs: Any) -> Store:
        """A store on `url`; `connection`: pool sizes, timeouts, LISTEN's URL, a token provider."""
        return cls(open_database(url, options=connection), **kwargs)

    async def start(self, owner: str | None = None) -> None:
        """Start the outbox (and, on PostgreSQL, LISTEN). Decides whether prepared statements
        survive (a probe, when the URL leaves it open) unless the database is unreachable now:
        then the first connection decides.

        On an SQLite file, `owner` (the lease owner this process will be) takes the file's
        lock (`_lockfile`): when it proves that no other process is alive, the leases their
        dead predecessors held are expired at once, so recovery resumes their responses now
        instead of a lease later."""
        self.outbox.start()
        self.retention.start()
        if self.dialect != POSTGRESQL:
            await self._lock_file(owner)
            return
        if self._listener is not None:
            return
        assert self.db.pg is not None
        try:
            await self.db.pg.resolve()
        except Exception as exc:
            unavailable = classify(exc)
            if unavailable is None:
                raise
            log.warning("store: %s; connections will be retried", unavailable.log_text())
        self.outbox.notify_replicas(_pg_listen.CHANNEL, self.instance + "|")
        if self.db.listen is not None and owner is not None and LIVE_MARK in owner:
            self._liveness = Liveness(self.db.listen, owner)
            await self._liveness.start()
        if self.db.listen is None:
            log.warning(
                "LISTEN is off (DURABLE_RESPONSES_LISTEN_DATABASE_URL=off): relays of responses driven by "
                "other replicas poll (DURABLE_RESPONSES_REMOTE_POLL_SECONDS)"
            )
            return
        self._listener = _pg_listen.PgListener(self.db.listen, self.notifier, self.instance)
        self._listener.start()

    async def _lock_file(self, owner: str | None) -> None:
        path = sqlite_path(self.db.url)
        if path is None or owner is None or self._lock is not None:
            return
        self._lock = LockFile(path)
        if self._lock.acquire():
            self.alone_at_start = True
            try:
                released = await self.release_foreign_leases(owner)
            except Exception as exc:  # the database is unusable now: leases expire as usual
                log.warning("store: could not take over the responses of dead processes now: %s", exc)
            else:
                if released:
                    log.warning(
                        "store: this process is alone on %s: the %d in-flight responses of the processes "
                        "before it are resumed now (no lease wait)",
                        path,
                        released,
                    )
        for _ in range(1000):  # another store is starting on this file: it takes milliseconds
            if self._lock.share():
                return
            await asyncio.sleep(0.01)
        log.warning("store: could not share the lock on %s.lock; its leases expire as usual", path)

    @property
    def liveness_possible(self) -> bool:
        """Whether this store can hold a liveness lock for its owner (PostgreSQL with a LISTEN
        connection: direct or session-mode); `start` says whether it could after all."""
        return self.dialect == POSTGRESQL and self.db.listen is not None

    @property
    def liveness_impossible(self) -> bool:
        """Started, and the LISTEN URL turned out to be a transaction pooler: no liveness lock."""
        return self._liveness is not None and self._liveness.impossible

    @property
    def liveness_held(self) -> bool:
        """Whether this process holds (or is taking, or taking again) a liveness lock: recovery
        looks for dead owners often, so it starts judging as soon as the lock is held."""
        return self._liveness is not None and not self._liveness.impossible

    @property
    def judges_liveness(self) -> bool:
        """Whether this process holds its liveness lock now (and has for `SETTLE_SECONDS` after
        a loss): then it may claim the responses of owners whose lock is gone (`dead_owned`)."""
        return self._liveness is not None and self._liveness.judging

    @property
    def liveness_key(self) -> int | None:
        """This process's liveness lock key as `dead_owned` lists the members' (None: no lock)."""
        return self._liveness.key if self._liveness is not None else None

    @property
    def liveness_database(self) -> int | None:
        """The oid of the database this process's liveness lock is held in (None: no lock yet)."""
        return self._liveness.database if self._liveness is not None else None

    async def live_members(self, database: int) -> list[int]:
        """The live members' lock keys in `database`: read on this process's own lock connection
        while it holds its lock there (one round trip), otherwise through the pool."""
        if self._liveness is not None:
            members = await self._liveness.members(database)
            if members is not None:
                return members
        return await super().live_members(database)

    async def close_liveness(self) -> None:
        if self._liveness is not None:
            await self._liveness.close()
            self._liveness = None

    def recovery_wake(self) -> Subscription:
        """A subscription woken when another replica hands its responses off (`RECOVERY_WAKE`)."""
        return self.notifier.subscribe(RECOVERY_WAKE)

    async def hand_off(self, owner: str) -> None:
        """Release every lease of `owner` (graceful shutdown) and wake the other replicas.

        The writes still queued commit first: a fenced write of `owner` committed after the
        release would renew its lease (a handed-off lease looks expired to the fence), and the
        next owner's takeover would count as a recovery."""
        await self.outbox.flush()
        await self.release_leases(owner, notify=f"{self.instance}|{RECOVERY_WAKE}")

    @property
    def cross_process_wakeups(self) -> bool:
        """Whether relays of responses driven elsewhere are woken now (PostgreSQL, while LISTEN
        is up) or must poll (SQLite, LISTEN off, impossible through a pooler, or reconnecting)."""
        listen = self.db.listen
        # LISTEN through a pooler found in transaction mode after it started hears nothing.
        pooled = listen is not None and listen.transaction_pooler is True
        return self._listener is not None and self._listener.listening and not pooled

    @property
    def stats(self) -> StoreStats:
        """A snapshot of the outbox's counters (commits and fallbacks per kind) and the state of
        the connections, for a metrics endpoint."""
        o = self.outbox.stats
        pg = self.db.pg
        return StoreStats(
            dialect=self.dialect,
            commits=o.commits,
            commits_by_kind={k.value: n for k, n in o.commits_by_kind.items()},
            writes_by_kind={k.value: n for k, n in o.writes_by_kind.items()},
            fallbacks={(k.value, cause): n for (k, cause), n in o.fallbacks.items()},
            failed_writes=o.failed_writes,
            events=o.events,
            prepared_statements=pg.prepared_statements if pg is not None else None,
            transaction_pooler=pg.transaction_pooler if pg is not None else None,
            cross_process_wakeups=self.cross_process_wakeups,
        )

    async def close(self) -> None:
        await self.retention.stop()
        await self.outbox.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
        if self._liveness is not None:
            await self._liveness.close()
        await self.db.dispose()

    async def ping(self) -> None:
        async with self._read() as conn:
            await conn.execute(text("SELECT 1"))

    @property
    def health(self) -> DatabaseHealth:
        """Whether reads and writes work, as this process's own operations found them."""
        return self.db.health

    async def probe_write(self) -> None:
        """A write that needs the database to accept one: a transaction that commits a change
        (SQLite rewrites its header's `user_version`, a page in the WAL; PostgreSQL assigns a
        transaction id, so a standby refuses it and a full disk fails its commit record)."""
        async with self._write() as conn:
            if self.dialect == POSTGRESQL:
                await conn.execute(text("SELECT txid_current()"))
            else:
                version = (await conn.execute(text("PRAGMA user_version"))).scalar_one()
                await conn.execute(text(f"PRAGMA user_version = {int(version)}"))

    # -- outbox -------------------------------------------------------------------------

    def submit(self, write: Write) -> asyncio.Future[None]:
        return self.outbox.submit(write)

    async def write_now(self, writes: Sequence[Write]) -> None:
        """Commit `writes` in one direct transaction (bypassing the group-commit queue)."""
        await self.outbox.write_now(list(writes))

    # -- responses ----------------------------------------------------------------------

    async def insert_response(
        self,
        row: ResponseRow,
        inputs: Sequence[InputItemRow],
        events: Sequence[EventRow],
        *,
        answers: Answers | None = None,
        claims: Claims | None = None,
    ) -> None:
        """Create a response with its input and first events, group-committed with other writes;
        the pending requests it answers (`answers`) and the items added by hand it takes
        (`claims`) are marked in the same transaction: all, or `AnswersTaken` / `ItemsTaken`
        and nothing is created."""
        created = (row, list(inputs))
        await self.outbox.commit_now(
            Write(row.id, None, list(events), create=created, answers=answers, claims=claims)
        )

    async def delete_response(self, response_id: str, user_id: str) -> bool:
        async with self._write() as conn:
            res = await conn.execute(
                delete(t.responses).where(
                    and_(t.responses.c.id == response_id, t.responses.c.user_id == user_id)
                )
            )
            if res.rowcount != 1:
                return False
            # (Items added to a conversation by hand that this response took as input go with it.)
            for table in (
                t.input_items,
                t.output_items,
                t.events,
                t.checkpoints,
                t.pending_requests,
                t.conversation_items,
                t.takeovers,
                t.checkpoint_log,
                t.journal,
            ):
                await conn.execute(delete(table).where(table.c.response_id == response_id))
        self.notifier.publish(response_id)
        return True

    async def request_cancel(self, response_id: str, user_id: str) -> ResponseRow | None:
        async with self._write() as conn:
            await conn.execute(
                update(t.responses)
                .where(
                    and_(
                        t.responses.c.id == response_id,
                        t.responses.c.user_id == user_id,
                        t.responses.c.status.in_(ACTIVE_STATUSES),
                    )
                )
                .values(cancel_requested=True)
            )
            row = (
                await conn.execute(
                    select(t.responses).where(
                        and_(t.responses.c.id == response_id, t.responses.c.user_id == user_id)
                    )
                )
            ).first()
        return response_row(row) if row is not None else None

    async def cancel_requested(self, response_ids: Sequence[str]) -> set[str]:
        if not response_ids:
            return set()
        q = select(t.responses.c.id).where(
            and_(t.responses.c.id.in_(list(response_ids)), t.responses.c.cancel_requested.is_(True))
        )
        async with self._read() as conn:
            return {r[0] for r in (await conn.execute(q)).all()}
