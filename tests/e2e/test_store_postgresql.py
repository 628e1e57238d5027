"""The document table on the session's real PostgreSQL server: the tests of
tests.store.test_document_table that take a ``backend``, there on SQLite, run here on PostgreSQL,
and the ones of PostgreSQL alone."""

import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, inspect, text

from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store import Database, DocumentTable, SchemaOutdated
from searchcrawl.store.database import create_db_engine, run_migrations
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import RunState, documents
from searchcrawl.store.runs import Runs
from tests.benchmarks.plan import fill
from tests.store.test_anchor_table import (  # noqa: F401 - the tests of a ``backend``, run here with this module's
    test_a_batch_of_outcomes_marks_their_targets_in_one_statement,
    test_a_change_of_a_pages_readers_marks_every_target_due,
    test_a_page_back_from_removing_with_a_link_to_it_in_the_same_batch_is_marked,
    test_a_page_entering_the_index_with_a_page_that_links_to_it_is_left_to_its_push,
    test_a_pages_anchors_follow_it_through_change_and_mark_their_targets_due,
    test_a_target_is_unmarked_only_of_the_marks_read_before_its_field_was_set,
    test_only_pages_in_the_index_give_anchors,
)
from tests.store.test_document_table import (  # noqa: F401 - the tests of a ``backend``, run here with this module's
    exercise,
    test_a_duplicate_whose_original_left_meanwhile_is_fetched_again_not_marked,
    test_a_holder_whose_content_changes_frees_its_copies_in_the_same_run,
    test_a_joining_node_takes_back_the_leases_of_nodes_gone_and_no_others,
    test_an_unchanged_outcomes_validators_are_kept_only_over_the_content_compared,
    test_documents_found_in_solr_become_indexed_rows_and_known_rows_stay,
    test_migrations_match_the_models,
    test_processes_leasing_from_one_frontier_at_once_never_lease_a_url_twice,
    test_run_and_frontier_states_are_stored_as_their_values,
    test_two_nodes_queueing_overlapping_links_at_once_queue_each_once_and_lose_none,
)
from tests.store.test_migration_0012 import check_a_failure_leaves_0011_and_its_data, check_keeps_every_urls_state
from tests.store.test_migration_0013 import check_keeps_rows_and_holds_access
from tests.store.test_relevance_rules import check_migration_0022, check_rules_are_kept


@pytest.fixture(params=["postgresql"])
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def test_a_read_only_open_of_a_postgresql_schema_without_the_tables_is_refused_untouched(tmp_path, postgres_url: str) -> None:
    """As tests.store.test_document_table's read-only open of SQLite files: a database without
    searchcrawl's tables is refused, and nothing is created in it."""
    schema = f"readonly_{tmp_path.name[-8:].replace('-', '_')}".lower()
    engine = create_db_engine(postgres_url)
    with engine.begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = f"{postgres_url}?options=-csearch_path%3D{schema}"
    with pytest.raises(SchemaOutdated):
        Database(url, migrate=False)
    assert inspect(create_db_engine(url)).get_table_names(schema=schema) == []


def test_postgresql(postgres_url: str) -> None:
    exercise(DocumentTable(Database(postgres_url)))


def test_postgresql_index_methods_are_the_models(postgres_url: str) -> None:
    """Alembic's comparison leaves out an index's method (USING): the migrations' indexes on
    PostgreSQL have the models' (hash for duplicate_of), given them by a PostgreSQL engine."""
    engine = create_db_engine(postgres_url)
    run_migrations(engine)
    found = {i["name"]: i.get("dialect_options", {}).get("postgresql_using") for i in inspect(engine).get_indexes("documents")}
    expected = {i.name: i.dialect_kwargs.get("postgresql_using") or None for i in documents.indexes}  # False: the default (btree)
    assert expected["ix_documents_duplicate_of"] == "hash"
    assert {name: found[name] for name in expected} == expected
    engine.dispose()


@pytest.fixture
def schema_url(tmp_path, postgres_url: str) -> Iterator[tuple[Engine, str]]:
    """An engine and URL of a schema of its own on the session's server: a database to migrate from scratch."""
    schema = f"m_{uuid.uuid4().hex[:16]}"  # unique on the session's server (tests' names may end alike)
    with create_db_engine(postgres_url).begin() as connection:
        connection.exec_driver_sql(f"CREATE SCHEMA {schema}")
    url = f"{postgres_url}?options=-csearch_path%3D{schema}"
    engine = create_db_engine(url)
    yield engine, url
    engine.dispose()


def test_migration_0012_keeps_every_urls_frontier_and_redirect_state_on_postgresql(schema_url: tuple[Engine, str]) -> None:
    check_keeps_every_urls_state(*schema_url, "m")


def test_a_failure_inside_migration_0012_leaves_postgresql_at_0011_with_its_data(schema_url: tuple[Engine, str]) -> None:
    """PostgreSQL's DDL is transactional: the migration's one transaction is rolled back whole."""
    check_a_failure_leaves_0011_and_its_data(*schema_url, "m")


