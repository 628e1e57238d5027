"""A URL's life in a source: its states, what can happen to it, and every allowed transition.

This module is the one owner of those rules. The document table (searchcrawl/store/documents.py) applies what
``decide`` returns and nothing else; the spider, the middlewares and the pipelines only report
what happened, through Scrapy's own channels (the ``url_outcome`` signal, ``RequestRefused``
and ``NotIndexed``, subclasses of ``IgnoreRequest`` and ``DropItem`` carrying an ``Outcome``),
and the ledger writer (crawl/ledger_writer.py) records it; every write of a URL's state goes
through the ledger (store/ledger.py). Plain code, no Scrapy, no database:
``tests/rules/test_lifecycle.py`` walks every pair of state and event, and
``tests/rules/test_lifecycle_table.py`` lists the decisions as a table (a row, an outcome -> its
state, delta and failures; what follows a change; what a finished row keeps).

The rules (docs/maintenance.md, "A URL's life"):

- A URL in the index (``pending`` or ``indexed``) that is excluded, gone, redirected, refused by
  Solr or failing for ``max_failures`` consecutive crawls goes to ``removing``; Solr's
  acknowledgement of the deletion makes it ``removed``. A ``pending`` document may already be in
  Solr (a push acknowledged but not yet marked), so it is removed too: deleting an id Solr does
  not hold is harmless.
- A transient failure of an indexed URL keeps it in the index and counts; anything else resets
  the count.
- Solr's acknowledgement moves ``pending`` to ``indexed``, and only that. A document Solr holds
  under the source when the table knows nothing of the source (``found``: a new table over an
  existing index) starts ``indexed``, with the checksum Solr keeps, and is news to nobody.
- The delta report says what changed for a searcher: ``new`` (enters the index), ``changed``,
  ``deleted`` (leaves it; the reason says why), ``held`` (the mass-deletion guard kept it),
  ``refused`` (Solr refused it), ``unchanged`` (the same content, pushed again or not), and for
  URLs outside the index only a *change* of state or status (``excluded``, ``failed``,
  ``redirected``, ``duplicate``): a 404 removed long ago is not reported
  again by every later crawl. A run reports what changed from its start: a URL that enters the
  index and leaves it again in one run (pushed meanwhile, then replaced by a duplicate) is
  neither new nor deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from searchcrawl.rules.status_codes import Status
from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _


class State(StrEnum):
    """Where a URL is in its life: the document table's ``state`` column."""

    QUEUED = "queued"  # met, waiting to be fetched for the first time
    EXCLUDED = "excluded"  # a rule keeps it out; never fetched (status says which rule)
    FETCHED = "fetched"  # fetched, nothing to index (gone, redirected, unsupported type, ...)
    FAILED = "failed"  # fetching failed (timeout, DNS, refused); status says how
    PENDING = "pending"  # converted and cached, waiting to be pushed to Solr
    INDEXED = "indexed"  # in Solr
    REMOVING = "removing"  # in Solr, but must leave it (moved, excluded by changed rules, ...)
    REMOVED = "removed"  # was in Solr and has been removed; status says why


# a document's state as the pages word it (worded where shown: ``state_label``)
STATE_LABELS: dict[str, str] = {
    State.QUEUED: N_("queued"),
    State.EXCLUDED: N_("excluded"),
    State.FETCHED: N_("fetched"),
    State.FAILED: N_("failed"),
    State.PENDING: N_("pending"),
    State.INDEXED: N_("indexed"),
    State.REMOVING: N_("removing"),
    State.REMOVED: N_("removed"),
}


def state_label(state: str) -> str:
    """A document's state (``documents.state``) as a page shows it, in the current language; a value
    of no State as it is. The table, the ``?state=`` filter and the command line keep the value."""
    return _(STATE_LABELS[state]) if state in STATE_LABELS else state


