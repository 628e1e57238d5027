"""How each document was fetched: static or browser (rendered).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("fetched_with", sa.String(10)))


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("fetched_with")
