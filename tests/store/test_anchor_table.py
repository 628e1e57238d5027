"""Anchor text in the document table (store/anchor_table.py, through the Ledger): a page's anchors
written with its outcome, replaced whole, gone when it leaves the index; the documents whose field
is due; what counts read as candidates. SQLite here; tests/e2e/test_store_postgresql.py runs the
tests that take ``backend`` on PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import event

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.anchor_table import MARK_CHUNK, mark_due
from searchcrawl.store.database import url_hash
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.runs import Runs

P, Q, R = "http://a.test/p.html", "http://a.test/q.html", "http://a.test/r.html"
PUBLIC = json.dumps(Access.public("test").to_data())
HR = json.dumps(Access.of([Grant("group:hr", "test")]).to_data())


@pytest.fixture(params=["sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def ledger_of(backend: str, tmp_path, request: pytest.FixtureRequest) -> Ledger:
    url = f"sqlite:///{tmp_path / 'a.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    return Ledger(DocumentTable(Database(url)), f"anchors-{uuid.uuid4().hex[:8]}")


def cached(checksum: str, anchors: tuple[tuple[str, str], ...] | None = None, access: str = PUBLIC) -> Outcome:
    return Outcome(Event.CACHED, 200, columns={"checksum": checksum, "access": access}, anchors=anchors)


def indexed(ledger: Ledger, url: str, checksum: str, anchors: tuple[tuple[str, str], ...] | None = None) -> None:
    ledger.record(url, cached(checksum, anchors))
    ledger.mark_indexed([(url, checksum)])


def due(ledger: Ledger) -> set[str]:
    return {str(row.url) for row in ledger.table.anchors_due(ledger.source)}


def set_all(ledger: Ledger) -> None:
    """What the push does once it set every due document's field."""
    ledger.mark_anchors_set([mark for row in ledger.table.anchors_due(ledger.source) for mark in row.marks])


def texts(ledger: Ledger, url: str) -> dict[str, str | None]:
    return {text: access for _page, text, access in ledger.table.anchor_candidates(ledger.source, [url]).get(url, [])}


@contextlib.contextmanager
def marking_statements(ledger: Ledger) -> Iterator[list[str]]:
    """The anchor-marking statements sent to the database meanwhile."""
    marking: list[str] = []

    def count(_connection, _cursor, statement: str, *_rest) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO ANCHOR_MARKS"):
            marking.append(statement)

    event.listen(ledger.table.database.engine, "before_cursor_execute", count)
    try:
        yield marking
    finally:
        event.remove(ledger.table.database.engine, "before_cursor_execute", count)


def test_a_pages_anchors_follow_it_through_change_and_mark_their_targets_due(backend: str, tmp_path, request) -> None:
    ledger = ledger_of(backend, tmp_path, request)
    indexed(ledger, Q, "q")
    indexed(ledger, R, "r")
    ledger.record(P, cached("p1", ((Q, "travel expenses"), (R, "leave"), ("http://a.test/unknown", "nowhere"))))
    assert texts(ledger, Q) == {"travel expenses": PUBLIC} and texts(ledger, R) == {"leave": PUBLIC}
    assert due(ledger) == {Q, R}  # in the index, their field is set in place; a URL without a row is not
    set_all(ledger)
    assert due(ledger) == set()
    ledger.mark_indexed([(P, "p1")])  # Solr's answer changes nothing of its anchors
    ledger.record(P, Outcome(Event.UNCHANGED, 304, "not modified"))  # not parsed: they stay
    ledger.record(P, Outcome(Event.UNCHANGED, 200, anchors=((Q, "travel expenses"), (R, "leave"))))  # the same
    assert due(ledger) == set()
    ledger.record(P, Outcome(Event.UNCHANGED, 200, anchors=((Q, "expense claims"), (R, "leave"))))  # its link's words
    assert texts(ledger, Q) == {"expense claims": PUBLIC} and texts(ledger, R) == {"leave": PUBLIC}
    assert due(ledger) == {Q}  # only the target whose anchors changed
    set_all(ledger)
    ledger.record(P, cached("p2", ((R, "leave"),)))  # a new version that lost its link to Q
    assert texts(ledger, Q) == {} and due(ledger) == {Q}  # the same readers: R's anchors did not change
    set_all(ledger)
    ledger.record(P, Outcome(Event.GONE, 404, "gone"))  # it leaves the index: its anchors go
    assert texts(ledger, R) == {} and due(ledger) == {R}


