"""Who may read each document (searchcrawl/access/): before anything converts it, so that a
document whose access cannot be known (status 927) costs no conversion and is never indexed, not
even as public; an indexed version of it leaves the index (the outcome is GONE)."""

from __future__ import annotations

import logging

from scrapy.crawler import Crawler

from searchcrawl.access.source_rules import DocumentAccess
from searchcrawl.access.tokens import Access, AccessUnreadable
from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status

logger = logging.getLogger(__name__)


def document_access_of(crawler: Crawler) -> DocumentAccess:
    """The crawl's source's DocumentAccess (its [access] table; an agent's or not)."""
    source = source_of(crawler)
    return DocumentAccess(f"source {source.name}", source.source_access(), agent=source.agent_class is not None)


class AccessPipeline:
    """Gives each document its access (an agent's reference gave it already: the spider set it),
    or keeps it out of the index with status 927."""

    def __init__(self, access: DocumentAccess) -> None:
        self.access = access

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AccessPipeline:
        return cls(document_access_of(crawler))

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        if item.access_update:
            return item
        if item.access is None and item.access_error is None:
            try:
                item.access = self.access.of(item.url)
            except AccessUnreadable as exc:
                item.access_error = str(exc)
        if item.access_error is not None:
            raise NotIndexed(
                Outcome(Event.GONE, int(Status.ACCESS_UNREADABLE), item.access_error, item.depth, columns=item.record),
                f"Not indexed (access: {item.access_error}): {item.url}",
            )
        assert item.access is not None
        logger.debug("Access of %s: %s", item.url, LoggedFields(item.access))
        return item


class LoggedFields:
    """A document's access fields as a log argument, made only when a handler writes the record:
    Scrapy's root logger passes every level on and its handler drops what is below LOG_LEVEL, so
    ``isEnabledFor(DEBUG)`` holds in every crawl, and ``fields()`` (which sorts every level) was
    made for each document twice, here for nothing and in the checksum stage (issue 102)."""

    __slots__ = ("access",)

    def __init__(self, access: Access) -> None:
        self.access = access

    def __str__(self) -> str:
        return str(self.access.fields())
