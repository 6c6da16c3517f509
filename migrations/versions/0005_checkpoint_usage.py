"""Keep a response's token usage so far with each of its checkpoints.

- checkpoints.usage: the usage (JSON) of every model call whose outputs the checkpoint's
  transaction made durable, earlier lives of the response included. Recovery resumes from a
  checkpoint with its usage, so a recovered response's usage counts the model calls of its
  first life (up to that checkpoint) as well as those of the rerun.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.add_column(sa.Column("usage", sa.Text, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_column("usage")
