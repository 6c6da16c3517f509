"""Conversations API (metadata, items added by hand, deleted items) and webhook deliveries.

- conversations.metadata / deleted_at: what `POST /conversations` and `DELETE` keep.
- conversation_items: items added to a conversation by hand, until a turn takes them as input.
- conversation_hidden_items: items of a conversation's turns deleted from its item list.
- webhook_events / webhook_deliveries: events committed with a background response's end, and
  one delivery (attempts, lease, next attempt) per event and endpoint.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.add_column(sa.Column("metadata", sa.Text, nullable=False, server_default="{}"))
        batch.add_column(sa.Column("deleted_at", sa.Float, nullable=True))
    op.create_table(
        "conversation_items",
        sa.Column("seq", _BigId, primary_key=True, autoincrement=True),
        sa.Column("user_id", sa.String(256), nullable=False),
        sa.Column("conversation_id", sa.String(128), nullable=False),
        sa.Column("item_id", sa.String(128), nullable=False),
        sa.Column("data", sa.Text, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("response_id", sa.String(128), nullable=True),
        sa.Column("claimed_at", sa.Float, nullable=True),
    )
    op.create_index("ix_conversation_items_conv", "conversation_items", ["user_id", "conversation_id"])
    op.create_index("ix_conversation_items_response", "conversation_items", ["response_id"])
    op.create_table(
        "conversation_hidden_items",
        sa.Column("user_id", sa.String(256), primary_key=True),
        sa.Column("conversation_id", sa.String(128), primary_key=True),
        sa.Column("item_id", sa.String(128), primary_key=True),
    )
    op.create_table(
        "webhook_events",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("response_id", sa.String(128), nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_index("ix_webhook_events_response", "webhook_events", ["response_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("event_id", sa.String(64), primary_key=True),
        sa.Column("endpoint", sa.String(2048), primary_key=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
        sa.Column("next_attempt_at", sa.Float, nullable=False),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_expires_at", sa.Float, nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("delivered_at", sa.Float, nullable=True),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries", ["status", "next_attempt_at"])


def downgrade() -> None:
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_webhook_events_response", table_name="webhook_events")
    op.drop_table("webhook_events")
    op.drop_table("conversation_hidden_items")
    op.drop_index("ix_conversation_items_response", table_name="conversation_items")
    op.drop_index("ix_conversation_items_conv", table_name="conversation_items")
    op.drop_table("conversation_items")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("deleted_at")
        batch.drop_column("metadata")
