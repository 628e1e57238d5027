"""Long URLs: every URL the crawler meets gets a row and a status, whatever its length, on SQLite
and on PostgreSQL (whose btree index entries hold about 2,700 bytes). Longer than
SEARCHCRAWL_MAX_URL_LENGTH, a URL is excluded with status 942 and never requested."""

from __future__ import annotations

import random
import string
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from searchcrawl import settings as project_settings
from searchcrawl.config.source import ScopeRules
from searchcrawl.rules.boundary import MAX_URL_LENGTH, Boundary
from searchcrawl.rules.boundary import ScopeDecision as Decision
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import create_db_engine, upgrade_schema, url_hash
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.runs import Runs

LONG = 12_000


def url_of_length(prefix: str, length: int) -> str:
    """A URL of ``length`` characters that does not compress (PostgreSQL compresses a long index
    entry: ``x`` * 12,000 would fit where a real URL does not)."""
    return prefix + "".join(random.Random(length).choices(string.ascii_letters + string.digits, k=length - len(prefix)))


# --- the boundary's rule ---------------------------------------------------------------------------


def test_a_url_longer_than_the_maximum_is_excluded_with_942() -> None:
    boundary = Boundary(["http://h/"], ScopeRules(), max_url_length=100)
    assert boundary.check(url_of_length("http://h/", 100)).allowed
    assert boundary.check(url_of_length("http://h/", 101)) == Decision(
        False, "URL is 101 characters long (more than SEARCHCRAWL_MAX_URL_LENGTH 100)", Status.URL_TOO_LONG
    )


def test_the_length_rule_comes_before_every_other_rule() -> None:
    boundary = Boundary(["http://h/"], ScopeRules(max_depth=0), max_url_length=100)
    for url in (
        url_of_length("gopher://h/", 101),
        url_of_length("http://elsewhere/", 101),
        url_of_length("http://h/?q=", 101),
        url_of_length("http://[::1/", 101),
    ):
        assert boundary.check(url, depth=5).status == Status.URL_TOO_LONG, url
        assert boundary.explain(url, depth=5) == [boundary.check(url, depth=5)]  # nothing checked before it


def test_the_default_is_scrapys_old_limit_and_scrapys_own_check_is_off() -> None:
    boundary = Boundary(["http://h/"], ScopeRules())
    assert MAX_URL_LENGTH == project_settings.SEARCHCRAWL_MAX_URL_LENGTH == 2083
    assert boundary.check(url_of_length("http://h/", 2083)).allowed
    assert boundary.check(url_of_length("http://h/", 2084)).status == Status.URL_TOO_LONG
    assert project_settings.URLLENGTH_LIMIT == 0  # UrlLengthMiddleware would drop the link without a row


# --- the document table ----------------------------------------------------------------------------


