"""The ledger's decisions as a table: a row as it is, an outcome -> the new state, the delta the
run reports, the failure count (searchcrawl/rules/lifecycle.py). The document table only writes
what these decide (tests/store covers the writing)."""

from __future__ import annotations

import pytest

from searchcrawl.rules.lifecycle import Change, Delta, Event, Outcome, Row, State, decide, keeps_request, original_to_check

D, E, S = Delta, Event, State
INDEXED = Row(S.INDEXED, 200, 0, in_solr=True)
PENDING_NEW = Row(S.PENDING, 200, 0, in_solr=False)  # cached, never acknowledged by Solr
PENDING_SEEN = Row(S.PENDING, 200, 0, in_solr=True)  # pushed again: Solr holds a version
REMOVING = Row(S.REMOVING, 404, 0, in_solr=True)
# the same rows in a run whose report already says something of them
LEFT_IN_RUN = Row(S.REMOVING, 404, 0, in_solr=True, reported=D.DELETED)
HELD_IN_RUN = Row(S.REMOVING, 404, 0, in_solr=True, reported=D.HELD)
ENTERED_PENDING = Row(S.PENDING, 200, 0, in_solr=False, entered=True, reported=D.NEW)
ENTERED_PUSHED = Row(S.INDEXED, 200, 0, in_solr=True, entered=True, reported=D.NEW)
ENTERED_LEFT = Row(S.REMOVED, 404, 0, in_solr=False, entered=True, reported=D.NEW)
REMOVED_GONE = Row(S.REMOVED, 404, 0)
# a copy replaced in the run by another copy of the content it holds in Solr (status 911)
REPLACED_IN_RUN = Row(S.REMOVING, 911, 0, in_solr=True, reported=D.DELETED, indexed_checksum="c1")

GONE = Outcome(E.GONE, 404, "HTTP 404")
EXCLUDED = Outcome(E.EXCLUDED, 904, "a pattern")
FAILED = Outcome(E.FAILED, 503, "HTTP 503")
CACHED = Outcome(E.CACHED, 200, "indexed")
SAME = Outcome(E.CACHED, 200, "indexed", kind=D.UNCHANGED)  # a forced recrawl's same content
UNCHANGED = Outcome(E.UNCHANGED, 304, "not modified", kind=D.NOT_MODIFIED)
CACHED_C1 = Outcome(E.CACHED, 200, "indexed", columns={"checksum": "c1"})  # the content Solr holds
CACHED_C2 = Outcome(E.CACHED, 200, "indexed", columns={"checksum": "c2"})

# (the row, the outcome) -> (its next state, the delta the run reports, its failure count)
TABLE: list[tuple[str, Row | None, Outcome, tuple[State, Delta | None, int]]] = [
    ("a new page", None, CACHED, (S.PENDING, D.NEW, 0)),
    ("a new page, gone", None, GONE, (S.FETCHED, D.EXCLUDED, 0)),
    ("a new page, failing", None, FAILED, (S.FAILED, D.FAILED, 1)),
    ("an indexed page, changed", INDEXED, CACHED, (S.PENDING, D.CHANGED, 0)),
    ("an indexed page, the same content pushed again", INDEXED, SAME, (S.PENDING, D.UNCHANGED, 0)),
    ("an indexed page, not modified", INDEXED, UNCHANGED, (S.INDEXED, D.NOT_MODIFIED, 0)),
    ("an indexed page, gone", INDEXED, GONE, (S.REMOVING, D.DELETED, 0)),
    ("an indexed page, excluded", INDEXED, EXCLUDED, (S.REMOVING, D.DELETED, 0)),
    ("an indexed page, failing once", INDEXED, FAILED, (S.INDEXED, D.FAILED, 1)),
    ("an indexed page, failing a third time", Row(S.INDEXED, 503, 2, True), FAILED, (S.REMOVING, D.DELETED, 3)),
    (
        "a failure the crawler's own",
        Row(S.INDEXED, 926, 2, True),
        Outcome(E.FAILED, 926, "Tika", counted=False),
        (S.INDEXED, D.FAILED, 2),
    ),
    ("a failing page that answers again", Row(S.INDEXED, 503, 2, True), UNCHANGED, (S.INDEXED, D.NOT_MODIFIED, 0)),
    ("cached, never in Solr, gone", PENDING_NEW, GONE, (S.REMOVING, D.EXCLUDED, 0)),
    ("cached, in Solr, gone", PENDING_SEEN, GONE, (S.REMOVING, D.DELETED, 0)),
    ("cached, acknowledged", PENDING_NEW, Outcome(E.INDEXED), (S.INDEXED, None, 0)),
    ("cached, refused by Solr", PENDING_SEEN, Outcome(E.REFUSED, 924, "immense term"), (S.REMOVING, D.REFUSED, 0)),
    ("leaving, its deletion acknowledged", REMOVING, Outcome(E.REMOVED), (S.REMOVED, None, 0)),
    ("leaving, held by the guard", REMOVING, Outcome(E.HELD), (S.REMOVING, D.HELD, 0)),
    ("removed long ago, still gone", REMOVED_GONE, GONE, (S.REMOVED, None, 0)),
    ("removed long ago, back", REMOVED_GONE, CACHED, (S.PENDING, D.NEW, 0)),
    ("found in Solr by a new table", None, Outcome(E.FOUND, 200, "taken over"), (S.INDEXED, None, 0)),
    # what the run's report already says of the URL
    ("left in the run, back again", LEFT_IN_RUN, CACHED, (S.PENDING, D.CHANGED, 0)),
    ("left in the run, then failing", LEFT_IN_RUN, FAILED, (S.REMOVING, None, 1)),
    ("left in the run, then excluded", LEFT_IN_RUN, EXCLUDED, (S.REMOVING, None, 0)),
    ("left in the run, then the same content cached", LEFT_IN_RUN, SAME, (S.PENDING, D.UNCHANGED, 0)),
    ("held in the run, back again", HELD_IN_RUN, CACHED, (S.PENDING, D.CHANGED, 0)),
    # the sequence test, seed 2, crawl 9: a copy replaced, then the group's holder again (a copy
    # naming it canonical met later), cached with the content Solr held all along: unchanged
    ("replaced in the run, back with the content Solr holds", REPLACED_IN_RUN, CACHED_C1, (S.PENDING, D.UNCHANGED, 0)),
    ("replaced in the run, back with other content", REPLACED_IN_RUN, CACHED_C2, (S.PENDING, D.CHANGED, 0)),
    (
        "left in the run, its checksum no longer what Solr holds",
        Row(S.REMOVING, 911, 0, in_solr=True, reported=D.DELETED, indexed_checksum=None),
        CACHED_C1,
        (S.PENDING, D.CHANGED, 0),
    ),
    (
        "held in the run, back with the content Solr holds",
        Row(S.REMOVING, 404, 0, in_solr=True, reported=D.HELD, indexed_checksum="c1"),
        CACHED_C1,
        (S.PENDING, D.UNCHANGED, 0),
    ),
    (
        "an indexed page, the same checksum cached: changed as before",
        Row(S.INDEXED, 200, 0, True, indexed_checksum="c1"),
        CACHED_C1,
        (S.PENDING, D.CHANGED, 0),
    ),
    ("held in the run, then not modified", HELD_IN_RUN, UNCHANGED, (S.REMOVING, None, 0)),
    ("entered in the run, cached again", ENTERED_PENDING, CACHED, (S.PENDING, D.NEW, 0)),
    ("entered in the run, pushed, changed", ENTERED_PUSHED, CACHED, (S.PENDING, D.NEW, 0)),
    ("entered in the run, pushed, not modified", ENTERED_PUSHED, UNCHANGED, (S.INDEXED, D.NEW, 0)),
    ("entered in the run, pushed, gone: no deletion", ENTERED_PUSHED, GONE, (S.REMOVING, D.EXCLUDED, 0)),
    ("entered in the run, left, back again", ENTERED_LEFT, CACHED, (S.PENDING, D.NEW, 0)),
]