class Event(StrEnum):
    """What can happen to a URL."""

    EXCLUDED = "excluded"  # a rule keeps it out (boundary, robots.txt, filter, address guard); not fetched
    GONE = "gone"  # fetched: there is no document to index at this URL (404, 410, moved, noindex, duplicate, ...)
    REDIRECTED = "redirected"  # answered with a temporary redirect, which was followed
    FAILED = "failed"  # a transient failure (5xx, 429, timeout, robots.txt unavailable, processing error)
    UNCHANGED = "unchanged"  # 304, or the same content as indexed
    CACHED = "cached"  # converted and cached: waits for Solr
    INDEXED = "indexed"  # Solr acknowledged the document
    REFUSED = "refused"  # Solr refused the document
    REMOVED = "removed"  # Solr acknowledged its deletion
    HELD = "held"  # the mass-deletion guard refused its deletion in this run
    # Solr holds it under the source and the table knew nothing of the source (a new document
    # table over an existing index): it is taken over as indexed, and checked like any other
    FOUND = "found"


class Delta(StrEnum):
    """What a run's delta report says of a URL: the document table's ``delta`` column
    (docs/maintenance.md, "The delta report")."""

    NEW = "new"  # entered the index
    CHANGED = "changed"  # in the index, with new content
    UNCHANGED = "unchanged"  # the same content as indexed
    NOT_MODIFIED = "not_modified"  # answered 304
    DELETED = "deleted"  # left the index (the reason says why)
    HELD = "held"  # the mass-deletion guard kept it in the index
    REFUSED = "refused"  # Solr refused it
    FAILED = "failed"  # failing: an indexed URL in every crawl it fails, another when it starts to;
    # a document that could not be converted or is too large (921, 922)
    EXCLUDED = "excluded"  # kept out by a rule, gone, noindex (a change of state or status)
    REDIRECTED = "redirected"  # answers with a redirect (301, 302, 303, 307, 308), out of the index
    DUPLICATE = "duplicate"  # the same content as another document of the source


# a delta report's kind as the pages and charts word it (worded where shown: ``delta_label``);
# not_modified keeps its own spelling in English, as the report and `scrapy report` have it
DELTA_LABELS: dict[str, str] = {
    Delta.NEW: N_("new"),
    Delta.CHANGED: N_("changed"),
    Delta.UNCHANGED: N_("unchanged"),
    Delta.NOT_MODIFIED: N_("not_modified"),
    Delta.DELETED: N_("deleted"),
    Delta.HELD: N_("held"),
    Delta.REFUSED: N_("refused"),
    Delta.FAILED: N_("failed"),
    Delta.EXCLUDED: N_("excluded"),
    Delta.REDIRECTED: N_("redirected"),
    Delta.DUPLICATE: N_("duplicate"),
}


def delta_label(kind: str) -> str:
    """A delta report's kind (``documents.delta``, a run's ``delta`` counter) as a page shows it, in
    the current language; a value of no Delta as it is. The report's data keep the value."""
    return _(DELTA_LABELS[kind]) if kind in DELTA_LABELS else kind


IN_INDEX = frozenset({State.PENDING, State.INDEXED})
LASTING_DELTAS = (Delta.DELETED, Delta.HELD)  # what a later outcome of the same run (failed, excluded ...) does not hide
# A URL that entered the index in a run (``Row.entered``) stays new in that run's report: pushed to
# Solr during the run (searchable then) and fetched again in it, or gone and back again, it would
# otherwise read as changed or unchanged; leaving again, as deleted.
ENTERED = Delta.NEW
REFETCHED_DELTAS = (Delta.CHANGED, Delta.UNCHANGED, Delta.NOT_MODIFIED)
# A copy of a content out of the index: a duplicate, or a replaced copy that answered 304 since
COPY_STATUSES = (int(Status.DUPLICATE), int(Status.UNCHANGED))
SEARCHABLE = frozenset({State.INDEXED, State.REMOVING})  # Solr holds a version of it
OUT_OF_INDEX = frozenset({None, State.QUEUED, State.EXCLUDED, State.FETCHED, State.FAILED, State.REMOVED})
LEAVING = (Event.EXCLUDED, Event.GONE, Event.REDIRECTED)
# The events that read what the URL answers now: its ``last_fetched``, which a sitemap's lastmod
# and recheck_gone_days are compared with. A failure read nothing (a 503, a timeout, a login page
# in the page's place): a page that changed before it must not look read since, or its sitemap's
# older lastmod would spare it, and the index keep the old version (the sequence test, sitemaps).
READ_EVENTS = frozenset({Event.GONE, Event.REDIRECTED, Event.UNCHANGED, Event.CACHED})


