"""Relevance administration (issue 59): best bets, boosts and demotions, synonyms and stopwords,
set on the web application's relevance page (searchcrawl/store/relevance_rules.py).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "relevance_bets",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("queries", sa.Text, nullable=False),
        sa.Column("urls", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "relevance_boosts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("value", sa.String(2000), nullable=False),
        sa.Column("factor", sa.Float, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "relevance_synonyms",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("terms", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "relevance_stopwords",
        sa.Column("word", sa.String(100), primary_key=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    for table in ("relevance_stopwords", "relevance_synonyms", "relevance_boosts", "relevance_bets"):
        op.drop_table(table)