def test_migration_0013_keeps_rows_and_holds_a_restricted_documents_checksum_on_postgresql(
    schema_url: tuple[Engine, str],
) -> None:
    check_keeps_rows_and_holds_access(*schema_url, "m")


def rows_read(engine: Engine, database: Database, schema: str) -> dict[str, tuple[int, int]]:
    """(rows read by sequential scans, by indexes) of the documents and frontier tables of
    ``schema``, once ``database``'s sessions (application_name stale_<schema>) ended."""
    database.engine.dispose()  # a session's counters reach pg_stat_user_tables as it ends
    with engine.connect() as connection:
        query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
        while connection.execute(query, {"name": f"stale_{schema}"}).scalar():
            connection.rollback()
        rows = connection.execute(
            text(
                "SELECT relname, seq_tup_read, coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables "
                "WHERE schemaname = :schema AND relname IN ('documents', 'frontier')"
            ),
            {"schema": schema},
        ).all()
        connection.rollback()
    return {name: (sequential, indexed) for name, sequential, indexed in rows}


def never_analysed(schema_url: tuple[Engine, str], count: int = 0) -> tuple[Engine, Database, str]:
    """The schema's engine, a Database whose sessions ``rows_read`` waits for, and the schema's
    name; with ``count``, as many indexed pages of source "s", their statistics never gathered."""
    engine, url = schema_url
    schema = url.rsplit("search_path%3D", 1)[1]
    database = Database(f"{url}&application_name=stale_{schema}")
    # never, whatever the test's length: the session's server analyses a table that changed once a
    # minute (autovacuum), and a small table analysed may be read whole where a key would do (CI,
    # under load: the copies' settle read the 320 rows of the documents table by a sequential scan)
    with engine.begin() as connection:
        for name in ("documents", "frontier"):
            connection.exec_driver_sql(f"ALTER TABLE {schema}.{name} SET (autovacuum_enabled = false)")
    if count:
        fill(database, "s", count)
    return engine, database, schema


def rows_read_since(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    return {name: (after[name][0] - before[name][0], after[name][1] - before[name][1]) for name in after}


def test_a_first_crawl_queues_its_urls_by_key_while_its_table_grows_from_empty(schema_url: tuple[Engine, str]) -> None:
    """Issue 58, measured at 100,000 URLs (tests/benchmarks/README.md): a first crawl's table grows
    from empty, and a statement planned then (psycopg prepares it after five runs) looked each
    URL's row up by whichever index of the source PostgreSQL took: 13,000 rows read a URL. The
    frontier's rows are written by the ids the documents' insert returns."""
    engine, database, schema = never_analysed(schema_url)
    frontier = Frontier(database, "s", Runs(database).start("s").id, "node")
    before = rows_read(engine, database, schema)
    count = 4_000
    urls = [Entry(f"http://127.0.0.1:8080/section{number % 10}/page{number}.html", 1) for number in range(count)]
    assert sum(frontier.add(urls[start : start + 10]) for start in range(0, count, 10)) == count  # as links come
    after = rows_read(engine, database, schema)
    read_by = rows_read_since(before, after)
    assert read_by["documents"][1] + read_by["documents"][0] <= 3 * count, read_by


def test_a_maintenance_run_reads_a_handful_of_rows_a_url_while_the_statistics_are_stale(schema_url: tuple[Engine, str]) -> None:
    """Issue 58: a table grown by a crawl is planned with stale statistics until autovacuum's
    ANALYZE. Then the plan's batches read the rest of the source each, a page's write read
    every row of the source in its state, and each batch of spared pages the whole frontier and
    the source's rows. On a source of 20,000 rows never analyzed, a maintenance run's plan, two
    pages' outcomes and all of its pages spared read a few rows a URL, none by a sequential scan."""
    count = 20_000
    engine, database, schema = never_analysed(schema_url, count)
    runs = Runs(database)
    first = runs.start("s")
    with database.engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO frontier (document_id, source, run_id, state, depth) SELECT id, source, :run, 'done', depth FROM documents"
            ),
            {"run": first.id},
        )
    runs.end(first.id, RunState.FINISHED, {}, "done")

    def read() -> dict[str, tuple[int, int]]:
        return rows_read(engine, database, schema)

    before = read()
    table = DocumentTable(database).for_run(runs.start("s").id)
    assert Ledger(table, "s").plan_maintenance(lambda url, depth: None) == (count, 0)  # its count right on PostgreSQL too
    urls = [f"http://127.0.0.1:8080/section{number % 100}/page{number}.html" for number in range(count)]
    Ledger(table, "s").record(urls[0], Outcome(Event.CACHED, 200, columns={"checksum": "new", "display_url": urls[0]}))
    Ledger(table, "s").record(urls[1], Outcome(Event.UNCHANGED, 304, "304"))
    spared = Ledger(table, "s").record_spared(
        urls, lambda url, known: Outcome(Event.UNCHANGED, int(Status.SITEMAP_UNCHANGED), "sitemap", fetched=False)
    )
    assert len(spared.urls) == count - 2
    # a first crawl's sitemap: new URLs queued in bulk while the table's statistics say nothing
    # of them (the frontier's rows were looked up by URL, through whichever index of the source
    # the planner took: 13,000 rows read a URL at 100,000, tests/benchmarks/README.md). Counted
    # apart: they read no row at all (measured), so 2,000 of them, in 100 batches (the statement
    # prepared after five runs, as psycopg does), prove it as 20,000 did, in a fifth of the time
    # (the 1,000 batches took half of this test's 34 s at a load of 13)
    spared_by = read()
    frontier = Frontier(database, "s", table.run_id, "node")
    queued = 2_000
    new = [Entry(f"http://127.0.0.1:8080/new/{number}.html", 0) for number in range(queued)]
    assert sum(frontier.add(new[start : start + 20]) for start in range(0, queued, 20)) == queued  # as links come
    after = read()
    queued_by = rows_read_since(spared_by, after)
    assert queued_by["documents"][0] == queued_by["frontier"][0] == 0, queued_by
    assert queued_by["documents"][1] + queued_by["frontier"][1] <= queued, queued_by  # at most a row a URL, by key
    read_by = rows_read_since(before, after)
    assert read_by["documents"][0] == read_by["frontier"][0] == 0
    # by index: the plan's batches and queuing, the spared pages' look-ups and writes (4 a URL);
    # before the fix, 900,000 (documents) and 800,000 sequentially (frontier)
    assert read_by["documents"][1] <= 5 * count + 100
    assert read_by["frontier"][1] <= 4 * count + 100


