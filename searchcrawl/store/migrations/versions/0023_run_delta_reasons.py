"""``run_deltas.status`` and ``reason``: each URL of a kept delta report with its status and the
reason its row gave in that run (a soft error's marker, a rule, a refusal), so `scrapy report`
says why a URL failed, left or was excluded after later runs overwrote the document's row.
Reports kept before have neither (NULL: nothing to show).

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("run_deltas") as batch:
        batch.add_column(sa.Column("status", sa.Integer))
        batch.add_column(sa.Column("reason", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("run_deltas") as batch:
        batch.drop_column("reason")
        batch.drop_column("status")
