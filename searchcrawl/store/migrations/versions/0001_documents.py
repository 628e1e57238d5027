"""The document table.

Revision ID: 0001
Revises:
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("status", sa.Integer),
        sa.Column("reason", sa.Text),
        sa.Column("content_type", sa.String(200)),
        sa.Column("content_length", sa.BigInteger),
        sa.Column("checksum", sa.String(64)),
        sa.Column("last_modified", sa.String(64)),
        sa.Column("etag", sa.String(300)),
        sa.Column("depth", sa.Integer),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_fetched", sa.DateTime(timezone=True)),
        sa.Column("last_changed", sa.DateTime(timezone=True)),
        sa.Column("indexed_at", sa.DateTime(timezone=True)),
        sa.UniqueConstraint("source", "url", name="uq_documents_source_url"),
    )
    op.create_index("ix_documents_source_state", "documents", ["source", "state"])


def downgrade() -> None:
    op.drop_index("ix_documents_source_state", table_name="documents")
    op.drop_table("documents")
