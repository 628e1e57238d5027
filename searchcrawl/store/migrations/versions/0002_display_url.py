"""Display URLs: the URL shown to searchers, unique within a source.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("display_url", sa.Text))
    op.create_index("ix_documents_source_display_url", "documents", ["source", "display_url"])


def downgrade() -> None:
    op.drop_index("ix_documents_source_display_url", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("display_url")
