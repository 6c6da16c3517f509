"""Events stored as runs: a row of `events` holds one event or a run of a write's consecutive
events, keyed by the last one's sequence number, their text compressed (`server/store/write/_events`).

- events.size: how many events the row holds; every existing row holds one (the default).
- events.packed: the row's text compressed (zlib), or NULL where `data` holds it.

Existing rows stay as they are: a row of one event is the form every reader still reads.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("events") as batch:
        batch.add_column(sa.Column("size", sa.Integer, nullable=False, server_default="1"))
        batch.add_column(sa.Column("packed", sa.LargeBinary, nullable=True))


def downgrade() -> None:
    # A run's events would be lost to a reader of one event per row: the downgrade refuses
    # while any row holds more than one, or holds its text compressed.
    runs = op.get_bind().execute(sa.text("SELECT count(*) FROM events WHERE size <> 1 OR packed IS NOT NULL"))
    if runs.scalar():
        raise RuntimeError("events are stored as runs: a schema before 0008 cannot read them")
    with op.batch_alter_table("events") as batch:
        batch.drop_column("packed")
        batch.drop_column("size")
