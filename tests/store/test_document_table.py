"""The document table on SQLite, and its Alembic migrations (on a real PostgreSQL:
tests/e2e/test_store_postgresql.py)."""

import gc
import logging
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, func, inspect, select, text, update
from sqlalchemy.exc import OperationalError

from searchcrawl.crawl.meta import REFERENCE
from searchcrawl.rules.lifecycle import Delta, Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import (
    SCHEMA_REVISION,
    alembic_head,
    create_db_engine,
    in_transaction,
    run_migrations,
    schema_revisions,
    upgrade_schema,
)
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import FrontierState, RunState, documents, frontier, metadata
from searchcrawl.store.runs import Runs
from tests.conftest import fresh_python


@pytest.fixture(params=["sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    """The database of the tests that take ``backend``: SQLite here; tests/e2e/test_store_postgresql.py
    runs them on the session's PostgreSQL server (the unit layer starts no server)."""
    return request.param


def exercise(table: DocumentTable) -> None:
    Ledger(table, "s").record(
        "http://h/a",
        Outcome(
            Event.CACHED,
            200,
            depth=0,
            columns={"last_modified": "Wed, 21 Oct 2015 07:28:00 GMT", "etag": '"x"', "content_length": 10, "checksum": "sum1"},
        ),
    )
    Ledger(table, "s").record_excluded([("http://h/a", 901, 1, "ignored: row exists"), ("http://other/", 901, 1, "off-site")])
    assert table.pending("s") == [("http://h/a", "sum1")]
    assert (table.pending_count("s"), table.pending_count("t")) == (1, 0)
    assert Ledger(table, "s").mark_indexed([("http://h/a", "stale")]) == []
    assert Ledger(table, "s").mark_indexed([("http://h/a", "sum1")]) == ["http://h/a"]
    assert table.pending_count("s") == 0
    row = table.get("s", "http://h/a")
    assert row is not None
    assert (row["state"], row["status"], row["etag"], row["checksum"]) == ("indexed", 200, '"x"', "sum1")
    assert row["first_seen"] and row["last_fetched"] and row["last_changed"] and row["indexed_at"]
    assert table.get("s", "http://other/")["reason"] == "off-site"
    assert table.count_by("s", "state") == {"indexed": 1, "excluded": 1}
    assert table.count_by("other-source", "state") == {}


def test_sqlite(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'documents.sqlite3'}"
    exercise(DocumentTable(Database(url)))
    DocumentTable(Database(url))  # reopening migrates nothing and keeps the data
    assert DocumentTable(Database(url)).count_by("s", "state") == {"indexed": 1, "excluded": 1}


def test_an_unchanged_outcomes_validators_are_kept_only_over_the_content_compared(backend: str, tmp_path, request) -> None:
    """Issue 53: an UNCHANGED outcome's ETag was written whatever the row held. In a shared
    crawl a lease read before another node cached new content (C2) compares the fetch with the
    old (C1): its ETag (E3, of C1) over C2 made every later crawl a 304 with C2 indexed. The
    validators are kept only while the row holds the checksum compared with."""
    url = f"sqlite:///{tmp_path / 'd.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    table, source, page = DocumentTable(Database(url)), f"stale-{backend}-{tmp_path.name}", "http://h/a"
    Ledger(table, source).record(page, Outcome(Event.CACHED, 200, columns={"checksum": "C1", "etag": '"E1"'}))
    Ledger(table, source).mark_indexed([(page, "C1")])
    # another node caches new content while this one's lease still says C1
    Ledger(table, source).record(page, Outcome(Event.CACHED, 200, columns={"checksum": "C2", "etag": '"E2"'}))
    validators = {"etag": '"E3"', "last_modified": "Thu, 02 May 2024 10:00:00 GMT"}
    stale = Outcome(
        Event.UNCHANGED, int(Status.UNCHANGED), "same content as indexed", 0, validators=validators, compared_checksum="C1"
    )
    Ledger(table, source).record(page, stale)
    row = table.get(source, page)
    assert (row["state"], row["checksum"], row["etag"], row["last_modified"]) == ("pending", "C2", '"E2"', None)
    # compared with what the row holds: the validators are kept (the next crawl's 304)
    Ledger(table, source).record(
        page, Outcome(Event.UNCHANGED, int(Status.UNCHANGED), "same", 0, validators=validators, compared_checksum="C2")
    )
    row = table.get(source, page)
    assert (row["checksum"], row["etag"], row["last_modified"]) == ("C2", '"E3"', validators["last_modified"])


def test_migrations_match_the_models(backend: str, tmp_path, request) -> None:
    """The schema Alembic's migrations make is the models' (a new SQLite database is made from
    the models directly: this is what makes that the same schema)."""
    url = f"sqlite:///{tmp_path / 'm.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    engine = create_db_engine(url)
    run_migrations(engine)  # whatever the database holds: Alembic's own path
    table = DocumentTable(Database(url))
    with table.engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), metadata)
    assert diff == []
    engine.dispose()


def test_a_sqlite_crawl_loads_no_orm_and_no_postgresql_dialect(tmp_path) -> None:
    """The tables are SQLAlchemy Core and the insert is the engine's dialect's: opening a new
    SQLite database (a one-page crawl's start) imports neither SQLAlchemy's ORM nor its PostgreSQL
    dialect, which cost some 0.2 s of the crawl's CPU."""
    code = (
        "import sys\n"
        "from searchcrawl.store import Database, DocumentTable\n"
        f"database = Database({'sqlite:///' + str(tmp_path / 'new.sqlite3')!r}, migrate=True)\n"
        "DocumentTable(database).pending('s')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('sqlalchemy.orm', 'sqlalchemy.dialects.postgresql'))))\n"
    )
    assert fresh_python(code) == ["[]"]


