"""Downloader middleware: the last boundary check before the network.

Links were checked by ScopeMiddleware already; this catches what did not come from a page:
seeds and redirect targets (Scrapy's RedirectMiddleware schedules those itself). Nothing outside
a source's boundary is ever fetched.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.extensions.crawl_state import CrawlState, crawl_state
from searchcrawl.crawl.meta import DEPTH, LEAVES_BOUNDARY, own_request


class BoundaryMiddleware:
    def __init__(self, context: CrawlState) -> None:
        self.context = context

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundaryMiddleware:
        return cls(crawl_state(crawler))

    def process_request(self, request: Request) -> None:
        if own_request(request):
            return  # robots.txt or a sitemap of a site the crawl visits; a form login's, on its origins
        if request.meta.get(LEAVES_BOUNDARY) == request.url:
            return  # a temporary redirect's target, allowed out once by the redirect policy
        decision = self.context.admit(request.url, request.meta.get(DEPTH, 0))
        if not decision.allowed:
            self.context.flush_exclusions()
            assert decision.status is not None
            raise RequestRefused(decision.status, f"outside the boundary ({decision.rule})")
