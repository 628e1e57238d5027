"""``runs.plan_owner``: the node making a run's maintenance plan (every known URL queued again),
in batches, while the crawl goes on (issue 58: a million known URLs take seconds to plan, and
the crawl no longer waits for them); "" while nobody makes it (its maker failed), NULL once it
is made. A run resumed with its plan pending makes it again (it is idempotent), a node takes it
over from a node that is gone, and no node ends a run while its plan is pending.

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
        batch.add_column(sa.Column("plan_owner", sa.String(200)))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("plan_owner")
