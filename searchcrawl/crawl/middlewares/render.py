"""Downloader middleware: requests to be rendered go through Chromium (scrapy-playwright).

The frontier persists only ``meta['searchcrawl_render'] = 'browser'``; the Playwright meta (wait
methods, timeouts) is built here from the source's settings, so that it never has to be
pickled.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy_playwright.page import PageMethod

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.meta import PLAYWRIGHT, RENDER
from searchcrawl.crawl.stores import source_of

# The options of the browser context rendered pages open in (scrapy-playwright makes it with the
# first request's ``playwright_context_kwargs``): no service workers, whose requests scrapy-
# playwright's page routing never sees, so a page's worker could load what the address guard
# refuses the page (the installation's Solr, an internal site).
CONTEXT_OPTIONS = {"service_workers": "block"}


class RenderMiddleware:
    """Asks scrapy-playwright to render a request the source's render rules send to the browser."""

    def __init__(self, settings: SourceSettings) -> None:
        self.settings = settings

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RenderMiddleware:
        return cls(source_of(crawler).settings)

    def process_request(self, request: Request) -> None:
        if request.meta.get(RENDER) != "browser" or request.meta.get(PLAYWRIGHT):
            return
        settings = self.settings
        methods = []
        if settings.render_selector:
            methods.append(PageMethod("wait_for_selector", settings.render_selector, timeout=settings.render_timeout * 1000))
        if settings.render_delay_ms:
            methods.append(PageMethod("wait_for_timeout", settings.render_delay_ms))
        request.meta.update(
            playwright=True,
            playwright_context_kwargs=dict(CONTEXT_OPTIONS),
            playwright_page_methods=methods,
            playwright_page_goto_kwargs={"wait_until": settings.render_wait, "timeout": settings.render_timeout * 1000},
        )