def _transitions() -> dict[tuple[State | None, Event], State]:
    """Every allowed (state, event) -> next state. ``None``: a URL the table does not know yet.
    FAILED on an indexed URL is listed with its state kept; ``decide`` sends it to removing once
    the failures reach ``max_failures``."""
    table: dict[tuple[State | None, Event], State] = {}
    for state in OUT_OF_INDEX:
        table[state, Event.EXCLUDED] = State.EXCLUDED
        table[state, Event.GONE] = State.REMOVED if state == State.REMOVED else State.FETCHED
        table[state, Event.REDIRECTED] = State.REMOVED if state == State.REMOVED else State.FETCHED
        table[state, Event.FAILED] = State.FAILED
        table[state, Event.CACHED] = State.PENDING
    for state in (*IN_INDEX, State.REMOVING):
        for event in LEAVING:
            table[state, event] = State.REMOVING
        table[state, Event.FAILED] = state
        table[state, Event.CACHED] = State.PENDING
    table[State.INDEXED, Event.UNCHANGED] = State.INDEXED
    table[State.PENDING, Event.UNCHANGED] = State.PENDING
    table[State.REMOVING, Event.UNCHANGED] = State.REMOVING  # read in the index, marked to leave since
    table[State.PENDING, Event.INDEXED] = State.INDEXED
    table[State.PENDING, Event.REFUSED] = State.REMOVING
    table[State.REMOVING, Event.REMOVED] = State.REMOVED
    table[State.REMOVING, Event.HELD] = State.REMOVING
    table[None, Event.FOUND] = State.INDEXED
    return table


TRANSITIONS: Mapping[tuple[State | None, Event], State] = _transitions()

DEFAULT_KIND = {
    Event.EXCLUDED: Delta.EXCLUDED,
    Event.GONE: Delta.EXCLUDED,
    Event.REDIRECTED: Delta.EXCLUDED,
    Event.FAILED: Delta.FAILED,
    Event.UNCHANGED: Delta.UNCHANGED,
    Event.REFUSED: Delta.REFUSED,
    Event.HELD: Delta.HELD,
}


# Answers without a document that the report calls neither excluded (no rule kept them out) nor
# deleted (unless they were in the index): a document that could not be made (not converted,
# too large) is failed; a URL that redirects is redirected, its target reported on its own.
FAILED_STATUSES = frozenset({Status.CONVERSION_FAILED, Status.TOO_LARGE})
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


def default_kind(event: Event, status: int | None) -> Delta | None:
    """The delta kind of an outcome that names none: by its event, and for an answer without a
    document by its status. A redirect that loops (to the URL itself, back to an earlier URL of
    its chain, too many in a row) is redirected too: the URL answers with a redirect, and no
    rule kept it out; one whose target a rule refuses (outside the boundary) is excluded."""
    if event in (Event.GONE, Event.REDIRECTED) and status in REDIRECT_STATUSES:
        return Delta.REDIRECTED
    if status == Status.REDIRECT_LOOP:
        return Delta.REDIRECTED
    if event == Event.GONE and status in FAILED_STATUSES:
        return Delta.FAILED
    return DEFAULT_KIND.get(event)


class TransitionRefused(ValueError):
    """An event that cannot happen to a URL in its state (a bug, or a stale report)."""


