"""Rows keyed by the SHA-256 of their URL: a URL of any length gets a row.

The unique index on (source, url) put whole URLs into btree entries, which PostgreSQL limits to
about 2,700 bytes: a 12,000-character link raised "index row requires 12056 bytes" and the URL
got no row. Now (source, url_hash) is the key; ``url`` keeps the whole URL, unindexed.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-22
"""

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _sha256_hex(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()  # as searchcrawl.store.documents.url_hash


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("url_hash", sa.String(64)))
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("UPDATE documents SET url_hash = encode(sha256(convert_to(url, 'UTF8')), 'hex')")
    else:  # SQLite has no SHA-256 of its own: the same function, from Python, for this connection
        sqlite3_connection = bind.connection.driver_connection
        assert sqlite3_connection is not None  # None only once the connection is closed or invalidated
        sqlite3_connection.create_function("searchcrawl_sha256", 1, _sha256_hex, deterministic=True)
        op.execute("UPDATE documents SET url_hash = searchcrawl_sha256(url)")
    with op.batch_alter_table("documents") as batch:
        batch.alter_column("url_hash", existing_type=sa.String(64), nullable=False)
        batch.drop_constraint("uq_documents_source_url", type_="unique")
        batch.create_unique_constraint("uq_documents_source_url_hash", ["source", "url_hash"])


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_constraint("uq_documents_source_url_hash", type_="unique")
        batch.create_unique_constraint("uq_documents_source_url", ["source", "url"])
        batch.drop_column("url_hash")
