"""Writes each document to the document cache and marks it pending in the document table."""

from __future__ import annotations

from scrapy.crawler import Crawler

from ..context import CrawlContext
from ..items import CrawledDocument


class CachePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.context = CrawlContext.of(crawler)
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CachePipeline:
        return cls(crawler)

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        size = self.context.cache.put(item.fields)
        self.context.table.mark_pending(item.source, item.url, item.fields["checksum"])
        self.stats.inc_value("searchcrawl/cached")
        self.stats.inc_value("searchcrawl/cached_bytes", size)
        return item
