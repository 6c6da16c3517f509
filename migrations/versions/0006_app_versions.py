"""App versions: which version of the app made each response, and what each version is made of.

- responses.app_version: the version (`DURABLE_RESPONSES_APP_VERSION`, else a fingerprint of the
  app) that created the response; a replica resumes, takes over and continues only responses of
  versions it runs (rows from before this revision have none: any replica runs them).
- app_versions: one row per (app, version) a replica served, with its manifest (JSON), so a
  refused continuation can name what changed.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("responses") as batch:
        batch.add_column(sa.Column("app_version", sa.String(64), nullable=True))
    op.create_table(
        "app_versions",
        sa.Column("app", sa.String(256), primary_key=True),
        sa.Column("version", sa.String(64), primary_key=True),
        sa.Column("manifest", sa.Text, nullable=False),
        sa.Column("first_seen", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("app_versions")
    with op.batch_alter_table("responses") as batch:
        batch.drop_column("app_version")
