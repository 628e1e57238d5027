"""Downloader middleware: Scrapy's RetryMiddleware, honouring ``Retry-After`` on 429 and 503.

A site that answers 429 (too many requests) or 503 (unavailable) with ``Retry-After`` says when
to come back. Up to ``SEARCHCRAWL_RETRY_AFTER_MAX`` seconds, the request is retried (Scrapy's
``get_retry_request``: same retry count and priority rules) and the whole site waits that long:
no request to it starts before then. A longer wait is not held in the crawl: the URL keeps its
429/503 status, a transient failure (``max_failures``), and is fetched again by the next crawl.
Without ``Retry-After`` Scrapy's own retry rules apply unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime

from scrapy import Request
from scrapy.downloadermiddlewares.retry import RetryMiddleware, get_retry_request
from scrapy.http import Response
from scrapy.settings import BaseSettings
from scrapy.utils.httpobj import urlparse_cached

from searchcrawl.crawl.meta import DONT_RETRY
from searchcrawl.rules.politeness import retry_after_seconds

logger = logging.getLogger(__name__)

RETRY_AFTER_CODES = frozenset({429, 503})


class RetryAfterMiddleware(RetryMiddleware):
    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self.max_wait = settings.getfloat("SEARCHCRAWL_RETRY_AFTER_MAX")
        self.resume_at: dict[str, float] = {}  # site -> time.monotonic() before which it is not asked

    async def process_request(self, request: Request) -> None:
        site = urlparse_cached(request).netloc
        resume = self.resume_at.get(site)
        if resume is not None:
            wait = resume - time.monotonic()
            if wait <= 0:
                del self.resume_at[site]
            else:
                await asyncio.sleep(wait)

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        header = response.headers.get(b"Retry-After")
        if response.status not in RETRY_AFTER_CODES or header is None or request.meta.get(DONT_RETRY):
            return super().process_response(request, response)
        wait = retry_after_seconds(header, datetime.now(UTC))
        if wait is None:
            return super().process_response(request, response)
        if wait > self.max_wait:
            logger.info(
                "%s answered %d with Retry-After %.0f s (more than SEARCHCRAWL_RETRY_AFTER_MAX %.0f s): "
                "fetched again by the next crawl",
                request.url,
                response.status,
                wait,
                self.max_wait,
            )
            return response
        site = urlparse_cached(request).netloc
        self.resume_at[site] = max(self.resume_at.get(site, 0.0), time.monotonic() + wait)
        logger.debug(
            "%s answered %d with Retry-After %.1f s: the site waits, then the URL is retried", request.url, response.status, wait
        )
        spider = self.crawler.spider
        assert spider is not None  # a response is only downloaded for the crawler's open spider
        retry = get_retry_request(
            request,
            spider=spider,
            reason=f"{response.status} Retry-After {wait:.0f}s",
            max_retry_times=self.max_retry_times,
            priority_adjust=self.priority_adjust,
        )
        return retry or response
