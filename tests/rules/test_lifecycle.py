"""The ledger: every pair of state and event, against the README's rules (searchcrawl/rules/lifecycle.py)."""

from __future__ import annotations

import itertools

import pytest

from searchcrawl.rules.lifecycle import (
    IN_INDEX,
    TRANSITIONS,
    Delta,
    Event,
    Outcome,
    Row,
    State,
    TransitionRefused,
    decide,
    sources_of,
)
from searchcrawl.store.ledger import Ledger

STATES: list[State | None] = [None, *State]
OUT = [None, State.QUEUED, State.EXCLUDED, State.FETCHED, State.FAILED, State.REMOVED]

# The whole table, written out as the README states it: (state, event) -> next state.
EXPECTED: dict[tuple[State | None, Event], State] = {}
for _state in OUT:
    EXPECTED.update(
        {
            (_state, Event.EXCLUDED): State.EXCLUDED,
            (_state, Event.GONE): State.REMOVED if _state == State.REMOVED else State.FETCHED,
            (_state, Event.REDIRECTED): State.REMOVED if _state == State.REMOVED else State.FETCHED,
            (_state, Event.FAILED): State.FAILED,
            (_state, Event.CACHED): State.PENDING,
        }
    )
for _state in (State.PENDING, State.INDEXED, State.REMOVING):
    EXPECTED.update(
        {
            (_state, Event.EXCLUDED): State.REMOVING,
            (_state, Event.GONE): State.REMOVING,
            (_state, Event.REDIRECTED): State.REMOVING,
            (_state, Event.FAILED): _state,
            (_state, Event.CACHED): State.PENDING,
        }
    )
EXPECTED.update(
    {
        (State.INDEXED, Event.UNCHANGED): State.INDEXED,
        (State.PENDING, Event.UNCHANGED): State.PENDING,
        (State.REMOVING, Event.UNCHANGED): State.REMOVING,
        (State.PENDING, Event.INDEXED): State.INDEXED,
        (State.PENDING, Event.REFUSED): State.REMOVING,
        (State.REMOVING, Event.REMOVED): State.REMOVED,
        (State.REMOVING, Event.HELD): State.REMOVING,
        (None, Event.FOUND): State.INDEXED,  # a document Solr holds, taken over by a new table
    }
)


def test_the_transition_table_is_the_documented_one() -> None:
    assert dict(TRANSITIONS) == EXPECTED


@pytest.mark.parametrize(("state", "event"), list(itertools.product(STATES, Event)))
def test_every_pair_of_state_and_event(state: State | None, event: Event) -> None:
    row = None if state is None else Row(state, 200, 0, state in (State.INDEXED, State.REMOVING))
    outcome = Outcome(event, 404 if event in (Event.GONE, Event.EXCLUDED) else 503, "why")
    if (state, event) not in EXPECTED:
        with pytest.raises(TransitionRefused):
            decide(row, outcome)
        return
    change = decide(row, outcome, max_failures=3)
    assert change.state == EXPECTED[state, event]
    assert change.leaves_index == (state in IN_INDEX and change.state == State.REMOVING)
    if event == Event.FAILED:
        assert change.failures == 1
    elif event not in (Event.INDEXED, Event.REMOVED, Event.HELD):
        assert change.failures == 0  # anything but a failure resets the count


def test_a_document_found_in_solr_is_indexed_and_news_to_nobody() -> None:
    change = decide(None, Outcome(Event.FOUND, 200, "in Solr when the table was new"))
    assert (change.state, change.delta, change.leaves_index) == (State.INDEXED, None, False)
    for state in State:  # only a URL the table does not know is taken over
        with pytest.raises(TransitionRefused):
            decide(Row(state), Outcome(Event.FOUND, 200))


def test_a_failing_document_stays_until_max_failures_then_leaves() -> None:
    row = Row(State.INDEXED, 200, 0, True)
    for number in (1, 2):
        change = decide(row, Outcome(Event.FAILED, 503, "HTTP 503"), max_failures=3)
        assert (change.state, change.failures, change.delta) == (State.INDEXED, number, "failed")
        assert change.reason == f"HTTP 503 (failing crawl {number} of 3)"
        row = Row(change.state, change.status, change.failures, True)
    change = decide(row, Outcome(Event.FAILED, 503, "HTTP 503"), max_failures=3)
    assert (change.state, change.delta, change.leaves_index) == (State.REMOVING, "deleted", True)
    assert change.reason == "HTTP 503 (3 consecutive failing crawls)"


