"""DocumentTable: every URL of every source, and its state in the ledger's terms.

The SQL of every write of a URL's state (``record``, and the bulk writes the ledger allows from
exactly one state), which only the ledger (ledger.py) calls: what a write changes is decided by
the ledger's rules (searchcrawl/rules/lifecycle.py). A table's writes are those of one run, given
when it is made (``for_run``, ``closing``). The frontier (frontier.py), the runs (runs.py) and the delta reports
(deltas.py) are other stores over the same database (database.py). A URL's entry in its run's
frontier and its temporary redirect are in tables of their own (models.frontier, models.redirects):
an outcome recorded here finishes the entry (through frontier.py's ``place``) and writes the
redirect, in the transaction of the document's write.

A row is keyed by its source and the SHA-256 of its URL (``url_hash``), not by the URL, which
may be longer than an index entry holds: every write here adds the key (``keyed``) and every
look-up by URL goes through ``url_hash``. Callers only ever see and pass whole URLs.
"""

from __future__ import annotations

import functools
import json
import logging
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import (
    ARRAY,
    Connection,
    Result,
    String,
    and_,
    bindparam,
    case,
    exists,
    func,
    literal,
    or_,
    select,
    true,
    tuple_,
    update,
)
from sqlalchemy import Row as SqlRow

