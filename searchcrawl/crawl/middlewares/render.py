"""Downloader middleware: requests to be rendered go through Chromium (scrapy-playwright).

The frontier persists only ``meta['searchcrawl_render'] = 'browser'``; the Playwright meta (wait
methods, timeouts) is built here from the source's settings, so that it never has to be
pickled.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy_playwright.page import PageMethod

from searchcrawl.crawl.extensions.crawl_state import CrawlState, crawl_state
from searchcrawl.crawl.meta import PLAYWRIGHT, RENDER


class RenderMiddleware:
    def __init__(self, context: CrawlState) -> None:
        self.context = context

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        return cls(crawl_state(crawler))

    def process_request(self, request: Request) -> None:
        if request.meta.get(RENDER) != "browser" or request.meta.get(PLAYWRIGHT):
            return
        settings = self.context.source.settings
        methods = []
        if settings.render_selector:
            methods.append(PageMethod("wait_for_selector", settings.render_selector, timeout=settings.render_timeout * 1000))
        if settings.render_delay_ms:
            methods.append(PageMethod("wait_for_timeout", settings.render_delay_ms))
        request.meta.update(
            playwright=True,
            playwright_page_methods=methods,
            playwright_page_goto_kwargs={"wait_until": settings.render_wait, "timeout": settings.render_timeout * 1000},
        )
