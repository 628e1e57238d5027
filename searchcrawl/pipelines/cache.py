"""Writes each document to the document cache and marks it pending in the document table."""

from __future__ import annotations

import logging

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from ..context import CrawlContext
from ..items import CrawledDocument
from ..maintenance import original_of
from ..status import Status
from .changes import Skipped

logger = logging.getLogger(__name__)


class CachePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.context = CrawlContext.of(crawler)
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CachePipeline:
        return cls(crawler)

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        table = self.context.table
        display_url = item.fields["display_url"]
        owner = table.display_url_owner(item.source, display_url)
        if owner is not None and owner != item.url:
            reason = f"display URL {display_url} is already {owner}'s"
            table.record_outcome(item.source, item.url, status=Status.DISPLAY_URL_CONFLICT, reason=reason, depth=item.depth)
            self.stats.inc_value("searchcrawl/display_url_conflicts")
            logger.warning("Display URL conflict, not indexed: %s: %s", item.url, reason)
            raise DropItem(reason)
        size = 0 if self.context.test_mode else self.context.cache.put(item.fields)
        table.mark_pending(item.source, item.url, item.fields["checksum"], display_url, item.delta, item.canonical_url,
                           cached_by=self.context.cache.id)
        if self.context.shared:  # another node may have cached the same content at this moment
            original = table.settle_duplicates(item.source, item.url, item.fields["checksum"], original_of)
            if original is not None:  # its cached record is left to the push, which skips it
                raise Skipped(f"Duplicate of {original} (cached by another node at the same time): {item.url}")
        self.stats.inc_value("searchcrawl/cached")
        self.stats.inc_value("searchcrawl/cached_bytes", size)
        return item
