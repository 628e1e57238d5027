"""Scale-out: crawler nodes of a run, fleet-wide site politeness, and which cache holds a document.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-21
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "crawl_nodes",
        sa.Column("run_id", sa.Integer(), primary_key=True),
        sa.Column("owner", sa.String(100), primary_key=True),
        sa.Column("host", sa.String(200)),
        sa.Column("pid", sa.Integer()),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("heartbeat", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "site_slots",
        sa.Column("site", sa.String(300), primary_key=True),
        sa.Column("next_at", sa.DateTime(timezone=True)),
    )
    op.create_table(
        "site_leases",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("site", sa.String(300)),
        sa.Column("owner", sa.String(100)),
        sa.Column("expires", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_site_leases_site", "site_leases", ["site", "expires"])
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("cached_by", sa.String(40)))


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("cached_by")
    op.drop_index("ix_site_leases_site", "site_leases")
    op.drop_table("site_leases")
    op.drop_table("site_slots")
    op.drop_table("crawl_nodes")
