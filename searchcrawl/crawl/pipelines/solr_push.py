"""Pushes the document cache to Solr: whenever another threshold's worth has been cached, or
``SEARCHCRAWL_PUSH_INTERVAL`` seconds after the last push began when something was cached since,
and when the crawl ends. The processes of a crawl of several (``processes = N``) share one cache,
and a push sends what each of them cached: the interval runs from the last push of any of them
(``DocumentCache.last_push_began``), so that N processes push as often as one.

The interval keeps the index current during a crawl of small documents (20 MB of them can take
an hour to fetch politely), and keeps the end of a crawl short: Solr indexes while the crawl goes
on, on another core, instead of taking the whole crawl in one request after the last page. Both
rules are checked as documents are cached, and the interval also every interval (a maintenance
crawl whose changed page is followed by unchanged ones). Not with ``preserve_cache``, whose spools
all stay: each push reads every spool's record headers, which the size rule alone keeps to one
pass per threshold's worth.

Documents left pending by an earlier run (Solr was down, the crawl was killed) are pushed first,
when the spider opens, by the run's first process (one joining a run that others work on pushes
them with its own later pushes); before them, the source's documents that an earlier searchcrawl
indexed with the URL as their id get their per-source id (``id_migration.migrate_ids``). A failed push leaves
everything cached and pending; during the crawl it is retried with growing pauses. When the
spider closes, this pipeline only finishes the push under way: the run's end pushes what is left
(the removals too, past the mass-deletion guard), a few times more when Solr fails, and then the
next crawl takes over (extensions/run_end.py). Documents Solr refuses one by one are not pending:
they get status 924 (``push.push_pending``). Solr calls block, so they run in a worker thread:
the crawl never waits on Solr.
"""

from __future__ import annotations

import asyncio
import logging
import time

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings
from scrapy.statscollectors import StatsCollector

from searchcrawl.config.source import Source
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.run import ANCHORS_STAT, Run
from searchcrawl.crawl.signals import run_started, solr_pushed
from searchcrawl.crawl.stores import Stores, source_of, stores_of
from searchcrawl.index.push import PushResult, SolrPusher
from searchcrawl.store.frontier import Frontier

logger = logging.getLogger(__name__)

MAX_PAUSE = 300.0  # seconds: the longest wait between push attempts during a crawl


def make_pusher(settings: BaseSettings, source: Source, stores: Stores, ledger: LedgerWriter) -> SolrPusher:
    """A pusher of the source's cache with the crawl's batch settings. The crawl has one, the Solr
    pipeline's, which the run's end takes too (``RunEnd``), so that what it does once a crawl (the
    id migration before the first push, ``SolrPusher.migrate_ids``) is done once: a second pusher
    at the run's end asked Solr again, and said a refused migration twice and a failed one at
    every attempt of the last push."""
    return SolrPusher(
        ledger,
        stores.cache,
        stores.index,
        max_docs=settings.getint("SEARCHCRAWL_SOLR_BATCH_DOCS"),
        max_bytes=settings.getint("SEARCHCRAWL_SOLR_BATCH_BYTES"),
        preserve_cache=source.settings.preserve_cache,
        requests_at_once=max(1, settings.getint("SEARCHCRAWL_SOLR_PUSH_REQUESTS")),
    )


def count_push(stats: StatsCollector, result: PushResult) -> None:
    """A push's counts in the crawl's stats, the pushes during the crawl's and the run's end's
    alike: the documents indexed apart from the anchor fields set in place, which Solr counts as
    adds too (the run's counters keep both: crawl/run.py ``run_counters``)."""
    stats.inc_value("searchcrawl/indexed", result.indexed)
    stats.inc_value("searchcrawl/removed", result.removed)
    stats.inc_value("searchcrawl/solr_refused", result.refused)
    stats.inc_value(ANCHORS_STAT, result.anchors)