def test_only_pages_in_the_index_give_anchors(backend: str, tmp_path, request) -> None:
    ledger = ledger_of(backend, tmp_path, request)
    indexed(ledger, Q, "q")
    ledger.record(P, cached("p", ((Q, "words"),)))
    assert texts(ledger, Q) == {"words": PUBLIC}  # pending: on its way into the index
    ledger.record(P, Outcome(Event.FAILED, 503, "HTTP 503"))  # kept through a transient failure
    assert texts(ledger, Q) == {"words": PUBLIC}
    ledger.record(P, Outcome(Event.GONE, 200, "robots noindex"))
    assert texts(ledger, Q) == {}
    ledger.record(P, Outcome(Event.UNCHANGED, 200, anchors=((Q, "words"),)))  # refused (not in the index): nothing kept
    assert texts(ledger, Q) == {}


def test_a_change_of_a_pages_readers_marks_every_target_due(backend: str, tmp_path, request) -> None:
    """A page whose readers change (its content not: a 304 with new access) counts for other
    targets now: every target of it is due, its anchors unchanged."""
    ledger = ledger_of(backend, tmp_path, request)
    indexed(ledger, Q, "q")
    indexed(ledger, P, "p", ((Q, "words"),))
    set_all(ledger)
    ledger.record(P, Outcome(Event.CACHED, 200, columns={"checksum": "p+hr", "access": HR}))
    assert texts(ledger, Q) == {"words": HR} and due(ledger) == {Q}


def test_a_target_is_unmarked_only_of_the_marks_read_before_its_field_was_set(backend: str, tmp_path, request) -> None:
    ledger = ledger_of(backend, tmp_path, request)
    indexed(ledger, Q, "q")
    ledger.record(P, cached("p", ((Q, "one"),)))
    (read,) = ledger.table.anchors_due(ledger.source)
    ledger.record(R, cached("r", ((Q, "two"),)))  # a change after the push read the marks
    ledger.mark_anchors_set(read.marks)
    assert due(ledger) == {Q}
    set_all(ledger)
    assert due(ledger) == set()


def test_a_test_crawl_writes_no_anchors(tmp_path) -> None:
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 't.sqlite3'}"))
    ledger = Ledger(table, "s")
    indexed(ledger, Q, "q")
    test = Ledger(table.for_run(None, test_mode=True), "s")
    test.record(P, cached("p", ((Q, "words"),)))
    assert texts(ledger, Q) == {} and due(ledger) == set()


def test_marking_a_pages_targets_due_finds_them_by_key_on_sqlite(tmp_path) -> None:
    """A parsed page's targets are marked due by their key (source, url_hash), never by reading
    the source's rows in the index: SQLite, never analysed, read them by ix_documents_source_state
    for every page (linear in the source a page: 5 ms at 9,000 documents, inside the writer's
    transaction, so two processes of the Nutch releases' crawl paid 1.16 times the CPU a page and
    1.17 times the time); the state is tested on the rows the key found."""
    from sqlalchemy import event

    ledger = Ledger(DocumentTable(Database(f"sqlite:///{tmp_path / 'a.sqlite3'}")), "s")
    for number in range(20):
        indexed(ledger, f"http://a.test/{number}.html", f"c{number}")
    sent: list[tuple[str, tuple]] = []
    listener = lambda _c, _cur, statement, parameters, *_rest: sent.append((statement, parameters))  # noqa: E731
    engine = ledger.table.database.engine
    event.listen(engine, "before_cursor_execute", listener)
    try:
        ledger.record(P, cached("p", tuple((f"http://a.test/{number}.html", "a link") for number in range(5))))
    finally:
        event.remove(engine, "before_cursor_execute", listener)
    marks = [(statement, parameters) for statement, parameters in sent if "INSERT INTO anchor_marks" in statement]
    assert len(marks) == 1, sent
    with engine.connect() as connection:
        plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + marks[0][0], marks[0][1])]
    assert [step for step in plan if "documents" in step] == [
        "SEARCH documents USING INDEX sqlite_autoindex_documents_1 (source=? AND url_hash=?)"
    ], plan
    assert due(ledger) == {f"http://a.test/{number}.html" for number in range(5)}