def schema_of(url: str) -> dict:
    """Tables, columns (name, type, nullable, default), indexes and unique constraints, as SQLite reports them."""
    engine = create_db_engine(url)
    found = inspect(engine)
    schema = {
        name: (
            sorted((c["name"], str(c["type"]), c["nullable"], c["default"], c["primary_key"]) for c in found.get_columns(name)),
            sorted((i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in found.get_indexes(name)),
            sorted((u["name"], tuple(u["column_names"])) for u in found.get_unique_constraints(name)),
        )
        for name in found.get_table_names()
    }
    engine.dispose()
    return schema


def test_a_new_sqlite_database_is_made_from_the_models_without_alembic(tmp_path) -> None:
    """A first crawl's new SQLite file: no Alembic loaded, the same tables, columns, indexes and
    constraints as the migrations make, at SCHEMA_REVISION; a later migration starts from there."""
    made = f"sqlite:///{tmp_path / 'new.sqlite3'}"
    code = f"import sys; from searchcrawl.store import Database; Database({made!r}); print('alembic' in sys.modules)"
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert opened.stdout.strip() == "False", opened.stderr[-2000:]
    migrated = f"sqlite:///{tmp_path / 'migrated.sqlite3'}"
    run_migrations(create_db_engine(migrated))
    assert schema_of(made) == schema_of(migrated)
    assert schema_revisions(create_db_engine(made)) == (SCHEMA_REVISION, SCHEMA_REVISION)
    exercise(DocumentTable(Database(made)))


def test_a_sqlite_database_with_tables_is_migrated_not_made(tmp_path) -> None:
    """An older schema (or another application's tables) goes through the migrations."""
    old = f"sqlite:///{tmp_path / 'old.sqlite3'}"
    upgrade_schema(create_db_engine(old), "0009")
    DocumentTable(Database(old)).database.close()
    assert schema_revisions(create_db_engine(old))[0] == SCHEMA_REVISION
    migrated = f"sqlite:///{tmp_path / 'migrated.sqlite3'}"
    run_migrations(create_db_engine(migrated))
    assert schema_of(old) == schema_of(migrated)


def test_schema_revision_is_alembics_head_and_an_open_at_it_loads_no_alembic(tmp_path) -> None:
    assert alembic_head() == SCHEMA_REVISION  # a new migration without its SCHEMA_REVISION fails here
    url = f"sqlite:///{tmp_path / 'r.sqlite3'}"
    Database(url).close()
    code = f"import sys; from searchcrawl.store import Database; Database({url!r}); print('alembic' in sys.modules)"
    opened = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert opened.stdout.strip() == "False"


def test_the_frontier_knows_what_is_in_its_run_and_says_so_only_when_sure(tmp_path, monkeypatch) -> None:
    """in_run spares links to queued pages their request; it must never claim a URL the table
    would still queue (another run's, or one it has not seen)."""
    from searchcrawl.store import frontier as frontier_module

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    run = Runs(table.database).start("known")
    frontier = Frontier(table.database, "known", run.id, "node:1")
    assert frontier.add([Entry("http://h/a", 0), Entry("http://h/b", 1)]) == 2
    assert frontier.in_run("http://h/a") and not frontier.in_run("http://h/c")
    assert frontier.add([Entry("http://h/a", 2)]) == 0  # what in_run spares: the table discards it too
    other = Frontier(table.database, "known", run.id, "node:2")  # another process learns from its leases
    assert not other.in_run("http://h/b")
    assert {entry.url for entry in other.lease(5)} == {"http://h/a", "http://h/b"} and other.in_run("http://h/b")
    monkeypatch.setattr(frontier_module, "IN_RUN_LIMIT", 2)  # bounded: past the limit it starts again
    frontier.add([Entry("http://h/c", 1), Entry("http://h/d", 1)])
    assert frontier.in_run("http://h/d") and not frontier.in_run("http://h/a")


def test_the_frontier_remembers_its_run_without_the_urls_text(tmp_path) -> None:
    """A million-URL source's frontier remembers every URL queued in its run (in_run): as hashes,
    not the URLs' strings, whose memory (about 110 bytes a URL on a real site) it need not keep."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    run = Runs(table.database).start("known")
    frontier = Frontier(table.database, "known", run.id, "node:1")
    # its statements built and cached, its memory of the run sized, before measuring
    frontier.add([Entry(f"http://h/warm/{number}", 0) for number in range(4_000)])

    def kept(path: str) -> int:
        """What remembering 2,000 more URLs of ``path`` keeps in memory: collected before and
        after, so that a collection's timing (which shifts with what else the process holds) does
        not count the garbage of the adds as kept, nor older garbage freed as saved."""
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            frontier.add([Entry(f"http://h/{path}{number}", 0) for number in range(2_000)])
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()

    kept("warm-again/")
    short, long = kept("s/"), kept("long-path/" * 40)
    assert frontier.in_run(f"http://h/{'long-path/' * 40}1999") and not frontier.in_run("http://h/other")
    assert long - short < 2_000 * 100  # each URL's string was kept: 400 bytes more a URL, 800 KB


def test_the_frontier_queues_a_large_batch_a_chunk_at_a_time(tmp_path, monkeypatch) -> None:
    """A sitemap's 50,000 URLs in one add: queued in chunks of ADD_CHUNK, in one transaction, so
    that their rows and parameters are never all in memory at once; as one statement would."""
    from searchcrawl.store import frontier as frontier_module

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    run = Runs(table.database).start("known")
    frontier = Frontier(table.database, "known", run.id, "node:1")
    assert frontier.add([Entry("http://h/3", 0)]) == 1
    monkeypatch.setattr(frontier_module, "ADD_CHUNK", 3)
    batch = [Entry(f"http://h/{number}", number % 2) for number in [0, 1, 2, 3, 4, 1, 5, 6, 7]]
    assert frontier.add(batch) == 7  # 3 was queued already, 1 is listed twice
    leased = frontier.lease(20)
    assert [entry.url for entry in leased] == [f"http://h/{n}" for n in [3, 0, 2, 4, 6, 1, 5, 7]]  # by depth, then discovery
    monkeypatch.setattr(frontier_module, "ADD_CHUNK", 2_000)
    many = [Entry(f"http://h/page/{number}", 1) for number in range(20_000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        assert frontier.add(many) == 20_000
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert peak < 8 * 2**20  # all in one statement: about 20 MB


def test_the_frontier_says_which_states_its_run_has_urls_in_as_its_counts_do(tmp_path) -> None:
    """present() is what a waiting node of a shared crawl asks ten times a second: it must agree
    with counts(), for this run only."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    runs = Runs(table.database)
    run = runs.start("states")
    table = table.for_run(run.id)
    frontier = Frontier(table.database, "states", run.id, "node:1")

    def agrees() -> set[str]:
        present = frontier.present()
        assert present == {state for state, number in frontier.counts().items() if number}
        return present

    assert agrees() == set()
    frontier.add([Entry("http://h/a", 0), Entry("http://h/b", 1)])
    assert agrees() == {"queued"}
    [leased] = frontier.lease(1)
    assert agrees() == {"queued", "leased"}
    Ledger(table, "states").record(leased.url, Outcome(Event.FAILED, 503, "HTTP 503"))  # its outcome finishes it
    assert agrees() == {"queued", "done"}
    frontier.lease(1)
    assert agrees() == {"leased", "done"}
    other = Frontier(table.database, "states", run.id + 1, "node:1")  # another run's frontier: empty
    assert other.present() == set()


def test_the_per_page_look_ups_send_sqlite_one_statement_each_as_compiled(tmp_path) -> None:
    """The statements run once or more per page go to SQLite alone: no PRAGMA per use (the
    autocommit switch of a shared engine sent one each time its connection went back, and cost as
    much as the statement), and no SQL rewritten per execution (an expanding IN)."""
    from sqlalchemy import event

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    sent: list[str] = []
    for engine in {table.engine, table.single.engine}:
        event.listen(engine, "before_cursor_execute", lambda _c, _cur, statement, *_rest: sent.append(statement))
    Ledger(table, "s").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "c", "display_url": "http://h/a"}))
    sent.clear()
    assert table.display_url_owner("s", "http://h/a") == "http://h/a"
    assert table.find_duplicate("s", "c", "http://h/b") == {
        "id": 1,
        "url": "http://h/a",
        "canonical_url": None,
        "first_seen_id": None,
        "copies": [{"id": 1, "url": "http://h/a", "canonical_url": None, "holds": True, "done": True}],
    }
    assert Ledger(table, "s").settle_pending("node") == []  # a push's: the waiting contents, then their copies
    assert len(sent) == 5 and not any("PRAGMA" in statement for statement in sent), sent
    assert all("POSTCOMPILE" not in statement and "IN (?, ?)" in statement for statement in sent[:3] if "state" in statement)


