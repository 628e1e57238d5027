"""ProgressReport: this process's heartbeat, last answer and waits, in the ``run_progress`` table.

Stall detection (searchcrawl/ops/stalls.py) runs in other processes (`scrapy status`, the web
application, notifications): it can only know what a crawl recorded. Every
``SEARCHCRAWL_PROGRESS_INTERVAL`` seconds (and once as the run starts, which starts the clock of
a session that never gets an answer) this extension saves, for its process in the run:

* ``reported_at``: now (the heartbeat; a process killed or frozen stops writing it);
* ``fetched_at``: when the crawl's count of responses (Scrapy's ``response_received_count``
  stat) last grew, to within an interval, or when the session began;
* ``waits``: the requests in Scrapy's downloader (``engine.downloader.active``: waiting for
  their site's delay or for an answer), per site, since the report that first saw each (to
  within an interval); and the sites paused by a Retry-After (the site pause middleware's
  pauses). Sites are the downloader's slots (host names); at most a few, oldest first;
  and the site with the longest download delay now (the slots' ``delay``), with the requests'
  timeout: stall detection waits longer than that between answers.

All of it is read at report time: nothing runs per page (three Scrapy signals per page, its
first design, cost 13 us of CPU a page). Its memory is bounded by the downloader's requests.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler

from searchcrawl.crawl.extensions.run_ticker import RunTicker
from searchcrawl.crawl.middlewares.site_pause import SitePauseMiddleware
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.stores import stores_of
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.progress import MAX_WAITS, RunProgress, Wait


def current_waits(
    in_flight: Mapping[Any, tuple[str, float]], pauses: dict[str, float], wall: datetime, clock: float
) -> list[Wait]:
    """The waits to report: requests without an answer grouped by site (``in_flight``: request
    -> (site, monotonic time first seen)), and Retry-After pauses (site -> monotonic end); oldest
    first, MAX_WAITS at most."""
    sites: dict[str, tuple[int, float]] = {}
    for site, sent in in_flight.values():
        count, oldest = sites.get(site, (0, sent))
        sites[site] = (count + 1, min(oldest, sent))
    waits = [
        Wait("in-flight", site, since=wall - timedelta(seconds=clock - oldest), count=count)
        for site, (count, oldest) in sites.items()
    ]
    waits += [
        Wait("retry-after", site, until=wall + timedelta(seconds=until - clock))
        for site, until in pauses.items()
        if until > clock
    ]
    waits.sort(key=lambda wait: wait.since or wait.until or wall)
    return waits[:MAX_WAITS]


def longest_delay(slots: Mapping[str, Any]) -> tuple[str, float] | None:
    """The downloader's slot (site) with the longest current delay (Scrapy's ``Slot.delay``, as
    the source's delay, delay_rules or AutoThrottle set it), and that delay; None when none has one."""
    delays = [(float(getattr(slot, "delay", 0) or 0), str(key)) for key, slot in slots.items()]
    if not delays or max(delays)[0] <= 0:
        return None
    seconds, key = max(delays)
    return key, seconds


class ProgressReport(RunTicker):
    """See the module's docstring."""

    failed = "Progress report of the run not saved"

    def __init__(self, crawler: Crawler, interval: float) -> None:
        super().__init__(crawler, interval)
        self.store: RunProgress | None = None
        self.fetched_at: datetime | None = None
        self.pages = 0
        # the downloader's requests, as first seen: keyed by the request itself, weakly (an id()
        # is reused at once by the next object: a new request inherited an old one's "since")
        self.in_flight: weakref.WeakKeyDictionary[Request, tuple[str, float]] = weakref.WeakKeyDictionary()

    def run_started(self, run: Run, frontier: Frontier) -> None:
        super().run_started(run, frontier)
        self.store = RunProgress(stores_of(self.crawler).documents.database)
        self.fetched_at = datetime.now(UTC)  # the session's start: the clock of "nothing fetched"
        self.safe_tick()

    def _downloader_waits(self, wall: datetime, clock: float) -> list[Wait]:
        """The downloader's requests (each since first seen) and the sites' pauses, now."""
        try:
            engine = self.crawler.engine
        except (AttributeError, RuntimeError):  # not built yet (in a crawl, it is by the run's start)
            engine = None
        if engine is None:
            return current_waits({}, {}, wall, clock)
        downloader = engine.downloader
        seen, self.in_flight = self.in_flight, weakref.WeakKeyDictionary()
        for request in list(downloader.active):
            self.in_flight[request] = seen.get(request) or (downloader.get_slot_key(request), clock)
        middleware = self.crawler.get_downloader_middleware(SitePauseMiddleware)
        pauses = middleware.pauses.active(clock) if middleware is not None else {}
        waits = current_waits(self.in_flight, pauses, wall, clock)
        delay = longest_delay(getattr(downloader, "slots", {}))
        if delay is None:
            return waits
        timeout = self.crawler.settings.getfloat("DOWNLOAD_TIMEOUT")
        return [*waits[: MAX_WAITS - 1], Wait("delay", delay[0], seconds=delay[1], timeout=timeout)]

    def tick(self) -> None:
        """Saves this process's report (a failure: RunTicker warns, the next tick tries again)."""
        if self.run is None or self.store is None or self.fetched_at is None:
            return
        wall, clock = datetime.now(UTC), time.monotonic()
        pages = self.crawler.stats.get_value("response_received_count", 0) if self.crawler.stats is not None else 0
        if pages > self.pages:
            self.pages, self.fetched_at = pages, wall
        waits = self._downloader_waits(wall, clock)
        self.store.report(self.run.id, self.run.owner, self.run.source, wall, self.fetched_at, self.pages, waits)
