"""Downloader middleware: Scrapy's RetryMiddleware, honouring ``Retry-After`` on 429 and 503.

A site that answers 429 (too many requests) or 503 (unavailable) with ``Retry-After`` says when
to come back. Up to ``SEARCHCRAWL_RETRY_AFTER_MAX`` seconds, the request is retried (Scrapy's
``get_retry_request``: same retry count and priority rules) and the whole site waits that long:
no request to it starts before then (SitePauseMiddleware, crawl/middlewares/site_pause.py, holds
the site). A longer wait is not held in the crawl: the URL keeps its 429/503 status, a transient
failure (``max_failures``), and is fetched again by the next crawl. Without ``Retry-After``
Scrapy's own retry rules apply unchanged.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from scrapy import Request
from scrapy.downloadermiddlewares.retry import RetryMiddleware, get_retry_request
from scrapy.http import Response
from scrapy.settings import BaseSettings

from searchcrawl.crawl.meta import DONT_RETRY
from searchcrawl.rules.politeness import RETRY_AFTER_STATUSES, retry_after_seconds

logger = logging.getLogger(__name__)


class RetryAfterMiddleware(RetryMiddleware):
    def __init__(self, settings: BaseSettings) -> None:
        super().__init__(settings)
        self.max_wait = settings.getfloat("SEARCHCRAWL_RETRY_AFTER_MAX")

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        header = response.headers.get(b"Retry-After")
        if response.status not in RETRY_AFTER_STATUSES or header is None or request.meta.get(DONT_RETRY):
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