def test_a_failure_of_the_crawlers_own_converter_never_counts() -> None:
    """Tika down for many crawls: the document stays indexed, its failures where the site left them."""
    row = Row(State.INDEXED, 200, 2, True)
    for _ in range(10):
        change = decide(row, Outcome(Event.FAILED, 926, "Tika unreachable", counted=False), max_failures=3)
        assert (change.state, change.status, change.failures, change.delta) == (State.INDEXED, 926, 2, "failed")
        assert change.reason == "Tika unreachable"
        row = Row(change.state, change.status, change.failures, True)
    new = decide(None, Outcome(Event.FAILED, 926, "Tika unreachable", counted=False))
    assert (new.state, new.failures) == (State.FAILED, 0)


def test_the_delta_reports_changes_only() -> None:
    gone = Outcome(Event.GONE, 404, "gone", kind="failed")
    # a 404 removed long ago is not news in every later crawl
    assert decide(Row(State.REMOVED, 404), gone).delta is None
    assert decide(Row(State.FETCHED, 404), gone).delta is None
    assert decide(Row(State.FETCHED, 410), gone).delta == "failed"  # a different status is
    # out of the index before and after, for the same reason: removed, then excluded or failing again
    assert decide(Row(State.REMOVED, 907), Outcome(Event.EXCLUDED, 907, "robots.txt")).delta is None
    assert decide(Row(State.REMOVED, 503), Outcome(Event.FAILED, 503, "HTTP 503")).delta is None
    assert decide(Row(State.REMOVED, 503), Outcome(Event.FAILED, 503, "HTTP 503")).state == State.FAILED
    assert decide(None, gone).delta == "failed"
    # leaving the index is a deletion, whatever removed it (a rule change included)
    assert decide(Row(State.INDEXED, 200, 0, True), Outcome(Event.EXCLUDED, 904, "pattern")).delta == "deleted"
    # a document cached but never in Solr that goes is not a deletion for a searcher
    assert decide(Row(State.PENDING, 200, 0, False), gone).delta == "failed"
    assert decide(Row(State.PENDING, 200, 0, True), gone).delta == "deleted"
    # new: enters the index; changed: Solr held a version of it
    assert decide(None, Outcome(Event.CACHED, 200)).delta == "new"
    assert decide(Row(State.REMOVED, 404), Outcome(Event.CACHED, 200)).delta == "new"
    assert decide(Row(State.PENDING, 200, 0, False), Outcome(Event.CACHED, 200)).delta == "new"
    assert decide(Row(State.INDEXED, 200, 0, True), Outcome(Event.CACHED, 200)).delta == "changed"
    assert decide(Row(State.REMOVING, 200, 0, True), Outcome(Event.HELD)).delta == "held"
    assert decide(Row(State.PENDING, 200, 0, True), Outcome(Event.REFUSED, 924, "immense term")).delta == "refused"
    # Solr's acknowledgements change nothing the report says
    assert decide(Row(State.PENDING, 200), Outcome(Event.INDEXED)).delta is None
    assert decide(Row(State.REMOVING, 404), Outcome(Event.REMOVED)).delta is None


def test_a_forced_recrawl_of_the_same_content_is_unchanged_though_pushed_again() -> None:
    """Issue 53: a forced recrawl called every page it pushed again changed. The content it was
    indexed with (the cache says so with kind UNCHANGED) is unchanged; a new one is changed; a URL
    that was not in the index is new whatever it says."""
    same = Outcome(Event.CACHED, 200, kind=Delta.UNCHANGED)
    change = decide(Row(State.INDEXED, 200, 0, True), same)
    assert (change.state, change.delta) == (State.PENDING, "unchanged")
    assert decide(Row(State.INDEXED, 200, 0, True), Outcome(Event.CACHED, 200)).delta == "changed"
    assert decide(None, same).delta == "new"
    assert decide(Row(State.PENDING, 200, 0, False), same).delta == "new"  # never in Solr


