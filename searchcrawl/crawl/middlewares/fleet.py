"""Downloader middleware: per-site delay and concurrency for the whole fleet of a shared crawl.

Scrapy's downloader slots space and limit requests per process. In a shared crawl
(SEARCHCRAWL_SHARED_CRAWL) the site would see the sum of every node's, so before each download
this middleware reserves the site's next start and one in-flight slot in the database
(searchcrawl/store/sites.py), waits for the reserved moment, and frees the slot when the download
ends. The local slots then keep no delay of their own (a local delay would push a reserved start
back, into the next node's turn): each slot's delay and jitter are set to 0 as a request reaches
it (request_reached_downloader, before Scrapy waits out the slot's delay; a new slot starts with
DOWNLOAD_DELAY). Their concurrency stays, at least the fleet's limit. A request that would start
more than half the delay after its reserved start (a stalled process, a busy event loop) gives
that start up and reserves another (MAX_LATE_STARTS times at most): sent late, it would land in
the next node's turn.

When the fleet is known (``processes = N`` on one machine, not ``shared``), there is no delay and
no ``delay_rules``, and the per-site limit is at least N, each process takes an equal share of
the limit instead (``CONCURRENT_REQUESTS_PER_DOMAIN // N`` requests at once per site, held by a
semaphore per site here and by the slot's concurrency): the site sees at most the limit, as with
reservations, and no request waits on the database. Why: a
crawl without a delay is the one limited by CPU, and the reservation's two statements per
request (in worker threads) made a page cost 17 % more CPU (the Nutch Javadoc, one process with
``shared = true``: 13.9 against 11.9 ms per page).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached

if TYPE_CHECKING:
    from scrapy.core.downloader import Slot

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.extensions.delay_schedule import DelaySchedule
from searchcrawl.crawl.meta import SITE_LEASE
from searchcrawl.crawl.stores import source_of, stores_of
from searchcrawl.ops.local_fleet import known_fleet, shared_crawl
from searchcrawl.store.database import process_owner
from searchcrawl.store.sites import SitePoliteness

logger = logging.getLogger(__name__)

HOLD_MARGIN = 30.0  # seconds a slot outlives the download timeout (then a dead node's slot frees)
LOCAL_SHARE = -1  # SITE_LEASE of a request holding one of this process's share of a site's limit
MAX_LATE_STARTS = 3  # starts given up for lateness (a stalled process) before a request goes anyway


class FleetPolitenessMiddleware:
    """Politeness per site for the whole fleet of a shared crawl, from the sites' table
    (store/sites.py) and the source's delay: DOWNLOAD_DELAY, or the delay rules' of now
    (extensions/delay_schedule.py)."""

    def __init__(
        self, crawler: Crawler, sites: SitePoliteness, source: SourceSettings, schedule: DelaySchedule | None = None
    ) -> None:
        self.crawler = crawler
        self.schedule = schedule
        self.download_delay = crawler.settings.getfloat("DOWNLOAD_DELAY")
        settings = crawler.settings
        self.sites = sites
        self.concurrency = max(1, settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN"))
        self.hold = settings.getfloat("DOWNLOAD_TIMEOUT") + HOLD_MARGIN
        self.sent: dict[str, float] = {}  # site -> when this process last let a request go (time.monotonic())
        # each slot's share of the per-site limit, when the fleet is known and nothing needs spacing
        self.share: int | None = None
        self.shares: dict[str, asyncio.Semaphore] = {}  # site -> this process's share of its limit
        fleet = known_fleet(settings)
        if fleet is not None and self.site_delay == 0 and not source.delay_rules and self.concurrency >= fleet:
            self.share = self.concurrency // fleet
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.reached, signal=signals.request_reached_downloader)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FleetPolitenessMiddleware:
        if not shared_crawl(crawler.settings):
            raise NotConfigured
        sites = SitePoliteness(stores_of(crawler).database, process_owner())
        return cls(crawler, sites, source_of(crawler).settings, crawler.get_extension(DelaySchedule))

    @property
    def site_delay(self) -> float:
        """Seconds between requests to one site: the delay rules' of now, else DOWNLOAD_DELAY."""
        current = self.schedule.current if self.schedule is not None else None
        return self.download_delay if current is None else current

    def opened(self) -> None:
        assert self.crawler.engine is not None
        for slot in self.crawler.engine.downloader.slots.values():
            self._set(slot)
        if self.share is not None:
            logger.info(
                "Shared crawl of %d local processes: at most %d requests at once to a site from each (%d in all), no delay",
                known_fleet(self.crawler.settings),
                self.share,
                self.concurrency,
            )
            return
        logger.info(
            "Shared crawl: %.2f s between requests to a site and at most %d at once, for the whole fleet",
            self.site_delay,
            self.concurrency,
        )

    def closed(self) -> None:
        self.sites.release_all()

    def reached(self, request: Request) -> None:
        """request_reached_downloader: the request's slot is taken (made, if it is new), and its
        delay not yet waited: no local delay, the reservation has spaced the request already."""
        if self.crawler.engine is None:
            return
        downloader = self.crawler.engine.downloader
        slot = downloader.slots.get(downloader.get_slot_key(request))
        if slot is not None:
            self._set(slot)

    def _set(self, slot: Slot) -> None:
        slot.delay, slot.jitter = 0.0, 0.0  # the fleet reservation spaces requests (or none need spacing)
        if self.share is not None:
            slot.concurrency = min(slot.concurrency, self.share)

    async def process_request(self, request: Request) -> None:
        site = urlparse_cached(request).hostname or ""
        if self.share is not None:
            # this process's share of the site's limit, held here: a downloader slot's own
            # concurrency lets a few more start when several requests reach it in one turn of
            # the event loop (Scrapy 2.19 on asyncio counts a download as started in a task
            # that runs later), and the site would see more than its limit
            if site not in self.shares:
                self.shares[site] = asyncio.Semaphore(self.share)
            await self.shares[site].acquire()
            request.meta[SITE_LEASE] = LOCAL_SHARE
            return
        delay = self.site_delay
        for attempt in range(MAX_LATE_STARTS + 1):
            while True:
                grant = await asyncio.to_thread(self.sites.acquire, site, delay, self.concurrency, self.hold)
                if grant.lease_id is not None:
                    break
                await asyncio.sleep(grant.wait)  # the site has its fleet-wide limit of requests in flight
            # the start this process reserved, fleet-wide, on the clock of the thread that read the
            # answer: the loop may resume this coroutine late, and that lateness counts too
            due = grant.due
            pause = due - time.monotonic()
            if pause > 0:
                logger.debug("Fleet delay: %.2f s before %s", pause, request.url)
                await asyncio.sleep(pause)
            # The reserved starts are spaced; a busy event loop (or a stalled process) can wake
            # several waits at once, past their starts: this process never sends two requests to a
            # site closer than the delay, whatever the reservations say (read and written with no
            # await between)
            now = time.monotonic()
            start = max(now, due, self.sent.get(site, now - delay) + delay)  # never before its start (a sleep woken early)
            if delay > 0 and start - due > delay / 2 and attempt < MAX_LATE_STARTS:
                # too late for the start reserved: the next node's reserved start may be near, so
                # this one is given up (its slot stays empty) and a later one reserved
                logger.debug("Fleet delay: %.2f s late for its start, %s waits for another", start - due, request.url)
                await asyncio.to_thread(self.sites.release, grant.lease_id)
                continue
            self.sent[site] = start
            request.meta[SITE_LEASE] = grant.lease_id
            if start > now:
                await asyncio.sleep(start - now)
            return

    def _release(self, request: Request) -> None:
        lease_id = request.meta.pop(SITE_LEASE, None)
        if lease_id == LOCAL_SHARE:
            self.shares[urlparse_cached(request).hostname or ""].release()
        elif lease_id is not None:  # in a worker thread: the download is done, nothing waits on it
            asyncio.get_running_loop().run_in_executor(None, self.sites.release, lease_id)

    def process_response(self, request: Request, response: Response) -> Response:
        self._release(request)
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._release(request)
