"""``access``: who may read each document (issue 55), as ``Access.to_data`` JSON with where each
token came from (what `scrapy explain-access` shows), written with the outcome that caches it.
``checksum`` grows to 128 characters: a restricted document's is its content's SHA-256 and the
digest of its access (crawl/pipelines/checksum.py ``versioned``), 97 characters.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("access", sa.Text))
        batch.alter_column("checksum", type_=sa.String(128), existing_type=sa.String(64))


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.alter_column("checksum", type_=sa.String(64), existing_type=sa.String(128))
        batch.drop_column("access")
