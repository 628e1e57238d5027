"""Migration 0012 (issue 54 point 3): the frontier and the redirects leave the document table for
tables of their own, every URL's state kept; a failure inside it leaves the database at 0011 with
its data. On SQLite here; on the session's real PostgreSQL in tests/e2e/test_store_postgresql.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import Engine, inspect, text

from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import SCHEMA_REVISION, create_db_engine, current_revision, upgrade_schema, url_hash
from searchcrawl.store.frontier import Frontier

FRONTIER_COLUMNS = ("run_id", "frontier", "lease_owner", "lease_expires", "request")
REDIRECT_COLUMNS = ("target", "via")
EXPIRES = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)

# url: (depth, state, frontier columns (run, state, owner, expires, request), redirect (target, via))
URLS: dict[str, tuple[int, str, tuple[Any, ...], tuple[str | None, str | None]]] = {
    "http://h/queued-deep": (2, "queued", (7, "queued", None, None, None), (None, None)),
    "http://h/queued": (1, "indexed", (7, "queued", None, None, '{"render":true}'), (None, None)),
    "http://h/leased": (1, "queued", (7, "leased", "node:1", EXPIRES, None), (None, None)),
    "http://h/done": (0, "indexed", (7, "done", None, None, None), ("http://h/queued", None)),
    "http://h/failed": (1, "failed", (7, "done", None, None, '{"token":"t"}'), (None, None)),
    "http://h/earlier-run": (1, "removed", (3, "done", None, None, None), (None, None)),
    "http://outside/target": (1, "indexed", (3, "done", None, None, None), (None, "http://h/done")),
    "http://h/never-queued": (1, "excluded", (None, None, None, None, None), (None, None)),
    "http://h/both": (1, "fetched", (None, None, None, None, None), ("http://h/x", "http://h/y")),
}


def build_at_0011(engine: Engine, source: str) -> None:
    """A database at revision 0011 holding a URL in every frontier state, and redirects."""
    upgrade_schema(engine, "0011")
    first_seen = datetime(2026, 11, 1, tzinfo=UTC)
    with engine.begin() as connection:
        for url, (depth, state, (run_id, frontier, owner, expires, request), (target, via)) in URLS.items():
            connection.execute(
                text(
                    "INSERT INTO documents (source, url, url_hash, state, depth, first_seen, run_id, frontier,"
                    " lease_owner, lease_expires, request, target, via) VALUES (:source, :url, :hash, :state, :depth,"
                    " :first_seen, :run_id, :frontier, :owner, :expires, :request, :target, :via)"
                ),
                {
                    "source": source,
                    "url": url,
                    "hash": url_hash(url),
                    "state": state,
                    "depth": depth,
                    "first_seen": first_seen,
                    "run_id": run_id,
                    "frontier": frontier,
                    "owner": owner,
                    "expires": expires,
                    "request": request,
                    "target": target,
                    "via": via,
                },
            )


def states(table: DocumentTable, source: str) -> dict[str, dict[str, Any]]:
    """Every URL's frontier and redirect state, as DocumentTable.get reads it."""
    found = {}
    for url in URLS:
        row = table.get(source, url)
        assert row is not None, url
        expires = row["lease_expires"]
        if expires is not None and expires.tzinfo is None:
            expires = expires.replace(tzinfo=UTC)
        found[url] = {**{column: row[column] for column in (*FRONTIER_COLUMNS, *REDIRECT_COLUMNS)}, "lease_expires": expires}
    return found


def expected() -> dict[str, dict[str, Any]]:
    return {
        url: dict(zip((*FRONTIER_COLUMNS, *REDIRECT_COLUMNS), (*entry, *redirect), strict=True))
        for url, (_depth, _state, entry, redirect) in URLS.items()
    }


def columns(engine: Engine, table: str) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns(table)}


@pytest.fixture
def sqlite_engine(tmp_path) -> Iterator[Engine]:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'old.sqlite3'}")
    yield engine
    engine.dispose()


