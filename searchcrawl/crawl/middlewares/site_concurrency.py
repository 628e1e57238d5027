"""Downloader middleware: at most ``CONCURRENT_REQUESTS_PER_DOMAIN`` requests (per source:
``concurrent_per_site``) in flight to one site.

Scrapy's downloader slot is meant to hold this limit, but in Scrapy 2.19 its queue loop starts
every queued request before the first one is counted as transferring (``_process_queue`` schedules
each download as a coroutine, and the download adds itself to ``slot.transferring`` only once it
runs), so with no delay a site saw 16 requests at once with a limit of 1. This middleware holds
the limit itself, with one semaphore per downloader slot (``Downloader.get_slot_key``, so
``download_slot`` meta and per-IP slots are honoured), taken as late as possible before the
download and given back when the response, or the failure, comes back.
"""

from __future__ import annotations

import asyncio

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from searchcrawl.crawl.extensions.give_back import waiting
from searchcrawl.crawl.meta import SITE_SLOT


class _Site:
    """A site's semaphore and how many requests hold it or wait for it."""

    def __init__(self, limit: int) -> None:
        self.semaphore = asyncio.Semaphore(limit)
        self.users = 0


class SiteConcurrencyMiddleware:
    def __init__(self, crawler: Crawler, limit: int) -> None:
        self.crawler = crawler
        self.limit = limit
        self.sites: dict[str, _Site] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SiteConcurrencyMiddleware:
        return cls(crawler, max(1, crawler.settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")))

    async def process_request(self, request: Request) -> None:
        assert self.crawler.engine is not None
        key = self.crawler.engine.downloader.get_slot_key(request)
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = _Site(self.limit)
        site.users += 1
        try:
            if site.semaphore.locked():  # waiting for the site's turn: given back by a suspend or stop
                await waiting(self.crawler, request, site.semaphore.acquire)
            else:
                await site.semaphore.acquire()
        except BaseException:  # cancelled or given back while waiting (the crawl is closing)
            self._leave(key, site)
            raise
        request.meta[SITE_SLOT] = key

    def _leave(self, key: str, site: _Site) -> None:
        site.users -= 1
        if not site.users:
            del self.sites[key]  # idle: a long crawl of many sites keeps no semaphore per site

    def _release(self, request: Request) -> None:
        key = request.meta.pop(SITE_SLOT, None)
        site = self.sites.get(key) if key is not None else None
        if site is not None:
            site.semaphore.release()
            self._leave(key, site)

    def process_response(self, request: Request, response: Response) -> Response:
        self._release(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._release(request)
