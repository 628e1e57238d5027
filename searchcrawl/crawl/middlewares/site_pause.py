"""Downloader middleware: a site that answered 429 or 503 with ``Retry-After`` (up to
``SEARCHCRAWL_RETRY_AFTER_MAX`` seconds) is left alone that long: no request to it starts before
then, whichever middleware it was waiting in when the answer came.

The retry of the URL itself is RetryAfterMiddleware's (crawl/middlewares/retry.py). The pause
was kept there, in its ``process_request`` (550), which the site's other requests had passed
already: waiting for the site's turn in SiteConcurrencyMiddleware (900), or in Scrapy's downloader
slot for its delay. The next page was asked 0.04 s after the 503. Now the pause is:

* noted as the answer is downloaded (Scrapy's ``response_downloaded`` signal, sent before any
  middleware sees the response, so before the site's turn passes to its next request);
* waited here, after the site's turn is taken (900) and before the fleet's reservation (950):
  requests that were waiting for their turn wait out the pause too;
* and moved into the site's downloader slot (``Slot.lastseen``, from which Scrapy counts the
  slot's delay): requests already queued in the slot for its delay start no earlier than the end
  of the pause plus one delay.

Sites are Scrapy's downloader slots (``Downloader.get_slot_key``), as for the delay and the
per-site concurrency.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from functools import partial

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from searchcrawl.crawl.extensions.give_back import GiveBack, waiting
from searchcrawl.rules.politeness import SitePauses, asked_pause

logger = logging.getLogger(__name__)


class SitePauseMiddleware:
    def __init__(self, crawler: Crawler, max_wait: float) -> None:
        self.crawler = crawler
        self.max_wait = max_wait
        self.pauses = SitePauses()
        self.give_back = crawler.get_extension(GiveBack)  # None for another spider's crawl
        crawler.signals.connect(self.downloaded, signal=signals.response_downloaded)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitePauseMiddleware:
        return cls(crawler, crawler.settings.getfloat("SEARCHCRAWL_RETRY_AFTER_MAX"))

    def downloaded(self, response: Response, request: Request) -> None:
        """response_downloaded: a 429/503 asking for a pause pauses its site, and its slot."""
        wait = asked_pause(response.status, response.headers.get(b"Retry-After"), datetime.now(UTC), self.max_wait)
        if wait is None or self.crawler.engine is None:
            return
        downloader = self.crawler.engine.downloader
        site = downloader.get_slot_key(request)
        until = self.pauses.pause(site, time.monotonic() + wait)
        slot = downloader.slots.get(site)
        if slot is not None:  # Scrapy counts the slot's delay from lastseen (both time.monotonic())
            slot.lastseen = max(slot.lastseen, until)
        logger.debug(
            "%s answered %d with Retry-After %.1f s: no request to %s starts before then",
            request.url,
            response.status,
            wait,
            site,
        )

    async def process_request(self, request: Request) -> None:
        if self.give_back is not None:
            # the last of searchcrawl's waits before Scrapy's slot: once a suspend or stop closes
            # the crawl, a leased request that got its turn after all goes back to the queue here
            self.give_back.check(request)
        if self.crawler.engine is None:
            return
        site = self.crawler.engine.downloader.get_slot_key(request)
        while (wait := self.pauses.remaining(site, time.monotonic())) > 0:
            # again after it: another pause may have been asked meanwhile
            await waiting(self.crawler, request, partial(asyncio.sleep, wait))
