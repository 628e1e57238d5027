"""``searches.shown``: the hits a search's page showed, in order (JSON ``{"first": rank, "urls":
[...]}``), so that its clicks can be read as judgments (search/click_judgments.py: a hit shown
above a click and not opened was skipped). Searches logged before have none (NULL): their clicks
still count, their skips are unknown.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-27
"""

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("searches") as batch:
        batch.add_column(sa.Column("shown", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("searches") as batch:
        batch.drop_column("shown")