def test_a_document_that_cannot_be_made_is_failed_and_a_redirect_is_redirected() -> None:
    """Issue 53: conversion failures (921) were reported excluded, as were URLs that redirect.
    Neither was kept out by a rule: 921 and 922 are failed; a redirect (301, 302, 303, 307, 308,
    followed or not) is redirected, and still deleted when it was in the index; its target is
    reported on its own. Only a change is news, as for every URL out of the index."""
    for status in (921, 922):
        assert decide(None, Outcome(Event.GONE, status, "not converted")).delta == "failed"
        assert decide(Row(State.FETCHED, status), Outcome(Event.GONE, status, "again")).delta is None
        assert decide(Row(State.INDEXED, 200, 0, True), Outcome(Event.GONE, status, "broken now")).delta == "deleted"
    assert decide(None, Outcome(Event.GONE, 923, "no text")).delta == "excluded"  # nothing to index: no failure
    for status in (302, 303, 307):
        assert decide(None, Outcome(Event.REDIRECTED, status, "redirected")).delta == "redirected"
    for status in (301, 308):  # moved for good; out of the boundary, not followed
        assert decide(None, Outcome(Event.GONE, status, "moved")).delta == "redirected"
    assert decide(Row(State.FETCHED, 302), Outcome(Event.REDIRECTED, 302, "still")).delta is None
    assert decide(Row(State.FETCHED, 302), Outcome(Event.GONE, 301, "moved")).delta == "redirected"
    assert decide(Row(State.INDEXED, 200, 0, True), Outcome(Event.REDIRECTED, 302, "redirected")).delta == "deleted"
    assert decide(Row(State.INDEXED, 200, 0, True), Outcome(Event.GONE, 301, "moved")).delta == "deleted"
    assert decide(None, Outcome(Event.EXCLUDED, 901, "domain")).delta == "excluded"


def test_a_redirect_that_loops_is_redirected() -> None:
    """Issue 53: a 302 to the URL itself (or back to an earlier URL of its chain, or one too
    many) is refused as a loop (940), which was reported excluded, though no rule kept it out:
    the URL answers with a redirect, as those that are followed. Deleted when it was indexed."""
    loop = Outcome(Event.EXCLUDED, 940, "redirect loop back to http://h/a")
    assert decide(None, loop).delta == "redirected"
    assert decide(Row(State.EXCLUDED, 940), loop).delta is None  # still so: no news
    assert decide(Row(State.INDEXED, 200, 0, True), loop).delta == "deleted"


def test_acknowledgements_keep_the_status() -> None:
    assert decide(Row(State.REMOVING, 404, 0, True), Outcome(Event.REMOVED)).status == 404
    assert decide(Row(State.PENDING, 200), Outcome(Event.INDEXED)).status == 200


def test_bulk_events_come_from_one_state() -> None:
    assert sources_of(Event.INDEXED) == {State.PENDING}
    assert sources_of(Event.REMOVED) == {State.REMOVING}
    assert sources_of(Event.HELD) == {State.REMOVING}


