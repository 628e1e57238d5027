"""Pushes the document cache to Solr: when it reaches its threshold, and when the crawl ends.

Documents left pending by an earlier run (Solr was down, the crawl was killed) are pushed first,
when the spider opens. A failed push leaves everything cached and pending; during the crawl it
is retried with growing pauses, at the end a few times more, and then the next crawl takes over.
Solr calls block, so they run in a worker thread: the crawl never waits on Solr.
"""

from __future__ import annotations

import asyncio
import logging
import time

from scrapy.crawler import Crawler

from ..context import CrawlContext
from ..indexer import IndexingError, PushResult, push_pending, push_with_retries
from ..items import CrawledDocument
from ..maintenance import deletion_guard
from ..status import Status

logger = logging.getLogger(__name__)

MAX_PAUSE = 300.0  # seconds: the longest wait between push attempts during a crawl


class SolrPipeline:
    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.context = CrawlContext.of(crawler)
        self.stats = crawler.stats
        self.threshold = settings.getint("SEARCHCRAWL_CACHE_MAX_BYTES")
        self.max_docs = settings.getint("SEARCHCRAWL_SOLR_BATCH_DOCS")
        self.max_bytes = settings.getint("SEARCHCRAWL_SOLR_BATCH_BYTES")
        self.requests_at_once = max(1, settings.getint("SEARCHCRAWL_SOLR_PUSH_REQUESTS"))
        self.retry_times = max(1, settings.getint("SEARCHCRAWL_SOLR_RETRY_TIMES"))
        self.backoff = settings.getfloat("SEARCHCRAWL_SOLR_RETRY_BACKOFF")
        self.flushing: asyncio.Future[None] | None = None
        self.failures = 0
        self.retry_after = 0.0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SolrPipeline:
        return cls(crawler)

    def push_once(self, remove: bool = False, wait: bool = True) -> PushResult:
        """One pass over the pending documents (blocking; runs in a worker thread). Removals wait
        for the end of the crawl, where the mass-deletion guard sees them all. Processes sharing
        the cache push it in turn; without ``wait``, one finding another pushing skips its turn
        (the other pushes its documents too)."""
        source = self.context.source
        cache = self.context.cache
        with cache.push_lock(wait) as mine:
            if not mine:
                return PushResult()
            return push_pending(
                source.name, self.context.table, cache, self.context.index,
                max_docs=self.max_docs, max_bytes=self.max_bytes, preserve_cache=source.settings.preserve_cache,
                remove=remove, requests_at_once=self.requests_at_once,
            )

    def removals_allowed(self) -> bool:
        """Orphans (if the source deletes them), then the mass-deletion guard (blocking)."""
        context = self.context
        if not context.ends_run():
            return False  # a shared crawl: the node that ends the run removes
        source = context.source
        table = context.table
        complete = context.frontier is None or context.frontier.counts()["queued"] == 0
        if source.settings.orphans == "delete" and complete and context.run_id is not None:
            seeds = set(source.seed_urls)
            for url in table.orphans(source.name):
                if url not in seeds:
                    table.record_outcome(source.name, url, status=int(Status.ORPHAN), reason="no longer linked")
        refusal = deletion_guard(len(table.removals(source.name)), table.count_in_index(source.name),
                                 source.settings.max_delete_share, context.force_delete)
        if refusal is not None:
            logger.error("Mass-deletion guard for %s: %s", source.name, refusal)
            self.stats.set_value("searchcrawl/deletions_held", len(table.removals(source.name)))
            return False
        return True

    def _account(self, result: PushResult) -> None:
        self.stats.inc_value("searchcrawl/indexed", result.indexed)
        self.stats.inc_value("searchcrawl/removed", result.removed)
        if result.error is None:
            self.failures = 0
            return
        self.failures += 1
        self.stats.inc_value("searchcrawl/solr_failures")
        pause = min(MAX_PAUSE, self.backoff * 2 ** (self.failures - 1))
        self.retry_after = time.monotonic() + pause
        logger.warning(
            "Solr push failed; %d documents stay cached and pending, next attempt in %.0fs: %s",
            result.pending, pause, result.error,
        )

    async def open_spider(self) -> None:
        if self.context.test_mode:
            return
        result = await asyncio.to_thread(self.push_once)
        if result.indexed:
            logger.info("Pushed %d documents left pending by an earlier crawl", result.indexed)
        self._account(result)

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        if self.context.test_mode:
            return item
        due = time.monotonic() >= self.retry_after
        idle = self.flushing is None or self.flushing.done()
        if due and idle and self.context.cache.size_bytes >= self.threshold:
            self.flushing = asyncio.ensure_future(self._flush())
        return item

    async def _flush(self) -> None:
        try:
            self._account(await asyncio.to_thread(self.push_once, False, False))
        except Exception:  # a bug here must not kill the crawl; the documents stay pending
            logger.exception("Solr push crashed; documents stay pending")

    async def close_spider(self) -> None:
        if self.context.test_mode:
            logger.info("Test mode: nothing was sent to Solr")
            return
        if self.flushing is not None:
            await self.flushing
        self.context.cache.seal()  # every document is marked pending now: its spool may go once pushed
        remove = await asyncio.to_thread(self.removals_allowed)
        result = await asyncio.to_thread(push_with_retries, lambda: self.push_once(remove), self.retry_times, self.backoff)
        self.stats.inc_value("searchcrawl/indexed", result.indexed)
        self.stats.inc_value("searchcrawl/removed", result.removed)
        self.stats.set_value("searchcrawl/pending", result.pending)
        if result.error is not None:
            # what `scrapy crawl` exits with 4 for: documents this crawl could not get into Solr
            self.stats.set_value("searchcrawl/not_indexed", result.pending)
            logger.error(
                "Solr unavailable: %d documents of %s stay cached and pending; the next crawl pushes them first (%s)",
                result.pending, self.context.source.name, result.error,
            )
            return
        try:
            await asyncio.to_thread(self.context.index.commit)
        except IndexingError as exc:
            logger.warning("%s (documents become searchable with Solr's next automatic commit)", exc)
        logger.info(
            "Indexing done: %d documents of %s pushed to Solr and %d removed in this crawl",
            self.stats.get_value("searchcrawl/indexed", 0), self.context.source.name,
            self.stats.get_value("searchcrawl/removed", 0),
        )
