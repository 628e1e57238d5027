"""The ledger alone (searchcrawl/store/ledger.py): a source's writes, over a document table on SQLite."""

from __future__ import annotations

import pytest

from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.ledger import Ledger


def cached(checksum: str) -> Outcome:
    return Outcome(Event.CACHED, 200, columns={"checksum": checksum})


def test_a_ledger_writes_its_sources_rows(tmp_path) -> None:
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    ledger = Ledger(table, "s", max_failures=2)
    ledger.record("http://h/a", cached("one"))
    ledger.record_excluded([("http://h/out", 901, 1, "off-site")])
    assert ledger.mark_indexed([("http://h/a", "one")]) == ["http://h/a"]
    ledger.record("http://h/a", Outcome(Event.FAILED, 503, "HTTP 503"))
    assert ledger.record("http://h/a", Outcome(Event.FAILED, 503, "HTTP 503")) == "removing"  # its max_failures
    ledger.mark_removed(["http://h/a"])
    assert table.count_by("s", "state") == {"removed": 1, "excluded": 1}
    assert table.count_by("other", "state") == {}


def test_solr_refuses_only_the_content_it_was_sent(tmp_path) -> None:
    """A refusal marks a row refused (924, out of the index) only while it is pending with the
    content Solr refused: one cached again meanwhile stays pending, one not pending is left alone."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    ledger = Ledger(table, "s")
    for url in ("http://h/a", "http://h/b", "http://h/c"):
        ledger.record(url, cached("old"))
    ledger.record("http://h/b", cached("new"))  # cached again while the old content was pushed
    ledger.mark_indexed([("http://h/c", "old")])
    ledger.mark_refused([(url, "old", "immense term") for url in ("http://h/a", "http://h/b", "http://h/c", "http://h/x")])
    a, b, c = (table.get("s", url) for url in ("http://h/a", "http://h/b", "http://h/c"))
    assert a is not None and (a["state"], a["status"], a["reason"]) == ("removing", 924, "refused by Solr: immense term")
    assert b is not None and (b["state"], b["checksum"]) == ("pending", "new")
    assert c is not None and c["state"] == "indexed"
    assert table.get("s", "http://h/x") is None


def test_what_a_tables_writes_do_is_fixed_for_its_life(tmp_path) -> None:
    """Issue 54: three mutable flags on the table changed what every write did. A table's run,
    test mode and promotion of duplicates are now given when it is made; another run (or a
    closing crawl) is another table over the same database."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    with pytest.raises(AttributeError):
        table.run_id = 3  # type: ignore[misc]
    run = table.for_run(7, test_mode=True)
    closing = run.closing()
    assert (table.run_id, table.test_mode, table.promotes_duplicates) == (None, False, True)
    assert (run.run_id, run.test_mode, run.promotes_duplicates) == (7, True, True)
    assert (closing.run_id, closing.test_mode, closing.promotes_duplicates) == (7, True, False)
    assert run.for_run(8).test_mode and run.database is closing.database is table.database
