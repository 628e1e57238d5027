"""Ledger: the one writer of a source's URL states.

Every write of a URL's row goes through here: the outcomes components report (through the
ledger writer, searchcrawl/crawl/ledger_writer.py), Solr's acknowledgements and refusals (the
push, searchcrawl/index/indexer.py), the exclusions of links in bulk, the documents taken over
from Solr, the links met in the run, and the run's start and end settlements. What a write
changes is decided by the ledger's rules (searchcrawl/rules/lifecycle.py), and written by the
document table (documents.py), which knows the SQL. Plain code, no Scrapy: a component gets the
ledger and calls it; none calls the document table's writes (tests/store/test_one_writer.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from searchcrawl.rules.lifecycle import Event, Outcome, State
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.documents import DocumentTable, Spared
from searchcrawl.store.frontier import Known

# the source's rules on a known URL: (status, rule) when they keep it out now, else None
Excluding = Callable[[str, int], tuple[int, str] | None]


class Ledger:
    """The writes of one source's URL states, over its document table."""

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

    # --- what happened to a URL -------------------------------------------------------------

    def record(self, url: str, outcome: Outcome) -> State | None:
        """Record what happened to ``url`` (DocumentTable.record); returns its new state (None:
        the ledger refused the outcome, logged)."""
        return self.table.record(self.source, url, outcome, self.max_failures)

    def record_spared(self, urls: Sequence[str], spare: Callable[[str, Known], Outcome | None]) -> Spared:
        """Pages of a maintenance run ``spare`` says need no request, recorded in bulk
        (DocumentTable.record_spared): the sitemap's unchanged pages of a million-URL source."""
        return self.table.record_spared(self.source, urls, spare, self.max_failures)

    def record_excluded(self, rows: Sequence[tuple[str, int, int, str]]) -> None:
        """Links a rule kept out, as (url, status, depth, reason), in bulk: new URLs only."""
        self.table.record_excluded(self.source, rows)

    def record_found(self, pages: Iterable[Sequence[tuple[str, str | None, str | None]]]) -> int:
        """Documents Solr holds of the source while the table knows nothing of it, taken over."""
        return self.table.record_found(self.source, pages)

    def mark_linked(self, urls: Sequence[str]) -> None:
        """These URLs were linked (or listed, or are seeds) in the current run: not orphans."""
        self.table.mark_linked(self.source, urls)

    def settle_pending(self, cached_by: str) -> list[str]:
        """Before a push of ``cached_by``'s documents, and at the run's end: the same content put
        in the index twice at the same moment is kept once (DocumentTable.settle_pending); the
        URLs marked duplicates."""
        return self.table.settle_pending(self.source, cached_by)

    # --- Solr's answers ---------------------------------------------------------------------

    def mark_indexed(self, acknowledged: Sequence[tuple[str, str]]) -> list[str]:
        """Solr acknowledged these (url, checksum): the URLs marked indexed."""
        return self.table.mark_indexed(self.source, acknowledged)

    def mark_refused(self, refused: Sequence[tuple[str, str, str]]) -> None:
        """Solr refused these (url, checksum, reason): each pending one still of that content gets
        status 924 (SOLR_REFUSED) and leaves the index; a row re-cached meanwhile stays pending."""
        for url, checksum, reason in refused:
            row = self.table.get(self.source, url)
            if row is None or row["state"] != State.PENDING.value or row["checksum"] != checksum:
                continue
            self.record(url, Outcome(Event.REFUSED, int(Status.SOLR_REFUSED), f"refused by Solr: {reason}"))

    def mark_removed(self, urls: Sequence[str]) -> None:
        """Solr acknowledged the deletion of these URLs."""
        self.table.mark_removed(self.source, urls)

    # --- the run's start and end ------------------------------------------------------------

    def plan_maintenance(
        self, excluding: Excluding, recheck_before: datetime | None = None, stop: Callable[[], bool] | None = None
    ) -> tuple[int, int]:
        """A maintenance crawl's plan: every known URL queued or excluded (DocumentTable.plan_maintenance)."""
        return self.table.plan_maintenance(self.source, excluding, recheck_before, stop)

    def drop_stale_targets(self, excluding: Excluding) -> int:
        """A complete run's end: redirect targets outside the boundary nothing redirects to leave."""
        return self.table.drop_stale_targets(self.source, excluding, self.max_failures)

    def hold_removals(self) -> int:
        """The mass-deletion guard refused this run's deletions: they are held."""
        return self.table.hold_removals(self.source)
