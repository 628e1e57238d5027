"""LedgerWriter: the one writer of URL states during a crawl, an extension (EXTENSIONS -850), so
a source's crawl never runs without it. It is the source's ``Ledger`` (searchcrawl/store/ledger.py):
every write of a URL's row in a crawl goes through it, and the components that write (the push,
the run's start and end, the scope middleware, the agent spider) call its methods, never the
document table's. A read-only crawl (``SEARCHCRAWL_READ_ONLY``, `scrapy explain`) has none.

Its document table is the crawl's (stores.py) until the run starts, then the run's
(``run_started``: its writes finish the run's frontier entries, in its test mode), then the
closing run's (``closing``: the run's end). It records what the crawl's components report through
Scrapy's signals, and the ledger's rules (searchcrawl/rules/lifecycle.py) decide every change:

- ``url_outcome`` (searchcrawl/crawl/signals.py): an ``Outcome`` sent by a component;
- ``urls_excluded``: the URLs the admission (crawl/requests.py) kept out, in bulk;
- ``item_dropped``: a ``NotIndexed`` carries its outcome; any other ``DropItem`` (a custom
  pipeline's) gives the URL status 934 with the pipeline's message;
- ``item_error`` and ``spider_error``: processing raised. The URL gets status 925 with the
  error, counted like a transient failure (its document, if any, stays until ``max_failures``),
  and the run goes on and finishes.

Outcomes are written in batches (issue 74, store/outcome_batcher.py): at most
``SEARCHCRAWL_OUTCOME_BATCH`` in one transaction, at least every ``SEARCHCRAWL_OUTCOME_INTERVAL``
seconds (a timer), on the crawl's thread over SQLite and on one of their own over PostgreSQL
(``SEARCHCRAWL_OUTCOME_THREAD``, ``outcome_thread``). An outcome not yet written is one of a URL the process
still holds leased, so a kill -9 loses none: the URL is fetched again. ``flush`` writes what waits,
and whatever reads the table for what an outcome writes calls it first: the ledger's ``closing``
and ``settle_pending`` (each Solr push) here, the scheduler's idle check and close, the cache
before it seals a spool, the pipelines' look-ups of a checksum or display URL (``flush_for``).

A page's links go with its outcome (``SEARCHCRAWL_LINKS_WITH_OUTCOMES``, issue 94): the scope
middleware hands them over (``before_outcomes``), and they are queued in the transaction of the
next batch, before its outcomes: the page's outcome comes after its links, so a kill -9 still
loses nothing (a page whose outcome is not written stays leased, and is fetched again with its
links), and a hundred pages take the writer lock once, where each page with new links took it
for a transaction of its own. The scheduler, finding the frontier empty while links wait here,
writes them first (``flush_links``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure

from searchcrawl.crawl.meta import DEPTH
from searchcrawl.crawl.run import CrawlArguments
from searchcrawl.crawl.signals import run_started, url_outcome, urls_excluded
from searchcrawl.crawl.stores import source_of, stores_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.outcome_batcher import OutcomeBatcher
from searchcrawl.system.paths import db_url

if TYPE_CHECKING:
    from searchcrawl.crawl.run import Run
    from searchcrawl.store import DocumentTable
    from searchcrawl.store.frontier import Frontier, Known
    from searchcrawl.store.ledger import Spared

logger = logging.getLogger(__name__)

MAX_REASON = 500  # characters of an error message kept in a row's reason


def outcome_thread(setting: object, database_url: str) -> bool:
    """Whether outcome batches are written on a thread of their own (``SEARCHCRAWL_OUTCOME_THREAD``):
    ``"auto"`` where the database is a server (PostgreSQL: each statement a round trip the crawl
    would wait on), not on SQLite (its statements are the process's own work: a thread only
    hands Python's lock over). Measured both ways: tests/benchmarks/README.md (issue 74)."""
    if isinstance(setting, str) and setting.strip().lower() == "auto":
        return not database_url.startswith("sqlite")
    return str(setting).strip().lower() in ("1", "true", "yes", "on")


def processing_error(error: BaseException, depth: int | None = None) -> Outcome:
    """The outcome of a URL whose processing raised ``error``."""
    reason = f"processing raised {type(error).__name__}: {error}"[:MAX_REASON]
    return Outcome(Event.FAILED, int(Status.PROCESSING_ERROR), reason, depth)


def _raised(failure: Failure) -> BaseException:
    """The exception of ``failure``: Twisted types ``Failure.value`` Optional, None only while a
    Failure is being built."""
    assert failure.value is not None
    return failure.value


class LedgerWriter(Ledger):
    """The source's ledger (searchcrawl/store/ledger.py), which records what the crawl's components
    report through Scrapy's signals. The other writes of a URL's state (Solr's answers, the
    run's settlements, links in bulk) are its ``Ledger`` methods, which the components call."""

    def __init__(
        self, crawler: Crawler, table: DocumentTable | None, source: str, max_failures: int = 3, test_mode: bool = False
    ) -> None:
        super().__init__(table, source, max_failures)  # type: ignore[arg-type]  # None: found on first use
        self.crawler = crawler
        self.test_mode = test_mode
        self.stats = crawler.stats
        settings = crawler.settings
        self.links_with_outcomes = settings.getbool("SEARCHCRAWL_LINKS_WITH_OUTCOMES", True)
        self.frontier: Frontier | None = None  # the run's (``run_started``)
        self.outcomes = OutcomeBatcher(
            self._write_batch,
            size=settings.getint("SEARCHCRAWL_OUTCOME_BATCH", 100),
            interval=settings.getfloat("SEARCHCRAWL_OUTCOME_INTERVAL", 0.5),
            name=f"searchcrawl-outcomes-{source}",
            threaded=outcome_thread(settings.get("SEARCHCRAWL_OUTCOME_THREAD", "auto"), db_url(settings)),
        )
        self.timer: AsyncioLoopingCall | LoopingCall | None = None
        crawler.signals.connect(self.run_started, signal=run_started)
        crawler.signals.connect(self.url_outcome, signal=url_outcome)
        crawler.signals.connect(self.urls_excluded, signal=urls_excluded)
        crawler.signals.connect(self.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(self.item_error, signal=signals.item_error)
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LedgerWriter:
        if crawler.settings.getbool("SEARCHCRAWL_READ_ONLY"):
            raise NotConfigured("a read-only crawl (SEARCHCRAWL_READ_ONLY) writes no URL state")
        source = source_of(crawler)
        # a test crawl's writes are so from the start (what it takes over of Solr, its exclusions)
        arguments = CrawlArguments.of(getattr(getattr(crawler, "spider", None), "arguments", {}))
        return cls(crawler, None, source.name, source.settings.max_failures, arguments.test_mode)

    @property
    def table(self) -> DocumentTable:
        """The document table written: the crawl's (stores.py), found on first use
        (the extensions are built together: another is found once all are), then its run's."""
        if self._table is None:
            self._table = stores_of(self.crawler).documents.for_run(None, self.test_mode)
        return self._table

    def run_started(self, run: Run, frontier: Frontier) -> None:
        """The run started: writes are now its own (they finish its frontier entries)."""
        self.flush()
        self.in_run(run.id, run.test_mode)
        self.frontier = frontier

    def spider_opened(self) -> None:
        if not self.outcomes.threaded and self.outcomes.batching:  # the batches whose interval passed
            self.timer = create_looping_call(self.outcomes.write_due)
            self.timer.start(max(0.05, self.outcomes.interval / 2), now=False)

    def engine_stopped(self) -> None:
        if self.timer is not None and self.timer.running:
            self.timer.stop()
        self.outcomes.close()

    def flush(self) -> int:
        """Write every outcome reported so far (store/outcome_batcher.py); returns how many waited."""
        return self.outcomes.flush()

    def before_outcomes(self, write: Callable[[Any], object]) -> None:
        """Run ``write`` (given the connection) in the transaction of the next batch of outcomes,
        before them: a page's links, before its outcome is reported."""
        self.outcomes.add_before(write)

    def links_waiting(self) -> bool:
        """Whether links wait for their batch (``before_outcomes``)."""
        return self.outcomes.holds_before()

    def flush_links(self) -> int:
        """Write the links that wait for their batch, if any (with the outcomes waiting): the
        scheduler found the frontier empty, and they may be its next URLs."""
        return self.flush() if self.links_waiting() else 0

    def _write_batch(self, outcomes: Sequence[tuple[str, Outcome]], before: Sequence[Callable[[Any], object]] = ()) -> object:
        """The batcher's write: ``record_batch``. Links that were not written after all are
        forgotten as queued (``Frontier.forget``): their pages stay leased, and are fetched again."""
        try:
            return self.record_batch(outcomes, before)
        except Exception:
            if before and self.frontier is not None:
                self.frontier.forget()
            raise

    def flush_for(self, column: str, value: Any) -> int:
        """Before a pipeline looks up ``value`` in ``column`` of the table (a checksum, a display
        URL): the outcomes waiting are written first when one of them carries it."""
        return self.outcomes.flush_for(column, value)

    def closing(self) -> None:
        self.flush()  # what was reported while this process fetched is written as such
        super().closing()

    def settle_pending(self, cached_by: str) -> list[str]:
        self.flush()  # a push (or the run's end) reads what is pending: every outcome written first
        return super().settle_pending(cached_by)

    def urls_excluded(self, rows: list[tuple[str, int, int, str]]) -> None:
        self.record_excluded(rows)

    def record_spared(self, urls: Sequence[str], spare: Callable[[str, Known], Outcome | None]) -> Spared:
        spared = super().record_spared(urls, spare)
        if spared.urls:
            self.stats.inc_value(f"searchcrawl/outcome/{Event.UNCHANGED.value}", len(spared.urls))
        return spared

    def url_outcome(self, url: str, outcome: Outcome) -> None:
        self.outcomes.add(url, outcome)
        self.stats.inc_value(f"searchcrawl/outcome/{outcome.event.value}")

    def item_dropped(self, item: Any, response: Any, exception: BaseException, spider: Any = None) -> None:
        url = getattr(item, "url", None)
        if url is None:
            return
        outcome = getattr(exception, "outcome", None) or Outcome(
            Event.GONE, int(Status.DROPPED), f"dropped by a pipeline: {exception}"[:MAX_REASON], getattr(item, "depth", None)
        )
        self.url_outcome(url, outcome)

    def item_error(self, item: Any, response: Any, spider: Any, failure: Failure) -> None:
        url = getattr(item, "url", None)
        if url is not None:
            self.url_outcome(url, processing_error(_raised(failure), getattr(item, "depth", None)))

    def spider_error(self, failure: Failure, response: Any, spider: Any = None) -> None:
        request = getattr(response, "request", None)
        url = request.url if request is not None else getattr(response, "url", None)
        if url is not None:
            depth = request.meta.get(DEPTH) if request is not None else None
            self.url_outcome(url, processing_error(_raised(failure), depth))
