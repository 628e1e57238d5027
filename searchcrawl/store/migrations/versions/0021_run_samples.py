"""``run_samples``: a run's progress over time, one row per RunMonitor tick, for the run page's
chart (issue 60); at most store/samples.py's MAX_SAMPLES per run.

Revision ID: 0021
Revises: 0018
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_samples",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("pages", sa.Integer),
        sa.Column("done", sa.Integer),
        sa.Column("queued", sa.Integer),
        sa.Column("leased", sa.Integer),
        sa.Column("pending", sa.Integer),
        sa.Column("indexed", sa.Integer),
    )
    op.create_index("run_samples_run", "run_samples", ["run_id", "id"])


def downgrade() -> None:
    op.drop_index("run_samples_run", table_name="run_samples")
    op.drop_table("run_samples")
