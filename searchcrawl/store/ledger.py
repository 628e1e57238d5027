"""Ledger: the one writer of a source's URL states, and where every change of one is decided.

Every write of a URL's row goes through here: the outcomes components report (through the
ledger writer, searchcrawl/crawl/ledger_writer.py), Solr's acknowledgements and refusals (the
push, searchcrawl/index/push.py), the exclusions of links in bulk, the documents taken over
from Solr, the links met in the run, and the run's start and end settlements. Each reads the
row, decides, and applies the decision, in one transaction: the decisions are plain functions
(rules/lifecycle.py ``decide`` for one URL's transition, rules/ledger_rules.py for what a change
does to other URLs: duplicates released, a copy's holder called back, a maintenance crawl's
plan, stale redirect targets), and the SQL is the stores' below it (records.py for a URL's row,
duplicates.py, plans.py, redirects.py, frontier.py for its entry). As StormCrawler's status
updater holds the policy over its storage. Plain code, no Scrapy: a component gets the ledger
and calls it; none calls the stores' writes (tests/store/test_one_writer.py).

A URL's outcome is applied in one place (``_apply``, over the transaction ``record`` holds), and
a crawl's outcomes are applied in batches, many in one transaction (``record_batch``, fed by
store/outcome_batcher.py: issue 74).
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection

from searchcrawl.rules import ledger_rules
from searchcrawl.rules.lifecycle import (
    IN_INDEX,
    READ_EVENTS,
    Change,
    Delta,
    Event,
    Outcome,
    Row,
    State,
    TransitionRefused,
    decide,
    keeps_request,
    original_to_check,
    sources_of,
)
from searchcrawl.rules.maintenance import holder_of
from searchcrawl.rules.status_codes import UNCOUNTED_FAILURES, Status
from searchcrawl.store import anchor_table, duplicates, plans, records, redirects
from searchcrawl.store.database import as_utc, now, url_hash
from searchcrawl.store.documents import DocumentTable
from searchcrawl.store.frontier import Known, place
from searchcrawl.store.models import FrontierState

logger = logging.getLogger(__name__)

# the source's rules on a known URL: (status, rule) when they keep it out now, else None
Excluding = Callable[[str, int], tuple[int, str] | None]
RUN_COLUMNS = frozenset({"delta", "delta_run", "entered_run", "linked_run"})
FOUND_REASON = "in Solr when the document table knew nothing of the source; taken over"
PLAN_BATCH = 5_000  # rows a maintenance crawl's plan reads at a time
SPARE_BATCH = 500  # URLs a maintenance crawl spares a request in one statement (record_spared)
ATTEMPTS = 5  # reads and decisions of one outcome while its row keeps changing under the write


@dataclass
class Spared:
    """What ``record_spared`` did: the URLs recorded without a request, and those it left to the
    request they were leased for (in flight)."""

    urls: list[str] = field(default_factory=list)
    in_flight: list[str] = field(default_factory=list)


def _delta_of(value: str | None) -> Delta | None:
    """A row's ``delta`` column as a Delta (None: none, or a value this version does not know)."""
    try:
        return Delta(value) if value is not None else None
    except ValueError:
        return None


def _holds_checksum(row: Any) -> bool:
    """Whether Solr holds the content of a row's ``checksum``: Solr acknowledged a version of it
    (``indexed_at``, set only for the checksum pushed), and its content has not changed since
    (``last_changed``: cached again, or found a copy of other content)."""
    indexed, changed = as_utc(row.indexed_at), as_utc(row.last_changed)
    return row.checksum is not None and indexed is not None and (changed is None or changed <= indexed)


def _bulk(event: Event) -> tuple[str, str]:
    """(from, to) of an event the ledger allows from exactly one state: applied in bulk."""
    (before,) = sources_of(event)
    assert before is not None
    return before.value, decide(Row(before), Outcome(event)).state.value