class SolrPipeline:
    """Pushes the document cache to Solr during the crawl (see the module's docstring)."""

    def __init__(self, crawler: Crawler, pusher: SolrPusher, ledger: LedgerWriter, *, preserve_cache: bool = False) -> None:
        settings = crawler.settings
        self.pusher, self.ledger = pusher, ledger
        self.signals = crawler.signals
        self.stats = crawler.stats
        self.run: Run | None = None  # the run this process works on (``run_started``); None: no run
        crawler.signals.connect(self.run_started, signal=run_started)
        self.threshold = settings.getint("SEARCHCRAWL_CACHE_MAX_BYTES")
        # not with preserve_cache: its spools stay, and every push reads the headers of all of them
        self.interval = 0.0 if preserve_cache else settings.getfloat("SEARCHCRAWL_PUSH_INTERVAL")
        self.backoff = settings.getfloat("SEARCHCRAWL_SOLR_RETRY_BACKOFF")
        self.flushing: asyncio.Future[None] | None = None
        self.ticker: asyncio.Future[None] | None = None  # checks the interval while nothing is cached
        self.failures = 0
        self.retry_after = 0.0
        self.pushed_at = 0  # the cache's bytes_put when the last push during the crawl began
        self.pushed_time = time.monotonic()  # and when it began (the crawl's start before the first)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SolrPipeline:
        source, stores = source_of(crawler), stores_of(crawler)
        ledger = crawler.get_extension(LedgerWriter)
        if ledger is None:
            raise NotConfigured("a read-only crawl (SEARCHCRAWL_READ_ONLY) pushes nothing to Solr")
        pusher = make_pusher(crawler.settings, source, stores, ledger)
        return cls(crawler, pusher, ledger, preserve_cache=source.settings.preserve_cache)

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.run = run

    def push_once(self, remove: bool = False, wait: bool = True, during_crawl: bool = False) -> PushResult:
        """One pass over the pending documents (blocking; runs in a worker thread). Removals wait
        for the run's end, where the mass-deletion guard sees them all. Processes sharing
        the cache push it in turn; without ``wait``, one finding another pushing skips its turn
        (the other pushes its documents too). The pushes during the crawl pace the anchor fields
        of pages many link to; the run's end sets every one due (index/anchor_pacing.py)."""
        return self.pusher.push_once(remove, wait, during_crawl=during_crawl)

    def _account(self, result: PushResult, seconds: float | None = None) -> None:
        if result.skipped:  # another process pushed: says nothing of Solr, keeps the pause as it is
            return
        if seconds is not None:
            self.signals.send_catch_log(solr_pushed, seconds=seconds, result=result)
        count_push(self.stats, result)
        if result.error is None:
            self.failures = 0
            return
        self.failures += 1
        self.stats.inc_value("searchcrawl/solr_failures")
        pause = min(MAX_PAUSE, self.backoff * 2 ** (self.failures - 1))
        self.retry_after = time.monotonic() + pause
        logger.warning(
            "Solr push failed; %d documents stay cached and pending, next attempt in %.0fs: %s",
            result.pending,
            pause,
            result.error,
        )

    async def open_spider(self) -> None:
        if self.run is None or self.run.test_mode:  # this process crawls nothing, or sends nothing
            return
        # A process joining a run that others work on (processes = N, a fleet) leaves what is
        # pending to them: the run's first process pushed an earlier crawl's documents when it
        # opened, and what is pending now is theirs of this run (the seed page, just cached),
        # pushed by their next push; its own pushes (interval, threshold, close) push whatever
        # its cache holds, an earlier crawl's documents included.
        if not self.run.joined:
            started = time.monotonic()
            result = await asyncio.to_thread(self.push_once)
            if result.indexed:
                logger.info("Pushed %d documents left pending by an earlier crawl", result.indexed)
            self._account(result, time.monotonic() - started)
        if self.interval > 0:
            self.ticker = asyncio.ensure_future(self._tick())

    async def _tick(self) -> None:
        """The interval is also checked every interval: a maintenance crawl whose one changed page
        is followed by unchanged ones (which cache nothing) pushes it then, not at its end."""
        while True:
            await asyncio.sleep(self.interval)
            self.consider_push()

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        if self.run is not None and not self.run.test_mode:
            self.consider_push()
        return item

    def consider_push(self) -> None:
        """Start a push in a worker thread if one is due (and none runs)."""
        # A push starts once SEARCHCRAWL_CACHE_MAX_BYTES have been cached since the last push
        # began, so that pushes go in batches of about that much. Not "while the cache holds that
        # much": with preserve_cache pushed spools stay, and while a push runs or Solr is down
        # the cache stays full, and every new document would then start a push of itself. After
        # a failed push, a full cache is tried again when the pause is over (retry_after). A push
        # also starts when SEARCHCRAWL_PUSH_INTERVAL has passed since the last one began and
        # something was cached since, or the last push failed: after a failure, once the pause is
        # over (``due``), so a Solr that comes back gets what waits during the crawl, not at its end.
        cache = self.pusher.cache
        now = time.monotonic()
        due = now >= self.retry_after
        idle = self.flushing is None or self.flushing.done()
        cached = cache.bytes_put - self.pushed_at
        fresh = cached >= self.threshold
        waited = 0 < self.interval <= now - self.pushed_time and (cached > 0 or self.failures > 0)
        if waited and not fresh and not self.failures:
            waited = not self._pushed_by_another(now)
        retry = self.failures > 0 and cache.size_bytes >= self.threshold
        if due and idle and (fresh or waited or retry):
            self.pushed_at, self.pushed_time = cache.bytes_put, now
            self.flushing = asyncio.ensure_future(self._flush())

    def _pushed_by_another(self, now: float) -> bool:
        """Did another process sharing the cache (``processes = N``) begin a push less than an
        interval ago? It pushes what this one cached before it began too, so this one's interval
        starts from that push (``pushed_time``): N processes push as often as one, not N times
        as often, each push reading the table's pending documents and the cache's spools
        (issue 102)."""
        since = time.time() - self.pusher.cache.last_push_began()
        if not 0 <= since < self.interval:  # none, long ago, or a clock set back: as before
            return False
        self.pushed_time = now - since
        return True

    async def _flush(self) -> None:
        try:
            started = time.monotonic()
            result = await asyncio.to_thread(self.push_once, False, False, True)
            self._account(result, time.monotonic() - started)
        except Exception:  # a bug here must not kill the crawl; the documents stay pending
            logger.exception("Solr push crashed; documents stay pending")

    async def close_spider(self) -> None:
        """The push under way ends; the run's end pushes what is left (extensions/run_end.py)."""
        if self.run is None:  # it crawled nothing, and pushed nothing
            return
        if self.run.test_mode:
            logger.info("Test mode: nothing was sent to Solr")
            return
        # this process fetches nothing more: the push under way's refusals queue no duplicate
        self.ledger.closing()
        if self.ticker is not None:
            self.ticker.cancel()
        if self.flushing is not None:
            await self.flushing
