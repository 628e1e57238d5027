"""Per-crawl shared state: the source, its document table, cache and index.

Spider, middlewares and pipelines are separate Scrapy components; they share one CrawlContext
per crawler (built on first use) instead of each opening its own database connection pool.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from scrapy import signals
from scrapy.crawler import Crawler

from . import paths
from .boundary import Boundary, Decision
from .cache import DocumentCache
from .db import DocumentTable
from .display import DisplayUrls
from .rewriter import UrlRewriter, load_rewriter
from .indexer import SolrIndex
from .source import Source

_ATTRIBUTE = "_searchcrawl_context"
logger = logging.getLogger(__name__)


@dataclass
class CrawlContext:
    source: Source
    table: DocumentTable
    cache: DocumentCache
    index: SolrIndex
    boundary: Boundary
    rewriter: UrlRewriter
    display_urls: DisplayUrls
    crawler: Crawler
    excluded: list[tuple[str, int, int, str]] = field(default_factory=list)
    recorded: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, crawler: Crawler) -> CrawlContext:
        context = getattr(crawler, _ATTRIBUTE, None)
        if context is None:
            context = cls.build(crawler)
            setattr(crawler, _ATTRIBUTE, context)
            crawler.signals.connect(context.close, signal=signals.spider_closed)
        return context

    @classmethod
    def build(cls, crawler: Crawler) -> CrawlContext:
        source: Source | None = getattr(crawler.spidercls, "source", None)
        if source is None:
            raise TypeError(f"{crawler.spidercls.__name__} is not a searchcrawl source spider")
        settings = crawler.settings
        return cls(
            source=source,
            table=DocumentTable(paths.db_url(settings)),
            cache=DocumentCache(paths.cache_dir(settings, source.name)),
            index=SolrIndex(
                paths.solr_url(settings),
                timeout=settings.getfloat("SEARCHCRAWL_SOLR_TIMEOUT"),
                commit_within_ms=settings.getint("SEARCHCRAWL_SOLR_COMMIT_WITHIN"),
            ),
            boundary=Boundary(source.seed_urls, source.settings),
            rewriter=load_rewriter(source.settings.url_rewriter),
            display_urls=DisplayUrls(source.settings.display_urls),
            crawler=crawler,
        )

    def admit(self, url: str, depth: int) -> Decision:
        """The boundary's decision on a URL about to be requested; exclusions are remembered for
        the document table (written by ``flush_exclusions``) and counted per crawler code."""
        decision = self.boundary.check(url, depth)
        if not decision.allowed:
            assert decision.status is not None
            self.crawler.stats.inc_value(f"searchcrawl/excluded/{decision.status.name.lower()}")
            if url not in self.recorded:
                self.recorded.add(url)
                self.excluded.append((url, int(decision.status), depth, decision.rule))
                logger.debug("Excluded (%s): %s", decision.rule, url)
        return decision

    def flush_exclusions(self) -> None:
        if self.excluded:
            self.table.record_excluded(self.source.name, self.excluded)
            self.excluded = []

    def close(self) -> None:
        self.table.close()
