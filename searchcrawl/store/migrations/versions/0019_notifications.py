"""``notifications``: the notifications sent (issue 60), one row per event and channel of a run or
a daily summary, so that each is sent once (searchcrawl/store/notifications.py).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "notifications",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("key", sa.String(100), nullable=False),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("channel", sa.String(60), nullable=False),
        sa.Column("source", sa.String(200)),
        sa.Column("run_id", sa.Integer),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True)),
        sa.Column("error", sa.Text),
        sa.UniqueConstraint("key", "event", "channel", name="uq_notifications_key_event_channel"),
    )
    op.create_index("ix_notifications_created_at", "notifications", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_notifications_created_at", table_name="notifications")
    op.drop_table("notifications")