@pytest.mark.parametrize(("row", "outcome", "expected"), [case[1:] for case in TABLE], ids=[case[0] for case in TABLE])
def test_the_ledger_decides(row: Row | None, outcome: Outcome, expected: tuple[State, Delta | None, int]) -> None:
    change = decide(row, outcome, max_failures=3)
    assert (change.state, change.delta, change.failures) == expected


# (the row, the outcome) -> (it leaves the index: its duplicates may take its place, it is a
# copy out of the index: the group's holder may be called back, it entered the index in the run)
AFTERMATH: list[tuple[str, Row | None, Outcome, tuple[bool, bool, bool]]] = [
    ("an indexed page, gone", INDEXED, GONE, (True, False, False)),
    ("an indexed page, a duplicate now", INDEXED, Outcome(E.GONE, 911, "duplicate of /a", kind=D.DUPLICATE), (True, True, False)),
    ("a new duplicate", None, Outcome(E.GONE, 911, "duplicate of /a", kind=D.DUPLICATE), (False, True, False)),
    (
        "a replaced copy leaving, not modified",
        Row(S.REMOVING, 911, 0, True),
        Outcome(E.UNCHANGED, 912, "same"),
        (False, True, False),
    ),
    ("an indexed page, not modified", INDEXED, UNCHANGED, (False, False, False)),
    ("a new page", None, CACHED, (False, False, True)),
    ("an indexed page, failing", INDEXED, FAILED, (False, False, False)),
    ("leaving, gone again", REMOVING, GONE, (False, False, False)),
]


@pytest.mark.parametrize(("row", "outcome", "expected"), [case[1:] for case in AFTERMATH], ids=[case[0] for case in AFTERMATH])
def test_what_follows_a_change(row: Row | None, outcome: Outcome, expected: tuple[bool, bool, bool]) -> None:
    change: Change = decide(row, outcome)
    assert (change.leaves_index, change.copy_out_of_index, change.enters) == expected


# an outcome -> (its row keeps the request's data, the original to check is still in the index)
REQUEST: list[tuple[str, Outcome, tuple[bool, str | None]]] = [
    ("a failure, asked again later", FAILED, (True, None)),
    ("a duplicate", Outcome(E.GONE, 911, "dup", columns={"duplicate_of": "http://h/a"}), (True, "http://h/a")),
    (
        "a replacement, not finished in the run",
        Outcome(E.GONE, 911, "dup", columns={"duplicate_of": "http://h/a"}, finishes=False),
        (True, None),
    ),
    ("a page cached", CACHED, (False, None)),
    ("a page gone", GONE, (False, None)),
]


@pytest.mark.parametrize(("outcome", "expected"), [case[1:] for case in REQUEST], ids=[case[0] for case in REQUEST])
def test_what_a_finished_row_keeps(outcome: Outcome, expected: tuple[bool, str | None]) -> None:
    assert (keeps_request(outcome), original_to_check(outcome)) == expected
