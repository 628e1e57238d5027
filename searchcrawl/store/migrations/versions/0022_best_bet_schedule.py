"""``relevance_bets.starts_at`` and ``ends_at``: a best bet shown from a start until an end (both
optional, UTC; searchcrawl/rules/ranking_rules.py decides at query time whether a bet is active).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-26
"""

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("relevance_bets") as batch:
        batch.add_column(sa.Column("starts_at", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("ends_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    # without the columns a bet is always shown: the bets not shown now (scheduled, expired) go,
    # so that a downgrade never shows a bet outside its window (add them again after it)
    bets = sa.table(
        "relevance_bets", sa.column("starts_at", sa.DateTime(timezone=True)), sa.column("ends_at", sa.DateTime(timezone=True))
    )
    moment = datetime.now(UTC)
    op.execute(bets.delete().where(sa.or_(bets.c.starts_at > moment, bets.c.ends_at <= moment)))
    with op.batch_alter_table("relevance_bets") as batch:
        batch.drop_column("ends_at")
        batch.drop_column("starts_at")