def test_settling_a_pushs_copies_reads_by_key_on_sqlite(tmp_path) -> None:
    """The statements that settle, before a push, the same content cached twice at once look
    the waiting rows up by state and their copies by checksum, each one table and no join:
    SQLite, never analysed, read the source by its checksum index when the statement said
    ``checksum IS NOT NULL`` (0.18 s a push at 200,000 rows, the review of issue 58's change)."""
    from sqlalchemy import event

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    for number in range(30):
        columns = {"checksum": f"c{number % 25}", "display_url": f"http://h/{number}", "cached_by": "n"}
        Ledger(table, "s").record(f"http://h/{number}", Outcome(Event.CACHED, 200, columns=columns))
    sent: list[tuple[str, tuple]] = []
    listener = lambda _c, _cur, statement, parameters, *_rest: sent.append((statement, parameters))  # noqa: E731
    event.listen(table.single.engine, "before_cursor_execute", listener)
    assert Ledger(table, "s").settle_pending("n") == [f"http://h/{number}" for number in range(25, 30)]  # the later copies
    event.remove(table.single.engine, "before_cursor_execute", listener)
    reads = [(statement, parameters) for statement, parameters in sent if statement.lstrip().startswith("SELECT")]
    assert len(reads) == 2, sent  # the waiting contents, then their copies
    indexes = []
    with table.engine.connect() as connection:
        for statement, parameters in reads:
            plan = [row[3] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            steps = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
            ranges = [step for step in steps if "USING" not in step or ">?" in step or "<?" in step]
            assert len(steps) == 1 and not ranges, (
                plan
            )  # one table, by its key (``checksum>?``: the source by its checksum index)
            indexes.append(steps[0].split(" INDEX ")[1].split(" ")[0])
    assert indexes == ["ix_documents_source_state", "ix_documents_source_checksum"]  # the rows waiting, their copies


def test_a_read_only_open_creates_and_changes_nothing(tmp_path) -> None:
    """Read-only commands never write the schema: a SQLite file no crawl has made reads as empty
    (and is not made, nor its folder); a database without searchcrawl's tables (another
    application's, a mistyped URL) or of another revision is refused, untouched."""
    import sqlite3

    import pytest

    from searchcrawl.store import SchemaOutdated
    from searchcrawl.store.database import create_db_engine, upgrade_schema

    missing = tmp_path / "not-yet" / "documents.sqlite3"
    table = DocumentTable(Database(f"sqlite:///{missing}", migrate=False))
    assert table.get("s", "http://h/a") is None and table.count_by("s", "state") == {}
    table.database.close()
    assert not missing.parent.exists()

    foreign = tmp_path / "foreign.sqlite3"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE theirs (x INTEGER)")
    with pytest.raises(SchemaOutdated, match="without searchcrawl's tables"):
        Database(f"sqlite:///{foreign}", migrate=False)
    with sqlite3.connect(foreign) as connection:
        assert [row[0] for row in connection.execute("SELECT name FROM sqlite_master")] == ["theirs"]

    old = tmp_path / "old.sqlite3"
    upgrade_schema(create_db_engine(f"sqlite:///{old}"), "0009")
    with pytest.raises(SchemaOutdated, match="at revision 0009"):
        Database(f"sqlite:///{old}", migrate=False)


def test_a_duplicate_whose_original_left_meanwhile_is_fetched_again_not_marked(backend: str, tmp_path, request) -> None:
    """Found by the suite under load (tests/e2e/test_maintenance.py, duplicates): b was compared
    with a while a was indexed, a's 404 was recorded before b's outcome, and b ended marked the
    duplicate of a document no longer in the index, for a whole crawl."""
    url = f"sqlite:///{tmp_path / 'd.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    table = DocumentTable(Database(url))
    source = f"dups-{backend}-{tmp_path.name}"
    a, b, x, y = (f"http://h/{name}" for name in "abxy")
    table = table.for_run(Runs(table.database).start(source).id)
    for page in (a, x, y):
        Ledger(table, source).record(page, Outcome(Event.CACHED, 200, columns={"checksum": f"sum-{page[-1]}"}))
    Ledger(table, source).mark_indexed([(a, "sum-a"), (x, "sum-x"), (y, "sum-y")])
    Ledger(table, source).mark_duplicate(b, of=a)
    Ledger(table, source).record(x, Outcome(Event.GONE, 404, "HTTP 404"))  # x leaves in that first run
    Ledger(table, source).mark_removed([x])

    table = table.for_run(table.run_id + 1)  # the next crawl: the pipeline compares b with a (indexed), then a answers 404
    Ledger(table, source).record(a, Outcome(Event.GONE, 404, "HTTP 404"))
    Ledger(table, source).mark_duplicate(b, of=a)
    row = table.get(source, b)
    assert row is not None
    assert (row["duplicate_of"], row["frontier"], row["run_id"]) == (None, "queued", table.run_id)
    # an original that left in an earlier run and comes back (a canonical copy) is no such case
    Ledger(table, source).mark_duplicate(y, of=x)
    row = table.get(source, y)
    assert row is not None
    assert (row["duplicate_of"], row["frontier"], row["status"]) == (x, "done", 911)


@pytest.mark.parametrize("first", ["copy", "holder"], ids=["the copy recorded first", "the holder recorded first"])
def test_a_holder_whose_content_changes_frees_its_copies_in_the_same_run(backend: str, tmp_path, request, first: str) -> None:
    """Issue 99, point 12: b, a copy of a's content, was compared with a (indexed) early in the
    crawl in which a then changed its text: b was left the duplicate of a content nobody held,
    and indexed only in the next crawl. Whichever outcome is written first, b is queued again
    in the run, no longer anyone's duplicate; e, a copy not in the run (a redirect target
    outside the boundary, fetched only through its redirect), is left to its next fetch; a
    holder fetched again with the same content (a forced recrawl) frees none."""
    url = f"sqlite:///{tmp_path / 'd.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    table = DocumentTable(Database(url))
    source = f"changed-{backend}-{tmp_path.name}"
    a, b, c, d, e = (f"http://h/{name}" for name in "abcde")
    runs = Runs(table.database)
    table = table.for_run(runs.start(source).id)
    Ledger(table, source).record(a, Outcome(Event.CACHED, 200, columns={"checksum": "old"}))
    Ledger(table, source).mark_indexed([(a, "old")])
    for copy in (b, c, e):
        Ledger(table, source).record(copy, duplicate(a, "old"))
    Ledger(table, source).record(d, Outcome(Event.CACHED, 200, columns={"checksum": "d"}))
    Ledger(table, source).mark_indexed([(d, "d")])
    Ledger(table, source).record(c, duplicate(d, "d"))  # c's content changed: now d's copy
    runs.end(table.run_id, RunState.FINISHED, {}, "finished")

    table = table.for_run(runs.start(source).id)  # the crawl in which a changes: b fetched before a
    frontier = Frontier(table.database, source, table.run_id, "me")
    frontier.add([Entry(b, 1), Entry(a, 2), Entry(d, 1)])
    assert [entry.url for entry in frontier.lease(3)] == [b, d, a]
    outcomes = {"copy": (b, duplicate(a, "old")), "holder": (a, Outcome(Event.CACHED, 200, columns={"checksum": "new"}))}
    for name in (first, "holder" if first == "copy" else "copy"):
        Ledger(table, source).record(*outcomes[name])
    row = table.get(source, b)
    assert row is not None
    assert (row["duplicate_of"], row["frontier"], row["run_id"]) == (None, "queued", table.run_id)
    assert [entry.url for entry in frontier.lease(3)] == [b]  # fetched again in this run, to hold the old content
    row = table.get(source, e)
    assert row is not None and (row["duplicate_of"], row["run_id"]) == (a, table.run_id - 1)
    Ledger(table, source).record(d, Outcome(Event.CACHED, 200, columns={"checksum": "d"}))  # the same content: a forced recrawl
    row = table.get(source, c)
    assert row is not None and (row["duplicate_of"], row["run_id"]) == (d, table.run_id - 1)


def test_a_holder_changed_to_the_content_of_a_copy_it_replaces_keeps_that_copy_its_duplicate(tmp_path) -> None:
    """a, found first, changes to b's content and takes b's place in the index (ChangePipeline's
    replacement, then a's own outcome): b, of a's new content, stays a's duplicate, and is not
    fetched again for nothing."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    source = "replaced"
    a, b = "http://h/a", "http://h/b"
    runs = Runs(table.database)
    table = table.for_run(runs.start(source).id)
    for page, checksum in ((a, "x"), (b, "y")):
        Ledger(table, source).record(page, Outcome(Event.CACHED, 200, columns={"checksum": checksum}))
    Ledger(table, source).mark_indexed([(a, "x"), (b, "y")])
    runs.end(table.run_id, RunState.FINISHED, {}, "finished")
    table = table.for_run(runs.start(source).id)
    replaced = Outcome(Event.GONE, 911, f"duplicate of {a}", kind=Delta.DUPLICATE, columns={"duplicate_of": a}, finishes=False)
    Ledger(table, source).record(b, replace(replaced, fetched=False))
    Ledger(table, source).record(a, Outcome(Event.CACHED, 200, columns={"checksum": "y"}))
    row = table.get(source, b)
    assert row is not None and (row["state"], row["duplicate_of"], row["run_id"]) == ("removing", a, table.run_id - 1)


def test_a_duplicate_fetched_again_in_its_run_keeps_its_request_data(tmp_path) -> None:
    """Found by the suite under load (tests/e2e/test_mail_sources.py): an attachment was marked the
    duplicate of another (b of a), a canonical copy then took a's place, and b, queued again to
    take it, was leased without its request data: the agent's reference (fields, token, inline
    content) had been dropped when b was marked, and b went into Solr without its fields."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    source = "dups"
    a, b, c = "mail://dups/a", "mail://dups/b", "mail://dups/c"
    table = table.for_run(Runs(table.database).start(source).id)
    frontier = Frontier(table.database, source, table.run_id, "me")
    data = {REFERENCE: {"token": "t-b", "fields": {"attachment_of_s": "mail://dups/m"}}}
    frontier.add([Entry(a, 0, {}), Entry(b, 0, data), Entry(c, 0, {})])
    assert {entry.url: entry.data for entry in frontier.lease(3)}[b] == data
    Ledger(table, source).record(a, Outcome(Event.CACHED, 200, columns={"checksum": "same"}))
    Ledger(table, source).mark_duplicate(b, of=a)
    Ledger(table, source).record(c, Outcome(Event.CACHED, 200, columns={"checksum": "same"}))
    Ledger(table, source).mark_duplicate(a, of=c)  # the canonical copy c replaces a: a's duplicates go again
    row = table.get(source, b)
    assert row is not None and (row["duplicate_of"], row["frontier"]) == (None, "queued")
    assert [(entry.url, entry.data) for entry in frontier.lease(3)] == [(b, data)]
    Ledger(table, source).record(b, Outcome(Event.CACHED, 200, columns={"checksum": "other"}))
    row = table.get(source, b)
    assert row is not None and row["request"] is None  # finished otherwise: the data goes