def test_settling_a_pushs_copies_reads_the_rows_waiting_and_their_copies_by_key(schema_url: tuple[Engine, str]) -> None:
    """Issue 58: the same content cached by two nodes at once is settled before each push, in one
    statement (it was one a cached page). On a source of 20,000 indexed rows never analysed, ten
    pushes of 20 waiting documents, one a copy of an indexed page, read a few rows each by key
    (prepared after five runs, as psycopg does), none by a sequential scan."""
    count = 20_000
    engine, database, schema = never_analysed(schema_url, count)
    table = DocumentTable(database)
    marked = []
    before = rows_read(engine, database, schema)
    for push in range(10):
        for number in range(20):
            checksum = f"{number:064x}" if number == 0 else f"push{push}-{number}"  # the first: page 0's content
            new = f"http://127.0.0.1:8080/new/{push}/{number}.html"
            Ledger(table, "s").record(
                new, Outcome(Event.CACHED, 200, columns={"checksum": checksum, "display_url": new, "cached_by": "n"})
            )
        marked += Ledger(table, "s").settle_pending("n")
        Ledger(table, "s").mark_indexed([(url, checksum) for url, checksum in table.pending("s", "n")])
    after = rows_read(engine, database, schema)
    assert marked == [f"http://127.0.0.1:8080/new/{push}/0.html" for push in range(10)]  # page 0 came first
    read_by = rows_read_since(before, after)
    assert read_by["documents"][0] == 0, read_by
    assert read_by["documents"][1] <= 200 * 20, read_by  # 200 outcomes, their look-ups and the settles'


def test_settling_a_pushs_copies_reads_the_source_at_most_once_a_key(schema_url: tuple[Engine, str]) -> None:
    """CI's fleet test: three nodes cached a site of 1,000 pages before PostgreSQL first analysed
    the table, and the one statement that settled a push (two nested ``IN`` subqueries) ran as
    nested loops over the source's rows: two nodes waited on it for more than ten minutes. Here
    300 pages cached by another node, 20 copies of them by this one, written as a crawl writes
    them: the old statement read 25,613,334 rows. Each content is looked up on its own now; a
    table this small PostgreSQL may still read whole for a key (the source's index is smaller)."""
    engine, database, schema = never_analysed(schema_url)
    table = DocumentTable(database)
    count = 320
    for number in range(count):  # 300 cached by "m", then 20 copies of the first 20 cached by "n"
        columns = {"checksum": f"c{number % 300:03}", "cached_by": "n" if number >= 300 else "m"}
        Ledger(table, "s").record(f"http://127.0.0.1:8080/{number}.html", Outcome(Event.CACHED, 200, columns=columns))
    before = rows_read(engine, database, schema)
    marked = Ledger(table, "s").settle_pending("n")
    read_by = rows_read_since(before, rows_read(engine, database, schema))
    assert marked == [f"http://127.0.0.1:8080/{number}.html" for number in range(300, count)]  # the later copies
    assert read_by["documents"][0] == 0, read_by
    # Linear in the source: the rows waiting once, then per content its copies, and per copy its
    # row read and written, each of which a table this small and never analysed may read whole
    # (columns.py ``each_key``). That the copies are read by key is the 20,000-row test's.
    assert read_by["documents"][1] <= (1 + 3 * 20) * count, read_by


def test_migration_0016_makes_the_relevance_tables_and_keeps_rules_on_postgresql(schema_url: tuple[Engine, str]) -> None:
    check_rules_are_kept(*schema_url)


def test_migration_0022_schedules_best_bets_and_keeps_them_editable_on_postgresql(schema_url: tuple[Engine, str]) -> None:
    check_migration_0022(*schema_url)
