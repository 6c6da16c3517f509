"""The store's settings: where the data lives and how long a lease lasts.

Invariant: one place decides where data lives. The embedded SQLite file is
`<data dir>/durable-responses.db`; the data dir is `$HOME/.durable-responses` on a Foundry
hosted agent (only `$HOME` survives compute recreation there), else
`DURABLE_RESPONSES_DATA_DIR`, else `./data`. `DATABASE_URL` overrides all of them. The lease
length is the store's alone: the runtime renews leases at a fraction of `store.lease_seconds`.
How the server connects to PostgreSQL beyond its URL (pool, timeouts, LISTEN's URL, a token
provider) is `connection_options()`, built here and nowhere else.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from pydantic import field_validator

from ..envsettings import EnvSection, env_field

if TYPE_CHECKING:
    from .db._engine import ConnectionOptions

DB_FILE = "durable-responses.db"
# How long a process owns an in-flight response without renewing it (the setting's default,
# and the store's when it is opened without settings).
LEASE_SECONDS = 15.0


def data_dir(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    # On a Foundry hosted agent only $HOME survives compute recreation: it wins even over an
    # image's DURABLE_RESPONSES_DATA_DIR (seed 002 lost paused workflows to a local path).
    if env.get("FOUNDRY_HOSTING_ENVIRONMENT"):
        return os.path.join(os.path.expanduser("~"), ".durable-responses")
    explicit = env.get("DURABLE_RESPONSES_DATA_DIR")
    if explicit:
        return explicit
    return os.path.join(os.getcwd(), "data")


def default_database_url(environ: Mapping[str, str] | None = None) -> str:
    return "sqlite:///" + os.path.join(os.path.abspath(data_dir(environ)), DB_FILE)


class StoreSettings(EnvSection):
    SECTION: ClassVar[str] = "Store"

    database_url: str = env_field(
        "",
        "DATABASE_URL",
        "SQLAlchemy URL of the database: `sqlite:///path`, `postgresql://user@host/db` (or their "
        "async driver forms). PostgreSQL needs `durable-responses migrate` first; it takes libpq's "
        "options (`sslmode=verify-full&sslrootcert=...`, `sslcert`, `sslkey`) and `PG*` variables, "
        "and `prepared_statements=auto|true|false` (`false` behind a pooler in transaction mode; "
        "`auto` detects one).",
        shown_default="SQLite in the data dir",
    )
    data_dir: str = env_field(
        "",
        "DURABLE_RESPONSES_DATA_DIR",
        "Where the embedded SQLite database lives (ignored when DATABASE_URL is set). On a Foundry "
        "hosted agent (FOUNDRY_HOSTING_ENVIRONMENT set) it is always `$HOME/.durable-responses`.",
        shown_default="./data",
    )
    lease_seconds: float = env_field(
        LEASE_SECONDS,
        "DURABLE_RESPONSES_LEASE_SECONDS",
        "How long a process owns an in-flight response without renewing it; a dead process's "
        "responses wait this long before another replica takes them over, unless its death is known "
        "at once (PostgreSQL: its liveness lock is gone; SQLite: a restart finds itself alone).",
        gt=0,
    )
    commit_window_ms: float = env_field(
        2.0,
        "DURABLE_RESPONSES_COMMIT_WINDOW_MS",
        "How long the outbox waits to group plain live events into one commit.",
        ge=0,
    )

    listen_database_url: str = env_field(
        "",
        "DURABLE_RESPONSES_LISTEN_DATABASE_URL",
        "PostgreSQL: where LISTEN connects for cross-replica wake-ups (a direct or session-mode URL of "
        "the same database when DATABASE_URL goes through a transaction pooler, where LISTEN cannot "
        "work); `off`: relays of responses driven by other replicas poll.",
        shown_default="DATABASE_URL",
    )
    pg_pool_size: int = env_field(
        10,
        "DURABLE_RESPONSES_PG_POOL_SIZE",
        "PostgreSQL: pooled connections per replica (reads, leases, the general write path); a replica "
        "opens at most POOL_SIZE + POOL_OVERFLOW + 3 (the outbox writer, LISTEN, the liveness lock).",
        ge=1,
    )
    pg_pool_overflow: int = env_field(
        10,
        "DURABLE_RESPONSES_PG_POOL_OVERFLOW",
        "PostgreSQL: connections a replica may open beyond the pool under load (closed when returned).",
        ge=0,
    )
    pg_connect_timeout: float = env_field(
        10.0,
        "DURABLE_RESPONSES_PG_CONNECT_TIMEOUT",
        "PostgreSQL: seconds a new connection may take (TCP, TLS, authentication).",
        gt=0,
    )
    pg_token_command: str = env_field(
        "",
        "DURABLE_RESPONSES_PG_TOKEN_COMMAND",
        "PostgreSQL: a shell command whose output is the password of every new connection (an Entra ID "
        "or IAM token; JSON with `accessToken` and `expires_on` works too), run again shortly before "
        "the token expires.",
    )
    pg_token_provider: str = env_field(
        "",
        "DURABLE_RESPONSES_PG_TOKEN_PROVIDER",
        "PostgreSQL: `MODULE:CALLABLE` returning that password (a str, a `(token, expires_at)` pair or "
        "an object with `token` and `expires_on`, such as azure-identity's `AccessToken`); wins over "
        "the command.",
    )
    pg_token_ttl_seconds: float = env_field(
        300.0,
        "DURABLE_RESPONSES_PG_TOKEN_TTL_SECONDS",
        "How long a token is reused when its source tells no expiry (a JWT's `exp` is read).",
        gt=0,
    )

    retention: str = env_field(
        "30d",
        "DURABLE_RESPONSES_RETENTION",
        "Finished responses older than this (`30d`, `12h`, `90m`) are deleted with their items, events "
        "and checkpoints by a background sweep; `off` keeps everything. A response awaiting input, and "
        "every turn of a conversation still in use, is kept.",
    )
    retention_interval: float = env_field(
        300.0,
        "DURABLE_RESPONSES_RETENTION_INTERVAL",
        "Seconds between two retention sweeps (one replica sweeps at a time on PostgreSQL).",
        gt=0,
    )
    retention_batch: int = env_field(
        50,
        "DURABLE_RESPONSES_RETENTION_BATCH",
        "Responses deleted per transaction by a sweep (small: no long lock).",
        gt=0,
    )

    @field_validator("retention")
    @classmethod
    def _retention(cls, value: str) -> str:
        from .ops.retention import parse_duration

        if value.strip().lower() != "off":
            parse_duration(value)
        return value.strip().lower()

    @property
    def retention_seconds(self) -> float | None:
        """How old a finished response may get; None: kept forever (`off`)."""
        from .ops.retention import parse_duration

        return None if self.retention == "off" else parse_duration(self.retention)

    def connection_options(self) -> ConnectionOptions:
        """How the store connects (pool, timeouts, LISTEN, tokens); one token provider, shared."""
        from .db._engine import ConnectionOptions
        from .db._pg_auth import TokenProvider

        return ConnectionOptions(
            pool_size=self.pg_pool_size,
            pool_overflow=self.pg_pool_overflow,
            connect_timeout=self.pg_connect_timeout,
            listen_url=self.listen_database_url,
            token=TokenProvider.from_settings(
                command=self.pg_token_command, provider=self.pg_token_provider, ttl=self.pg_token_ttl_seconds
            ),
        )

    def resolved(self, environ: Mapping[str, str] | None = None) -> StoreSettings:
        """These settings with the database URL decided (the data dir's SQLite file if unset)."""
        if self.database_url:
            return self
        env = dict(os.environ if environ is None else environ)
        if self.data_dir:
            env["DURABLE_RESPONSES_DATA_DIR"] = self.data_dir
        return self.model_copy(update={"database_url": default_database_url(env)})

    @property
    def commit_window(self) -> float:
        return self.commit_window_ms / 1000
