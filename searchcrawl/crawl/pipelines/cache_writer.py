"""Writes each document to the document cache and marks it pending in the document table."""

from __future__ import annotations

import logging

from scrapy.crawler import Crawler

from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.extensions.crawl_state import crawl_state
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.pipelines.changes import duplicate_of
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.rules.lifecycle import Delta, Event, Outcome
from searchcrawl.rules.maintenance import holder_of
from searchcrawl.rules.status_codes import Status

logger = logging.getLogger(__name__)


class CachePipeline:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.context = crawl_state(crawler)
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
            self.stats.inc_value("searchcrawl/display_url_conflicts")
            raise NotIndexed(
                Outcome(Event.GONE, int(Status.DISPLAY_URL_CONFLICT), reason, item.depth),
                f"Display URL conflict, not indexed: {item.url}: {reason}",
                log_level="WARNING",
            )
        size = 0 if self.context.test_mode else self.context.cache.put(item.fields)
        # pushed again by a forced recrawl with the title and text it was indexed with: unchanged
        # for the delta report (a searcher finds what was there)
        same = self.context.forced and item.previous is not None and item.previous.get("checksum") == item.fields["checksum"]
        self.crawler.signals.send_catch_log(
            url_outcome,
            url=item.url,
            outcome=Outcome(
                Event.CACHED,
                200,
                item.note,
                item.depth,
                Delta.UNCHANGED if same else None,
                columns={
                    **item.record,
                    "checksum": item.fields["checksum"],
                    "display_url": display_url,
                    "canonical_url": item.canonical_url,
                    "cached_by": self.context.cache.id,
                },
            ),
        )
        if self.context.shared:  # another node may have cached the same content at this moment
            original = self.context.writer.settle_duplicates(item.url, item.fields["checksum"], holder_of)
            if original is not None:  # its cached record is left to the push, which skips it
                raise NotIndexed(
                    duplicate_of(original, item.depth),
                    f"Duplicate of {original} (cached by another node at the same time): {item.url}",
                )
        self.stats.inc_value("searchcrawl/cached")
        self.stats.inc_value("searchcrawl/cached_bytes", size)
        return item