from searchcrawl.rules.lifecycle import (
    COPY_STATUSES,
    OUT_OF_INDEX,
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
from searchcrawl.rules.maintenance import holder_of, named_canonical
from searchcrawl.rules.redirect_policy import TEMPORARY as TEMPORARY_REDIRECTS
from searchcrawl.rules.status_codes import UNCOUNTED_FAILURES, Status
from searchcrawl.store.database import ROW_KEY, Database, as_utc, keyed, now, url_hash
from searchcrawl.store.frontier import Known, finish_queued, place, queue_documents
from searchcrawl.store.models import FrontierState, documents, frontier, redirects

logger = logging.getLogger(__name__)

IN_INDEX = (State.PENDING.value, State.INDEXED.value)
LEFT_INDEX = (State.REMOVING.value, State.REMOVED.value)
RUN_COLUMNS = frozenset({"delta", "delta_run", "entered_run", "linked_run"})
REDIRECT_COLUMNS = ("target", "via")  # outcome columns written to the redirects table
FOUND_REASON = "in Solr when the document table knew nothing of the source; taken over"
# a document with its frontier entry (absent: not queued in any run) and its redirect (absent: none)
WITH_ENTRY = documents.outerjoin(frontier, frontier.c.document_id == documents.c.id)
WITH_REDIRECT = documents.outerjoin(redirects, redirects.c.document_id == documents.c.id)
PLAN_BATCH = 5_000  # rows a maintenance crawl's plan reads at a time
SPARE_BATCH = 500  # URLs a maintenance crawl spares a request in one statement (record_spared)
WHOLE = WITH_ENTRY.outerjoin(redirects, redirects.c.document_id == documents.c.id)
# a URL's record as it was one row: the entry's and the redirect's columns under their old names
ENTRY_AS = (
    frontier.c.run_id,
    frontier.c.state.label("frontier"),
    frontier.c.lease_owner,
    frontier.c.lease_expires,
    frontier.c.request,
)
ORIGIN_COLUMNS = (  # what _redirect_now reads
    documents.c.url,
    documents.c.state,
    documents.c.status,
    documents.c.reason,
    redirects.c.target,
    frontier.c.run_id,
    frontier.c.state.label("frontier"),
)


class _ChangedMeanwhile(Exception):
    """A spared page's row changed between ``record_spared``'s read and its write."""


@dataclass
class Spared:
    """What ``record_spared`` did: the URLs recorded without a request, and those it left to the
    request they were leased for (in flight)."""

    urls: list[str] = field(default_factory=list)
    in_flight: list[str] = field(default_factory=list)


def _spared_update(columns: tuple[str, ...]) -> Any:
    """The write of ``columns`` of a document spared a request (``record_spared``), by id, while indexed."""
    return (
        update(documents)
        .where(documents.c.id == bindparam("w_id"), documents.c.state == State.INDEXED.value)
        .values({column: bindparam(f"v_{column}", type_=documents.c[column].type) for column in columns})
    )


def one_of(column: Any, values: Sequence[str]) -> Any:
    """``column IN (...)`` over fixed values, for statements built once (``Database.statement``):
    ``in_`` of a list makes an "expanding" parameter, whose SQL SQLAlchemy rewrites on every
    execution; a parameter per value keeps the SQL as compiled."""
    return column.in_([literal(value, column.type) for value in values])


def _linkless(status: int | None) -> bool:
    """An answer without a page or links that ``recheck_gone_days`` may space out: gone, moved
    for good, refused, a host that does not resolve. Not a temporary redirect (its target is
    fetched through it) nor a page kept out of the index whose links are followed (noindex)."""
    return status is not None and (status in (301, 308, Status.DNS_FAILURE) or 400 <= status < 500)


def _delta_of(value: str | None) -> Delta | None:
    """A row's ``delta`` column as a Delta (None: none, or a value this version does not know)."""
    try:
        return Delta(value) if value is not None else None
    except ValueError:
        return None


def _holds_checksum(row: Any) -> bool:
    """Whether Solr holds the content of a row's ``checksum`` (read by ``_row_state``): Solr
    acknowledged a version of it (``indexed_at``, set only for the checksum pushed), and its
    content has not changed since (``last_changed``: cached again, or found a copy of other content)."""
    indexed, changed = as_utc(row.indexed_at), as_utc(row.last_changed)
    return row.checksum is not None and indexed is not None and (changed is None or changed <= indexed)


def _bulk(event: Event) -> tuple[str, str]:
    """(from, to) of an event the ledger allows from exactly one state: applied in bulk."""
    (before,) = sources_of(event)
    assert before is not None
    return before.value, decide(Row(before), Outcome(event)).state.value


class DocumentTable:
    """The documents of all sources: each URL's state in its source, as the ledger decides it."""

    def __init__(
        self, database: Database, *, run_id: int | None = None, test_mode: bool = False, promotes_duplicates: bool = True
    ) -> None:
        """A table's writes are those of one run, fixed for its life: ``for_run`` and ``closing``
        make another over the same database (nothing changes what a table's writes do meanwhile)."""
        self.database = database
        self.engine = database.engine
        self.single = database.single
        self.insert = database.insert
        self._statement = database.statement
        self._run_id = run_id
        self._test_mode = test_mode
        self._promotes_duplicates = promotes_duplicates

    @property
    def run_id(self) -> int | None:
        """The run the writes belong to (None: none, outside a crawl): an outcome then finishes
        the URL's frontier entry, and the delta report is the run's."""
        return self._run_id

    @property
    def test_mode(self) -> bool:
        """Test mode: the crawl reports what it finds but leaves every document's indexed state as
        it was; only the run's own columns (frontier, delta) of existing rows are written."""
        return self._test_mode

    @property
    def promotes_duplicates(self) -> bool:
        """Whether a document leaving the index queues its duplicates in the run to take its place.
        Not once the process fetches nothing more (``closing``)."""
        return self._promotes_duplicates

    def for_run(self, run_id: int | None, test_mode: bool | None = None) -> DocumentTable:
        """The table whose writes are those of run ``run_id`` (in test mode if ``test_mode``;
        None: as this one)."""
        return DocumentTable(
            self.database,
            run_id=run_id,
            test_mode=self._test_mode if test_mode is None else test_mode,
            promotes_duplicates=self._promotes_duplicates,
        )

    def closing(self) -> DocumentTable:
        """The table of a process that fetches nothing more (its crawl closing: the run's end
        removals, the last push's refusals): a document leaving the index does not queue its
        duplicates. Queued then, nothing would fetch them, and the run would end suspended, so
        that the next crawl resumed it instead of checking the site (the sequence test, seed 4,
        crawl 89); they take its place in the next crawl, which fetches every known URL again (a
        duplicate, not in the index, is fetched whole)."""
        return DocumentTable(self.database, run_id=self._run_id, test_mode=self._test_mode, promotes_duplicates=False)

    def _finished(self, keep_request: bool = False) -> dict[str, Any]:
        """The frontier entry of a URL out of the current run's frontier (it is done)."""
        if self.run_id is None:
            return {}
        finished = {"run_id": self.run_id, "state": FrontierState.DONE.value, "lease_owner": None, "lease_expires": None}
        if not keep_request:
            # the request's data goes too: an agent's content travels in it, and a document
            # deleted for good must not stay on disk in its row
            finished["request"] = None
        return finished

    def _delta(self, kind: Delta | None) -> dict[str, Any]:
        """Columns that say what the current run found for a URL (the delta report)."""
        if self.run_id is None or kind is None:
            return {}
        return {"delta": str(kind), "delta_run": self.run_id}  # the value, as every driver writes it

    def _restrict(self, values: dict[str, Any]) -> dict[str, Any]:
        """In test mode, only the run's own columns of an existing row may change."""
        if not self.test_mode:
            return values
        return {key: value for key, value in values.items() if key in RUN_COLUMNS}

    # --- writes ---------------------------------------------------------------------------

    def _insert_new(self, rows: Sequence[dict[str, Any]]) -> None:
        """Insert rows for URLs the table does not know; known URLs keep their row."""
        if not rows:
            return
        statement = self._statement("insert_new", lambda: self.insert(documents).on_conflict_do_nothing(index_elements=ROW_KEY))
        with self.single.connect() if len(rows) == 1 else self.engine.begin() as connection:
            connection.execute(statement, [keyed(row) for row in rows])

    def record(self, source: str, url: str, outcome: Outcome, max_failures: int = 3) -> State | None:
        """Record what happened to ``url``: the ledger (searchcrawl/rules/lifecycle.py) decides the row's
        next state, status and delta; this writes it, finishes the URL in the current run's
        frontier, and, when a document leaves the index, queues its duplicates again to take its
        place. The one writer of a URL's state. Returns the new state (None: refused, logged).

        The write is conditional on the state the decision was made from: when another thread
        changed the row in between (the Solr push marking it indexed), it is read and decided
        again, so neither write is lost."""
        for _attempt in range(5):
            with self.engine.begin() as connection:
                written = self._record(connection, source, url, outcome, max_failures)
            if written is not False:
                return written
        logger.warning("Not recorded for %s: its row kept changing under the write", url)
        return None

    def _record(
        self, connection: Connection, source: str, url: str, outcome: Outcome, max_failures: int
    ) -> State | None | Literal[False]:
        """One attempt of ``record``: the new state, None when the ledger refused the outcome, or
        False when the row changed since it was read (``record`` tries again)."""
        when = now()
        current = connection.execute(self._row_state(), {"source": source, "url_hash": url_hash(url)}).first()
        row = None if current is None else self._ledger_row(current)
        original = original_to_check(outcome) if self.run_id is not None and not self.test_mode else None
        if original is not None and current is not None and self._has_left(connection, source, original):
            # The original left the index after the pipeline compared them, and queued its
            # duplicates again (_promote_duplicates): this URL is fetched once more in this run to
            # take its place, instead of being marked the duplicate of a document that is gone.
            self._update_row(connection, source, url, {"duplicate_of": None}, row_id=current.id)
            place(self.database, connection, source, url, self._queued())
            logger.debug("Fetched again, its original %s left the index: %s", original, url)
            return State(current.state)
        try:
            change = decide(row, outcome, max_failures)
        except TransitionRefused as exc:
            logger.warning("Not recorded for %s: %s", url, exc)
            if current is not None and self.run_id is not None:  # still finished in this run: it must not wait for a lost outcome
                place(self.database, connection, source, url, self._finished())
            return None
        values = self._values(change, outcome, when)
        redirect = {column: values.pop(column) for column in REDIRECT_COLUMNS if column in values}
        if current is None:
            inserted = connection.execute(
                self.insert(documents)
                .values(keyed({"source": source, "url": url, "first_seen": when, **self._restrict_new(values)}))
                .on_conflict_do_nothing(index_elements=ROW_KEY)
            )
            if not inserted.rowcount:
                return False  # inserted by another thread meanwhile
        elif not self._update_row(
            connection,
            source,
            url,
            values,
            expect_state=current.state,
            new_checksum=outcome.columns.get("checksum"),
            original=original,
            validators=outcome.validators,
            compared_checksum=outcome.compared_checksum,
            row_id=current.id,
        ):
            return False
        if outcome.finishes and self.run_id is not None:
            finished = self._finished(keep_request=keeps_request(outcome))
            entry = current.id if current is not None and current.entry is not None else None
            place(self.database, connection, source, url, finished, entry, outcome.depth)
        if current is None or not self.test_mode:  # test mode: an existing row's redirect stays
            self._write_redirect(connection, source, url, redirect, current)
        if not self.test_mode and self.promotes_duplicates:
            checksum = outcome.columns.get("checksum") or (current.checksum if current is not None else None)
            self._make_way(connection, source, url, change, checksum)
        return change.state

    def _ledger_row(self, current: Any) -> Row:
        """What the ledger needs to know of a row read by ``_row_state``, in the current run."""
        in_run = self.run_id is not None
        return Row(
            State(current.state),
            current.status,
            current.failures or 0,
            current.indexed_at is not None,
            entered=in_run and current.entered_run == self.run_id,
            reported=_delta_of(current.delta) if in_run and current.delta_run == self.run_id else None,
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
            values["entered_run"] = self.run_id
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

    def _write_redirect(self, connection: Connection, source: str, url: str, values: Mapping[str, Any], current: Any) -> None:
        """Write what an outcome says of the URL's temporary redirect (``target``, ``via``), where
        it changes what the row read by ``_row_state`` held: most outcomes say "no redirect" of a
        URL that has none, and cost no statement."""
        held = {"target": None, "via": None} if current is None else {"target": current.target, "via": current.via}
        changed = tuple(column for column, value in values.items() if value != held[column])
        if not changed:
            return

        def build() -> Any:
            chosen = select(
                documents.c.id,
                documents.c.source,
                *(bindparam(f"v_{column}", type_=redirects.c[column].type) for column in changed),
            ).where(documents.c.source == bindparam("w_source"), documents.c.url_hash == bindparam("w_url_hash"))
            statement = self.insert(redirects).from_select(["document_id", "source", *changed], chosen)
            return statement.on_conflict_do_update(
                index_elements=["document_id"], set_={column: statement.excluded[column] for column in changed}
            )

        parameters = {f"v_{column}": values[column] for column in changed}
        connection.execute(
            self._statement(("write_redirect", changed), build),
            {**parameters, "w_source": source, "w_url_hash": url_hash(url)},
        )

    def _make_way(self, connection: Connection, source: str, url: str, change: Change, checksum: str | None) -> None:
        """After ``change`` is written: a document that left the index queues its duplicates to
        take its place; a copy out of the index may call the group's rightful holder back."""
        if change.leaves_index:
            self._promote_duplicates(connection, source, url)
        if change.copy_out_of_index and checksum:
            self._recall_holder(connection, source, checksum)

    def _restrict_new(self, values: dict[str, Any]) -> dict[str, Any]:
        """A new row in test mode: only what the report needs (a test crawl indexes nothing)."""
        if not self.test_mode or values.get("state") not in (State.PENDING.value, State.REMOVING.value):
            return values
        return {**values, "state": State.FETCHED.value}

    def _row_state(self) -> Any:
        return self._statement(
            "row_state",
            lambda: (
                select(
                    documents.c.id,
                    frontier.c.document_id.label("entry"),
                    redirects.c.target,
                    redirects.c.via,
                    documents.c.state,
                    documents.c.status,
                    documents.c.failures,
                    documents.c.indexed_at,
                    documents.c.delta,
                    documents.c.delta_run,
                    documents.c.entered_run,
                    documents.c.checksum,
                    documents.c.last_changed,
                )
                .select_from(WHOLE)
                .where(documents.c.source == bindparam("source"), documents.c.url_hash == bindparam("url_hash"))
            ),
        )

    def _queued(self) -> dict[str, Any]:
        """The frontier entry of a URL back in the current run's frontier (to be fetched again)."""
        assert self.run_id is not None
        return {"run_id": self.run_id, "state": FrontierState.QUEUED.value, "lease_owner": None, "lease_expires": None}

    def _promote_duplicates(self, connection: Any, source: str, url: str) -> None:
        """The indexed copy of some content leaves: its duplicates are fetched again, and the
        first to arrive takes its place."""
        duplicates = and_(documents.c.source == source, documents.c.duplicate_of == url)
        if self.run_id is not None:
            queue_documents(self.database, connection, self.run_id, duplicates)
        connection.execute(update(documents).where(duplicates).values(duplicate_of=None))

    def _has_left(self, connection: Connection, source: str, url: str) -> bool:
        """Whether ``url`` left the index in this run (removing, removed, with this run's delta).
        The original a duplicate is about to be marked against may be in the index or on its way
        in (a canonical copy coming back), but not gone since the pipeline compared them. On
        PostgreSQL its row stays locked until the caller commits, so that it cannot leave (and
        promote its duplicates) between this answer and the caller's write; SQLite writes one at
        a time, and _update_row repeats the check in its statement."""
        row = connection.execute(
            self._statement(
                "row_state_locked",
                lambda: (
                    select(documents.c.state, documents.c.delta_run)
                    .where(documents.c.source == bindparam("source"), documents.c.url_hash == bindparam("url_hash"))
                    .with_for_update(read=True)
                ),
            ),
            {"source": source, "url_hash": url_hash(url)},
        ).first()
        return row is not None and row.state in LEFT_INDEX and row.delta_run == self.run_id

    def mark_duplicate(self, source: str, url: str, of: str, depth: int | None = None, *, fetched: bool = True) -> None:
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
        self.record(source, url, outcome)

    def settle_pending(self, source: str, cached_by: str) -> list[str]:
        """Before a push of what ``cached_by`` (a cache) holds: where two URLs put the same
        content in the index at the same moment (two nodes of a shared crawl, each checking for a
        duplicate before the other had written), keep one, ``holder_of``'s choice over the whole
        group, which every node makes alike. One statement a push, not one a cached page (issue
        58: that was 3 % of a shared crawl's CPU), returning only the groups with copies; run on
        every push, as the later of two racing rows may be left to a crawl of one process (its
        node killed before it pushed). Returns the URLs marked duplicates."""
        with self.single.connect() as connection:
            rows = connection.execute(
                self._statement("same_content_as_pending", self._same_content_as_pending),
                {"source": source, "cached_by": cached_by},
            ).mappings()
            groups: dict[str, list[dict[str, Any]]] = {}
            for found in rows:
                groups.setdefault(found["checksum"], []).append(dict(found))
        marked = []
        for group in groups.values():
            original = holder_of(group)
            for copy in group:
                if copy is not original:
                    self.mark_duplicate(source, copy["url"], of=original["url"], fetched=False)
                    marked.append(copy["url"])
        return marked

    def find_duplicate(self, source: str, checksum: str, url: str) -> dict[str, Any] | None:
        """Another document of the source with this content, in the index (id, url,
        canonical_url), or None; with ``first_seen_id``, the row id of ``url`` (ids follow
        discovery order), and ``copies``: the other copies of the content (``_copies``). Which
        of them the index keeps is decided over the whole group (rules/maintenance.py
        ``holder_of``)."""
        with self.single.connect() as connection:
            copies = [copy for copy in self._copies(connection, source, checksum) if copy["url"] != url]
            holder = next((copy for copy in copies if copy["holds"]), None)
            if holder is None:
                return None
            own_id = connection.execute(self._row_id(), {"source": source, "url_hash": url_hash(url)}).scalar_one_or_none()
            return {
                "id": holder["id"],
                "url": holder["url"],
                "canonical_url": holder["canonical_url"],
                "first_seen_id": own_id,
                "copies": copies,
            }

    def _copies(self, connection: Connection, source: str, checksum: str) -> list[dict[str, Any]]:
        """The copies of a content among the source's URLs, in discovery order: those that hold
        it in the index (``holds``), and those out of it last found its duplicates (status 911,
        or 912: a replaced copy that answered 304 since; also while queued again to take the
        place of an original that left, when they keep the canonical they name), each as id,
        url, canonical_url, holds, and ``done``: fetched in this run already (or not in it)."""
        statement = self._statement(
            "copies",
            lambda: (
                select(
                    documents.c.id,
                    documents.c.url,
                    documents.c.canonical_url,
                    documents.c.state,
                    documents.c.duplicate_of,
                    frontier.c.run_id,
                    frontier.c.state.label("frontier"),
                )
                .select_from(WITH_ENTRY)
                .where(
                    documents.c.source == bindparam("source"),
                    documents.c.checksum == bindparam("checksum"),
                    or_(
                        one_of(documents.c.state, IN_INDEX) & documents.c.duplicate_of.is_(None),
                        ~one_of(documents.c.state, IN_INDEX)
                        & documents.c.status.in_([literal(code, documents.c.status.type) for code in COPY_STATUSES]),
                    ),
                )
                .order_by(documents.c.id)
            ),
        )
        return [
            {
                "id": row.id,
                "url": row.url,
                "canonical_url": row.canonical_url,
                "holds": row.state in IN_INDEX and row.duplicate_of is None,
                "done": self.run_id is None or row.run_id != self.run_id or row.frontier == FrontierState.DONE,
            }
            for row in connection.execute(statement, {"source": source, "checksum": checksum}).mappings()
        ]

    def _recall_holder(self, connection: Connection, source: str, checksum: str) -> None:
        """A copy of ``checksum``'s content was recorded out of the index: when the group's
        rightful holder (``holder_of``: another copy names it canonical) holds nothing and was
        fetched in this run already, it is fetched again, to take the place of the copy that
        holds the content now. Decided here, where every copy's outcome is written one after
        the other, and not by the pipeline that met the copy naming it: the two copies' pages
        go through the pipelines at once, and each was compared before the other was written
        (issue 53, item 26: B stayed in the index though C named A)."""
        if self.run_id is None:
            return
        copies = self._copies(connection, source, checksum)
        if not copies or not any(copy["holds"] for copy in copies):
            return
        holder = holder_of(copies)
        if holder["holds"] or not holder["done"] or holder["url"] not in named_canonical(copies):
            return  # only a canonical named by a copy: its rank is what a copy's outcome changes
        queue_documents(self.database, connection, self.run_id, documents.c.id == holder["id"])
        logger.debug("Fetched again to hold its content, which another copy names canonical: %s", holder["url"])

    @staticmethod
    def _same_content_as_pending() -> Any:
        """The source's documents in the index, not duplicates themselves, of each content that
        two or more of them have and that a document waiting in one cache (or in none: rows
        from before scale-out) has; by content, in discovery order. Each look-up by key: the
        waiting rows by state, their copies by checksum (``checksum IS NOT NULL`` would make
        SQLite read the source by its checksum index instead)."""
        waiting = select(documents.c.checksum).where(
            documents.c.source == bindparam("source"),
            documents.c.state == State.PENDING.value,
            or_(documents.c.cached_by == bindparam("cached_by"), documents.c.cached_by.is_(None)),
        )
        in_index = and_(
            documents.c.source == bindparam("source"),
            one_of(documents.c.state, IN_INDEX),
            documents.c.duplicate_of.is_(None),
        )
        shared = (
            select(documents.c.checksum)
            .where(in_index, documents.c.checksum.in_(waiting))
            .group_by(documents.c.checksum)
            .having(func.count() > 1)
        )
        return (
            select(documents.c.id, documents.c.url, documents.c.canonical_url, documents.c.checksum)
            .where(in_index, documents.c.checksum.in_(shared))
            .order_by(documents.c.checksum, documents.c.id)
        )

    def _row_id(self) -> Any:
        return self._statement(
            "row_id",
            lambda: select(documents.c.id).where(
                documents.c.source == bindparam("source"), documents.c.url_hash == bindparam("url_hash")
            ),
        )

    def plan_maintenance(
        self,
        source: str,
        excluding: Callable[[str, int], tuple[int, str] | None],
        recheck_before: datetime | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> tuple[int, int]:
        """The start of a maintenance crawl, in one pass over the source's rows. ``excluding(url,
        depth)`` is the source's rules now: (status, rule) for a URL they exclude, else None.

        - A URL the rules now exclude is recorded excluded (it leaves the index if it was in),
          except a temporary redirect's target outside the boundary (``via``): it is fetched
          through its redirect, and stays while the redirect stands (``drop_stale_targets``).
        - A URL a rule excluded but the rules admit now is queued (robots.txt and the address
          guard decide again when it is requested).
        - A URL that left the index, or never entered it (404, moved, ...), is queued again when
          it was last fetched before ``recheck_before`` (None: in every maintenance crawl).
        - Every other known URL is queued, linked or not: a page whose linking page answers 304
          is still checked.

        A source of a million URLs is read ``PLAN_BATCH`` rows at a time (by id, no row held
        longer than its batch), and each batch's URLs are queued as it is decided, in a
        transaction of its own: the crawl, which goes on meanwhile (crawl/run_start.py
        ``plan_run``), fetches the first while the last are planned. The plan is idempotent
        (a URL in the run keeps its place): one cut short (``stop``, a crash) is made again
        whole. Returns (queued, newly excluded)."""
        assert self.run_id is not None
        with self.engine.connect() as connection:
            # temporary redirects that stood at their last fetch: their targets are fetched through them
            targets: set[str] = set(
                connection.execute(
                    select(redirects.c.target)
                    .join_from(redirects, documents, documents.c.id == redirects.c.document_id)
                    .where(
                        redirects.c.source == source,
                        redirects.c.target.is_not(None),
                        documents.c.status.in_(sorted(TEMPORARY_REDIRECTS)),
                    )
                ).scalars()
            )
        excluded = queued = 0
        since = as_utc(recheck_before)
        out_of_index = {state.value for state in OUT_OF_INDEX if state is not None}
        after = 0
        while stop is None or not stop():
            queue = array("q")
            with self.engine.connect() as connection:  # closed before a row is recorded (SQLite's one writer)
                if self.engine.dialect.name == "postgresql":
                    # in id order through the index of (source, id), PLAN_BATCH rows: while the
                    # table's statistics were stale, the planner read the rest of the source
                    # and sorted it, for every batch (issue 58: 1,050,000 rows at 100,000 URLs)
                    connection.exec_driver_sql("SET LOCAL enable_sort = off")
                rows = connection.execute(
                    select(
                        documents.c.id,
                        documents.c.url,
                        documents.c.depth,
                        documents.c.state,
                        documents.c.status,
                        redirects.c.via,
                        documents.c.last_fetched,
                    )
                    .select_from(WITH_REDIRECT)
                    .where(documents.c.source == source, documents.c.id > after)
                    .order_by(documents.c.id)
                    .limit(PLAN_BATCH)
                ).all()
            if not rows:
                break
            after = rows[-1].id
            for row in rows:
                if stop is not None and stop():
                    break  # the batch's URLs decided so far are queued; the plan stays pending
                verdict = excluding(row.url, row.depth or 0)
                if verdict is not None:
                    through_redirect = row.via is not None or row.url in targets
                    if not through_redirect and not (row.state in out_of_index and row.status == verdict[0]):
                        self.record(source, row.url, Outcome(Event.EXCLUDED, verdict[0], verdict[1]))
                        excluded += 1
                    continue
                if since is not None and row.state in (State.REMOVED.value, State.FETCHED.value) and _linkless(row.status):
                    fetched = as_utc(row.last_fetched)
                    if fetched is not None and fetched >= since:
                        continue
                queue.append(row.id)
            if queue:
                queued += self._queue_planned(queue)
        return queued, excluded

    def _queue_planned(self, queue: array[int]) -> int:
        """Queue a batch of the plan's documents (by id) in the run, in one transaction."""
        assert self.run_id is not None
        queued = 0
        with self.engine.begin() as connection:
            if self.engine.dialect.name == "postgresql":
                # by the primary key, 500 ids at a time: the planner read the whole source for
                # each 500 while the table's statistics were stale or it was small (issue 58:
                # 20,000 rows each at 20,000 URLs); the transaction holds nothing else
                connection.exec_driver_sql("SET LOCAL enable_seqscan = off")
            for start in range(0, len(queue), 500):
                # a node that joined the run meanwhile (a fleet's, processes = N) may have queued,
                # leased or fetched it in this run: it keeps its place, and its fetch is not
                # repeated; request data of an earlier run (a redirect chain, a render) does not carry over
                queued += queue_documents(
                    self.database,
                    connection,
                    self.run_id,
                    documents.c.id.in_(queue[start : start + 500].tolist()),
                    new_in_run=True,
                    drop_request=True,
                )
        return queued

    def record_spared(
        self, source: str, urls: Sequence[str], spare: Callable[[str, Known], Outcome | None], max_failures: int = 3
    ) -> Spared:
        """A maintenance run's pages that need no request, in bulk: each of ``urls`` queued in
        this run and not leased yet, or not planned yet (in an earlier run's frontier: the plan,
        made while the crawl goes on, then leaves it), in the index, with no temporary redirect, for which
        ``spare(url, known)`` gives an outcome (a sitemap's word that it is unchanged: an
        UNCHANGED without a fetch), is recorded as ``record`` would record that outcome (the
        ledger's ``decide``) and finished in the run, without a request. A million sitemap
        entries cost a few statements per ``SPARE_BATCH``, not a trip through the downloader
        each. URLs leased meanwhile (in flight) are left to their request, and said so."""
        assert self.run_id is not None
        spared = Spared()
        for start in range(0, len(urls), SPARE_BATCH):
            chunk = urls[start : start + SPARE_BATCH]
            with self.engine.connect() as connection:
                rows = connection.execute(
                    self._statement("spare_candidates", self._spare_candidates),
                    {"source": source, "hashes": [url_hash(url) for url in chunk]},
                ).all()
            when = now()
            writes: dict[int, dict[str, Any]] = {}
            urls_of: dict[int, str] = {}
            for row in rows:
                if row.run_id is None:
                    continue  # never queued (taken over from Solr): requested
                if row.run_id == self.run_id and row.frontier != FrontierState.QUEUED.value:
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
                    change = decide(self._ledger_row(row), outcome, max_failures)
                except TransitionRefused:
                    continue  # left to its request, which records it (and logs why)
                values = self._restrict(self._values(change, outcome, when))
                for column in REDIRECT_COLUMNS:
                    values.pop(column, None)  # it has none (above), and none is written
                writes[row.id] = values
                urls_of[row.id] = row.url
            if writes:
                spared.urls.extend(urls_of[document_id] for document_id in self._write_spared(source, writes))
        return spared

    def _spare_candidates(self) -> Any:
        """The rows of a batch of URLs (by hash) that ``record_spared`` reads: each with its
        frontier entry and redirect, as ``record`` reads it.

        On PostgreSQL each URL is looked up on its own (a LATERAL subquery per hash, kept apart
        by its LIMIT): as one ``url_hash IN (...)``, the planner read the source's rows through
        an index on ``source`` alone, for every batch, while the table's statistics were stale
        (a table grown by the crawl before autovacuum's ANALYZE: issue 58, 100,000 rows a batch
        of 500 at 100,000 URLs)."""
        columns = (
            documents.c.id,
            documents.c.url,
            documents.c.last_fetched,
            documents.c.last_modified,
            documents.c.etag,
            frontier.c.run_id,
            frontier.c.state.label("frontier"),
            *self._row_state().selected_columns[2:],  # the ledger's view, as ``record`` reads it
        )
        if self.engine.dialect.name != "postgresql":
            return (
                select(*columns)
                .select_from(WHOLE)
                .where(
                    documents.c.source == bindparam("source"),
                    documents.c.url_hash.in_(bindparam("hashes", expanding=True)),
                )
            )
        wanted = func.unnest(bindparam("hashes", type_=ARRAY(String))).table_valued("hash").render_derived(name="wanted")
        found = (
            select(*columns)
            .select_from(WHOLE)
            .where(documents.c.source == bindparam("source"), documents.c.url_hash == wanted.c.hash)
            .limit(1)
            .lateral("found")
        )
        return select(*found.c).select_from(wanted).join(found, true())

    def _write_spared(self, source: str, writes: Mapping[int, dict[str, Any]]) -> set[int]:
        """Finish in this run the entries of ``writes`` (document id -> values) still queued,
        and write those documents' values, in one transaction: an entry leased between the read
        and this write keeps its request. Returns the ids of the documents written."""
        try:
            finished = self._finish_spared(writes)
        except _ChangedMeanwhile:
            # a row left the index between the read and this write (another outcome): none of the
            # batch is written, and their requests decide (a URL is never done unrecorded)
            logger.debug("A batch of %d spared pages of %s changed meanwhile: requested instead", len(writes), source)
            return set()
        logger.debug("%d pages of %s spared a request, recorded in bulk", len(finished), source)
        return finished

    def _finish_spared(self, writes: Mapping[int, dict[str, Any]]) -> set[int]:
        """``_write_spared``'s transaction: _ChangedMeanwhile rolls it back."""
        with self.engine.begin() as connection:
            assert self.run_id is not None
            finished = finish_queued(self.database, connection, self.run_id, list(writes), self._finished())
            by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
            for document_id in finished:
                values = writes[document_id]
                by_columns.setdefault(tuple(values), []).append(
                    {"w_id": document_id, **{f"v_{column}": value for column, value in values.items()}}
                )
            written = 0
            for columns, parameters in by_columns.items():
                statement = self._statement(("spared", columns), functools.partial(_spared_update, columns))
                written += connection.execute(statement, parameters).rowcount
            if self.engine.dialect.supports_sane_multi_rowcount and written != len(finished):
                raise _ChangedMeanwhile
        return finished

    def _redirect_now(self, origin: dict[str, Any], target: str) -> str:
        """Whether ``origin`` redirects to ``target`` as of this run: ``stands`` (its last answer
        was that temporary redirect), ``failing`` (fetched in this run, failed transiently),
        ``unknown`` (not fetched in this run), or ``gone``."""
        status = origin["status"] or 0
        if origin["target"] == target and status in TEMPORARY_REDIRECTS:
            return "stands"
        if origin["run_id"] != self.run_id or origin["frontier"] != FrontierState.DONE:
            return "unknown"
        if origin["state"] == State.FAILED.value or 500 <= status < 600 or status == 429:
            return "failing"
        return "gone"

    def drop_stale_targets(
        self, source: str, excluding: Callable[[str, int], tuple[int, str] | None], max_failures: int = 3
    ) -> int:
        """The end of a complete run: a temporary redirect's target outside the boundary leaves
        the index once every URL of the source that redirected to it was fetched in this run and
        redirects there no more (it answers 200, 404, another target, robots.txt disallows it
        ...). While one still does, or was not fetched, it stays. A transient failure of such a
        URL (its own, or its robots.txt's) is one of the target's too: it stays, and leaves after
        ``max_failures`` such crawls. Returns how many leave.

        A target that is not in the index (a duplicate of a page of the source, a 404, a failure,
        robots.txt's refusal) is excluded by the boundary the same way once no redirect to it
        stands, a failing one included (it has no document to keep through the failure):
        otherwise it would keep a status of a redirect that is gone, and stay a URL of the
        source that a later crawl fetches (a duplicate taking the place of its original that
        left) only to remove."""
        with self.engine.connect() as connection:
            targets: Sequence[SqlRow[str, str, int | None, str]] = connection.execute(
                select(documents.c.url, redirects.c.via, documents.c.depth, documents.c.state)
                .join_from(redirects, documents, documents.c.id == redirects.c.document_id)
                .where(
                    redirects.c.source == source,
                    redirects.c.via.is_not(None),
                    documents.c.state != State.REMOVING.value,  # leaving already (or held by the guard)
                )
            ).all()
        outside = [(url, via, state, verdict) for url, via, depth, state in targets if (verdict := excluding(url, depth or 0))]
        # every URL that led to a target: the one it was last reached through (``via``), and any
        # whose last answer (or the one before a failure) was a temporary redirect to it: read in
        # a few statements for all targets (one per target read every row of the source)
        origin_rows = select(*ORIGIN_COLUMNS).select_from(WHOLE)
        by_url: dict[str, dict[str, Any]] = {}
        with self.engine.connect() as connection:
            for row in connection.execute(
                origin_rows.where(documents.c.source == source, redirects.c.target.is_not(None))
            ).mappings():
                by_url[row["url"]] = dict(row)
            vias = sorted({url_hash(via) for _url, via, _state, _verdict in outside})
            for start in range(0, len(vias), 500):
                for row in connection.execute(
                    origin_rows.where(documents.c.source == source, documents.c.url_hash.in_(vias[start : start + 500]))
                ).mappings():
                    by_url[row["url"]] = dict(row)
        redirecting: dict[str, list[dict[str, Any]]] = {}
        for origin in by_url.values():
            if origin["target"] is not None:
                redirecting.setdefault(origin["target"], []).append(origin)
        gone = 0
        for url, via, state, verdict in outside:
            origins = list(redirecting.get(url, []))
            if via in by_url and by_url[via] not in origins:
                origins.insert(0, by_url[via])
            verdicts = [self._redirect_now(origin, url) for origin in origins]
            if not verdicts or "stands" in verdicts or "unknown" in verdicts:
                logger.debug(
                    "Redirect target outside the boundary kept: %s (%s)",
                    url,
                    ", ".join(f"{origin['url']}: {verdict}" for origin, verdict in zip(origins, verdicts, strict=True))
                    or "no URL of the source is known to redirect to it",
                )
                continue
            if "failing" in verdicts and state in IN_INDEX:  # kept through the failure, as a failing crawl of its own
                origin = origins[verdicts.index("failing")]
                failure = Outcome(
                    Event.FAILED,
                    origin["status"],
                    f"{origin['url']}, which redirects to it, failed: {origin['reason']}",
                    counted=origin["status"] not in UNCOUNTED_FAILURES,  # a refused login (936) holds it as long as it lasts
                )
                if self.record(source, url, failure, max_failures) == State.REMOVING:
                    gone += 1
                continue
            reason = f"{verdict[1]}; no URL of the source redirects to it any more ({via} answered {origins[0]['status']})"
            self.record(source, url, Outcome(Event.EXCLUDED, verdict[0], reason, columns={"via": None}))
            gone += state in IN_INDEX
        return gone

    def mark_linked(self, source: str, urls: Sequence[str]) -> None:
        """These URLs were linked from a page (or are seeds) in the current run: not orphans."""
        if self.run_id is None or not urls:
            return
        with self.engine.begin() as connection:
            connection.execute(
                update(documents)
                .where(documents.c.source == source, documents.c.url_hash.in_([url_hash(url) for url in urls]))
                .values(linked_run=self.run_id)
            )

    def orphans(self, source: str) -> list[str]:
        """Indexed documents that no page linked to in the current run (and no seed is)."""
        with self.engine.connect() as connection:
            rows: Result[str] = connection.execute(
                select(documents.c.url).where(
                    documents.c.source == source,
                    documents.c.state.in_(IN_INDEX),
                    or_(documents.c.linked_run.is_(None), documents.c.linked_run != self.run_id),
                )
            )
            return [url for (url,) in rows]

    def failing(self, source: str, limit: int = 100_000) -> list[tuple[str, dict[str, Any]]]:
        """URLs whose last fetch failed (a failed document, or an indexed one whose update
        failed), with the request data they failed with: an incremental listing names only what
        changed since, so these are asked again, as they were asked then."""
        with self.engine.connect() as connection:
            rows: Result[str, str | None] = connection.execute(
                select(documents.c.url, frontier.c.request)
                .select_from(WITH_ENTRY)
                .where(documents.c.source == source, or_(documents.c.state == State.FAILED.value, documents.c.failures > 0))
                .limit(limit)
            )
            return [(url, json.loads(request) if request else {}) for url, request in rows]

    def count_in_index(self, source: str) -> int:
        with self.engine.connect() as connection:
            return connection.execute(
                select(func.count()).where(documents.c.source == source, documents.c.state.in_([*IN_INDEX, State.REMOVING.value]))
            ).scalar_one()

    def knows(self, source: str) -> bool:
        """Whether the table holds any row of ``source``."""
        with self.engine.connect() as connection:
            return connection.execute(select(documents.c.id).where(documents.c.source == source).limit(1)).first() is not None

    def record_found(self, source: str, pages: Iterable[Sequence[tuple[str, str | None, str | None]]]) -> int:
        """Documents Solr holds under ``source`` while the table knows nothing of it, a page at a
        time as (url, display URL, checksum): each gets a row, ``indexed`` with Solr's checksum
        (event ``found``), which the next maintenance plan queues like any known URL. A URL the
        table knows keeps its row. One transaction: another process finds the source unknown
        until every page is in (it waits on the rows, or the lock), and a take-over cut short
        (Solr failing, a kill) leaves nothing, to be done again. Returns how many were read."""
        statement = self._statement("insert_new", lambda: self.insert(documents).on_conflict_do_nothing(index_elements=ROW_KEY))
        found = 0
        with self.engine.begin() as connection:
            for page in pages:
                when = now()
                rows = []
                for url, display_url, checksum in page:
                    change = decide(None, Outcome(Event.FOUND, int(Status.OK), FOUND_REASON))
                    rows.append(
                        {
                            "source": source,
                            "url": url,
                            "display_url": display_url or url,
                            "state": change.state.value,
                            "status": change.status,
                            "reason": change.reason,
                            "checksum": checksum,
                            "first_seen": when,
                            "indexed_at": when,
                        }
                    )
                if rows:
                    connection.execute(statement, [keyed(row) for row in rows])
                found += len(rows)
        return found

    def record_excluded(self, source: str, rows: Sequence[tuple[str, int, int, str]]) -> None:
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
                    "source": source,
                    "url": url,
                    "state": change.state.value,
                    "status": status,
                    "depth": depth,
                    "reason": reason,
                    "first_seen": when,
                    **self._delta(change.delta),
                }
            )
        self._insert_new(inserted)

    def _update_row(
        self,
        connection: Connection,
        source: str,
        url: str,
        values: dict[str, Any],
        new_checksum: str | None = None,
        expect_state: str | None = None,
        original: str | None = None,
        validators: Mapping[str, Any] | None = None,
        compared_checksum: str | None = None,
        row_id: int | None = None,
    ) -> bool:
        """Set ``values`` on the row of ``url`` (restricted in test mode), with a statement built
        once per set of columns. With ``new_checksum``, ``last_changed`` is set only when the
        row's checksum differs: it says when the content changed, not when it was last seen.
        ``validators`` (an unchanged document's ETag, Last-Modified) are set only while the row's
        checksum is ``compared_checksum``: they belong to that content. With ``expect_state``,
        only while the row is in that state, and with ``original``, only while that URL has not
        left the index in this run (_has_left, in the same statement). ``row_id``: the row's id,
        read in this transaction: the row is found by its primary key. Found by (source,
        url_hash) with a state to match, PostgreSQL chose the index of (source, state) as often
        as the unique one while a table's statistics were stale, and read every row of the
        source in that state for each page (issue 58: 100,000 rows a page at 100,000 URLs).
        Returns whether it wrote."""
        values = self._restrict(values)
        checked = self._restrict(dict(validators or {}))
        if not values and not checked:
            return True
        track_change = new_checksum is not None and "last_changed" in values
        guarded = expect_state is not None
        # SQLite only: on PostgreSQL ``_has_left`` holds the original's row locked until the
        # caller commits, and the check in this statement was planned through the index of a
        # run's deltas, which read half the source's rows for every page (issue 58: 5,000 rows a
        # page at 10,000 URLs; tests/benchmarks/README.md)
        kept = guarded and original is not None and self.engine.dialect.name == "sqlite"
        by_id = row_id is not None

        def build() -> Any:
            assignments: dict[str, Any] = {column: bindparam(f"v_{column}") for column in values}
            if track_change:
                assignments["last_changed"] = case(
                    (
                        or_(documents.c.checksum.is_(None), documents.c.checksum != bindparam("new_checksum")),
                        bindparam("v_last_changed"),
                    ),
                    else_=documents.c.last_changed,
                )
            for column in checked:  # the validators of the content compared with, or none
                assignments[column] = case(
                    (documents.c.checksum.is_not_distinct_from(bindparam("w_checksum")), bindparam(f"v_{column}")),
                    else_=documents.c[column],
                )
            if by_id:  # ids are never reused: a row is never deleted
                statement = update(documents).where(documents.c.id == bindparam("w_id"))
            else:
                statement = update(documents).where(
                    documents.c.source == bindparam("w_source"), documents.c.url_hash == bindparam("w_url_hash")
                )
            if guarded:
                statement = statement.where(documents.c.state == bindparam("w_state"))
            if kept:
                holder = documents.alias("holder")
                statement = statement.where(
                    ~exists().where(
                        holder.c.source == bindparam("w_source"),
                        holder.c.url_hash == bindparam("w_original"),
                        one_of(holder.c.state, LEFT_INDEX),
                        holder.c.delta_run == bindparam("w_run"),
                    )
                )
            return statement.values(assignments)

        statement = self._statement(("update_row", tuple(values), track_change, guarded, kept, tuple(checked), by_id), build)
        parameters = {f"v_{column}": value for column, value in {**values, **checked}.items()}
        if checked:
            parameters["w_checksum"] = compared_checksum
        if track_change:
            parameters["new_checksum"] = new_checksum
        if guarded:
            parameters["w_state"] = expect_state
        if kept:
            parameters.update(w_original=url_hash(original or ""), w_run=self.run_id)
        if by_id:
            parameters["w_id"] = row_id
        if kept or not by_id:
            parameters.update(w_source=source, w_url_hash=url_hash(url))
        result = connection.execute(statement, parameters)
        return not guarded or bool(result.rowcount)

    def mark_indexed(self, source: str, acknowledged: Sequence[tuple[str, str]]) -> list[str]:
        """Solr acknowledged these (url, checksum) pairs: the ledger's INDEXED event, in bulk.
        Returns the URLs whose row still had that checksum: a document re-cached with new
        content while the old one was being pushed stays pending."""
        when = now()
        done: list[str] = []
        before, after = _bulk(Event.INDEXED)
        with self.engine.begin() as connection:
            for start in range(0, len(acknowledged), 500):  # one statement per batch, not per document
                chunk = [(url_hash(url), checksum) for url, checksum in acknowledged[start : start + 500]]
                done += (
                    connection.execute(
                        update(documents)
                        .where(
                            documents.c.source == source,
                            documents.c.state == before,
                            tuple_(documents.c.url_hash, documents.c.checksum).in_(chunk),
                        )
                        .values(state=after, indexed_at=when)
                        .returning(documents.c.url)
                    )
                    .scalars()
                    .all()
                )
        return done

    def mark_done(self, source: str, url: str) -> None:
        """The URL is finished in the current run (its outcome was recorded elsewhere, or needs none)."""
        finished = self._finished()
        if finished:
            with self.single.connect() as connection:
                place(self.database, connection, source, url, finished)

    def mark_removed(self, source: str, urls: Sequence[str]) -> None:
        """Solr acknowledged the deletion of these URLs: the ledger's REMOVED event, in bulk."""
        before, after = _bulk(Event.REMOVED)
        with self.engine.begin() as connection:
            connection.execute(
                update(documents)
                .where(
                    documents.c.source == source,
                    documents.c.url_hash.in_([url_hash(url) for url in urls]),
                    documents.c.state == before,
                )
                .values(state=after, indexed_at=None)
            )

    def hold_removals(self, source: str) -> int:
        """The mass-deletion guard refused this run's deletions: the ledger's HELD event, in bulk.
        They stay ``removing``; the delta report says ``held``, not ``deleted``. So does a URL of
        this run that Solr acknowledged and the guard keeps there though it should leave: one that
        entered the index in the run and left it again (no deletion, but still in Solr), or one
        held by an earlier run that was fetched again. One Solr refused keeps ``refused``."""
        if self.run_id is None:
            return 0
        before, _after = _bulk(Event.HELD)
        with self.engine.begin() as connection:
            result = connection.execute(
                update(documents)
                .where(
                    documents.c.source == source,
                    documents.c.state == before,
                    documents.c.delta_run == self.run_id,
                    or_(
                        documents.c.delta == Delta.DELETED.value,
                        documents.c.indexed_at.is_not(None) & documents.c.delta.not_in([Delta.HELD.value, Delta.REFUSED.value]),
                    ),
                )
                .values(delta=Delta.HELD.value)
            )
        return result.rowcount or 0

    # --- reads ----------------------------------------------------------------------------

    def pending(self, source: str, cached_by: str | None = None) -> list[tuple[str, str]]:
        """(url, checksum) of the documents waiting for Solr, oldest first; with ``cached_by``,
        only those that cache holds (or that no cache claims: rows from before scale-out)."""
        query = select(documents.c.url, documents.c.checksum).where(
            documents.c.source == source, documents.c.state == State.PENDING.value
        )
        if cached_by is not None:
            query = query.where(or_(documents.c.cached_by == cached_by, documents.c.cached_by.is_(None)))
        with self.engine.connect() as connection:
            rows: Result[str, str | None] = connection.execute(query.order_by(documents.c.id))
            # a pending row has its checksum: CACHED, the one event that leads to pending, writes it
            return [(url, checksum) for url, checksum in rows if checksum is not None]

    def pending_count(self, source: str) -> int:
        """How many documents wait for Solr: counted by the database, as the progress line asks
        every interval (a Solr outage may leave a whole source waiting)."""
        with self.engine.connect() as connection:
            number: int = connection.execute(
                select(func.count())
                .select_from(documents)
                .where(documents.c.source == source, documents.c.state == State.PENDING.value)
            ).scalar_one()
            return number

    def removals(self, source: str) -> list[str]:
        """URLs that must leave Solr."""
        with self.engine.connect() as connection:
            rows: Result[str] = connection.execute(
                select(documents.c.url).where(documents.c.source == source, documents.c.state == State.REMOVING.value)
            )
            return [url for (url,) in rows]

    def holders(self, urls: Sequence[str]) -> dict[str, set[str]]:
        """For each URL, the sources whose rows hold it in the index (pending or indexed)."""
        found: dict[str, set[str]] = {}
        with self.engine.connect() as connection:
            for start in range(0, len(urls), 500):
                hashes = [url_hash(url) for url in urls[start : start + 500]]
                rows: Result[str, str] = connection.execute(
                    select(documents.c.source, documents.c.url).where(
                        documents.c.url_hash.in_(hashes), documents.c.state.in_(IN_INDEX)
                    )
                )
                for source, url in rows:
                    found.setdefault(url, set()).add(source)
        return found

    def display_url_owner(self, source: str, display_url: str) -> str | None:
        """The URL already indexed (or about to be) under ``display_url``, if any."""
        statement = self._statement(
            "display_url_owner",
            lambda: (
                select(documents.c.url)
                .where(
                    documents.c.source == bindparam("source"),
                    documents.c.display_url == bindparam("display_url"),
                    one_of(documents.c.state, IN_INDEX),
                )
                .order_by(documents.c.id)
                .limit(1)
            ),
        )
        with self.single.connect() as connection:
            return connection.execute(statement, {"source": source, "display_url": display_url}).scalar_one_or_none()

    def get(self, source: str, url: str) -> dict[str, Any] | None:
        """All that is known of ``url``: its document row, with its frontier entry (``run_id``,
        ``frontier``: its state in that run, ``lease_owner``, ``lease_expires``, ``request``)
        and its redirect (``target``, ``via``), None where it has none."""
        whole = select(documents, *ENTRY_AS, redirects.c.target, redirects.c.via).select_from(WHOLE)
        with self.engine.connect() as connection:
            row = (
                connection.execute(whole.where(documents.c.source == source, documents.c.url_hash == url_hash(url)))
                .mappings()
                .first()
            )
            return dict(row) if row is not None else None

    def count_by(self, source: str, column: str) -> dict[Any, int]:
        """How many rows of the source per value of ``column`` (state or status)."""
        field = documents.c[column]
        with self.engine.connect() as connection:
            rows: Sequence[SqlRow[Any, int]] = connection.execute(
                select(field, func.count()).where(documents.c.source == source).group_by(field)
            ).all()
            return {value: count for value, count in rows}

    def rows(
        self, source: str, status: int | None = None, state: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[dict[str, Any]]:
        """A page of the source's rows (by id), of one status and/or state if given: the web
        administration's document browser. ``status=-1`` selects rows without a status."""
        query = select(
            documents.c.url,
            documents.c.display_url,
            documents.c.state,
            documents.c.status,
            documents.c.reason,
            documents.c.content_type,
            documents.c.depth,
            documents.c.last_fetched,
            documents.c.delta,
        ).where(documents.c.source == source)
        if status == -1:
            query = query.where(documents.c.status.is_(None))
        elif status is not None:
            query = query.where(documents.c.status == status)
        if state is not None:
            query = query.where(documents.c.state == state)
        with self.engine.connect() as connection:
            return [
                dict(row) for row in connection.execute(query.order_by(documents.c.id).limit(limit).offset(offset)).mappings()
            ]
