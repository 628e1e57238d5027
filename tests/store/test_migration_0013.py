"""Migration 0013 (issue 55): the document table keeps each document's access (JSON), and its
checksum holds a restricted document's readers too (97 characters: PostgreSQL enforces the
column's length). Every row is kept. On SQLite here; on the session's real PostgreSQL in
tests/e2e/test_store_postgresql.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, inspect, text

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.crawl.pipelines.checksum import versioned
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema, url_hash
from searchcrawl.store.ledger import Ledger

CONTENT = "a" * 64


def check_keeps_rows_and_holds_access(engine: Engine, url: str, source: str) -> None:
    upgrade_schema(engine, "0012")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO documents (source, url, url_hash, state, checksum, first_seen)"
                " VALUES (:source, :url, :hash, 'indexed', :checksum, :first_seen)"
            ),
            {
                "source": source,
                "url": "http://h/a",
                "hash": url_hash("http://h/a"),
                "checksum": CONTENT,
                "first_seen": datetime.now(UTC),
            },
        )
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION
    assert "access" in {column["name"] for column in inspect(engine).get_columns("documents")}
    database = Database(url)
    table = DocumentTable(database)
    row = table.get(source, "http://h/a")
    assert row is not None and (row["state"], row["checksum"], row["access"]) == ("indexed", CONTENT, None)
    access = Access.of([Grant("group:hr", "source s: [access] allow")])
    checksum = versioned(CONTENT, access)
    assert len(checksum) == 97
    data = json.dumps(access.to_data())
    Ledger(table, source).record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": checksum, "access": data}))
    row = table.get(source, "http://h/a")
    assert row is not None and row["checksum"] == checksum and Access.from_data(json.loads(row["access"])) == access
    database.close()


@pytest.fixture
def sqlite_engine(tmp_path) -> Iterator[Engine]:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    yield engine
    engine.dispose()


def test_migration_0013_keeps_rows_and_holds_access_on_sqlite(sqlite_engine: Engine, tmp_path) -> None:
    check_keeps_rows_and_holds_access(sqlite_engine, f"sqlite:///{tmp_path / 'old.sqlite3'}", "m")
