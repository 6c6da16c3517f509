"""Every PostgreSQL connection the server opens: the pool's, the outbox writer's, LISTEN's.

Job: one `PgConnector` per database URL turns it into asyncpg connections: libpq's URL options
and `PG*` environment variables (TLS: `sslmode`, `sslrootcert`, `sslcert`, `sslkey`, ...) as
asyncpg reads them, the password from a token provider when one is configured (fetched for a
new connection only when the cached token nears its expiry; a refused token is fetched again
once), a connect timeout, and prepared statements only where they survive.

Invariant: behind a pooler in transaction mode no connection keeps a named prepared statement
(two clients' `__asyncpg_stmt_1__` would meet on one server session): asyncpg's statement cache
is off and SQLAlchemy prepares every statement unnamed. The URL option `prepared_statements`
says so (`false`), insists on them (`true`: start-up refuses a transaction pooler), or leaves it
to a probe (`auto`, the default): a session-level pooler or a direct connection keeps a
connection on one server session, a transaction pooler hands a connection's consecutive
transactions to whichever session is free, so a second connection that holds a transaction
open gets the first one's session, or the first one moves. LISTEN cannot work through such a
pooler at all (`_pg_listen` asks `transaction_pooled()`).

Unnamed statements are safe there: asyncpg sends Parse/Describe with a Flush, not a Sync, so
the pooler keeps the session until the Bind/Execute/Sync that follows.
"""

from __future__ import annotations

import asyncio
import logging
import time
from enum import StrEnum
from typing import Any

from sqlalchemy.engine import URL

from ..errors import DatabaseUnavailable, Unavailable, classify
from ._pg_auth import TokenError, TokenProvider

log = logging.getLogger("durable_responses.pg")

APPLICATION_NAME = "durable-responses"
# Options of ours in a database URL, removed before the URL reaches asyncpg (which would send
# them to the server as settings).
OPTIONS = ("prepared_statements",)
_PROBE_TIMEOUT = 5.0
_PROBE_ROUNDS = 4  # ~12 short transactions on a direct connection, once per process and URL
_warned: set[str] = set()


class PreparedStatements(StrEnum):
    AUTO = "auto"
    ON = "true"
    OFF = "false"


_SPELLINGS = {
    "auto": PreparedStatements.AUTO,
    "true": PreparedStatements.ON,
    "on": PreparedStatements.ON,
    "1": PreparedStatements.ON,
    "yes": PreparedStatements.ON,
    "false": PreparedStatements.OFF,
    "off": PreparedStatements.OFF,
    "0": PreparedStatements.OFF,
    "no": PreparedStatements.OFF,
}


def prepared_statements_option(url: URL) -> PreparedStatements:
    raw = url.query.get("prepared_statements", "auto")
    value = raw if isinstance(raw, str) else raw[-1]
    try:
        return _SPELLINGS[value.strip().lower()]
    except KeyError:
        from ._engine import BadDatabaseURL

        raise BadDatabaseURL(
            f"prepared_statements={value!r} in the database URL: use auto, true or false"
        ) from None


def libpq_dsn(url: URL) -> str:
    """`url` as the libpq-style DSN asyncpg parses (`sslmode`, `sslrootcert`, ...), without our
    own options. `normalize_url` spells libpq's `sslmode` as SQLAlchemy's `ssl`: back again."""
    query = {k: v for k, v in url.query.items() if k not in OPTIONS}
    if "ssl" in query:
        query["sslmode"] = query.pop("ssl")
    return url.set(drivername="postgresql", query=query).render_as_string(hide_password=False)


def _consume(probe: asyncio.Future[bool]) -> None:
    if not probe.cancelled():
        probe.exception()  # retrieved here: a failed probe is raised to its callers, not logged as lost


