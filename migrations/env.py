"""Alembic environment: runs migrations on the async engine, under a database-wide lock.

Invariant: two `migrate` runs against one database never interleave: each reads the current
revision and applies every migration in one transaction that holds the database's write lock
(PostgreSQL: a transaction-scoped advisory lock; SQLite: `BEGIN IMMEDIATE`), so the second one
finds the schema already at head and applies nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import context
from sqlalchemy.engine import Connection

from durable_responses.store._tables import metadata
from durable_responses.store.db._engine import sync_engine_for_migrations

# A fixed 64-bit key for pg_advisory_xact_lock ("durable-responses migrate").
MIGRATION_LOCK_KEY = 0x6475726162_6C65


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        transaction_per_migration=False,
        # Alembic assumes SQLite cannot roll back DDL and would commit after each migration,
        # letting a concurrent run read a revision that is stale by the time it applies the
        # next one (seen: "duplicate column name"). Our connections issue BEGIN IMMEDIATE
        # themselves (pysqlite's implicit transaction handling is off), so SQLite's DDL is
        # transactional and one transaction can hold the whole upgrade.
        transactional_ddl=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK_KEY})")
        context.run_migrations()


async def _main(url: str) -> None:
    engine = sync_engine_for_migrations(url)
    try:
        async with engine.connect() as conn:
            await conn.run_sync(_run)
            await conn.commit()
    finally:
        await engine.dispose()


def run() -> None:
    cfg: Any = context.config
    url = cfg.attributes.get("database_url") or cfg.get_main_option("sqlalchemy.url")
    if context.is_offline_mode():
        raise SystemExit("offline migrations are not supported; run `durable-responses migrate`")
    asyncio.run(_main(url))


run()
