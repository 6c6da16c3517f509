"""Schema migrations: `durable-responses migrate` and the start-up schema check.

Invariant: `serve` never runs against a schema other than the head revision of
`migrations/versions/`: an embedded SQLite database is migrated at start-up; a PostgreSQL
database that is behind makes `serve` refuse to start with a message naming the command.
"""

from __future__ import annotations

import asyncio
import importlib
import os
from collections.abc import Callable, Coroutine
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection

from ..db._engine import ConnectionOptions, redact, sync_engine_for_migrations
from ..records import SchemaOutOfDate

# The Alembic scripts ship inside the package: `<package>.migrations`, from the repository's
# `migrations/` folder.
MIGRATIONS_PACKAGE = f"{__name__.split('.')[0]}.migrations"


def alembic_config(url: str) -> Config:
    cfg = Config()
    scripts = importlib.import_module(MIGRATIONS_PACKAGE).__file__
    assert scripts is not None
    cfg.set_main_option("script_location", os.path.dirname(os.path.abspath(scripts)))
    cfg.attributes["database_url"] = url
    return cfg


def head_revision() -> str:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    head = script.get_current_head()
    assert head is not None
    return head


def current_revision(url: str, options: ConnectionOptions | None = None) -> str | None:
    def read(conn: Connection) -> str | None:
        return MigrationContext.configure(conn).get_current_revision()

    async def main() -> str | None:
        engine = sync_engine_for_migrations(url, options)
        try:
            async with engine.connect() as conn:
                return await conn.run_sync(read)
        finally:
            await engine.dispose()

    return _run_sync(main)


def upgrade(url: str, revision: str = "head") -> tuple[str | None, str | None]:
    """Upgrade to `revision`; returns (revision before, revision after)."""
    before = current_revision(url)
    command.upgrade(alembic_config(url), revision)
    return before, current_revision(url)


def downgrade(url: str, revision: str) -> None:
    command.downgrade(alembic_config(url), revision)


def check_schema(url: str, options: ConnectionOptions | None = None) -> None:
    current = current_revision(url, options)
    head = head_revision()
    if current != head:
        raise SchemaOutOfDate(
            f"the database schema at {redact_url(url)} is at revision {current or 'none (empty database)'}, "
            f"this server needs {head}: run `durable-responses migrate --database-url URL` first"
        )


def redact_url(url: str) -> str:
    from ..db._engine import normalize_url

    try:
        return redact(normalize_url(url))
    except Exception:
        return "<database>"


def _run_sync(factory: Callable[[], Coroutine[Any, Any, str | None]]) -> str | None:
    """Run a coroutine from sync code (the CLI, or a worker thread in tests)."""
    return asyncio.run(factory())
