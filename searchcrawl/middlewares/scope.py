"""Spider middleware that keeps a crawl's links inside its source's boundary.

Links are checked here, as the spider yields them, so that an excluded link never takes a place
in the scheduler; each excluded URL gets a row with its crawler code. Requests need
``meta['depth']`` (set by Scrapy's DepthMiddleware, which runs before this one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from ..context import CrawlContext


class ScopeMiddleware:
    def __init__(self, context: CrawlContext) -> None:
        self.context = context

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScopeMiddleware:
        return cls(CrawlContext.of(crawler))

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for output in result:
            if isinstance(output, Request) and not self.context.admit(output.url, output.meta.get("depth", 0)).allowed:
                continue
            yield output
        self.context.flush_exclusions()