def _by_target(origins: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The URLs that redirect to each target (``redirects.origins``' rows), by the target."""
    redirecting: dict[str, list[dict[str, Any]]] = {}
    for origin in origins:
        if origin["target"] is not None:
            redirecting.setdefault(origin["target"], []).append(origin)
    return redirecting


def _failure_through(origin: dict[str, Any]) -> Outcome:
    """The outcome of a redirect target outside the boundary whose ``origin``, a URL that
    redirects to it, failed: the target is kept through the failure, as a failing crawl of its own."""
    return Outcome(
        Event.FAILED,
        origin["status"],
        f"{origin['url']}, which redirects to it, failed: {origin['reason']}",
        counted=origin["status"] not in UNCOUNTED_FAILURES,  # a refused login (936) holds it as long as it lasts
    )


@dataclass
class AnchorMarks:
    """What one transaction's outcomes do to the anchor marks (``Ledger._keep_anchors``): the
    keys of the documents whose anchor field may have changed, and those of the pages fetched
    for the first time that entered the index to be pushed."""

    targets: set[str] = field(default_factory=set)
    entering: set[str] = field(default_factory=set)


def enters_first(current: Any, change: Change) -> bool:
    """Whether ``change`` puts a page fetched for the first time (no row before, or the queued row
    its link made) in the index to be pushed: no push has read it, and Solr holds nothing of it.
    One that comes back from REMOVING may be in a push under way, or held in Solr by the
    mass-deletion guard, with its old anchor field."""
    return (current is None or current.state == State.QUEUED) and change.state == State.PENDING


class Ledger:
    """The writes of one source's URL states, each decided here, over its document table."""

    def __init__(self, table: DocumentTable, source: str, max_failures: int = 3) -> None:
        self._table = table
        self.source = source
        self.max_failures = max_failures  # consecutive failing crawls before a document leaves

    def in_run(self, run_id: int | None, test_mode: bool) -> None:
        """Writes are run ``run_id``'s from now on (they finish its frontier entries), in its test mode."""
        self._table = self.table.for_run(run_id, test_mode)

    def closing(self) -> None:
        """This process fetches nothing more (its run's end): see ``DocumentTable.closing``."""
        self._table = self.table.closing()

    @property
    def table(self) -> DocumentTable:
        """The document table written (its run decides what a write finishes and reports)."""
        return self._table

    # --- what the run writes with a change --------------------------------------------------

    def _finished(self, keep_request: bool = False) -> dict[str, Any]:
        """The frontier entry of a URL out of the current run's frontier (it is done)."""
        if self.table.run_id is None:
            return {}
        finished = {"run_id": self.table.run_id, "state": FrontierState.DONE.value, "lease_owner": None, "lease_expires": None}
        if not keep_request:
            # the request's data goes too: an agent's content travels in it, and a document
            # deleted for good must not stay on disk in its row
            finished["request"] = None
        return finished

    def _queued(self) -> dict[str, Any]:
        """The frontier entry of a URL back in the current run's frontier (to be fetched again)."""
        assert self.table.run_id is not None
        return {"run_id": self.table.run_id, "state": FrontierState.QUEUED.value, "lease_owner": None, "lease_expires": None}

    def _delta(self, kind: Delta | None) -> dict[str, Any]:
        """Columns that say what the current run found for a URL (the delta report)."""
        if self.table.run_id is None or kind is None:
            return {}
        return {"delta": str(kind), "delta_run": self.table.run_id}  # the value, as every driver writes it

    def _restrict(self, values: dict[str, Any]) -> dict[str, Any]:
        """In test mode, only the run's own columns of an existing row may change: the crawl
        reports what it finds but leaves every document's indexed state as it was."""
        if not self.table.test_mode:
            return values
        return {key: value for key, value in values.items() if key in RUN_COLUMNS}

    def _restrict_new(self, values: dict[str, Any]) -> dict[str, Any]:
        """A new row in test mode: only what the report needs (a test crawl indexes nothing)."""
        if not self.table.test_mode or values.get("state") not in (State.PENDING.value, State.REMOVING.value):
            return values
        return {**values, "state": State.FETCHED.value}

    def _ledger_row(self, current: Any) -> Row:
        """What the ledger's rules need to know of a row read by ``records.read_row``, in the current run."""
        run_id = self.table.run_id
        in_run = run_id is not None
        return Row(
            State(current.state),
            current.status,
            current.failures or 0,
            current.indexed_at is not None,
            entered=in_run and current.entered_run == run_id,
            reported=_delta_of(current.delta) if in_run and current.delta_run == run_id else None,
            indexed_checksum=current.checksum if _holds_checksum(current) else None,
        )

    def _values(self, change: Change, outcome: Outcome, when: datetime) -> dict[str, Any]:
        """The columns that write ``change`` (what the ledger decided of ``outcome``)."""
        values: dict[str, Any] = {
            "state": change.state.value,
            "status": change.status,
            "reason": change.reason,
            "failures": change.failures,
            **outcome.columns,
            **self._delta(change.delta),
        }
        if change.enters:
            values["entered_run"] = self.table.run_id
        if outcome.depth is not None:
            values["depth"] = outcome.depth
        if outcome.event in READ_EVENTS and outcome.fetched:
            values["last_fetched"] = when
        if outcome.event == Event.CACHED:
            values.update(last_changed=when, duplicate_of=None)
        elif "checksum" in outcome.columns:  # a copy of other content (a duplicate): its content changed too
            values["last_changed"] = when
        if outcome.event in (Event.GONE, Event.EXCLUDED, Event.UNCHANGED, Event.CACHED):
            values.setdefault("target", None)  # it redirects no more (a failure says nothing of it)
        return values

    # --- what happened to a URL -------------------------------------------------------------

    def record(self, url: str, outcome: Outcome) -> State | None:
        """Record what happened to ``url``: read its row, decide (rules/lifecycle.py) its next
        state, status and delta, and apply it, in one transaction: the row written, the URL
        finished in the current run's frontier, and, when a document leaves the index, its
        duplicates queued again to take its place. Returns the new state (None: refused, logged).

        The write is conditional on the state the decision was made from: when another thread
        changed the row in between (the Solr push marking it indexed), it is read and decided
        again, so neither write is lost."""

        def once(connection: Connection) -> State | None | Literal[False]:
            due = AnchorMarks()
            written = self._record(connection, url, outcome, due)
            self._mark_due(connection, due)
            return written

        for _attempt in range(ATTEMPTS):
            written = self.table.database.transaction(once)
            if written is not False:
                return written
        logger.warning("Not recorded for %s: its row kept changing under the write", url)
        return None

    def record_batch(
        self, outcomes: Sequence[tuple[str, Outcome]], before: Sequence[Callable[[Connection], object]] = ()
    ) -> list[State | None]:
        """Record several URLs' outcomes, in order, in one transaction (the ledger writer's
        batches, store/outcome_batcher.py): each read, decided and applied as ``record`` does;
        a row that changed under its write is read and decided again in the same transaction
        (on SQLite the transaction holds the write lock from its first write; on PostgreSQL each
        read sees what committed). ``before``: writes run first in it (the pages' links, issue
        94). A batch that fails as a whole (a lock wait that timed out, a deadlock between two
        nodes' batches, a bad value) is rolled back and recorded again one outcome at a time,
        after ``before`` alone (which, failing again, raises: no outcome of the batch is then
        recorded, their URLs stay leased), so that one outcome never holds back the others."""
        if len(outcomes) == 1 and not before:
            url, outcome = outcomes[0]
            return [self.record(url, outcome)]

        def batch(connection: Connection) -> list[State | None]:
            for write in before:
                write(connection)
            due = AnchorMarks()
            states = [self._record_within(connection, url, outcome, due) for url, outcome in outcomes]
            self._mark_due(connection, due)
            return states

        try:  # a deadlock with another node's batch is run again first (Database.transaction)
            return self.table.database.transaction(batch)
        except Exception as exc:  # noqa: BLE001 - each outcome again alone, below
            logger.warning("A batch of %d outcomes failed (%s): recorded one at a time", len(outcomes), exc)
        if before:
            self.table.database.transaction(lambda connection: [write(connection) for write in before])
        states: list[State | None] = []
        for url, outcome in outcomes:
            try:
                states.append(self.record(url, outcome))
            except Exception:  # its URL stays leased: fetched again (or 925 at the crawl's idle check)
                logger.exception("Not recorded for %s", url)
                states.append(None)
        return states

    def _record_within(self, connection: Connection, url: str, outcome: Outcome, due: AnchorMarks) -> State | None:
        """``record``'s attempts inside the caller's transaction (``record_batch``)."""
        for _attempt in range(ATTEMPTS):
            written = self._record(connection, url, outcome, due)
            if written is not False:
                return written
        logger.warning("Not recorded for %s: its row kept changing under the write", url)
        return None

    def _record(self, connection: Connection, url: str, outcome: Outcome, due: AnchorMarks) -> State | None | Literal[False]:
        """One attempt of ``record``: the new state, None when the ledger refused the outcome, or
        False when the row changed since it was read (``record`` tries again); the documents whose
        anchor field it made due are added to ``due`` (``_keep_anchors``)."""
        table, source = self.table, self.source
        current = records.read_row(table.database, connection, source, url)
        row = None if current is None else self._ledger_row(current)
        original = original_to_check(outcome) if table.run_id is not None and not table.test_mode else None
        # the content the copy was compared with: its outcome's, else (an agent's copy found
        # unchanged, not read) its row's while the row is a duplicate
        duplicate = current is not None and current.status == Status.DUPLICATE
        content = outcome.columns.get("checksum") or (current.checksum if duplicate else None)
        if original is not None and current is not None and self._moved_on(connection, original, content):
            # The original left the index, or changed its content, after the pipeline compared
            # them, and freed its duplicates (_make_way): this URL is fetched once more in this
            # run to hold its content, instead of being marked the duplicate of a content that
            # nobody holds until the next crawl.
            records.update_row(table.database, connection, source, url, self._restrict({"duplicate_of": None}), row_id=current.id)
            place(table.database, connection, source, url, self._queued())
            logger.debug("Fetched again, its original %s left the index or changed: %s", original, url)
            return State(current.state)
        try:
            change = decide(row, outcome, self.max_failures)
        except TransitionRefused as exc:
            logger.warning("Not recorded for %s: %s", url, exc)
            if (
                current is not None and table.run_id is not None
            ):  # still finished in this run: it must not wait for a lost outcome
                place(table.database, connection, source, url, self._finished())
            return None
        if not self._apply(connection, url, outcome, change, current, due, original, content):
            return False
        return change.state

    def _moved_on(self, connection: Connection, url: str, content: str | None) -> bool:
        """Whether ``url`` left the index in this run or holds another content than ``content``
        now (rules/ledger_rules.py ``moved_on``), its row held (on PostgreSQL) until this
        transaction commits (``records.read_original_locked``)."""
        found = records.read_original_locked(self.table.database, connection, self.source, url)
        return found is not None and ledger_rules.moved_on(
            found.state, found.delta_run, found.checksum, self.table.run_id, content
        )

    def _apply(
        self,
        connection: Connection,
        url: str,
        outcome: Outcome,
        change: Change,
        current: Any,
        due: AnchorMarks,
        original: str | None,
        content: str | None = None,
    ) -> bool:
        """Apply ``change`` (decided of ``outcome`` from the row ``current``, None: a new URL):
        the row, the frontier entry, the redirect, and what it does to the URL's copies. False
        when the row changed since it was read (nothing written), or when ``original`` (the URL
        it is a duplicate of) left the index or holds other content than ``content`` now."""
        table, source = self.table, self.source
        database = table.database
        when = now()
        values = self._values(change, outcome, when)
        redirect = {column: values.pop(column) for column in redirects.COLUMNS if column in values}
        if current is None:
            new = {"source": source, "url": url, "first_seen": when, **self._restrict_new(values)}
            if not records.insert_row(database, connection, new):
                return False  # inserted by another thread meanwhile
        elif not records.update_row(
            database,
            connection,
            source,
            url,
            self._restrict(values),
            expect_state=current.state,
            new_checksum=outcome.columns.get("checksum"),
            original=original,
            content=content,
            run_id=table.run_id,
            validators=self._restrict(dict(outcome.validators or {})),
            compared_checksum=outcome.compared_checksum,
            row_id=current.id,
        ):
            return False
        if outcome.finishes and table.run_id is not None:
            finished = self._finished(keep_request=keeps_request(outcome))
            entry = current.id if current is not None and current.entry is not None else None
            place(database, connection, source, url, finished, entry, outcome.depth)
        if current is None or not table.test_mode:  # test mode: an existing row's redirect stays
            held = {"target": None, "via": None} if current is None else {"target": current.target, "via": current.via}
            redirects.write_redirect(database, connection, source, url, redirect, held)
        if not table.test_mode and table.promotes_duplicates:
            before = current.checksum if current is not None else None
            self._make_way(connection, url, change, before, outcome.columns.get("checksum") or before)
        if not table.test_mode:
            self._keep_anchors(connection, url, outcome, change, current, due)
        return True

    def _keep_anchors(
        self, connection: Connection, url: str, outcome: Outcome, change: Change, current: Any, due: AnchorMarks
    ) -> None:
        """After ``change`` is written: the page's anchors (content/anchors.py) as its outcome
        left them, in the same transaction, so that they and the page's access are always of one
        version. Given (the page was parsed), they replace its anchors; a page out of the index
        has none. The targets whose anchors that count may have changed are added to ``due``, to
        be marked (store/anchor_table.py) for the push to set their field: those of an anchor added
        or gone, and every target of the page when it enters or leaves the index or its readers
        change. A page fetched for the first time that enters the index to be pushed is noted
        too: its push sets its field."""
        before = current is not None and current.state in IN_INDEX
        after = change.state in IN_INDEX
        given = outcome.anchors
        readers = "access" in outcome.columns
        if given is None and before == after and not readers:
            return  # nearly every outcome of a page not parsed (a 304, a failure, Solr's answers)
        database, page = self.table.database, url_hash(url)
        if enters_first(current, change):
            due.entering.add(page)
        # a page out of the index has none (they go as it leaves): nothing to read, nor to delete
        old = anchor_table.read_page(database, connection, self.source, page) if before else set()
        new = {(url_hash(target), text) for target, text in given} if given is not None and after else set()
        if given is None and after:
            new = old
        if new != old:
            anchor_table.replace_page(database, connection, self.source, page, new, had=bool(old))
        if not (before or after):
            return
        everything = before != after or (readers and outcome.columns["access"] != current.access)
        due.targets.update(target for target, _text in (old | new if everything else old ^ new))

    def _mark_due(self, connection: Connection, due: AnchorMarks) -> None:
        """The documents of ``due`` marked at the end of the transaction of its outcomes, in one
        statement for all of them: one a page's outcome was 1.7 % of a crawl's CPU (issue 102),
        and a site's pages name the same targets. A target that one of these outcomes put in the
        index for the first time, to be pushed, is left unmarked: its push reads its anchors, those
        written here among them, as it sends it (a mark would only have it set again after that
        push)."""
        anchor_table.mark_due(self.table.database, connection, self.source, due.targets - due.entering)

    def _make_way(self, connection: Connection, url: str, change: Change, before: str | None, checksum: str | None) -> None:
        """After ``change`` is written (the URL's content ``before`` it, and ``checksum`` now): a
        document that left the index queues its duplicates to take its place (the first to arrive
        takes it), and so does one whose content changed (rules/ledger_rules.py ``frees_copies``):
        those of the run (fetched before it in it too), but those of its new content (a copy it
        just replaced in the index); a copy out of the index may call the group's rightful holder
        back (``_recall_holder``)."""
        if change.leaves_index:
            duplicates.release_duplicates(self.table.database, connection, self.source, url, self.table.run_id)
        elif self.table.run_id is not None and checksum is not None and ledger_rules.frees_copies(before, checksum):
            duplicates.free_copies(self.table.database, connection, self.source, url, self.table.run_id, checksum)
        if change.copy_out_of_index and checksum:
            self._recall_holder(connection, checksum)

    def _recall_holder(self, connection: Connection, checksum: str) -> None:
        """A copy of ``checksum``'s content was recorded out of the index: the group's rightful
        holder is fetched again when rules/ledger_rules.py ``holder_to_recall`` says so. Decided
        here, where every copy's outcome is written one after the other, and not by the pipeline
        that met the copy naming it: the two copies' pages go through the pipelines at once, and
        each was compared before the other was written (issue 53, item 26: B stayed in the
        index though C named A)."""
        run_id = self.table.run_id
        if run_id is None:
            return
        holder = ledger_rules.holder_to_recall(duplicates.copies(self.table.database, connection, self.source, checksum, run_id))
        if holder is not None:
            duplicates.queue_copy(self.table.database, connection, run_id, holder["id"])
            logger.debug("Fetched again to hold its content, which another copy names canonical: %s", holder["url"])

    def mark_duplicate(self, url: str, of: str, depth: int | None = None, *, fetched: bool = True) -> None:
        """``url`` has the same content as ``of``, which is (or will be) the indexed one. Not
        ``fetched``: a verdict on the content it holds, not a fetch of it: its frontier entry
        and its last fetch stay as they are (still queued in the run, it is fetched, and its
        content may have changed, or it may be gone)."""
        outcome = Outcome(
            Event.GONE,
            int(Status.DUPLICATE),
            f"duplicate of {of}",
            depth,
            kind=Delta.DUPLICATE,
            columns={"duplicate_of": of},
            fetched=fetched,
            finishes=fetched,
        )
        self.record(url, outcome)

    def settle_pending(self, cached_by: str) -> list[str]:
        """Before a push of what ``cached_by`` (a cache) holds, and at the run's end: where two
        URLs put the same content in the index at the same moment (two nodes of a shared crawl,
        each checking for a duplicate before the other had written), keep one, ``holder_of``'s
        choice over the whole group, which every node makes alike. A read or two a push
        (duplicates.py ``pending_groups``); run on every push, as the later of two racing rows
        may be left to a crawl of one process (its node killed before it pushed). Returns the
        URLs marked duplicates."""
        marked = []
        for group in duplicates.pending_groups(self.table.database, self.source, cached_by):
            original = holder_of(group)
            for copy in group:
                if copy is not original:
                    self.mark_duplicate(copy["url"], of=original["url"], fetched=False)
                    marked.append(copy["url"])
        return marked

    def record_spared(self, urls: Sequence[str], spare: Callable[[str, Known], Outcome | None]) -> Spared:
        """A maintenance run's pages that need no request, in bulk: each of ``urls`` queued in
        this run and not leased yet, or not planned yet (in an earlier run's frontier: the plan,
        made while the crawl goes on, then leaves it), in the index, with no temporary redirect, for which
        ``spare(url, known)`` gives an outcome (a sitemap's word that it is unchanged: an
        UNCHANGED without a fetch), is recorded as ``record`` would record that outcome (the
        ledger's ``decide``) and finished in the run, without a request. A million sitemap
        entries cost a few statements per ``SPARE_BATCH``, not a trip through the downloader
        each. URLs leased meanwhile (in flight) are left to their request, and said so."""
        run_id = self.table.run_id
        assert run_id is not None
        spared = Spared()
        for start in range(0, len(urls), SPARE_BATCH):
            rows = records.read_spare_candidates(self.table.database, self.source, urls[start : start + SPARE_BATCH])
            when = now()
            writes: dict[int, dict[str, Any]] = {}
            urls_of: dict[int, str] = {}
            for row in rows:
                if row.run_id is None:
                    continue  # never queued (taken over from Solr): requested
                if row.run_id == run_id and row.frontier != FrontierState.QUEUED.value:
                    if row.frontier == FrontierState.LEASED.value:
                        spared.in_flight.append(row.url)
                    continue
                if row.state != State.INDEXED.value or row.target is not None or row.via is not None:
                    continue  # requested: only an indexed page without a redirect is spared here
                known = Known(row.state, row.checksum, row.last_modified, row.etag, row.last_fetched, failures=row.failures or 0)
                outcome = spare(row.url, known)
                if outcome is None:
                    continue
                try:
                    change = decide(self._ledger_row(row), outcome, self.max_failures)
                except TransitionRefused:
                    continue  # left to its request, which records it (and logs why)
                values = self._restrict(self._values(change, outcome, when))
                for column in redirects.COLUMNS:
                    values.pop(column, None)  # it has none (above), and none is written
                writes[row.id] = values
                urls_of[row.id] = row.url
            if writes:
                try:
                    written = records.write_spared(self.table.database, run_id, writes, self._finished())
                except records.ChangedMeanwhile:
                    # a row left the index between the read and this write (another outcome): none of
                    # the batch is written, and their requests decide (a URL is never done unrecorded)
                    logger.debug(
                        "A batch of %d spared pages of %s changed meanwhile: requested instead", len(writes), self.source
                    )
                    continue
                logger.debug("%d pages of %s spared a request, recorded in bulk", len(written), self.source)
                spared.urls.extend(urls_of[document_id] for document_id in written)
        return spared

    def record_excluded(self, rows: Sequence[tuple[str, int, int, str]]) -> None:
        """URLs a rule kept out when a page linked to them, as (url, status, depth, reason). Only
        URLs the table does not know get a row (delta ``excluded``): a link to a known URL changes
        nothing, since the rules are applied to every known URL at the start of a maintenance
        crawl (``plan_maintenance``), and the same URL may be a temporary redirect's target."""
        when = now()
        inserted = []
        for url, status, depth, reason in rows:
            change = decide(None, Outcome(Event.EXCLUDED, status, reason))  # a new URL, excluded
            inserted.append(
                {
                    "source": self.source,
                    "url": url,
                    "state": change.state.value,
                    "status": status,
                    "depth": depth,
                    "reason": reason,
                    "first_seen": when,
                    **self._delta(change.delta),
                }
            )
        if inserted:
            database = self.table.database
            if len(inserted) == 1:
                with database.single.connect() as connection:
                    records.insert_new(database, connection, inserted)
            else:  # two nodes meeting the same excluded links insert them in their pages' orders
                database.transaction(lambda connection: records.insert_new(database, connection, inserted))

    def record_found(self, pages: Iterable[Sequence[tuple[str, str | None, str | None]]]) -> int:
        """Documents Solr holds under the source while the table knows nothing of it, a page at a
        time as (url, display URL, checksum): each gets a row, ``indexed`` with Solr's checksum
        (event ``found``), which the next maintenance plan queues like any known URL. A URL the
        table knows keeps its row. One transaction: another process finds the source unknown
        until every page is in (it waits on the rows, or the lock), and a take-over cut short
        (Solr failing, a kill) leaves nothing, to be done again. Returns how many were read."""
        found = 0
        change = decide(None, Outcome(Event.FOUND, int(Status.OK), FOUND_REASON))
        with self.table.engine.begin() as connection:
            for page in pages:
                when = now()
                rows = [
                    {
                        "source": self.source,
                        "url": url,
                        "display_url": display_url or url,
                        "state": change.state.value,
                        "status": change.status,
                        "reason": change.reason,
                        "checksum": checksum,
                        "first_seen": when,
                        "indexed_at": when,
                    }
                    for url, display_url, checksum in page
                ]
                records.insert_new(self.table.database, connection, rows)
                found += len(rows)
        return found

    def mark_linked(self, urls: Sequence[str]) -> None:
        """These URLs were linked (or listed, or are seeds) in the current run: not orphans."""
        if self.table.run_id is None or not urls:
            return
        run_id = self.table.run_id
        self.table.database.transaction(lambda connection: records.set_linked(connection, self.source, urls, run_id))

    # --- Solr's answers ---------------------------------------------------------------------

    def mark_indexed(self, acknowledged: Sequence[tuple[str, str]]) -> list[str]:
        """Solr acknowledged these (url, checksum) pairs: the ledger's INDEXED event, in bulk.
        Returns the URLs whose row still had that checksum: a document re-cached with new
        content while the old one was being pushed stays pending."""
        before, after = _bulk(Event.INDEXED)
        return self.table.database.transaction(
            lambda connection: records.set_indexed(connection, self.source, acknowledged, before, after, now())
        )

    def mark_refused(self, refused: Sequence[tuple[str, str, str]]) -> None:
        """Solr refused these (url, checksum, reason): each pending one still of that content gets
        status 924 (SOLR_REFUSED) and leaves the index; a row re-cached meanwhile stays pending."""
        for url, checksum, reason in refused:
            row = self.table.get(self.source, url)
            if row is None or row["state"] != State.PENDING.value or row["checksum"] != checksum:
                continue
            self.record(url, Outcome(Event.REFUSED, int(Status.SOLR_REFUSED), f"refused by Solr: {reason}"))

    def mark_anchors_set(self, marks: Sequence[int]) -> None:
        """The push set the anchor field of the documents of these marks (``DocumentTable.anchors_due``)
        as their anchors stood after the marks were read: the marks go; one added since stays,
        for the next push (store/anchor_table.py)."""
        self.table.database.transaction(lambda connection: anchor_table.clear_due(self.table.database, connection, marks))

    def mark_removed(self, urls: Sequence[str]) -> None:
        """Solr acknowledged the deletion of these URLs: the ledger's REMOVED event, in bulk."""
        before, after = _bulk(Event.REMOVED)
        self.table.database.transaction(lambda connection: records.set_removed(connection, self.source, urls, before, after))

    # --- the run's start and end ------------------------------------------------------------

    def plan_maintenance(
        self, excluding: Excluding, recheck_before: datetime | None = None, stop: Callable[[], bool] | None = None
    ) -> tuple[int, int]:
        """The start of a maintenance crawl, in one pass over the source's rows. ``excluding(url,
        depth)`` is the source's rules now: (status, rule) for a URL they exclude, else None.
        Each known URL is excluded (recorded: it leaves the index if it was in), left, or queued,
        as rules/ledger_rules.py ``plan_step`` says; a temporary redirect's target outside the
        boundary is fetched through its redirect, and stays while it stands (``drop_stale_targets``).

        A source of a million URLs is read ``PLAN_BATCH`` rows at a time (by id, no row held
        longer than its batch), and each batch's URLs are queued as it is decided, in a
        transaction of its own: the crawl, which goes on meanwhile (crawl/run_start.py
        ``plan_run``), fetches the first while the last are planned. The plan is idempotent
        (a URL in the run keeps its place): one cut short (``stop``, a crash) is made again
        whole. Returns (queued, newly excluded)."""
        run_id = self.table.run_id
        assert run_id is not None
        database = self.table.database
        # temporary redirects that stood at their last fetch: their targets are fetched through them
        targets = redirects.temporary_targets(database, self.source)
        excluded = queued = 0
        since = as_utc(recheck_before)
        after = 0
        while stop is None or not stop():
            queue = array("q")
            rows = plans.plan_batch(database, self.source, after, PLAN_BATCH)
            if not rows:
                break
            after = rows[-1].id
            for row in rows:
                if stop is not None and stop():
                    break  # the batch's URLs decided so far are queued; the plan stays pending
                verdict = excluding(row.url, row.depth or 0)
                step = ledger_rules.plan_step(
                    row.state,
                    row.status,
                    verdict,
                    through_redirect=row.via is not None or row.url in targets,
                    last_fetched=as_utc(row.last_fetched),
                    recheck_since=since,
                )
                if step == "exclude":
                    assert verdict is not None
                    self.record(row.url, Outcome(Event.EXCLUDED, verdict[0], verdict[1]))
                    excluded += 1
                elif step == "queue":
                    queue.append(row.id)
            if queue:
                queued += plans.queue_planned(database, run_id, queue)
        return queued, excluded

    def drop_stale_targets(self, excluding: Excluding) -> int:
        """The end of a complete run: a temporary redirect's target outside the boundary leaves
        the index once every URL of the source that redirected to it was fetched in this run and
        redirects there no more (it answers 200, 404, another target, robots.txt disallows it
        ...). While one still does, or was not fetched, it stays. A transient failure of such a
        URL (its own, or its robots.txt's) is one of the target's too: it stays, and leaves after
        ``max_failures`` such crawls. Returns how many leave (rules/ledger_rules.py
        ``redirect_now``, ``stale_target_step``).

        A target that is not in the index (a duplicate of a page of the source, a 404, a failure,
        robots.txt's refusal) is excluded by the boundary the same way once no redirect to it
        stands, a failing one included (it has no document to keep through the failure):
        otherwise it would keep a status of a redirect that is gone, and stay a URL of the
        source that a later crawl fetches (a duplicate taking the place of its original that
        left) only to remove."""
        run_id, database = self.table.run_id, self.table.database
        outside = [
            (url, via, state, verdict)
            for url, via, depth, state in redirects.reached_targets(database, self.source)
            if (verdict := excluding(url, depth or 0))
        ]
        # every URL that led to a target: the one it was last reached through (``via``), and any
        # whose last answer (or the one before a failure) was a temporary redirect to it
        by_url = redirects.origins(database, self.source, [via for _url, via, _state, _verdict in outside])
        redirecting = _by_target(by_url.values())
        gone = 0
        for url, via, state, verdict in outside:
            origins = list(redirecting.get(url, []))
            if via in by_url and by_url[via] not in origins:
                origins.insert(0, by_url[via])
            verdicts = [
                ledger_rules.redirect_now(
                    origin, url, done_in_run=origin["run_id"] == run_id and origin["frontier"] == FrontierState.DONE
                )
                for origin in origins
            ]
            step = ledger_rules.stale_target_step(verdicts, state)
            if step == "keep":
                logger.debug(
                    "Redirect target outside the boundary kept: %s (%s)",
                    url,
                    ", ".join(f"{origin['url']}: {verdict}" for origin, verdict in zip(origins, verdicts, strict=True))
                    or "no URL of the source is known to redirect to it",
                )
            elif step == "fail":  # kept through the failure, as a failing crawl of its own
                gone += self.record(url, _failure_through(origins[verdicts.index("failing")])) == State.REMOVING
            else:
                reason = f"{verdict[1]}; no URL of the source redirects to it any more ({via} answered {origins[0]['status']})"
                self.record(url, Outcome(Event.EXCLUDED, verdict[0], reason, columns={"via": None}))
                gone += state in IN_INDEX
        return gone

    def hold_removals(self) -> int:
        """The mass-deletion guard refused this run's deletions: the ledger's HELD event, in bulk.
        They stay ``removing``; the delta report says ``held``, not ``deleted``. So does a URL of
        this run that Solr acknowledged and the guard keeps there though it should leave: one that
        entered the index in the run and left it again (no deletion, but still in Solr), or one
        held by an earlier run that was fetched again. One Solr refused keeps ``refused``."""
        if self.table.run_id is None:
            return 0
        before, _after = _bulk(Event.HELD)
        with self.table.engine.begin() as connection:
            return records.set_held(connection, self.source, self.table.run_id, before)
