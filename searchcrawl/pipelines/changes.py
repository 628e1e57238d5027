"""Change detection and duplicates: what reaches the cache is new or changed, and indexed once.

- A document in the index is compared with what was indexed on the source's ``modified_when``
  signals (Last-Modified, ETag, checksum; any differs: changed). Unchanged: no cache write, no
  Solr update, its Solr ``_version_`` does not move. A forced recrawl re-indexes everything.
- The same content at several URLs of a source is indexed once: the ``rel=canonical`` target
  if it is among them, else the first seen (discovered first, whatever order the concurrent
  downloads finish in); the others are recorded as its duplicates.
"""

from __future__ import annotations

import logging

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from ..context import CrawlContext
from ..items import CrawledDocument
from ..maintenance import has_changed, original_of

logger = logging.getLogger(__name__)


class Skipped(DropItem):
    """An item that needs no indexing (unchanged, duplicate): logged at DEBUG, not as a warning."""

    def __init__(self, message: str) -> None:
        super().__init__(message, log_level="DEBUG")


class ChangePipeline:
    def __init__(self, context: CrawlContext) -> None:
        self.context = context

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChangePipeline:
        return cls(CrawlContext.of(crawler))

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        table = self.context.table
        checksum = item.fields["checksum"]
        previous = item.previous
        if previous is not None and not self.context.forced:
            changed, why = has_changed(previous, item.headers.get("last-modified"), item.headers.get("etag"), checksum,
                                       self.context.source.settings.modified_when)
            if not changed:
                table.record_unchanged(item.source, item.url, not_modified=False, depth=item.depth)
                raise Skipped(f"Unchanged ({why}): {item.url}")
            logger.debug("Changed (%s): %s", why, item.url)
        item.delta = "changed" if previous is not None else "new"
        duplicate = table.find_duplicate(item.source, checksum, item.url)
        if duplicate is not None:
            this = {"url": item.url, "canonical_url": item.canonical_url, "id": duplicate["first_seen_id"]}
            if original_of(this, duplicate) is this:  # this URL takes the place in the index
                table.mark_duplicate(item.source, duplicate["url"], of=item.url)
                logger.debug("Canonical copy replaces %s: %s", duplicate["url"], item.url)
            else:
                table.mark_duplicate(item.source, item.url, of=duplicate["url"], depth=item.depth)
                raise Skipped(f"Duplicate of {duplicate['url']}: {item.url}")
        return item
