"""Maintenance crawls: failure counts, duplicates, canonical links, deltas per run, settings
fingerprints.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("failures", sa.Integer))
        batch.add_column(sa.Column("duplicate_of", sa.Text))
        batch.add_column(sa.Column("canonical_url", sa.Text))
        batch.add_column(sa.Column("delta", sa.String(20)))
        batch.add_column(sa.Column("delta_run", sa.Integer))
        batch.add_column(sa.Column("linked_run", sa.Integer))
    op.create_index("ix_documents_source_checksum", "documents", ["source", "checksum"])
    op.create_index("ix_documents_delta", "documents", ["source", "delta_run", "delta"])
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("mode", sa.String(20)))
    op.create_table(
        "run_deltas",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
    )
    op.create_index("ix_run_deltas_run", "run_deltas", ["run_id", "kind"])
    op.create_table(
        "source_states",
        sa.Column("source", sa.String(200), primary_key=True),
        sa.Column("fingerprint", sa.Text, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("source_states")
    op.drop_index("ix_run_deltas_run", table_name="run_deltas")
    op.drop_table("run_deltas")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("mode")
    op.drop_index("ix_documents_delta", table_name="documents")
    op.drop_index("ix_documents_source_checksum", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        for column in ("linked_run", "delta_run", "delta", "canonical_url", "duplicate_of", "failures"):
            batch.drop_column(column)