@dataclass(frozen=True)
class Outcome:
    """What happened to a URL, as a component reports it."""

    event: Event
    status: int | None = None  # HTTP status or crawler code (searchcrawl.rules.status_codes)
    reason: str | None = None
    depth: int | None = None
    # the delta kind when the URL is not (and was not) in the index (None: ``default_kind``); for
    # CACHED, UNCHANGED when a forced recrawl pushes the content it was indexed with again
    kind: Delta | None = None
    columns: Mapping[str, Any] = field(default_factory=dict)  # validators, checksum, duplicate_of, ...
    # whether a FAILED outcome counts toward max_failures: not when the fault is the crawler's own
    # (its document converter unreachable), which must never remove a site's documents
    counted: bool = True
    # whether the outcome comes from a fetch: not when a sitemap's lastmod spared the request
    # (an UNCHANGED recorded without one), which must keep the URL's last fetch time
    fetched: bool = True
    # whether it ends the URL's part in the current run: not for a document a canonical copy
    # replaced because its indexed content matched, which is still fetched in the run if it has
    # not been yet (its content may have changed since, or it may be gone)
    finishes: bool = True
    # an UNCHANGED document's fetch validators (ETag, Last-Modified), which the next conditional
    # GET sends back, and the checksum of the indexed content it was compared with: they are the
    # validators of that content only, written while the row still holds that checksum (a lease
    # read before another node cached other content would otherwise give it this content's ETag)
    validators: Mapping[str, Any] = field(default_factory=dict)
    compared_checksum: str | None = None
    # the page's links' words as (target URL, text) pairs, when it was parsed (content/anchors.py):
    # they replace its anchors whole; None: its anchors stay as they were (not parsed: a 304, a
    # failure), or go if it leaves the index (store/ledger.py ``_keep_anchors``)
    anchors: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Row:
    """What the ledger needs to know of a URL's row."""

    state: State | None = None
    status: int | None = None
    failures: int = 0
    in_solr: bool = False  # Solr acknowledged a version of it (indexed_at is set)
    # it entered the index in the current run (the table's ``entered_run``): a searcher never saw
    # it before the run, so its leaving again in the run is no deletion (Solr may hold it
    # meanwhile: a push during the run)
    entered: bool = False
    # what the current run's delta report already says of it (the table's ``delta`` when its
    # ``delta_run`` is the current run; None: nothing, or no run): a run reports what changed
    # from its start, not the last of its outcomes (``in_run``)
    reported: Delta | None = None
    # the checksum of the content Solr holds for it, when the table knows it (None: it holds none,
    # or the row's checksum is no longer that content): a URL that left the index in the run and
    # comes back with that very content did not change for a searcher
    indexed_checksum: str | None = None


@dataclass(frozen=True)
class Change:
    """What ``decide`` tells the table to write."""

    state: State
    status: int | None
    reason: str | None
    failures: int
    delta: Delta | None  # None: the delta report has nothing to say about it
    leaves_index: bool  # it was in the index and must leave it: its duplicates may take its place

    @property
    def enters(self) -> bool:
        """It entered the index in the current run (the table keeps the run: ``entered_run``)."""
        return self.delta == ENTERED

    @property
    def copy_out_of_index(self) -> bool:
        """A copy of a content out of the index (a duplicate, or a replaced copy that answered 304
        since): the group's rightful holder may have to be fetched again to hold the content."""
        return self.status in COPY_STATUSES and self.state not in IN_INDEX


def decide(row: Row | None, outcome: Outcome, max_failures: int = 3) -> Change:
    """The next state of a URL whose row is ``row`` (None: unknown) after ``outcome``."""
    row = row or Row()
    event = outcome.event
    state = TRANSITIONS.get((row.state, event))
    if state is None:
        raise TransitionRefused(f"{event.value} cannot happen to a URL that is {row.state or 'unknown'}")
    searchable = row.state in SEARCHABLE or (row.state == State.PENDING and row.in_solr)
    kind = outcome.kind or default_kind(event, outcome.status)
    state, status, reason, failures = _counted(row, outcome, state, max_failures)
    leaves = row.state in IN_INDEX and state == State.REMOVING
    delta = _delta(row, outcome, state, status, kind, searchable)
    return Change(state, status, reason, failures, in_run(row, delta, event), leaves)


def _counted(row: Row, outcome: Outcome, state: State, max_failures: int) -> tuple[State, int | None, str | None, int]:
    """The state, status, reason and consecutive failures after ``outcome``: a counted failure of
    a URL in the index adds one, and the ``max_failures``-th takes it out; Solr's answers keep the
    failures and the status the row had; any other outcome ends the failures."""
    event, status, reason = outcome.event, outcome.status, outcome.reason
    if event == Event.FAILED and not outcome.counted:
        return state, status, reason, row.failures
    if event == Event.FAILED:
        failures = row.failures + 1
        if row.state not in IN_INDEX:
            return state, status, reason, failures
        if failures >= max_failures:
            return State.REMOVING, status, f"{reason} ({failures} consecutive failing crawls)", failures
        return state, status, f"{reason} (failing crawl {failures} of {max_failures})", failures
    if event in (Event.INDEXED, Event.REMOVED, Event.HELD):
        return state, row.status if status is None else status, reason, row.failures
    return state, status, reason, 0


