"""``run_progress``: each crawl process's heartbeat, last answer from a site and what it waits
on (issue 60's stall detection, searchcrawl/ops/stalls.py).

Revision ID: 0020
Revises: 0018
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_progress",
        sa.Column("run_id", sa.Integer, primary_key=True),
        sa.Column("owner", sa.String(100), primary_key=True),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("reported_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("pages", sa.Integer, nullable=False),
        sa.Column("waits", sa.Text),
    )


def downgrade() -> None:
    op.drop_table("run_progress")
