"""``ix_documents_source_id``: a source's rows in id order, read a batch at a time by a
maintenance crawl's plan (issue 58). Without it, each batch (``id > last ORDER BY id LIMIT n``)
found the source's rows by another index and sorted them all: a million rows read 200 times.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_documents_source_id", "documents", ["source", "id"])


def downgrade() -> None:
    op.drop_index("ix_documents_source_id", table_name="documents")