def test_the_ledger_writer_alone_records_what_components_report(tmp_path) -> None:
    """LedgerWriter built with Scrapy's get_crawler: the signal, a NotIndexed drop, a plain
    DropItem of a custom pipeline and a pipeline error each give the URL its row."""
    from scrapy import signals
    from scrapy.exceptions import DropItem
    from twisted.python.failure import Failure

    from searchcrawl.crawl.exceptions import NotIndexed
    from searchcrawl.crawl.items import CrawledDocument
    from searchcrawl.crawl.signals import url_outcome
    from tests.components import close_stores, ledger_of, source_crawler

    crawler = source_crawler(tmp_path)
    writer = ledger_of(crawler)
    send = crawler.signals.send_catch_log
    item = lambda url: CrawledDocument("unit", url, 1)  # noqa: E731
    send(url_outcome, url="http://h.test/a", outcome=Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    send(
        signals.item_dropped,
        item=item("http://h.test/a"),
        response=None,
        spider=None,
        exception=NotIndexed(Outcome(Event.GONE, 404, "gone"), "gone"),
    )
    send(signals.item_dropped, item=item("http://h.test/b"), response=None, spider=None, exception=DropItem("mine"))
    send(signals.item_error, item=item("http://h.test/c"), response=None, spider=None, failure=Failure(ValueError("bad")))
    table = writer.table
    rows = {url: table.get("unit", url) for url in ("http://h.test/a", "http://h.test/b", "http://h.test/c")}
    assert (rows["http://h.test/a"]["state"], rows["http://h.test/a"]["status"]) == ("removing", 404)
    assert (rows["http://h.test/b"]["status"], rows["http://h.test/b"]["reason"]) == (934, "dropped by a pipeline: mine")
    assert (rows["http://h.test/c"]["state"], rows["http://h.test/c"]["status"]) == ("failed", 925)
    assert "ValueError: bad" in rows["http://h.test/c"]["reason"] and rows["http://h.test/c"]["failures"] == 1
    assert writer.max_failures == 3
    close_stores(crawler)


def test_a_deletion_stays_the_runs_word_whatever_comes_after_it_in_the_run(tmp_path) -> None:
    """Found by the long sequence: a URL that left the index, then failed or was excluded later in
    the same run, was reported as failed or excluded instead of deleted."""
    from searchcrawl.store import Database, Deltas, DocumentTable
    from searchcrawl.store.runs import Runs

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    table = table.for_run(Runs(table.database).start("run").id)
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    Ledger(table, "run").mark_indexed([("http://h/a", "c")])
    table = table.for_run(table.run_id + 100)  # a later run
    Ledger(table, "run").record("http://h/a", Outcome(Event.GONE, 410, "gone", kind="failed"))
    Ledger(table, "run").mark_removed(["http://h/a"])
    Ledger(table, "run").record("http://h/a", Outcome(Event.FAILED, 503, "HTTP 503"))
    assert Deltas(table.database).report("run", table.run_id) == {"deleted": ["http://h/a"]}


def test_a_url_that_entered_the_index_in_this_run_stays_new_whatever_comes_after_it_in_the_run(tmp_path) -> None:
    """Found by the short sequence (seed 89) on a slow machine: a page that entered the index in
    a run was pushed to Solr during it (SEARCHCRAWL_PUSH_INTERVAL), then fetched again in the same
    run (a duplicate taking over from an original that left): it was reported changed, or
    unchanged, instead of new. What a run reports is what it did from its start."""
    from searchcrawl.store import Database, Deltas, DocumentTable
    from searchcrawl.store.runs import Runs

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    table = table.for_run(Runs(table.database).start("run").id)
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    Ledger(table, "run").mark_indexed([("http://h/a", "c")])  # pushed during the run
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "d"}))
    assert Deltas(table.database).report("run", table.run_id) == {"new": ["http://h/a"]}
    Ledger(table, "run").mark_indexed([("http://h/a", "d")])
    Ledger(table, "run").record("http://h/a", Outcome(Event.UNCHANGED, 200, kind="unchanged"))
    assert Deltas(table.database).report("run", table.run_id) == {"new": ["http://h/a"]}
    # a later run: changed is news again
    table = table.for_run(table.run_id + 100)
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "e"}))
    assert Deltas(table.database).report("run", table.run_id) == {"changed": ["http://h/a"]}