def test_documents_found_in_solr_become_indexed_rows_and_known_rows_stay(backend: str, tmp_path, request) -> None:
    url = f"sqlite:///{tmp_path / 'f.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    table = DocumentTable(Database(url))
    source = f"found-{backend}-{tmp_path.name}"
    assert not table.knows(source)
    Ledger(table, source).record("http://h/known", Outcome(Event.GONE, 404, "HTTP 404"))
    assert table.knows(source) and not table.knows(f"{source}-other")
    pages = [[("http://h/a", "http://h/shown-a", "sum-a"), ("http://h/b", None, None)], [("http://h/known", None, "x")]]
    assert Ledger(table, source).record_found(iter(pages)) == 3  # read; the known URL keeps its row
    a, b, known = (table.get(source, f"http://h/{name}") for name in ("a", "b", "known"))
    assert a is not None and b is not None and known is not None
    assert (a["state"], a["status"], a["checksum"], a["display_url"], a["delta"]) == (
        "indexed",
        200,
        "sum-a",
        "http://h/shown-a",
        None,
    )
    assert a["indexed_at"] is not None and a["last_fetched"] is None  # in Solr; never fetched into this table
    assert (b["state"], b["checksum"], b["display_url"]) == ("indexed", None, "http://h/b")
    assert (known["state"], known["status"], known["checksum"]) == ("fetched", 404, None)  # the table's word stands


