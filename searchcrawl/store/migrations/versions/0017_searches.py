"""Query analytics (issue 59): ``searches`` (every search of the web application: its query,
filters, hit count and time taken) and ``search_clicks`` (which hit was opened, at what rank),
with the indexes of the analytics pages' period reports.

Revision ID: 0017
Revises: 0015
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "searches",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("query", sa.Text, nullable=False),
        sa.Column("normalized", sa.String(200), nullable=False),
        sa.Column("filters", sa.Text),
        sa.Column("sort", sa.String(20)),
        sa.Column("page", sa.Integer, nullable=False),
        sa.Column("hits", sa.Integer, nullable=False),
        sa.Column("took_ms", sa.Integer, nullable=False),
        sa.Column("client", sa.String(10), nullable=False),
        sa.Column("user_name", sa.String(256)),
        sa.Column("clicks", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_searches_at", "searches", ["at"])
    op.create_table(
        "search_clicks",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("search_id", sa.String(32), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_search_clicks_search", "search_clicks", ["search_id"])
    op.create_index("ix_search_clicks_at", "search_clicks", ["at"])


def downgrade() -> None:
    op.drop_table("search_clicks")
    op.drop_table("searches")
