"""The access stage (crawl/pipelines/access.py)."""

from __future__ import annotations

import logging

from scrapy.utils.misc import build_from_crawler

from searchcrawl.access.tokens import Access
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.pipelines.access import AccessPipeline


def test_the_access_fields_are_made_for_the_log_only_when_it_is_written(crawler_of, monkeypatch) -> None:
    """Issue 102: Scrapy's root logger passes DEBUG records to its handler, which drops them below
    LOG_LEVEL, so a guard ``isEnabledFor(DEBUG)`` held in every crawl and each document's access
    fields were made twice (here, and in the checksum stage). Made now only for a record written."""
    made: list[Access] = []
    fields = Access.fields

    def counted(self: Access) -> dict[str, list[str]]:
        made.append(self)
        return fields(self)

    monkeypatch.setattr(Access, "fields", counted)
    pipeline = build_from_crawler(AccessPipeline, crawler_of())
    written: list[str] = []
    handler = logging.Handler(logging.INFO)  # as Scrapy's: LOG_LEVEL on the handler
    handler.emit = lambda record: written.append(handler.format(record))  # type: ignore[method-assign]
    logger = logging.getLogger("searchcrawl.crawl.pipelines.access")
    monkeypatch.setattr(logger, "level", logging.DEBUG)  # as Scrapy's root logger: every level passed on
    monkeypatch.setattr(logger, "handlers", [handler])
    monkeypatch.setattr(logger, "propagate", False)
    item = pipeline.process_item(CrawledDocument("unit", "http://h.test/a.html", 0, {}))
    assert item.access is not None and made == [] and written == []
    handler.setLevel(logging.DEBUG)
    pipeline.process_item(CrawledDocument("unit", "http://h.test/b.html", 0, {}))
    assert len(made) == 1 and written[0].startswith("Access of http://h.test/b.html: {'access_allow'")