def test_a_batch_of_outcomes_marks_their_targets_in_one_statement(backend: str, tmp_path, request) -> None:
    """One marking statement a transaction, not one a page (1.7 % of a crawl's CPU; issue 102):
    the pages of a batch that name the same indexed targets mark each once."""
    ledger = ledger_of(backend, tmp_path, request)
    indexed(ledger, Q, "q")
    indexed(ledger, R, "r")
    pages = [f"http://a.test/{number}.html" for number in range(6)]
    with marking_statements(ledger) as marking:
        ledger.record_batch([(page, cached(page, ((Q, "travel"), (R, "leave")))) for page in pages])
    assert len(marking) == 1
    assert due(ledger) == {Q, R}
    assert {row.url: len(row.marks) for row in ledger.table.anchors_due(ledger.source)} == {Q: 1, R: 1}


def test_a_page_entering_the_index_with_a_page_that_links_to_it_is_left_to_its_push(backend: str, tmp_path, request) -> None:
    """In one batch, P links to Q and Q enters the index (pending, in either order): Q's push reads
    P's anchor as it sends Q, so Q gets no mark. A Q that entered in an earlier transaction is
    marked as before."""
    links = cached("p", ((Q, "travel"),))
    for outcomes in ([(P, links), (Q, cached("q"))], [(Q, cached("q")), (P, links)]):
        ledger = ledger_of(backend, tmp_path, request)  # a source of its own
        ledger.record_batch(outcomes)
        assert due(ledger) == set()
        assert texts(ledger, Q) == {"travel": PUBLIC}  # what Q's push reads
    ledger = ledger_of(backend, tmp_path, request)
    ledger.record(Q, cached("q"))  # pending, from an earlier transaction
    ledger.record_batch([(P, links), (R, cached("r"))])
    assert due(ledger) == {Q}


def test_a_page_back_from_removing_with_a_link_to_it_in_the_same_batch_is_marked(backend: str, tmp_path, request) -> None:
    """A page that comes back to the index from REMOVING may be in a push under way (which read
    its anchors before this batch) or held in Solr by the mass-deletion guard: unlike a new page,
    it is marked (a review of the batching found both)."""
    ledger = ledger_of(backend, tmp_path, request)
    indexed(ledger, Q, "q")
    ledger.record(Q, Outcome(Event.GONE, 404))  # leaving: removed from Solr by the next push
    set_all(ledger)
    ledger.record_batch([(Q, cached("q")), (P, cached("p", ((Q, "travel"),)))])
    assert due(ledger) == {Q}


def test_many_targets_are_marked_a_chunk_a_statement(tmp_path) -> None:
    """A transaction's targets, however many, in statements of at most MARK_CHUNK (SQLite takes
    32,766 parameters a statement)."""
    ledger = ledger_of("sqlite", tmp_path, None)  # type: ignore[arg-type]
    for url in (P, Q, R):
        indexed(ledger, url, url)
    keys = [url_hash(url) for url in (P, Q, R)] + [f"{number:064x}" for number in range(2 * MARK_CHUNK)]
    with marking_statements(ledger) as marking:
        ledger.table.database.transaction(lambda connection: mark_due(ledger.table.database, connection, ledger.source, keys))
    assert len(marking) == 3
    assert due(ledger) == {P, Q, R}


def test_a_queued_page_entering_the_index_with_a_link_to_it_is_left_to_its_push(tmp_path) -> None:
    """In a crawl every link's page has a row (queued) before it is fetched: that page, fetched for
    the first time in the same batch as a page linking to it, is left to its push too (a second
    review of the batching: with only rows that did not exist, a crawl's batches marked them)."""
    ledger = ledger_of("sqlite", tmp_path, None)  # type: ignore[arg-type]
    run = Runs(ledger.table.database).start(ledger.source)
    Frontier(ledger.table.database, ledger.source, run.id, "node:1").add([Entry(Q, 1), Entry(P, 1)])
    ledger.record_batch([(P, cached("p", ((Q, "travel"),))), (Q, cached("q"))])
    assert due(ledger) == set()
    assert texts(ledger, Q) == {"travel": PUBLIC}
