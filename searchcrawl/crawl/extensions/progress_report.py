"""ProgressReport: this process's heartbeat, last answer and waits, in the ``run_progress`` table.

Stall detection (searchcrawl/ops/stalls.py) runs in other processes (`scrapy status`, the web
application, notifications): it can only know what a crawl recorded. Every
``SEARCHCRAWL_PROGRESS_INTERVAL`` seconds (and once as the run starts, which starts the clock of
a session that never gets an answer) this extension saves, for its process in the run:

* ``reported_at``: now (the heartbeat; a process killed or frozen stops writing it);
* ``fetched_at``: when a response last came back (Scrapy's ``response_received``), or when the
  session began;
* ``waits``: requests in the downloader without an answer, per site, with the oldest's send time
  and the site's download delay (``request_reached_downloader`` / ``request_left_downloader``:
  a site that stopped answering, or a long delay), and a site's Retry-After pause (a 429 or
  503 answer's, as site_pause.py reads it). Sites are host names; at most a few, oldest first.

Its memory is bounded by the requests in the downloader (Scrapy's concurrency).
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.task import LoopingCall

from searchcrawl.crawl.extensions.stores import source_of, stores_of
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import run_started
from searchcrawl.rules.politeness import asked_pause
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.progress import MAX_WAITS, RunProgress, Wait

logger = logging.getLogger(__name__)


def current_waits(
    in_flight: dict[int, tuple[str, float]], pauses: dict[str, datetime], wall: datetime, clock: float
) -> list[Wait]:
    """The waits to report: requests without an answer grouped by site (``in_flight``: request id
    -> (site, monotonic send time)), and pauses not over yet; oldest first, MAX_WAITS at most."""
    sites: dict[str, tuple[int, float]] = {}
    for site, sent in in_flight.values():
        count, oldest = sites.get(site, (0, sent))
        sites[site] = (count + 1, min(oldest, sent))
    waits = [
        Wait("in-flight", site, since=wall - timedelta(seconds=clock - oldest), count=count)
        for site, (count, oldest) in sites.items()
    ]
    waits += [Wait("retry-after", site, until=until) for site, until in pauses.items() if until > wall]
    waits.sort(key=lambda wait: wait.since or wait.until or wall)
    return waits[:MAX_WAITS]


class ProgressReport:
    """See the module's docstring."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.max_pause = crawler.settings.getfloat("SEARCHCRAWL_RETRY_AFTER_MAX")
        self.run: Run | None = None
        self.store: RunProgress | None = None
        self.fetched_at: datetime | None = None
        self.pages = 0
        self.in_flight: dict[int, tuple[str, float]] = {}
        self.pauses: dict[str, datetime] = {}
        self.loop: AsyncioLoopingCall | LoopingCall | None = None
        crawler.signals.connect(self.run_started, signal=run_started)
        crawler.signals.connect(self.reached, signal=signals.request_reached_downloader)
        crawler.signals.connect(self.left, signal=signals.request_left_downloader)
        crawler.signals.connect(self.received, signal=signals.response_received)
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressReport:
        interval = crawler.settings.getfloat("SEARCHCRAWL_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured
        source_of(crawler)  # NotConfigured for another spider
        return cls(crawler, interval)

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.run = run
        self.store = RunProgress(stores_of(self.crawler).documents.database)
        self.fetched_at = datetime.now(UTC)  # the session's start: the clock of "nothing fetched"
        self.report()

    def opened(self) -> None:
        self.loop = create_looping_call(self.report)
        self.loop.start(self.interval, now=False)

    def reached(self, request: Request, spider: Any = None) -> None:
        self.in_flight[id(request)] = (urlparse_cached(request).hostname or "", time.monotonic())

    def left(self, request: Request, spider: Any = None) -> None:
        self.in_flight.pop(id(request), None)

    def received(self, response: Response, request: Request, spider: Any = None) -> None:
        wall = datetime.now(UTC)
        self.fetched_at = wall
        self.pages += 1
        pause = asked_pause(response.status, response.headers.get(b"Retry-After"), wall, self.max_pause)
        if pause is not None:
            self.pauses[urlparse_cached(request).hostname or ""] = wall + timedelta(seconds=pause)

    def report(self) -> None:
        if self.run is None or self.store is None or self.fetched_at is None:
            return
        wall = datetime.now(UTC)
        self.pauses = {site: until for site, until in self.pauses.items() if until > wall}  # bounded: live pauses only
        waits = current_waits(self.in_flight, self.pauses, wall, time.monotonic())
        try:
            self.store.report(self.run.id, self.run.owner, self.run.source, wall, self.fetched_at, self.pages, waits)
        except Exception as exc:  # a locked or lost database: the next tick tries again
            logger.warning("Could not save the progress report of run %d: %s", self.run.id, type(exc).__name__)

    def closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
