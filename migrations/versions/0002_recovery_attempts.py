"""Count recovery attempts per response; index replies to pending requests.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("recovery_count", sa.Integer, nullable=False, server_default="0"))
    op.create_index("ix_pending_requests_answered_by", "pending_requests", ["answered_by"])


def downgrade() -> None:
    op.drop_index("ix_pending_requests_answered_by", table_name="pending_requests")
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("recovery_count")
