"""Temporary redirects, remembered: ``target`` on a URL that redirects (where to), ``via`` on a
target outside the boundary (which URL of the source leads to it). A target outside the boundary
stays indexed while the redirect stands and leaves when it goes, instead of being removed as
"outside the source's rules" by one maintenance crawl and indexed again by the next.

And an index on ``duplicate_of``: a document leaving the index looks up its duplicates, which
scanned the whole source. A hash index on PostgreSQL (a btree entry cannot hold a long URL).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-22
"""

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("target", sa.Text))
        batch.add_column(sa.Column("via", sa.Text))
    op.create_index("ix_documents_duplicate_of", "documents", ["duplicate_of"], postgresql_using="hash")


def downgrade() -> None:
    op.drop_index("ix_documents_duplicate_of", "documents")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("via")
        batch.drop_column("target")