class PgConnector:
    """Opens connections to one PostgreSQL URL; decides once whether prepared statements survive."""

    def __init__(
        self, url: URL, *, token: TokenProvider | None = None, connect_timeout: float = 10.0
    ) -> None:
        self.url = url
        self.mode = prepared_statements_option(url)
        self._dsn = libpq_dsn(url)
        self._token = token
        self._timeout = connect_timeout
        self._settings = {} if "application_name" in url.query else {"application_name": APPLICATION_NAME}
        self._pooled: bool | None = None
        self._probing: asyncio.Future[bool] | None = None
        self.where = (
            f"{url.username or '(PGUSER)'}@{url.host or '(PGHOST)'}:{url.port or '(PGPORT)'}"
            f"/{url.database or '(PGDATABASE)'}"
        )

    @property
    def transaction_pooler(self) -> bool | None:
        """Whether a transaction-mode pooler was found in front of the server (None: not probed)."""
        return self._pooled

    @property
    def prepared_statements(self) -> bool | None:
        """Whether connections keep prepared statements; None until the probe has run (`auto`)."""
        if self.mode is PreparedStatements.ON:
            return True
        if self.mode is PreparedStatements.OFF:
            return False
        return None if self._pooled is None else not self._pooled

    async def resolve(self) -> bool:
        """`prepared_statements`, probing the server (once) when the URL leaves it to us."""
        decided = self.prepared_statements
        if decided is not None:
            return decided
        pooled = await self.transaction_pooled()
        if pooled and self.where not in _warned:
            _warned.add(self.where)  # once per process and database, not per connector
            log.warning(
                "%s is behind a connection pooler in transaction mode: prepared statements are off "
                "(add ?prepared_statements=false to the URL to skip this check at start-up)",
                self.where,
            )
        return not pooled

    async def connect(self, *, prepared: bool | None = None) -> Any:
        """A new asyncpg connection; `prepared` None: as `resolve()` decides."""
        import asyncpg

        if prepared is None:
            prepared = await self.resolve()
        kwargs: dict[str, Any] = {"timeout": self._timeout, "server_settings": self._settings}
        if not prepared:
            kwargs["statement_cache_size"] = 0
        for attempt in (1, 2):
            password = await self._password()
            if password is not None:
                kwargs["password"] = password
            try:
                return await asyncpg.connect(self._dsn, **kwargs)
            except Exception as exc:
                unavailable = classify(exc)
                if unavailable is None:
                    raise
                if unavailable.reason is Unavailable.AUTH and self._token is not None:
                    self._token.invalidate()  # rotated before its announced expiry: fetch again
                    if attempt == 1:
                        continue
                raise self._explain(unavailable) from exc
        raise AssertionError("unreachable")

    async def _password(self) -> str | None:
        if self._token is None:
            return None
        try:
            return await self._token.password()
        except TokenError as exc:
            raise DatabaseUnavailable(
                Unavailable.AUTH,
                f"{self._token.describe} failed: {exc}",
                advice=f"fix {self._token.describe} (it must print or return the database password)",
            ) from exc

    def _explain(self, exc: DatabaseUnavailable) -> DatabaseUnavailable:
        """`exc` with the target and advice that fit how this connector connects."""
        detail = f"{self.where}: {exc.detail}"
        advice = exc.advice
        if exc.reason is Unavailable.AUTH and "certificate" in exc.detail.lower():
            advice = (
                f"the server wants a client certificate for user {self.url.username!r}: give sslcert= and "
                "sslkey= in DATABASE_URL (or PGSSLCERT / PGSSLKEY), signed by a CA the server trusts"
            )
        elif exc.reason is Unavailable.AUTH and self._token is not None:
            tok = self._token.current
            until = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(tok.expires_at)) if tok else ""
            age = f", announced valid until {until}" if tok else ""
            advice = (
                f"the password came from {self._token.describe}{age}: check that it issues a token "
                f"for user {self.url.username!r} that this server accepts (expired? another audience?)"
            )
        elif exc.reason is Unavailable.TLS:
            text = exc.detail.lower()
            if "mismatch" in text or "doesn't match" in text:
                advice = (
                    f"the server's certificate does not name host {self.url.host!r}: connect with a host "
                    "name it names (sslmode=verify-full checks it), or use sslmode=verify-ca"
                )
            elif "certificate verify failed" in text:
                advice = (
                    "the server's certificate is not signed by a CA this server trusts: point sslrootcert= "
                    "(or PGSSLROOTCERT) at the CA certificate that signed it"
                )
            elif "rejected ssl" in text or "does not support ssl" in text:
                advice = "the server (or pooler) offers no TLS: enable ssl there, or lower sslmode"
        return DatabaseUnavailable(exc.reason, detail, advice=advice, message=exc.message)

    async def transaction_pooled(self) -> bool:
        """Probe (once) whether consecutive transactions of one connection may run on different
        server sessions: the mark of a pooler in transaction mode.

        Callers that ask at once (a replica's first pool connections, its writer, LISTEN) share
        one probe: probes run side by side are each other's traffic, and one of them, misled,
        once left a connection keeping named prepared statements behind a transaction pooler."""
        if self._pooled is None:
            probing = self._probing
            if probing is None or probing.get_loop() is not asyncio.get_running_loop():
                probing = self._probing = asyncio.ensure_future(self.probe())
                probing.add_done_callback(_consume)
            try:
                pooled = await asyncio.shield(probing)
            finally:
                if probing.done() and self._probing is probing:
                    self._probing = None  # a failed probe is tried again by the next caller
            if self._pooled is None:  # (`pooler_seen` may have decided meanwhile)
                self._pooled = pooled
        return self._pooled

    def pooler_seen(self) -> bool:
        """A statement failed the way only a transaction pooler makes it fail (a prepared
        statement missing on, or already on, the session it ran on): when the URL left the
        decision to the probe, the probe was misled (it saw no pooler, or timed out under
        load), and from now on connections are opened without prepared statements (`pg_engine`
        replaces the pool's prepared ones at their next checkout). Returns whether the
        decision changed."""
        if self.mode is not PreparedStatements.AUTO or self._pooled is True:
            return False
        self._pooled = True
        log.warning(
            "%s: a prepared statement was missing on its server session, the mark of a connection "
            "pooler in transaction mode that the start-up probe did not see: prepared statements "
            "are off from now on (add ?prepared_statements=false to the URL to say so up front)",
            self.where,
        )
        return True

    async def probe(self) -> bool:
        """Whether a transaction pooler is in front, asked of the server now (no caching:
        `transaction_pooled` probes once)."""
        a = await self.connect(prepared=False)
        try:
            b = await self.connect(prepared=False)
        except BaseException:
            await a.close()
            raise
        try:
            # Only a pooler moves a connection between sessions, but other clients' traffic can
            # hide that it does (it takes the session `b` would have got, then gives `a` its own
            # back): one sighting is proof, a pooler goes unseen in every round only by chance.
            # The sessions each connection was seen on are kept across rounds: a connection of
            # one session never shows two, nor one the other connection showed (a pooler once
            # went unseen through 4 rounds compared one by one).
            seen_a: set[int] = set()
            seen_b: set[int] = set()
            for _ in range(_PROBE_ROUNDS):
                try:
                    if await self._moved(a, b, seen_a, seen_b):
                        return True
                except TimeoutError:
                    log.warning("%s: the pooler probe timed out; assuming no transaction pooler", self.where)
                    return False
            return False
        finally:
            for conn in (a, b):
                try:
                    await asyncio.wait_for(conn.close(), 2)
                except Exception:
                    conn.terminate()

    @staticmethod
    async def _moved(a: Any, b: Any, seen_a: set[int], seen_b: set[int]) -> bool:
        """One round: whether `b`, holding a transaction open, got a session `a` was on, or either
        connection has been on two sessions (this round and the earlier ones, `seen_*`)."""
        async with a.transaction():
            seen_a.add(await a.fetchval("SELECT pg_backend_pid()"))
        async with asyncio.timeout(_PROBE_TIMEOUT), b.transaction():
            got = await b.fetchval("SELECT pg_backend_pid()")
            seen_b.add(got)
            if got in seen_a:
                return True  # b got a session a was on: sessions are handed around
            try:
                async with asyncio.timeout(_PROBE_TIMEOUT / 2), a.transaction():
                    seen_a.add(await a.fetchval("SELECT pg_backend_pid()"))
            except TimeoutError:
                return True  # a waits for a free session: it had none of its own
        return len(seen_a) > 1 or len(seen_b) > 1