def test_the_maintenance_plan_leaves_what_a_node_that_joined_did_in_the_run(tmp_path) -> None:
    """Found by tests/e2e/test_scale_out.py once the run's first node read Solr before planning
    (crawl/run_start.py take_over_index): a node that joined meanwhile had fetched the seed, and the plan,
    queuing every known URL, queued it again: fetched twice in one run."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'p.sqlite3'}"))
    source = "plan"
    a, b = "http://h/a", "http://h/b"
    table = table.for_run(Runs(table.database).start(source).id)
    for url in (a, b):
        Ledger(table, source).record(url, Outcome(Event.CACHED, 200, columns={"checksum": url}))
    Ledger(table, source).mark_indexed([(a, a), (b, b)])
    table = table.for_run(table.run_id + 1)  # the next run: another node joins and fetches a before the plan is made
    frontier = Frontier(table.database, source, table.run_id, "joined")
    frontier.add([Entry(a, 0, {})])
    assert [entry.url for entry in frontier.lease(5)] == [a]
    Ledger(table, source).record(a, Outcome(Event.UNCHANGED, 912, "same content as indexed"))
    assert Ledger(table, source).plan_maintenance(lambda url, depth: None) == (1, 0)
    assert [table.get(source, url)["frontier"] for url in (a, b)] == ["done", "queued"]  # type: ignore[index]


def test_the_maintenance_plan_reads_a_large_source_in_batches_and_decides_every_row(tmp_path, monkeypatch) -> None:
    """A million rows are not held at once (issue 58): the plan reads them a batch at a time, by
    id; every row is decided once, across the batches' edges, other sources' rows untouched."""
    monkeypatch.setattr("searchcrawl.store.ledger.PLAN_BATCH", 7)
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'b.sqlite3'}"))
    source = "big"
    table = table.for_run(Runs(table.database).start(source).id)
    urls = [f"http://h/{number}" for number in range(40)]
    for number, url in enumerate(urls):
        Ledger(table, source).record(url, Outcome(Event.CACHED, 200, columns={"checksum": url}))
        if number % 5 == 0:
            Ledger(table, "other").record(url, Outcome(Event.CACHED, 200, columns={"checksum": url}))
    Ledger(table, source).mark_indexed([(url, url) for url in urls])
    table = table.for_run(table.run_id + 1)
    asked: list[str] = []

    def excluding(url: str, depth: int) -> tuple[int, str] | None:
        asked.append(url)
        return (904, "pattern") if url.endswith("3") else None

    assert Ledger(table, source).plan_maintenance(excluding) == (36, 4)
    assert sorted(asked) == sorted(urls)  # each once
    assert {table.get(source, url)["status"] for url in urls if url.endswith("3")} == {904}  # type: ignore[index]
    assert {table.get(source, url)["frontier"] for url in urls if not url.endswith("3")} == {"queued"}  # type: ignore[index]
    assert table.get("other", urls[0])["frontier"] == "done"  # type: ignore[index]  # as the first run left it


def test_the_plan_spaces_out_the_recheck_of_urls_without_a_document(tmp_path) -> None:
    """recheck_gone_days: a URL without a document (404, moved for good) fetched since
    ``recheck_before`` is not queued again; one fetched before it is, and so is every page,
    however recent (the comparison is the database's, on SQLite's stored dates too)."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'r.sqlite3'}"))
    source = "recheck"
    table = table.for_run(Runs(table.database).start(source).id)
    old, recent, moved, page = (f"http://h/{name}" for name in ("old", "recent", "moved", "page"))
    for gone in (old, recent):
        Ledger(table, source).record(gone, Outcome(Event.GONE, 404, "HTTP 404"))
    Ledger(table, source).record(moved, Outcome(Event.GONE, 301, "moved to http://h/page"))
    Ledger(table, source).record(page, Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    long_ago = datetime.now(UTC) - timedelta(days=30)
    with table.engine.begin() as connection:
        connection.execute(update(documents).where(documents.c.url == old).values(last_fetched=long_ago))
    table = table.for_run(table.run_id + 1)
    assert Ledger(table, source).plan_maintenance(lambda url, depth: None, datetime.now(UTC) - timedelta(days=7)) == (2, 0)
    queued = {u for u in (old, recent, moved, page) if table.get(source, u)["run_id"] == table.run_id}  # type: ignore[index]
    assert queued == {old, page}


LEASER = """
import sys
from searchcrawl.store import Database
from searchcrawl.store.frontier import Frontier
database = Database(sys.argv[1], migrate=False)
frontier = Frontier(database, "shared", int(sys.argv[2]), sys.argv[3])
while batch := frontier.lease(7):
    print("\\n".join(entry.url for entry in batch), flush=True)
"""


def test_processes_leasing_from_one_frontier_at_once_never_lease_a_url_twice(backend: str, tmp_path, request) -> None:
    """Regression: on SQLite the batch was chosen by a SELECT and leased by an UPDATE, and local
    processes leasing at the same moment both took the URLs between the two."""
    from searchcrawl.store.frontier import Entry, Frontier

    url = f"sqlite:///{tmp_path / 'f.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    database = Database(url)
    run = Runs(database).start("shared", fresh=True)
    urls = {f"http://h/{number}" for number in range(1500)}  # 215 leases of 7, four processes at once
    Frontier(database, "shared", run.id, "seeder").add([Entry(each, 1) for each in sorted(urls)])
    leasers = [
        subprocess.Popen([sys.executable, "-c", LEASER, url, str(run.id), f"node:{number}"], stdout=subprocess.PIPE, text=True)
        for number in range(4)
    ]
    leased = [line for process in leasers for line in process.communicate(timeout=300)[0].splitlines()]
    assert all(process.returncode == 0 for process in leasers)
    assert len(leased) == len(urls) and set(leased) == urls


class Deadlock(Exception):
    """What psycopg raises for PostgreSQL's deadlock_detected: its SQLSTATE says so."""

    sqlstate = "40P01"


def test_a_transaction_aborted_in_a_deadlock_is_run_again_whole_and_nothing_else_is(tmp_path) -> None:
    """``in_transaction``: the aborted attempt's writes are rolled back, the work runs again in a new
    transaction; another error, or a deadlock on every attempt, is raised as it came."""
    engine = create_db_engine(f"sqlite:///{tmp_path / 'd.sqlite3'}")
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE t (x INTEGER)"))
    attempts: list[int] = []

    def work(connection: Connection) -> int:
        connection.execute(text("INSERT INTO t VALUES (1)"))
        attempts.append(1)
        if len(attempts) < 3:
            raise OperationalError("INSERT INTO t VALUES (1)", {}, Deadlock("deadlock detected"))
        return len(attempts)

    assert in_transaction(engine, work) == 3
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM t")).scalar() == 1  # the two aborted ones rolled back
    attempts.clear()

    def fails(error: Exception) -> Callable[[Connection], None]:
        def work(connection: Connection) -> None:
            attempts.append(1)
            raise OperationalError("INSERT INTO t VALUES (1)", {}, error)

        return work

    with pytest.raises(OperationalError):
        in_transaction(engine, fails(Exception("database is locked")))
    assert len(attempts) == 1
    attempts.clear()
    with pytest.raises(OperationalError):
        in_transaction(engine, fails(Deadlock("deadlock detected")), attempts=2)
    assert len(attempts) == 2
    engine.dispose()


def test_two_nodes_queueing_overlapping_links_at_once_queue_each_once_and_lose_none(
    backend: str, tmp_path, request, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (issue 91): two nodes of a shared crawl on PostgreSQL queue each page's links in
    the page's order; with the same links in other orders, each waited on rows the other had
    written and PostgreSQL aborted one (DeadlockDetected): its page failed (925) and its links were
    not queued. The rows are now written in key order (no deadlock, none run again: the review
    found the retry's pause on the reactor's thread), their ids in discovery order."""
    url = f"sqlite:///{tmp_path / 'o.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    source = f"overlap-{backend}-{tmp_path.name}"
    run = Runs(Database(url)).start(source, fresh=True)
    nodes = [Frontier(Database(url), source, run.id, f"node:{number}") for number in range(2)]
    rounds, links = 15, 300
    together = threading.Barrier(2)
    added: list[int] = []
    failures: list[BaseException] = []

    def crawl(node: Frontier, order: int) -> None:
        for round_ in range(rounds):
            page = [Entry(f"http://h/{round_}/{number}", 1) for number in range(links)][::order]
            together.wait(timeout=60)
            try:
                added.append(node.add(page))
            except Exception as exc:  # noqa: BLE001 - the test says which
                failures.append(exc)

    threads = [threading.Thread(target=crawl, args=(node, order)) for node, order in zip(nodes, (1, -1), strict=True)]
    with caplog.at_level(logging.DEBUG, logger="searchcrawl.store.database"):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
    assert failures == []
    assert [record.getMessage() for record in caplog.records if "Deadlock" in record.getMessage()] == []
    counts = nodes[0].counts()
    with nodes[0].engine.connect() as connection:
        rows = connection.execute(select(func.count()).select_from(documents).where(documents.c.source == source)).scalar()
    assert (counts[FrontierState.QUEUED], rows) == (rounds * links, rounds * links)  # each URL once, none lost
    assert sum(added) >= rounds * links
    # the ids follow discovery order, whatever order the rows were written in
    monkeypatch.setattr("searchcrawl.store.frontier.ADD_CHUNK", 7)  # and across chunks
    page = [f"http://h/new/{number}" for number in range(40)][::-1]
    nodes[0].add([Entry(url, 1) for url in page])
    with nodes[0].engine.connect() as connection:
        ids = dict(connection.execute(select(documents.c.url, documents.c.id).where(documents.c.url.in_(page))).tuples().all())
    assert [ids[url] for url in page] == sorted(ids.values())


def test_a_joining_node_takes_back_the_leases_of_nodes_gone_and_no_others(backend: str, tmp_path, request) -> None:
    """Regression: a node joining a shared run took back every lease but those of the nodes live
    as it joined, read in a transaction of their own; a node that joined in between and had
    leased already lost its leases (16 local processes starting together on 2 cores: pages
    fetched two and three times). The live nodes are now read under the lock nodes join under."""
    url = f"sqlite:///{tmp_path / 'j.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    database = Database(url)
    runs = Runs(database)
    source = f"joins-{backend}-{tmp_path.name}"
    first = runs.start(source, fresh=True, allow_shared=True, owner="here:1")
    a = Frontier(database, source, first.id, "here:1")
    a.add([Entry(f"http://h/{n}", 0) for n in range(10)])
    assert len(a.lease(3)) == 3
    # left behind: a process gone without leaving the run, and an earlier one of node b's name
    assert len(Frontier(database, source, first.id, "gone:9").lease(1)) == 1
    assert len(Frontier(database, source, first.id, "here:2").lease(1)) == 1
    joined = runs.start(source, allow_shared=True, owner="here:2")
    assert joined.others == ("here:1",)
    later = runs.start(source, allow_shared=True, owner="here:3")  # joins after b, before b takes back leases
    c = Frontier(database, source, later.id, "here:3")
    assert len(c.lease(3)) == 3
    b = Frontier(database, source, joined.id, "here:2")
    assert b.requeue_gone(runs, 600, keep_own=False) == 2  # the gone process's and the earlier b's
    assert {owner for owner in leases(database, source).values()} == {"here:1", "here:3"}
    assert len(b.lease(2)) == 2
    assert c.requeue_gone(runs, 600) == 0  # every node live: a's, b's and its own stay
    assert sorted(leases(database, source).values()).count("here:2") == 2
    runs.leave(joined.id, "here:2")  # b left without giving its leases back: c takes them
    assert c.requeue_gone(runs, 600) == 2


def leases(database: Database, source: str) -> dict[str, str]:
    with database.engine.connect() as connection:
        rows = connection.execute(
            select(documents.c.url, frontier.c.lease_owner)
            .join_from(frontier, documents, documents.c.id == frontier.c.document_id)
            .where(frontier.c.source == source, frontier.c.state == FrontierState.LEASED)
        ).mappings()
        return {row["url"]: row["lease_owner"] for row in rows}


def test_run_and_frontier_states_are_stored_as_their_values(backend: str, tmp_path, request) -> None:
    """RunState and FrontierState are StrEnums: the columns hold "running", "leased", ... as
    before they were enums (psycopg dumps a plain Enum by its name: "RUNNING" would be written),
    and what the stores read back compares equal to the members."""
    url = f"sqlite:///{tmp_path / 'states.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    database = Database(url)
    source = f"states-{backend}"
    runs = Runs(database)
    run = runs.start(source, fresh=True)
    frontier = Frontier(database, source, run.id, "node:1")
    frontier.add([Entry("http://h/a", 0), Entry("http://h/b", 1)])
    assert [entry.url for entry in frontier.lease(1)] == ["http://h/a"]
    assert frontier.counts() == {FrontierState.QUEUED: 1, FrontierState.LEASED: 1, FrontierState.DONE: 0}
    assert frontier.present() == {FrontierState.QUEUED, FrontierState.LEASED}
    with database.engine.connect() as connection:
        rows = connection.execute(
            text("SELECT url, f.state FROM frontier f JOIN documents d ON d.id = f.document_id WHERE f.source = :s"),
            {"s": source},
        ).all()
        stored = {url: state for url, state in rows}
        assert stored == {"http://h/a": "leased", "http://h/b": "queued"}
        assert connection.execute(text("SELECT state FROM runs WHERE id = :id"), {"id": run.id}).scalar() == "running"
    runs.end(run.id, RunState.FINISHED, {}, "finished")
    assert runs.latest(source)["state"] == RunState.FINISHED == "finished"


def duplicate(of: str, checksum: str, canonical: str | None = None) -> Outcome:
    """A copy's outcome as ChangePipeline reports it: the duplicate of ``of``, with its content
    and the canonical URL it names."""
    columns = {"duplicate_of": of, "checksum": checksum, "canonical_url": canonical}
    return Outcome(Event.GONE, 911, f"duplicate of {of}", kind=Delta.DUPLICATE, columns=columns)


@pytest.mark.parametrize("first", ["A", "C"], ids=["A recorded first", "C recorded first"])
def test_a_copy_named_canonical_after_it_was_compared_is_fetched_again_to_hold(tmp_path, first: str) -> None:
    """Issue 53, item 26: B held a content; A, a copy of it, and C, a copy naming A canonical, went
    through the pipelines at once, each compared before the other's row was written: both were
    recorded B's duplicates, and B stayed in the index though C names A. Whichever outcome is
    written second, A is fetched again in the run (to take B's place); a copy naming no
    canonical recalls nobody."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    source = "group"
    a, b, c, d = (f"http://h/{name}" for name in "abcd")
    table = table.for_run(Runs(table.database).start(source).id)
    frontier = Frontier(table.database, source, table.run_id, "me")
    frontier.add([Entry(b, 1), Entry(a, 1), Entry(c, 1), Entry(d, 1)])  # discovered in this order
    assert len(frontier.lease(4)) == 4
    Ledger(table, source).record(b, Outcome(Event.CACHED, 200, columns={"checksum": "same"}))
    Ledger(table, source).mark_indexed([(b, "same")])
    Ledger(table, source).record(d, duplicate(b, "same"))
    assert table.get(source, a)["frontier"] == "leased"
    outcomes = {"A": (a, duplicate(b, "same")), "C": (c, duplicate(b, "same", canonical=a))}
    for name in (first, "C" if first == "A" else "A"):
        Ledger(table, source).record(*outcomes[name])
        if name == first == "A":  # nothing names it canonical yet: it is B's duplicate, done
            assert table.get(source, a)["frontier"] == "done"
    row = table.get(source, a)
    assert (row["state"], row["frontier"], row["run_id"]) == ("fetched", "queued", table.run_id)
    assert [entry.url for entry in frontier.lease(4)] == [a]
    assert table.get(source, b)["state"] == "indexed"  # it holds the content until A takes it


def test_a_copy_come_back_to_hold_the_content_replaces_the_copy_holding_it(tmp_path) -> None:
    """Issue 53, item 26 (A and B both in Solr): A left the index in the run, replaced by B; then
    A, named canonical by C, came back and replaced B. B's outcome (the duplicate of A) was taken
    for a duplicate of a document gone: B stayed in the index beside A, and was queued again."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    source = "group"
    a, b = "http://h/a", "http://h/b"
    table = table.for_run(Runs(table.database).start(source).id)
    for url in (a, b):
        Ledger(table, source).record(url, Outcome(Event.CACHED, 200, columns={"checksum": f"old-{url[-1]}"}))
    Ledger(table, source).mark_indexed([(a, "old-a"), (b, "old-b")])
    table = table.for_run(table.run_id + 1)
    replaced = Outcome(Event.GONE, 911, "duplicate of", kind=Delta.DUPLICATE, columns={"duplicate_of": b}, finishes=False)
    Ledger(table, source).record(a, replace(replaced, reason=f"duplicate of {b}"))  # B, changed, replaces A
    Ledger(table, source).record(b, Outcome(Event.CACHED, 200, columns={"checksum": "same"}))
    assert table.get(source, a)["state"] == "removing"
    Ledger(table, source).record(b, replace(replaced, reason=f"duplicate of {a}", columns={"duplicate_of": a}))  # A comes back
    Ledger(table, source).record(a, Outcome(Event.CACHED, 200, columns={"checksum": "same"}))
    row = table.get(source, b)
    assert (row["state"], row["status"], row["duplicate_of"]) == ("removing", 911, a)
    assert table.get(source, a)["state"] == "pending"


def test_a_copy_back_with_the_content_solr_holds_is_unchanged_not_changed(tmp_path) -> None:
    """The sequence test (seed 2, crawl 9): A held a content in Solr; B, discovered first, became
    a copy of it and took A's place (A deleted in the run's report); then A, named canonical by a
    copy met later, came back with that very content. Solr held it all along: the report says
    unchanged, not changed. C, whose own content became a copy of it (Solr holds C's old one),
    back as a holder later in the run, did change."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    source = "group"
    b, a, c = (f"http://h/{name}" for name in "bac")  # discovered in this order
    table = table.for_run(Runs(table.database).start(source).id)
    for url in (b, a, c):
        Ledger(table, source).record(url, Outcome(Event.CACHED, 200, columns={"checksum": f"sum-{url[-1]}"}))
    Ledger(table, source).mark_indexed([(b, "sum-b"), (a, "sum-a"), (c, "sum-c")])
    table = table.for_run(table.run_id + 1)
    replaced = Outcome(Event.GONE, 911, f"duplicate of {b}", kind=Delta.DUPLICATE, columns={"duplicate_of": b}, finishes=False)
    Ledger(table, source).record(a, replaced)  # B, now a copy of A's content, takes its place
    Ledger(table, source).record(b, Outcome(Event.CACHED, 200, columns={"checksum": "sum-a"}))
    Ledger(table, source).record(c, duplicate(b, "sum-a"))  # C too is a copy now
    assert [table.get(source, url)["delta"] for url in (a, c)] == ["deleted", "deleted"]
    Ledger(table, source).record(b, replace(replaced, reason=f"duplicate of {a}", columns={"duplicate_of": a}))  # A comes back
    Ledger(table, source).record(a, Outcome(Event.CACHED, 200, columns={"checksum": "sum-a"}))
    Ledger(table, source).record(c, Outcome(Event.CACHED, 200, columns={"checksum": "sum-a"}))  # say, C holds it in the end
    assert [table.get(source, url)["delta"] for url in (a, c)] == ["unchanged", "changed"]


def test_pages_spared_in_bulk_are_recorded_as_record_would_and_only_while_queued(tmp_path, monkeypatch) -> None:
    """Issue 58: a maintenance crawl's pages a sitemap says are unchanged are recorded in bulk
    (``record_spared``), not a request each. What it writes is what ``record`` writes for the
    same outcome (one rule: the ledger's ``decide``), row by row, column by column; only an
    indexed page queued in this run without a redirect is spared; one leased meanwhile is in
    flight (its request decides)."""
    monkeypatch.setattr("searchcrawl.store.ledger.SPARE_BATCH", 3)  # the batches' edges too

    def indexed_source(name: str, urls: list[str]) -> tuple[DocumentTable, Frontier]:
        table = DocumentTable(Database(f"sqlite:///{tmp_path / f'{name}.sqlite3'}"))
        table = table.for_run(Runs(table.database).start(name).id)
        for url in urls:
            Ledger(table, name).record(url, Outcome(Event.CACHED, 200, columns={"checksum": f"sum-{url}"}))
        Ledger(table, name).mark_indexed([(url, f"sum-{url}") for url in urls])
        Ledger(table, name).record(urls[0], Outcome(Event.FAILED, 503, "HTTP 503"))  # indexed, one failure counted
        table = table.for_run(table.run_id + 1)
        assert Ledger(table, name).plan_maintenance(lambda url, depth: None) == (len(urls), 0)
        return table, Frontier(table.database, name, table.run_id, "me")

    urls = [f"http://h/{number}" for number in range(8)]
    outcome = Outcome(Event.UNCHANGED, int(Status.SITEMAP_UNCHANGED), "its lastmod is older", fetched=False)
    bulk, frontier = indexed_source("bulk", urls)
    one, _ = indexed_source("one", urls)
    leased = frontier.lease(1)[0].url  # in flight: its request decides
    with bulk.engine.begin() as connection:  # not in the index now: requested
        connection.execute(update(documents).where(documents.c.url == urls[5]).values(state="fetched"))
    asked: list[str] = []

    def spare(url: str, known) -> Outcome | None:
        asked.append(url)
        assert known.state == "indexed" and known.checksum == f"sum-{url}" and known.last_fetched is not None
        return None if url == urls[6] else outcome  # the rule says: request it

    fetched_before = {url: bulk.get("bulk", url)["last_fetched"] for url in urls}  # type: ignore[index]
    spared = Ledger(bulk, "bulk").record_spared([*urls, "http://h/unknown"], spare)
    assert spared.in_flight == [leased]
    assert sorted(spared.urls) == sorted(set(urls) - {leased, urls[5], urls[6]})
    assert sorted(asked) == sorted(set(urls) - {leased, urls[5]})
    for url in spared.urls:
        Ledger(one, "one").record(url, outcome)  # the same outcome, one at a time
        compared = ("state", "status", "reason", "failures", "delta", "delta_run", "frontier", "request")
        mine, theirs = bulk.get("bulk", url), one.get("one", url)
        assert mine is not None and theirs is not None
        assert {column: mine[column] for column in compared} == {column: theirs[column] for column in compared}, url
        assert mine["last_fetched"] == fetched_before[url]  # not fetched: its last fetch stays
    assert {bulk.get("bulk", url)["frontier"] for url in urls if url not in spared.urls} == {"queued", "leased"}  # type: ignore[index]
    assert Ledger(bulk, "bulk").record_spared(urls, spare).urls == []  # done already: nothing twice


def test_a_known_url_met_deeper_before_its_plan_keeps_its_depth(tmp_path) -> None:
    """The maintenance plan is made while the crawl goes on (issue 58): a link may reach a known
    URL before the plan queues it. Queued then at the link's depth, it would sit deeper than it
    is known, and its own links past max_depth. A known URL is queued at the smaller of the two;
    a new one at its link's."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'depth.sqlite3'}"))
    source = "depth"
    runs = Runs(table.database)
    first = Frontier(table.database, source, runs.start(source).id, "me")
    first.add([Entry("http://h/known", 1), Entry("http://h/deep", 4)])
    second = Frontier(table.database, source, first.run_id + 1, "me")  # the next run, before its plan
    # the run has begun (a seed): a known URL met then is queued all the same (the statement's
    # "not in the run" looked at the whole table: the sequence test, seed 5, crawl 3)
    assert second.add([Entry("http://h/", 0)]) == 1
    assert second.add([Entry("http://h/known", 3), Entry("http://h/deep", 2), Entry("http://h/new", 5)]) == 3
    depths = {entry.url: entry.depth for entry in second.lease(5)}
    assert depths == {"http://h/": 0, "http://h/known": 1, "http://h/deep": 2, "http://h/new": 5}
    assert [table.get(source, url)["depth"] for url in depths] == [0, 1, 2, 5]  # type: ignore[index]


def test_a_copy_settled_before_its_fetch_in_the_run_is_still_fetched(tmp_path) -> None:
    """Review of issue 58's change: the settle before a push marked every other copy of a content
    done in the run and fetched now, though a copy still queued was never fetched (its content
    may have changed, or it may be gone) and its faked last fetch kept it from later rechecks.
    A copy is marked a duplicate as a verdict on its content: its entry stays queued, its last
    fetch as it was."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'd.sqlite3'}"))
    source = "settle"
    b, a = "http://h/b", "http://h/a"
    runs = Runs(table.database)
    first = table.for_run(runs.start(source).id)
    Ledger(first, source).record(b, Outcome(Event.FAILED, 503, "HTTP 503"))  # b found first
    Ledger(first, source).record(a, Outcome(Event.CACHED, 200, columns={"checksum": "same"}))
    Ledger(first, source).mark_indexed([(a, "same")])
    fetched = first.get(source, a)["last_fetched"]
    runs.end(first.run_id, RunState.FINISHED, {}, "finished")
    table = table.for_run(runs.start(source).id)
    Frontier(table.database, source, table.run_id, "me").add([Entry(a, 0), Entry(b, 0)])
    Ledger(table, source).record(
        b, Outcome(Event.CACHED, 200, columns={"checksum": "same", "cached_by": "n"})
    )  # a 304's access update
    assert Ledger(table, source).settle_pending("n") == [a]  # b, found first, keeps the content
    row = table.get(source, a)
    assert (row["status"], row["duplicate_of"], row["frontier"], row["last_fetched"]) == (911, b, "queued", fetched)