def _delta(row: Row, outcome: Outcome, state: State, status: int | None, kind: Delta | None, searchable: bool) -> Delta | None:
    """What the delta report says of the change (None: nothing new)."""
    event = outcome.event
    if event == Event.CACHED:  # a forced recrawl's same content is unchanged, though pushed again
        if not searchable:
            return Delta.NEW
        return Delta.UNCHANGED if kind == Delta.UNCHANGED or back_unchanged(row, outcome) else Delta.CHANGED
    if event in (Event.INDEXED, Event.REMOVED, Event.FOUND):
        return None
    if event in (Event.HELD, Event.REFUSED, Event.UNCHANGED):
        return kind
    if state == State.REMOVING and searchable and not row.entered:
        return Delta.DELETED
    if row.state in IN_INDEX and event == Event.FAILED:
        return Delta.FAILED  # still in the index, failing: news in every crawl it fails
    if row.state in OUT_OF_INDEX and state in OUT_OF_INDEX and row.status == status:
        return None  # out of the index as before, for the same reason (a 404 removed long ago)
    return kind


def back_unchanged(row: Row, outcome: Outcome) -> bool:
    """Whether a URL that left the index in this run (its report says deleted or held), and is
    cached again, comes back with the very content Solr holds for it: a copy replaced by another
    copy of its content, then the group's holder again (a copy naming it canonical met later).
    Solr never lost it: unchanged for a searcher, not changed (the sequence test, seed 2, crawl 9)."""
    checksum = outcome.columns.get("checksum")
    return row.reported in LASTING_DELTAS and checksum is not None and checksum == row.indexed_checksum


def in_run(row: Row, delta: Delta | None, event: Event) -> Delta | None:
    """The delta of an outcome, given what the run's report already says of the URL
    (``row.reported``): a run reports what changed from its start. A URL that left the index
    (or whose removal was held) in this run and is back in it at the run's end is changed (or
    unchanged, back with the content Solr held: ``back_unchanged``); one
    that left stays deleted (or held) whatever later outcome of the run (failed, excluded ...)
    says, but a re-cached content. One that entered the index in this run stays new, though it
    was pushed to Solr meanwhile and fetched again, or gone and back again."""
    if row.reported in LASTING_DELTAS and delta == ENTERED:
        return Delta.CHANGED  # in the index when the run started, and again at its end
    if row.reported in LASTING_DELTAS and delta not in (None, Delta.CHANGED) and event != Event.CACHED:
        return None  # it left (or its removal was held) in this run: that is what the run reports
    if row.entered and delta in REFETCHED_DELTAS:
        return ENTERED  # it entered the index in this run: new, whatever was pushed meanwhile
    return delta


def keeps_request(outcome: Outcome) -> bool:
    """Whether the URL's row keeps its request's data when the outcome finishes it in the run. A
    duplicate, or a URL that failed, does: it may be asked again, a duplicate in this run should
    its original leave the index (its duplicates are queued again), a failed document of an
    incremental agent in the next (which its listing does not name), and an agent's document is
    nothing without its reference (fields, token, content). Any other drops it: an agent's
    content travels in it, and a document deleted for good must not stay on disk in its row."""
    return outcome.event == Event.FAILED or outcome.columns.get("duplicate_of") is not None


def original_to_check(outcome: Outcome) -> str | None:
    """The original a duplicate is about to be marked against, which must not have left the index
    nor changed its content since the pipeline compared them: if it did (and queued its
    duplicates again), the duplicate is fetched once more in the run to take its place instead. Not a replacement's (an outcome
    that does not finish the URL), whose original is the copy being cached in its place now: one
    that left in this run, come back as the group's holder, was taken for gone, and the replaced
    copy stayed in the index beside it (issue 53, item 26)."""
    return outcome.columns.get("duplicate_of") if outcome.finishes else None


def sources_of(event: Event) -> frozenset[State | None]:
    """The states from which ``event`` is allowed (for the table's bulk updates)."""
    return frozenset(state for (state, happened) in TRANSITIONS if happened == event)
