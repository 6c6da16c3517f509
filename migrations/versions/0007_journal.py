"""The journal: a response's model and tool calls, so a re-run after a crash replays them.

- journal: one row per record (a model call's updates when its stream ended; a tool call's
  intent before it runs and its result after), appended through the outbox with the events of
  the same run; a superstep's rows are deleted with the checkpoint that follows it, a plain
  agent's with the response's end.
- responses.journal: the journal's counts over the response's lives (calls recorded, replayed,
  re-run), kept with the fence of each write that changed them, for the operator view.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("journal", sa.Text, nullable=True))
    op.create_table(
        "journal",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            primary_key=True,
            autoincrement=True,
        ),
        sa.Column("response_id", sa.String(128), nullable=False),
        sa.Column("checkpoint_id", sa.String(128), nullable=False),
        sa.Column("executor", sa.String(256), nullable=False),
        sa.Column("place", sa.String(256), nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_journal_response", "journal", ["response_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_journal_response", table_name="journal")
    op.drop_table("journal")
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("journal")
