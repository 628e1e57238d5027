"""Schedules: the scheduler's mark per source, and the scrapyd job of a run.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedule_marks",
        sa.Column("source", sa.String(200), primary_key=True),
        sa.Column("mark", sa.DateTime(timezone=True)),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("job", sa.String(200)),
        sa.Column("outcome", sa.Text()),
    )
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("job", sa.String(200)))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("job")
    op.drop_table("schedule_marks")
