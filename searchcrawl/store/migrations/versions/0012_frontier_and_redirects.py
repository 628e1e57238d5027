"""The data split by concern (issue 54): the frontier (what to fetch in a run, and its leases) and the
temporary redirects leave the document table for tables of their own, ``frontier`` and
``redirects``, keyed by the document's id. Every URL's frontier state (run, queued / leased /
done, depth, lease, request data) and redirect (target, via) is copied over, then the columns go.

It runs in the one transaction of ``run_migrations`` (on SQLite too: database.py begins it
explicitly), before any crawl's run starts: a failure leaves the database at 0011, its data whole.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-25
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

FRONTIER_COLUMNS = ("run_id", "frontier", "lease_owner", "lease_expires", "request")


def upgrade() -> None:
    op.create_table(
        "frontier",
        sa.Column("document_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("run_id", sa.Integer, nullable=False),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("depth", sa.Integer),
        sa.Column("lease_owner", sa.String(100)),
        sa.Column("lease_expires", sa.DateTime(timezone=True)),
        sa.Column("request", sa.Text),
    )
    op.create_table(
        "redirects",
        sa.Column("document_id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("source", sa.String(200), nullable=False),
        sa.Column("target", sa.Text),
        sa.Column("via", sa.Text),
    )
    # every URL a run queued: its run and its state in that run
    op.execute(
        "INSERT INTO frontier (document_id, source, run_id, state, depth, lease_owner, lease_expires, request) "
        "SELECT id, source, run_id, frontier, depth, lease_owner, lease_expires, request "
        "FROM documents WHERE run_id IS NOT NULL AND frontier IS NOT NULL"
    )
    op.execute(
        "INSERT INTO redirects (document_id, source, target, via) "
        "SELECT id, source, target, via FROM documents WHERE target IS NOT NULL OR via IS NOT NULL"
    )
    op.create_index("ix_frontier_lease", "frontier", ["source", "run_id", "state", "depth", "document_id"])
    op.create_index("ix_redirects_source", "redirects", ["source"])
    op.drop_index("ix_documents_frontier", table_name="documents")
    with op.batch_alter_table("documents") as batch:
        for column in (*FRONTIER_COLUMNS, "target", "via"):
            batch.drop_column(column)


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("run_id", sa.Integer))
        batch.add_column(sa.Column("frontier", sa.String(10)))
        batch.add_column(sa.Column("lease_owner", sa.String(100)))
        batch.add_column(sa.Column("lease_expires", sa.DateTime(timezone=True)))
        batch.add_column(sa.Column("request", sa.Text))
        batch.add_column(sa.Column("target", sa.Text))
        batch.add_column(sa.Column("via", sa.Text))
    op.create_index("ix_documents_frontier", "documents", ["source", "run_id", "frontier", "depth", "id"])
    for column in ("run_id", "frontier", "lease_owner", "lease_expires", "request"):
        source = "state" if column == "frontier" else column
        op.execute(f"UPDATE documents SET {column} = (SELECT {source} FROM frontier WHERE frontier.document_id = documents.id)")
    for column in ("target", "via"):
        op.execute(f"UPDATE documents SET {column} = (SELECT {column} FROM redirects WHERE redirects.document_id = documents.id)")
    op.drop_table("redirects")
    op.drop_table("frontier")
