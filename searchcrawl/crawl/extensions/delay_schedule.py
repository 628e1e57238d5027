"""DelaySchedule: applies a source's ``delay_rules`` (delay by time of day and day of week).

Checks once a minute which rule holds and sets the delay of every site's downloader slot (and of
slots made later). With AutoThrottle on, the rule's delay is AutoThrottle's floor instead: it
may slow down further, never below.
"""

from __future__ import annotations

import logging
from datetime import datetime

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.extensions.throttle import AutoThrottle
from twisted.internet import task

from searchcrawl.crawl.extensions.crawl_state import crawl_state
from searchcrawl.rules.politeness import delay_at

logger = logging.getLogger(__name__)

CHECK_SECONDS = 60.0


class DelaySchedule:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.settings = crawler.spidercls.source.settings  # the source spider's class attribute
        if not self.settings.delay_rules:
            raise NotConfigured
        self.current: float | None = None
        self.loop: task.LoopingCall | None = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DelaySchedule:
        if getattr(crawler.spidercls, "source", None) is None:
            raise NotConfigured("not a searchcrawl source spider")
        return cls(crawler)

    def opened(self) -> None:
        self.loop = task.LoopingCall(self.apply)
        self.loop.start(CHECK_SECONDS, now=True)

    def closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()

    def apply(self, moment: datetime | None = None) -> float:
        delay = delay_at(moment or datetime.now(), self.settings.delay, self.settings.delay_rules)
        if delay == self.current:
            return delay
        self.current = delay
        context = crawl_state(self.crawler)
        context.site_delay = delay
        if context.shared:  # the fleet reservation applies it (middlewares/fleet.py)
            logger.info("Delay between requests to one site is now %.2f s for the fleet (delay_rules)", delay)
            return delay
        assert self.crawler.engine is not None
        downloader = self.crawler.engine.downloader
        throttle = next((ext for ext in self.crawler.extensions.middlewares if isinstance(ext, AutoThrottle)), None)
        if throttle is not None:
            throttle.mindelay = delay
            downloader._delay = max(downloader._delay, delay)
        else:
            downloader._delay = delay
        for slot in downloader.slots.values():
            slot.delay = max(slot.delay, delay) if throttle is not None else delay
        logger.info(
            "Delay between requests to one site is now %.2f s (delay_rules, %s)",
            delay,
            "AutoThrottle floor" if throttle is not None else "fixed",
        )
        return delay