def check_keeps_every_urls_state(engine: Engine, url: str, source: str) -> None:
    build_at_0011(engine, source)
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION  # 0012, and the revisions after it
    assert not columns(engine, "documents") & {*FRONTIER_COLUMNS, *REDIRECT_COLUMNS}
    database = Database(url)
    table = DocumentTable(database)
    assert states(table, source) == expected()
    # the migrated frontier works on: run 7's queued URLs lease shallowest first, its lease is kept
    frontier = Frontier(database, source, 7, "node:2")
    assert frontier.counts() == {"queued": 2, "leased": 1, "done": 2}
    assert [(entry.url, entry.data, entry.known and entry.known.state) for entry in frontier.lease(5)] == [
        ("http://h/queued", {"render": True}, "indexed"),
        ("http://h/queued-deep", {}, "queued"),
    ]
    assert frontier.leased_by("node:1") == [("http://h/leased", 1)]
    assert table.failing(source) == [("http://h/failed", {"token": "t"})]
    database.close()


def check_a_failure_leaves_0011_and_its_data(engine: Engine, url: str, source: str) -> None:
    build_at_0011(engine, source)
    with engine.begin() as connection:  # the migration's last index cannot be made: it fails at its end
        connection.execute(text("CREATE TABLE blocker (x INTEGER)"))
        connection.execute(text("CREATE INDEX ix_redirects_source ON blocker (x)"))
    with pytest.raises(Exception, match="ix_redirects_source"):
        upgrade_schema(engine)
    assert current_revision(engine) == "0011"
    assert not {"frontier", "redirects"} & set(inspect(engine).get_table_names())
    assert {*FRONTIER_COLUMNS, *REDIRECT_COLUMNS} <= columns(engine, "documents")
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT url, run_id, frontier, lease_owner, request, target, via FROM documents WHERE source = :s"),
            {"s": source},
        ).all()
    assert {row.url: (row.run_id, row.frontier, row.lease_owner, row.request, row.target, row.via) for row in rows} == {
        url: (entry[0], entry[1], entry[2], entry[4], *redirect) for url, (_d, _s, entry, redirect) in URLS.items()
    }
    with engine.begin() as connection:  # the cause gone, the migration goes through
        connection.execute(text("DROP TABLE blocker"))
    upgrade_schema(engine)
    assert current_revision(engine) == SCHEMA_REVISION  # 0012, and the revisions after it
    database = Database(url)
    assert states(DocumentTable(database), source) == expected()
    database.close()


def test_the_migration_keeps_every_urls_frontier_and_redirect_state(sqlite_engine: Engine) -> None:
    check_keeps_every_urls_state(sqlite_engine, sqlite_engine.url.render_as_string(), "m")


def test_a_failure_inside_the_migration_leaves_the_database_at_0011_with_its_data(sqlite_engine: Engine) -> None:
    """SQLite's driver ran CREATE, DROP and ALTER outside any transaction: a migration failing
    half-way kept what it had done. run_migrations begins the transaction itself."""
    check_a_failure_leaves_0011_and_its_data(sqlite_engine, sqlite_engine.url.render_as_string(), "m")


def test_the_lease_query_uses_the_frontier_index_in_lease_order(tmp_path) -> None:
    """The lease chooses a run's queued URLs by depth, then discovery order, from the index alone
    (no table scan, no sort), however large the frontier."""
    database = Database(f"sqlite:///{tmp_path / 'plan.sqlite3'}")
    with database.engine.connect() as connection:
        plan = connection.exec_driver_sql(
            "EXPLAIN QUERY PLAN UPDATE frontier SET state = 'leased' WHERE document_id IN (SELECT document_id"
            " FROM frontier WHERE source = 's' AND run_id = 1 AND state = 'queued' ORDER BY depth, document_id LIMIT 10)"
        ).all()
    details = " | ".join(row[-1] for row in plan)
    assert "USING COVERING INDEX ix_frontier_lease" in details and "TEMP B-TREE" not in details, details
    database.close()
