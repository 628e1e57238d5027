"""DocumentTable: every URL of every source, and its state in the ledger's terms, as read.

The reads of the documents table (and of a URL's frontier entry and redirect with it): what the
crawl, the push, the reports and the web administration ask of it. A table is that of one run
(``for_run``, ``closing``): its run decides what "in this run" means to a read, and what the
Ledger's writes over it finish and report. The writes are the Ledger's (ledger.py), which
decides every change (rules/lifecycle.py, rules/ledger_rules.py) and applies it through the
stores below it: records.py (a URL's row), duplicates.py, plans.py, redirects.py and
frontier.py (its entry). The runs (runs.py) and the delta reports (deltas.py) are other stores
over the same database (database.py).

A row is keyed by its source and the SHA-256 of its URL (``url_hash``), not by the URL, which
may be longer than an index entry holds: every look-up by URL goes through ``url_hash``.
Callers only ever see and pass whole URLs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Result, bindparam, func, or_, select
from sqlalchemy import Row as SqlRow

from searchcrawl.rules.lifecycle import State
from searchcrawl.store import anchor_table, duplicates
from searchcrawl.store.columns import IN_INDEX, LEFT_INDEX, WHOLE, WITH_ENTRY, one_of
from searchcrawl.store.database import Database, url_hash
from searchcrawl.store.models import documents, frontier, redirects

__all__ = ["IN_INDEX", "LEFT_INDEX", "DocumentTable"]

# document states out of the index (and not on their way in): their statuses say why
NOT_INDEXED = (State.FAILED.value, State.FETCHED.value, State.EXCLUDED.value, State.REMOVED.value, State.REMOVING.value)

# a URL's record as it was one row: the entry's and the redirect's columns under their old names
ENTRY_AS = (
    frontier.c.run_id,
    frontier.c.state.label("frontier"),
    frontier.c.lease_owner,
    frontier.c.lease_expires,
    frontier.c.request,
)


class DocumentTable:
    """The documents of all sources: each URL's state in its source, as the ledger decides it."""

    def __init__(
        self, database: Database, *, run_id: int | None = None, test_mode: bool = False, promotes_duplicates: bool = True
    ) -> None:
        """A table is that of one run, fixed for its life: ``for_run`` and ``closing``
        make another over the same database (nothing changes what the Ledger's writes over it do meanwhile)."""
        self.database = database
        self.engine = database.engine
        self.single = database.single
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

    # --- reads ----------------------------------------------------------------------------

    def find_duplicate(self, source: str, checksum: str, url: str) -> dict[str, Any] | None:
        """Another document of the source with this content, in the index (id, url,
        canonical_url), or None; with ``first_seen_id``, the row id of ``url`` (ids follow
        discovery order), and ``copies``: the other copies of the content (duplicates.py ``copies``). Which
        of them the index keeps is decided over the whole group (rules/maintenance.py
        ``holder_of``)."""
        with self.single.connect() as connection:
            copies = [
                copy for copy in duplicates.copies(self.database, connection, source, checksum, self.run_id) if copy["url"] != url
            ]
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

    def _row_id(self) -> Any:
        return self._statement(
            "row_id",
            lambda: select(documents.c.id).where(
                documents.c.source == bindparam("source"), documents.c.url_hash == bindparam("url_hash")
            ),
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

    def anchors_due(self, source: str, after: int = 0, limit: int = 500) -> list[anchor_table.DueDocument]:
        """The source's documents whose anchor field is due (store/anchor_table.py), from their marks
        after mark ``after`` (``limit`` marks at most): url, url_hash, state and the ``marks`` read,
        which the push deletes once it set the field."""
        return anchor_table.due_documents(self.database, source, after, limit)

    def anchor_candidates(self, source: str, urls: Sequence[str]) -> dict[str, list[tuple[str, str, str | None]]]:
        """For each of ``urls``, the anchors of the source's pages in the index that link to it:
        (the page's key, the text, the page's access column); which count is content/anchors.py's."""
        hashes = {url_hash(url): url for url in urls}
        found: dict[str, list[tuple[str, str, str | None]]] = {}
        keys = list(hashes)
        for start in range(0, len(keys), 500):
            for target, rows in anchor_table.candidates(self.database, source, keys[start : start + 500]).items():
                found[hashes[target]] = rows
        return found

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

    def not_indexed_statuses(self, source: str) -> dict[int | None, int]:
        """The statuses of the source's documents that are not in the index nor on their way there
        (NOT_INDEXED; the metrics' status classes): read through the (source, state) index, so the
        cost grows with the refused and failed documents, not with the source (all its statuses
        read every row: 42 ms of CPU per 100,000 documents on SQLite)."""
        query = (
            select(documents.c.status, func.count())
            .where(documents.c.source == source, documents.c.state.in_(NOT_INDEXED))
            .group_by(documents.c.status)
        )
        with self.engine.connect() as connection:
            rows: Sequence[SqlRow[int | None, int]] = connection.execute(query).all()
        return {status: int(count) for status, count in rows}

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
