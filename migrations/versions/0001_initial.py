"""Initial schema: responses, items, the event outbox, checkpoints, pending requests, conversations.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "responses",
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("background", sa.Boolean, nullable=False),
        sa.Column("stream", sa.Boolean, nullable=False),
        sa.Column("delivery", sa.String(8), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("completed_at", sa.Float, nullable=True),
        sa.Column("previous_response_id", sa.String(128), nullable=True),
        sa.Column("conversation_id", sa.String(128), nullable=True),
        sa.Column("request", sa.Text, nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("incomplete_details", sa.Text, nullable=True),
        sa.Column("usage", sa.Text, nullable=True),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_expires_at", sa.Float, nullable=True),
    )
    op.create_index("ix_responses_active_lease", "responses", ["status", "lease_expires_at"])
    op.create_index("ix_responses_conversation", "responses", ["user_id", "conversation_id", "created_at"])
    op.create_table(
        "input_items",
        sa.Column("response_id", sa.String(128), primary_key=True),
        sa.Column("position", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("item_id", sa.String(128), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_index("ix_input_items_item_id", "input_items", ["response_id", "item_id"])
    op.create_table(
        "output_items",
        sa.Column("response_id", sa.String(128), primary_key=True),
        sa.Column("output_index", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("item_id", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("included", sa.Boolean, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_table(
        "events",
        sa.Column("response_id", sa.String(128), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_table(
        "checkpoints",
        sa.Column("seq", _BigId, primary_key=True, autoincrement=True),
        sa.Column("checkpoint_id", sa.String(128), nullable=False, unique=True),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("lineage", sa.String(300), nullable=False),
        sa.Column("response_id", sa.String(128), nullable=False),
        sa.Column("workflow_name", sa.String(256), nullable=False),
        sa.Column("event_seq", sa.Integer, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    op.create_index("ix_checkpoints_lineage", "checkpoints", ["lineage", "workflow_name", "seq"])
    op.create_index("ix_checkpoints_response", "checkpoints", ["response_id", "seq"])
    op.create_table(
        "pending_requests",
        sa.Column("response_id", sa.String(128), primary_key=True),
        sa.Column("call_id", sa.String(128), primary_key=True),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("checkpoint_id", sa.String(128), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("answered_by", sa.String(128), nullable=True),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_table(
        "conversations",
        sa.Column("user_id", sa.String(256), primary_key=True),
        sa.Column("id", sa.String(128), primary_key=True),
        sa.Column("created_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "conversations",
        "pending_requests",
        "checkpoints",
        "events",
        "output_items",
        "input_items",
        "responses",
    ):
        op.drop_table(table)
