"""The statements a page's outcome runs find their rows by a key, whatever the source's size.

A crawl runs them once a page: one that reads the source's rows by state or whole is linear in
the source a page, quadratic in a crawl. SQLite is never analysed (no ``sqlite_stat1``), so its
planner picks an index by the shape of the statement alone; it read the anchor targets' marks
by ``ix_documents_source_state`` (store/anchor_table.py ``mark_due``; 5 ms a page at 9,000
documents). Every statement sent while pages are recorded (entering the index with their
anchors, changing, unchanged, gone), while their duplicates and display URLs are looked up and
is explained here, and each step that reads a table must name a key."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import event

from searchcrawl.access.tokens import Access
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.ledger import Ledger

PUBLIC = json.dumps(Access.public("test").to_data())
# the key a step reads by: a unique key, a URL's, a content's, a display URL's, a page's anchors
KEYS = ("url_hash=?", "checksum=?", "display_url=?", "page_hash=?", "target_hash=?", "id=?", "INTEGER PRIMARY KEY")


def page(number: int) -> str:
    return f"http://a.test/{number}.html"


def cached(checksum: str, links: range) -> Outcome:
    anchors = tuple((page(target), f"about {target}") for target in links)
    return Outcome(Event.CACHED, 200, columns={"checksum": checksum, "access": PUBLIC, "display_url": None}, anchors=anchors)


@pytest.fixture
def sent(tmp_path) -> Iterator[tuple[Ledger, list[tuple[str, tuple]]]]:
    ledger = Ledger(DocumentTable(Database(f"sqlite:///{tmp_path / 'pages.sqlite3'}")), "s")
    for number in range(40):  # a source with documents in the index, and some waiting
        ledger.record(page(number), cached(f"c{number}", range(number + 1, number + 4)))
        if number % 4:
            ledger.mark_indexed([(page(number), f"c{number}")])
    statements: list[tuple[str, tuple]] = []
    listener = lambda _c, _cur, statement, parameters, *_rest: statements.append((statement, parameters))  # noqa: E731
    event.listen(ledger.table.database.engine, "before_cursor_execute", listener)
    yield ledger, statements
    event.remove(ledger.table.database.engine, "before_cursor_execute", listener)


def test_a_pages_statements_read_every_table_by_a_key(sent) -> None:
    ledger, statements = sent
    ledger.record(page(100), cached("new", range(0, 30)))  # a new page linking to many in the index
    ledger.record(page(5), cached("changed", range(20, 35)))  # a page changed, its links too
    ledger.record(page(6), Outcome(Event.UNCHANGED, 304))
    ledger.record(page(7), Outcome(Event.GONE, 404))  # gone: its anchors go, its targets are due
    ledger.table.find_duplicate("s", "c9", page(9))
    ledger.table.display_url_owner("s", page(9))
    reads = [(text, parameters) for text, parameters in statements if "SELECT" in text]
    assert any("anchor_marks" in text for text, _ in reads), statements  # the marks were made by a read
    engine = ledger.table.database.engine
    unkeyed = []
    with engine.connect() as connection:
        for text, parameters in reads:
            plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + text, parameters)]
            steps = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
            unkeyed += [(step, text) for step in steps if not any(key in step for key in KEYS)]
    assert len(reads) >= 8, reads  # each outcome's read of its row, its anchors, its targets' marks, ...
    assert not unkeyed, "\n\n".join(f"{step}\n{text}" for step, text in unkeyed)
