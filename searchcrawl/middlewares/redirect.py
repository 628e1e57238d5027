"""Downloader middleware applying searchcrawl's redirect policy (searchcrawl/redirects.py).

It replaces Scrapy's RedirectMiddleware, which follows every redirect the same way. Each
redirecting URL gets a row with its redirect status (301, 302, ...) or the crawler code that
refused it (redirect loop, unsafe target); a URL that moved permanently leaves the index.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import urljoin

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from w3lib.url import safe_url_string

from ..context import CrawlContext
from ..db import State
from ..redirects import PERMANENT, REDIRECTS, decide_redirect, resolve_host
from ..urls import canonical

logger = logging.getLogger(__name__)

LEAVES_BOUNDARY = "searchcrawl_leaves_boundary"  # meta: this URL may be fetched outside the boundary


class RedirectPolicyMiddleware:
    def __init__(self, context: CrawlContext, max_redirects: int) -> None:
        self.context = context
        self.max_redirects = max_redirects

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectPolicyMiddleware:
        return cls(CrawlContext.of(crawler), crawler.settings.getint("SEARCHCRAWL_MAX_REDIRECTS"))

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        if (
            request.meta.get("dont_redirect")
            or response.status not in REDIRECTS
            or b"Location" not in response.headers
        ):
            return response
        location = safe_url_string(response.headers[b"Location"].decode("latin-1"))
        target = canonical(urljoin(request.url, location))
        depth = request.meta.get("depth", 0)
        chain = [*request.meta.get("redirect_urls", []), request.url]
        boundary = self.context.boundary
        verdict = await asyncio.to_thread(
            decide_redirect, response.status, target, depth, chain, boundary, self.max_redirects, resolve_host
        )
        source = self.context.source.name
        table = self.context.table
        if not verdict.follow:
            table.record_outcome(source, request.url, status=verdict.status or response.status, reason=verdict.reason, depth=depth)
            if verdict.target_status is not None:
                self.context.admit(target, depth)  # records the target's exclusion
                self.context.flush_exclusions()
            logger.info("Redirect not followed: %s: %s", request.url, verdict.reason)
            raise IgnoreRequest(verdict.reason)
        if response.status in PERMANENT:
            table.record_outcome(source, request.url, status=response.status, reason=f"moved to {target}", depth=depth)
        else:
            table.record_fetch(source, request.url, state=State.FETCHED, status=response.status, depth=depth,
                               reason=f"redirected to {target}")
        logger.debug("Redirect followed: %s: %s", request.url, verdict.reason)
        meta = {
            **request.meta,
            "redirect_urls": chain,
            "redirect_reasons": [*request.meta.get("redirect_reasons", []), response.status],
            "redirect_times": len(chain),
            LEAVES_BOUNDARY: target if verdict.leaves_boundary else None,
        }
        see_other = response.status == 303 or (response.status in (301, 302) and request.method == "POST")
        if see_other:
            return request.replace(url=target, method="GET", body=b"", meta=meta)
        return request.replace(url=target, meta=meta)

