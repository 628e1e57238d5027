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
from searchcrawl.crawl.meta import DEPTH, LEAVES_BOUNDARY, own_request
from searchcrawl.crawl.requests import Admission, admission_of, admitted


class BoundaryMiddleware:
    """Admits a request that did not enter the crawl through the one way in (see the module's docstring)."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundaryMiddleware:
        return cls(admission_of(crawler))

    def process_request(self, request: Request) -> None:
        if own_request(request):
            return  # robots.txt or a sitemap of a site the crawl visits; a form login's, on its origins
        if request.meta.get(LEAVES_BOUNDARY) == request.url:
            return  # a temporary redirect's target, allowed out once by the redirect policy
        if admitted(request):
            return  # admitted as it entered the crawl
        step = self.admission.request(request, request.meta.get(DEPTH, 0))
        if not step.allowed:
            self.admission.flush()
            assert step.status is not None
            raise RequestRefused(step.status, f"outside the boundary ({step.rule})")