def test_a_url_that_entered_the_index_and_left_it_in_one_run_is_neither_new_nor_deleted(tmp_path) -> None:
    """Found by the long sequence (seed 14, crawl 22): a page cached in a run was pushed during it,
    then its canonical duplicate came back and took its place in the same run: the report listed
    it deleted, though no searcher had it before the run nor has it after. It says duplicate; and
    if the mass-deletion guard keeps it in Solr, held. However often it comes and goes in the run
    (review: queued again as a duplicate, then 404), it is no deletion; back at the end, it is new."""
    from searchcrawl.store import Database, Deltas, DocumentTable
    from searchcrawl.store.runs import Runs

    entered = Row(State.INDEXED, 200, 0, True, entered=True)
    replaced = Outcome(Event.GONE, 200, "duplicate", kind="duplicate")
    assert (decide(entered, replaced).state, decide(entered, replaced).delta) == (State.REMOVING, "duplicate")
    assert decide(Row(State.INDEXED, 200, 0, True), replaced).delta == "deleted"

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    table = table.for_run(Runs(table.database).start("run").id)
    report = lambda: Deltas(table.database).report("run", table.run_id)  # noqa: E731
    duplicate = Outcome(Event.GONE, 200, "duplicate", kind="duplicate", columns={"duplicate_of": "http://h/b"})
    for url in ("http://h/a", "http://h/c", "http://h/d"):
        Ledger(table, "run").record(url, Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
        Ledger(table, "run").mark_indexed([(url, "c")])  # pushed during the run
        Ledger(table, "run").record(url, duplicate)
    assert table.get("run", "http://h/a")["state"] == "removing"  # in Solr: it must still leave
    assert report() == {"duplicate": ["http://h/a", "http://h/c", "http://h/d"]}
    Ledger(table, "run").record("http://h/c", Outcome(Event.GONE, 404, "gone", kind="failed"))  # queued again: 404
    Ledger(table, "run").record("http://h/d", Outcome(Event.CACHED, 200, columns={"checksum": "d"}))  # queued again: back
    assert report() == {"duplicate": ["http://h/a"], "failed": ["http://h/c"], "new": ["http://h/d"]}
    Ledger(table, "run").hold_removals()  # the guard keeps them in Solr: the report says so
    assert report() == {"held": ["http://h/a", "http://h/c"], "new": ["http://h/d"]}


def test_a_url_deleted_in_the_run_and_pushed_again_with_its_content_is_unchanged(tmp_path) -> None:
    """A forced recrawl's unchanged page that left the index earlier in the run (its removal
    held, then the page back) is in the index at both ends with the same content: unchanged,
    not the deletion that the run no longer did."""
    from searchcrawl.store import Database, Deltas, DocumentTable
    from searchcrawl.store.runs import Runs

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    table = table.for_run(Runs(table.database).start("run").id)
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    Ledger(table, "run").mark_indexed([("http://h/a", "c")])
    table = table.for_run(table.run_id + 100)  # a later run
    Ledger(table, "run").record("http://h/a", Outcome(Event.GONE, 404, "gone", kind="failed"))
    assert Deltas(table.database).report("run", table.run_id) == {"deleted": ["http://h/a"]}
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, kind=Delta.UNCHANGED, columns={"checksum": "c"}))
    assert Deltas(table.database).report("run", table.run_id) == {"unchanged": ["http://h/a"]}


def test_a_url_that_left_the_index_and_came_back_in_one_run_is_changed(tmp_path) -> None:
    """Review: a URL in the index when the run started, deleted in it (its removal pushed: a run
    killed and resumed), then cached again in the same run was reported new; it was in the index
    at both ends."""
    from searchcrawl.store import Database, Deltas, DocumentTable
    from searchcrawl.store.runs import Runs

    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    runs = Runs(table.database)
    table = table.for_run(runs.start("run").id)
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    Ledger(table, "run").mark_indexed([("http://h/a", "c")])
    table = table.for_run(table.run_id + 100)  # a later run
    Ledger(table, "run").record("http://h/a", Outcome(Event.GONE, 404, "gone", kind="failed"))
    Ledger(table, "run").mark_removed(["http://h/a"])
    assert Deltas(table.database).report("run", table.run_id) == {"deleted": ["http://h/a"]}
    Ledger(table, "run").record("http://h/a", Outcome(Event.CACHED, 200, columns={"checksum": "d"}))
    assert Deltas(table.database).report("run", table.run_id) == {"changed": ["http://h/a"]}
    Ledger(table, "run").mark_indexed([("http://h/a", "d")])
    Ledger(table, "run").record("http://h/a", Outcome(Event.GONE, 200, "duplicate", kind="duplicate"))  # and leaves again
    assert Deltas(table.database).report("run", table.run_id) == {"deleted": ["http://h/a"]}
