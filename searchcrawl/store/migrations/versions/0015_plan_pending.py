"""``runs.plan_pending``: a run whose maintenance plan (every known URL queued again) is still
being made, in batches, while the crawl goes on (issue 58: a million known URLs take seconds to
plan, and the crawl no longer waits for them). A run resumed with the plan pending makes it
again (it is idempotent); no node ends a run while its plan is pending.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("plan_pending", sa.Boolean()))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("plan_pending")