def fresh_database(backend: str, request: pytest.FixtureRequest, tmp_path) -> str:
    """A new, empty database: a file for SQLite, a database of the session's server for PostgreSQL."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'documents.sqlite3'}"
    server = request.getfixturevalue("postgres_url")
    name = f"hostile_{uuid.uuid4().hex[:10]}"
    admin = create_engine(server, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return f"{server.rsplit('/', 1)[0]}/{name}"


@pytest.fixture(params=["sqlite", "postgresql"])
def table(request, tmp_path) -> Iterator[DocumentTable]:
    table = DocumentTable(Database(fresh_database(request.param, request, tmp_path)))
    yield table
    table.database.close()


def test_a_12000_character_url_gets_its_row(table) -> None:
    url = url_of_length("http://h/", LONG)
    Ledger(table, "s").record_excluded([(url, int(Status.URL_TOO_LONG), 1, "URL is 12000 characters long")])
    row = table.get("s", url)
    assert row is not None and row["url"] == url  # the whole URL is kept, and found by it
    assert (row["state"], row["status"], row["depth"]) == ("excluded", 942, 1)
    Ledger(table, "s").record_excluded([(url, int(Status.URL_TOO_LONG), 2, "again")])  # met again: the same row
    assert table.count_by("s", "status") == {942: 1}


def test_long_urls_with_a_common_start_are_different_rows(table) -> None:
    start = url_of_length("http://h/", 5000)
    urls = [start + "/a", start + "/b"]
    Ledger(table, "s").record_excluded([(url, 942, 1, "long") for url in urls])
    assert table.count_by("s", "state") == {"excluded": 2}
    assert [table.get("s", url)["url"] for url in urls] == urls


def test_a_long_url_through_a_documents_whole_life(table) -> None:
    """Queued, leased, fetched, cached, indexed, removed: every write and look-up by URL finds
    the one row (the length rule keeps such URLs out of a crawl; the table must not care)."""
    url = url_of_length("http://h/", LONG)
    run = Runs(table.database).start("life")
    table = table.for_run(run.id)
    frontier = Frontier(table.database, "life", run.id, "node:1")
    frontier.add([Entry(url, 1)])
    frontier.add([Entry(url, 1)])  # the same URL again: the same row
    assert table.count_by("life", "state") == {"queued": 1}
    assert [entry.url for entry in frontier.lease(5)] == [url]
    Ledger(table, "life").record(url, Outcome(Event.CACHED, 200, depth=1, columns={"checksum": "sum1"}))
    assert table.pending("life") == [(url, "sum1")]
    assert Ledger(table, "life").mark_indexed([(url, "sum1")]) == [url]
    assert table.find_duplicate("life", "sum1", url) is None
    Ledger(table, "life").mark_linked([url])
    Ledger(table, "life").record(url, Outcome(Event.FAILED, 500, "HTTP 500", 1))
    Ledger(table, "life").record(url, Outcome(Event.GONE, 404, "gone"))
    assert table.removals("life") == [url]
    Ledger(table, "life").mark_removed([url])
    row = table.get("life", url)
    assert (row["state"], row["status"], row["frontier"]) == ("removed", 404, "done")
    assert table.count_by("life", "state") == {"removed": 1}


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_an_existing_database_migrates_and_its_rows_are_found(backend, request, tmp_path) -> None:
    url = fresh_database(backend, request, tmp_path)
    engine = create_db_engine(url)
    upgrade_schema(engine, "0008")  # the schema before rows were keyed by hash
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO documents (source, url, state, status, first_seen) VALUES "
                "('old', 'http://h/a', 'indexed', 200, CURRENT_TIMESTAMP), "
                "('old', 'http://h/caf%C3%A9?q=%E2%82%AC', 'excluded', 906, CURRENT_TIMESTAMP)"
            )
        )
    engine.dispose()
    table = DocumentTable(Database(url))
    try:
        for known in ("http://h/a", "http://h/caf%C3%A9?q=%E2%82%AC"):
            row = table.get("old", known)
            assert row is not None and row["url_hash"] == url_hash(known)
        Ledger(table, "old").record_excluded([("http://h/a", 901, 1, "known: the row stays")])
        assert table.count_by("old", "state") == {"indexed": 1, "excluded": 1}
    finally:
        table.database.close()


# --- a crawl ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_crawl_records_long_links_with_942(backend, project, serve, tmp_path, request) -> None:
    if backend == "postgresql":
        project.db_url = request.getfixturevalue("postgres_url")
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    long_links = [url_of_length(f"{site.url}long/", 3000), url_of_length(f"{site.url}longer/", LONG)]
    anchors = "".join(f'<a href="{link}">link</a>' for link in long_links)
    (root / "index.html").write_text(
        f"<html><head><title>Links</title></head><body><p>Two long links.</p>{anchors}"
        '<a href="short.html">short</a></body></html>'
    )
    (root / "short.html").write_text("<html><head><title>Short</title></head><body><p>A short one.</p></body></html>")
    name = f"long-{backend}-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 2\n')

    result = project.scrapy("crawl", name)

    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    table = project.table()
    for link in long_links:
        row = table.get(name, link)
        assert row is not None and row["url"] == link
        assert (row["state"], row["status"]) == ("excluded", 942)
        assert row["reason"] == f"URL is {len(link)} characters long (more than SEARCHCRAWL_MAX_URL_LENGTH 2083)"
    assert table.count_by(name, "status") == {200: 2, 942: 2}
    assert Runs(table.database).latest(name)["state"] == "finished"
    asked = sorted(path for path in site.paths() if not path.startswith("/searchcrawl-not-found-"))  # but its probe
    assert asked == ["/index.html", "/robots.txt", "/short.html"]  # never requested
