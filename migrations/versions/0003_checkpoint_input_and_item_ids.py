"""Mark checkpoints saved before a run delivered its input; index items by id.

- checkpoints.awaits_input: a continuation's run restores the checkpoint it continues from and
  saves one more before it delivers the request's input (a reply, a new message). Recovery
  resuming from such a checkpoint must deliver that input again, or it is lost.
- output_items / input_items by item_id: an item_reference names an item by its id alone.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("checkpoints") as batch:
        batch.add_column(sa.Column("awaits_input", sa.Boolean, nullable=False, server_default=sa.false()))
    op.create_index("ix_output_items_by_item_id", "output_items", ["item_id"])
    op.create_index("ix_input_items_by_item_id", "input_items", ["item_id"])


def downgrade() -> None:
    op.drop_index("ix_input_items_by_item_id", table_name="input_items")
    op.drop_index("ix_output_items_by_item_id", table_name="output_items")
    with op.batch_alter_table("checkpoints") as batch:
        batch.drop_column("awaits_input")
