"""The store's settings: where the data lives and how long a lease lasts.

Invariant: one place decides where data lives. The embedded SQLite file is
`<data dir>/durable-responses.db`; the data dir is `$HOME/.durable-responses` on a Foundry
hosted agent (only `$HOME` survives compute recreation there), else
`DURABLE_RESPONSES_DATA_DIR`, else `./data`. `DATABASE_URL` overrides all of them. The lease
length is the store's alone: the runtime renews leases at a fraction of `store.lease_seconds`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import ClassVar

from ..envsettings import EnvSection, env_field

DB_FILE = "durable-responses.db"


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
        "async driver forms). PostgreSQL needs `durable-responses migrate` first.",
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
        15.0,
        "DURABLE_RESPONSES_LEASE_SECONDS",
        "How long a process owns an in-flight response without renewing it; a dead process's "
        "responses wait this long before another replica takes them over.",
        gt=0,
    )
    commit_window_ms: float = env_field(
        2.0,
        "DURABLE_RESPONSES_COMMIT_WINDOW_MS",
        "How long the outbox waits to group plain live events into one commit.",
        ge=0,
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
