"""Downloader middleware: conditional GETs for documents already in the index.

If-Modified-Since carries the stored Last-Modified, If-None-Match the stored ETag; a 304 reaches
the spider, which records the document as unchanged. Scrapy's HttpCache is not used for this: it
hides 304s and stores whole bodies. A forced recrawl sends no validators, nor does a source that
deletes orphans (a 304 has no links, and finding orphans needs every page's links).
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler

from searchcrawl.crawl.extensions.crawl_state import CrawlState, crawl_state
from searchcrawl.crawl.meta import DUPLICATE_OF, KNOWN_ROW, PREVIOUS, RENDER, own_request
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.documents import IN_INDEX


class ConditionalGetMiddleware:
    def __init__(self, context: CrawlState) -> None:
        self.context = context

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalGetMiddleware:
        return cls(crawl_state(crawler))

    def process_request(self, request: Request) -> None:
        if own_request(request):
            return
        row = (
            request.meta.pop(KNOWN_ROW, None)
            if KNOWN_ROW in request.meta
            else (self.context.table.get(self.context.source.name, request.url))
        )
        if row is None:
            return
        if row["state"] not in IN_INDEX:
            if self.context.agent is not None and row.get("status") == Status.DUPLICATE and row.get("duplicate_of"):
                # an agent's duplicate (a file copied, an attachment sent twice): unchanged, it stays one
                request.meta[DUPLICATE_OF] = (row["etag"], row["duplicate_of"])
            return
        request.meta[PREVIOUS] = {key: row[key] for key in ("checksum", "last_modified", "etag", "state")}
        if self.context.forced or self.context.source.settings.orphans == "delete" or request.meta.get(RENDER) == "browser":
            return  # a forced recrawl ignores validators; orphan detection needs every page's links;
            # a page that may be rendered needs its body (a browser cannot render a 304)
        if row["last_modified"]:
            request.headers.setdefault(b"If-Modified-Since", row["last_modified"].encode("latin-1"))
        if row["etag"]:
            request.headers.setdefault(b"If-None-Match", row["etag"].encode("latin-1"))
