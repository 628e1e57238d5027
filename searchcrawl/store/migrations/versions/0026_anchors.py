"""``anchors``: the words of each indexed page's links, by linking page and target (issue 100,
anchor text: content/anchors.py, store/anchors.py); ``documents.anchors_due``: a document whose
anchor field is to be set in Solr.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-29
"""

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "anchors",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("page_hash", sa.String(64), nullable=False),
        sa.Column("target_hash", sa.String(64), nullable=False),
        sa.Column("text", sa.Text, nullable=False),
    )
    op.create_index("ix_anchors_page", "anchors", ["source", "page_hash"])
    op.create_index("ix_anchors_target", "anchors", ["source", "target_hash"])
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("anchors_due", sa.Integer))
    op.create_index("ix_documents_anchors_due", "documents", ["source", "anchors_due"])


def downgrade() -> None:
    op.drop_index("ix_documents_anchors_due", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("anchors_due")
    op.drop_index("ix_anchors_target", table_name="anchors")
    op.drop_index("ix_anchors_page", table_name="anchors")
    op.drop_table("anchors")
