"""RunTicker: the base of the extensions that act on their run every ``SEARCHCRAWL_PROGRESS_INTERVAL``.

RunMonitor (the progress line, the run's counters and control) and ProgressReport (the heartbeat
stall detection reads) both wait for the run (``run_started``), tick on one looping call from
``spider_opened`` to ``spider_closed``, and must never stop ticking because one tick failed: an
exception ends a LoopingCall for the rest of the run (no counters, no heartbeat, suspend and stop
ignored). This is that one mechanism; a subclass writes ``tick``. A failed tick is warned of at
most every ``WARN_SECONDS`` (a database locked for an hour is one line, not 360), in the
subclass's own logger (each failure with its traceback at DEBUG), and tried again at the next tick.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall

from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import run_started
from searchcrawl.crawl.stores import source_of
from searchcrawl.store.frontier import Frontier

WARN_SECONDS = 600.0  # a failure of the same kind is warned of at most this often


class OccasionalWarning:
    """A warning logged at most once every ``seconds``: a failure that repeats at every tick is
    said once, and again only if it still happens after ``seconds``."""

    def __init__(self, logger: logging.Logger, seconds: float = WARN_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.logger, self.seconds, self.clock = logger, seconds, clock
        self.warned_at: float | None = None

    def __call__(self, message: str, *args: object) -> None:
        now = self.clock()
        if self.warned_at is not None and now - self.warned_at < self.seconds:
            return
        self.warned_at = now
        self.logger.warning(message, *args)


class RunTicker:
    """See the module's docstring. ``failed`` names what a failed tick did not do, in its warning."""

    failed = "Progress of the run not saved"

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.run: Run | None = None
        self.frontier: Frontier | None = None
        self.loop: AsyncioLoopingCall | LoopingCall | None = None
        self.logger = logging.getLogger(type(self).__module__)
        self.tick_failed = OccasionalWarning(self.logger)
        crawler.signals.connect(self.run_started, signal=run_started)
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = crawler.settings.getfloat("SEARCHCRAWL_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured
        source_of(crawler)  # NotConfigured for another spider
        return cls(crawler, interval)

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.run, self.frontier = run, frontier

    def opened(self) -> None:
        self.loop = create_looping_call(self.safe_tick)
        self.loop.start(self.interval, now=False)

    def closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()

    def safe_tick(self) -> None:
        """``tick``, whose failure (the database locked or lost a moment) is warned of and waits
        for the next."""
        try:
            self.tick()
        except Exception as error:  # noqa: BLE001 - the next tick tries again
            run = f" {self.run.id} of {self.run.source}" if self.run is not None else ""
            self.logger.debug("%s (run%s): tick failed", self.failed, run, exc_info=True)  # each time, with its traceback
            self.tick_failed("%s (run%s), tried again at the next tick: %s", self.failed, run, type(error).__name__)

    def tick(self) -> None:
        raise NotImplementedError
