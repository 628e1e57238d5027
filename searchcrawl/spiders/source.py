"""The generic source spider: fetches a source's seeds, follows links within its boundary and
gives every URL it meets a status in the document table."""

from __future__ import annotations

import logging
import mimetypes
from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

from scrapy import Request, Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response, TextResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_meta_refresh
from twisted.python.failure import Failure

from ..context import CrawlContext
from ..db import State
from ..extract import mimetype_of
from ..items import CrawledDocument
from ..source import Source
from ..status import Status, status_for_exception
from ..urls import canonical

logger = logging.getLogger(__name__)

INDEXED_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
RECORDED_HEADERS = ("content-type", "content-language", "last-modified", "etag", "content-length")


class SourceSpider(Spider):
    """Crawl one source. Subclass it (``spider_class`` in the source file) for custom parsing:
    override ``parse_document`` and keep calling ``super()`` for the bookkeeping."""

    source: ClassVar[Source]
    link_extractor = LinkExtractor(
        tags=("a", "area", "frame", "iframe"), attrs=("href", "src"), canonicalize=False, unique=True
    )

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> SourceSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.context = CrawlContext.of(crawler)
        return spider

    async def start(self) -> AsyncIterator[Request]:
        for url in self.source.seed_urls:
            yield self.request(canonical(url), depth=0)

    def request(self, url: str, depth: int) -> Request:
        return Request(url, callback=self.parse, errback=self.failed, meta={"depth": depth})

    # --- responses ------------------------------------------------------------------------

    def parse(self, response: Response) -> Iterator[Any]:
        depth = response.meta.get("depth", 0)
        self._record_redirects(response, depth)
        headers = {
            name: response.headers.get(name).decode("latin-1")
            for name in RECORDED_HEADERS
            if response.headers.get(name) is not None
        }
        content_type = headers.get("content-type") or mimetypes.guess_type(response.url)[0]
        mimetype = mimetype_of(content_type)
        if content_type:
            headers["content-type"] = content_type
        record = {
            "depth": depth,
            "content_type": content_type,
            "content_length": len(response.body),
            "last_modified": headers.get("last-modified"),
            "etag": headers.get("etag"),
        }
        if response.status != 200:
            self.table.record_fetch(self.source.name, response.url, state=State.FETCHED, status=response.status, **record)
            logger.debug("Not indexed (HTTP %d): %s", response.status, response.url)
            return
        if mimetype not in INDEXED_TYPES or not isinstance(response, TextResponse):
            self.table.record_fetch(
                self.source.name, response.url, state=State.FETCHED, status=Status.UNSUPPORTED_TYPE,
                reason=f"content type {mimetype or 'unknown'} is not indexed", **record,
            )
            logger.debug("Not indexed (type %s): %s", mimetype, response.url)
            return
        self.table.record_fetch(self.source.name, response.url, state=State.FETCHED, status=200, **record)
        yield from self.parse_document(response, depth, headers)

    def parse_document(self, response: TextResponse, depth: int, headers: dict[str, str]) -> Iterator[Any]:
        """Yield the document's item and the requests for its links."""
        if isinstance(response, HtmlResponse) or mimetype_of(headers.get("content-type")) != "text/plain":
            yield CrawledDocument(self.source.name, response.url, depth, headers, tree=response.selector.root)
            for url in self.links(response):
                yield self.request(canonical(url), depth + 1)
        else:
            yield CrawledDocument(self.source.name, response.url, depth, headers, text=response.text)

    def links(self, response: TextResponse) -> Iterator[str]:
        """The page's links (a, area, frame, iframe; <base href> honoured) and its meta refresh target."""
        _interval, refresh = get_meta_refresh(response)
        if refresh:
            yield refresh
        for link in self.link_extractor.extract_links(response):
            yield link.url

    def failed(self, failure: Failure) -> None:
        if failure.check(IgnoreRequest):
            return  # a rule kept it out; the rule recorded why
        request = failure.request  # type: ignore[attr-defined]
        status = status_for_exception(failure.value)
        self.table.record_fetch(
            self.source.name, request.url, state=State.FAILED, status=status,
            depth=request.meta.get("depth", 0), reason=f"{type(failure.value).__name__}: {failure.value}",
        )
        logger.info("Failed (%s): %s: %s", status.name, request.url, failure.value)

    def _record_redirects(self, response: Response, depth: int) -> None:
        """Redirected URLs get their own row with the redirect's status (301, 302, ...)."""
        redirected = response.meta.get("redirect_urls") or []
        reasons = response.meta.get("redirect_reasons") or []
        for url, reason in zip(redirected, reasons):
            status = reason if isinstance(reason, int) else Status.OK
            self.table.record_fetch(
                self.source.name, url, state=State.FETCHED, status=status, depth=depth,
                reason=f"redirected to {response.url}",
            )

    @property
    def table(self):  # noqa: ANN201 - the DocumentTable, shortened for the calls above
        return self.context.table
