"""Downloader middleware: the last boundary check before the network.

A URL is admitted once, as it enters the crawl (crawl/requests.py): a request says so (meta
``ADMITTED``). This admits what came in another way, a redirect's target (Scrapy's
RedirectMiddleware schedules it itself, with the meta of the request it redirects), so that
nothing outside a source's boundary is ever fetched.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.crawler import Crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.extensions.crawl_state import CrawlState, crawl_state
from searchcrawl.crawl.meta import DEPTH, LEAVES_BOUNDARY, own_request
from searchcrawl.crawl.requests import Admission, admitted


class BoundaryMiddleware:
    def __init__(self, context: CrawlState) -> None:
        self.context = context
        self.admission = Admission(context)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundaryMiddleware:
        return cls(crawl_state(crawler))

    def process_request(self, request: Request) -> None:
        if own_request(request):
            return  # robots.txt or a sitemap of a site the crawl visits; a form login's, on its origins
        if request.meta.get(LEAVES_BOUNDARY) == request.url:
            return  # a temporary redirect's target, allowed out once by the redirect policy
        if admitted(request):
            return  # admitted as it entered the crawl
        step = self.admission.request(request, request.meta.get(DEPTH, 0))
        if not step.allowed:
            self.context.flush_exclusions()
            assert step.status is not None
            raise RequestRefused(step.status, f"outside the boundary ({step.rule})")
