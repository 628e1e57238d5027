"""``entered_run``: the run whose delta report says a URL entered the index. A URL that enters the
index and leaves it again in one run (pushed during the crawl, then replaced by a duplicate) is
no deletion in that run's report, however often it comes and goes in the run; one that left and
came back in the run was in the index at both ends (changed).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("entered_run", sa.Integer))


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("entered_run")
