"""How the benchmarks tell the documents a crawl pushed from the anchor fields it set in place
(tests/benchmarks/measure.py): Solr counts both as adds, and how many fields are set depends on
the order pages were pushed in (the Sphinx site's first crawl made 254 Solr adds in one run and
267 in another, the same 235 documents pushed)."""

from __future__ import annotations

import sqlite3

from tests.benchmarks.measure import anchors_logged, apart_from_anchors, last_run_counters


def test_a_phases_solr_updates_are_its_documents_and_its_anchor_fields_apart() -> None:
    assert apart_from_anchors({"solr_updates": 264, "seconds": 1.0}, 29) == {
        "solr_updates": 235,
        "anchor_updates": 29,
        "seconds": 1.0,
    }


def test_the_anchor_fields_of_every_process_of_a_crawl_are_read_from_its_log(tmp_path) -> None:
    """A crawl of ``processes = 2`` writes two stats dumps into one log (its run's counters are
    the ending process's alone); a crawl without a log set none that can be told."""
    log = tmp_path / "crawl.log"
    dump = "1.0 [scrapy.statscollectors] INFO: Dumping Scrapy stats:\n{{'searchcrawl/anchors_set': {},\n 'searchcrawl/indexed': 100}}\n"
    log.write_text(dump.format(3) + "1.5 [x] INFO: a line\n" + dump.format(0), encoding="utf-8")
    assert anchors_logged(log) == 3
    assert anchors_logged(tmp_path / "none.log") == 0


def test_an_older_commits_document_table_has_no_counters_this_code_reads(tmp_path) -> None:
    """The ledger (page_costs.py) crawls with an older commit's code, whose table is at an older
    schema revision: its run counters are none this code reads, and the table is left as it is
    (the ledger stopped at its first older crawl, SchemaOutdated)."""
    from sqlalchemy import text

    from searchcrawl.store import Database

    path = tmp_path / "documents.sqlite3"
    database = Database(f"sqlite:///{path}")
    with database.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0011'"))
    database.close()
    assert last_run_counters({"SEARCHCRAWL_DATA_DIR": str(tmp_path)}, "site") == {}
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchone() == ("0011",)
