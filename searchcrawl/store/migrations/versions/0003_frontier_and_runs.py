"""The durable frontier (columns of the document table) and crawl runs.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("run_id", sa.Integer))
        batch.add_column(sa.Column("frontier", sa.String(10)))
        batch.add_column(sa.Column("lease_owner", sa.String(100)))
        batch.add_column(sa.Column("lease_expires", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("request", sa.Text))
    op.create_index("ix_documents_frontier", "documents", ["source", "run_id", "frontier", "depth", "id"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("control", sa.String(20)),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        sa.Column("host", sa.String(200)),
        sa.Column("pid", sa.Integer),
        sa.Column("sessions", sa.Integer, nullable=False),
        sa.Column("counters", sa.Text),
        sa.Column("reason", sa.Text),
    )
    op.create_index("ix_runs_source", "runs", ["source", "id"])


def downgrade() -> None:
    op.drop_index("ix_runs_source", table_name="runs")
    op.drop_table("runs")
    op.drop_index("ix_documents_frontier", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        for column in ("request", "lease_expires", "lease_owner", "frontier", "run_id"):
            batch.drop_column(column)
