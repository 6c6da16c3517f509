"""Operations: trace context, app and creating replica per response; takeovers; checkpoint log.

- responses.trace_context: the W3C trace context of the request that created the response and
  the span id of each life's run (JSON), so a recovered run continues the same trace.
- responses.app / created_by: which app and which replica created the response (the
  operator view's list; the lease owner is cleared when a response ends).
- responses(created_at) index: retention and the operator view walk responses by age.
- takeovers: one row per recovery of a response (when, by which replica, from which
  checkpoint, the span id of the life it started).
- checkpoint_log: one row per checkpoint ever committed (its id, the last event it paired, its
  size), written by a trigger in the checkpoint's own transaction, so it survives the pruning
  of old checkpoints; the operator view shows each superstep with the checkpoint it paired.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-10
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

_COLUMNS = "response_id, seq, checkpoint_id, workflow_name, event_seq, bytes, created_at"
_VALUES = (
    "NEW.response_id, NEW.seq, NEW.checkpoint_id, NEW.workflow_name, NEW.event_seq, "
    "length(NEW.data), NEW.created_at"
)


def upgrade() -> None:
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("app", sa.String(256), nullable=True))
        batch.add_column(sa.Column("created_by", sa.String(200), nullable=True))
        batch.add_column(sa.Column("trace_context", sa.Text, nullable=True))
    op.create_index("ix_responses_created_at", "responses", ["created_at"])
    op.create_table(
        "takeovers",
        sa.Column("response_id", sa.String(128), primary_key=True),
        sa.Column("attempt", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("at", sa.Float, nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("previous_owner", sa.String(200), nullable=True),
        sa.Column("checkpoint_id", sa.String(128), nullable=True),
        sa.Column("span_id", sa.String(16), nullable=True),
    )
    op.create_table(
        "checkpoint_log",
        sa.Column("response_id", sa.String(128), primary_key=True),
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("checkpoint_id", sa.String(128), nullable=False),
        sa.Column("workflow_name", sa.String(256), nullable=False),
        sa.Column("event_seq", sa.Integer, nullable=False),
        sa.Column("bytes", sa.BigInteger, nullable=False),
        sa.Column("created_at", sa.Float, nullable=False),
    )
    if op.get_context().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION checkpoint_log_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN\n  INSERT INTO checkpoint_log ({_COLUMNS}) VALUES ({_VALUES});\n  RETURN NULL;\nEND\n$$"
        )
        op.execute(
            "CREATE TRIGGER checkpoint_log_on_insert AFTER INSERT ON checkpoints "
            "FOR EACH ROW EXECUTE FUNCTION checkpoint_log_on_insert()"
        )
    else:
        op.execute(
            "CREATE TRIGGER checkpoint_log_on_insert AFTER INSERT ON checkpoints\n"
            f"BEGIN\n  INSERT INTO checkpoint_log ({_COLUMNS}) VALUES ({_VALUES});\nEND"
        )


def downgrade() -> None:
    op.execute(
        "DROP TRIGGER IF EXISTS checkpoint_log_on_insert"
        + (" ON checkpoints" if op.get_context().dialect.name == "postgresql" else "")
    )
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS checkpoint_log_on_insert()")
    op.drop_table("checkpoint_log")
    op.drop_table("takeovers")
    op.drop_index("ix_responses_created_at", table_name="responses")
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("trace_context")
        batch.drop_column("created_by")
        batch.drop_column("app")
