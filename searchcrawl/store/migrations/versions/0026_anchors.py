"""``anchors``: the words of each indexed page's links, by linking page and target, and
``anchor_marks``: the documents whose anchor field is due to be set in Solr (issue 100, anchor
text: content/anchors.py, store/anchor_table.py).

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
    op.create_table(
        "anchor_marks",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("target_hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_anchor_marks_source_id", "anchor_marks", ["source", "id"])
    op.create_index("ix_anchor_marks_target", "anchor_marks", ["source", "target_hash"])


def downgrade() -> None:
    op.drop_index("ix_anchor_marks_target", table_name="anchor_marks")
    op.drop_index("ix_anchor_marks_source_id", table_name="anchor_marks")
    op.drop_table("anchor_marks")
    op.drop_index("ix_anchors_target", table_name="anchors")
    op.drop_index("ix_anchors_page", table_name="anchors")
    op.drop_table("anchors")
