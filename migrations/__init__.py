"""Alembic migrations of the durable-responses schema (run with `durable-responses migrate`)."""
