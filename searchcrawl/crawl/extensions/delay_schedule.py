"""DelaySchedule: applies a source's ``delay_rules`` (delay by time of day and day of week).

Checks once a minute which rule holds and sets the delay of every site's downloader slot, and of
each slot as a request reaches it (request_reached_downloader: a slot Scrapy makes later starts
with DOWNLOAD_DELAY). With AutoThrottle on, the rule's delay is AutoThrottle's floor instead
(its ``mindelay``): it may slow down further, never below.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.extensions.throttle import AutoThrottle
from scrapy.utils.asyncio import AsyncioLoopingCall, create_looping_call
from twisted.internet.task import LoopingCall

from searchcrawl.config.source import Source
from searchcrawl.ops.local_fleet import shared_crawl
from searchcrawl.rules.politeness import delay_at

if TYPE_CHECKING:
    from scrapy.core.downloader import Slot

logger = logging.getLogger(__name__)

CHECK_SECONDS = 60.0


class DelaySchedule:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        source: Source | None = getattr(crawler.spidercls, "source", None)  # the source spider's class attribute
        if source is None:
            raise NotConfigured("not a searchcrawl source spider")
        self.settings = source.settings
        if not self.settings.delay_rules:
            raise NotConfigured
        self.current: float | None = None
        self.slot_delay: float | None = None  # what every slot gets (None: the fleet reservation spaces requests)
        self.throttle: AutoThrottle | None = None
        self.loop: AsyncioLoopingCall | LoopingCall | None = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.reached, signal=signals.request_reached_downloader)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DelaySchedule:
        return cls(crawler)

    def opened(self) -> None:
        self.loop = create_looping_call(self.apply)
        self.loop.start(CHECK_SECONDS, now=True)

    def closed(self) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()

    def apply(self, moment: datetime | None = None) -> float:
        delay = delay_at(moment or datetime.now(), self.settings.delay, self.settings.delay_rules)
        if delay == self.current:
            return delay
        self.current = delay
        if shared_crawl(self.crawler.settings):  # the fleet reservation applies it (middlewares/fleet.py: ``current``)
            logger.info("Delay between requests to one site is now %.2f s for the fleet (delay_rules)", delay)
            return delay
        assert self.crawler.engine is not None
        self.throttle = self.crawler.get_extension(AutoThrottle)
        if self.throttle is not None:
            self.throttle.mindelay = delay
        self.slot_delay = delay
        for slot in self.crawler.engine.downloader.slots.values():
            self._set(slot)
        logger.info(
            "Delay between requests to one site is now %.2f s (delay_rules, %s)",
            delay,
            "AutoThrottle floor" if self.throttle is not None else "fixed",
        )
        return delay

    def _set(self, slot: Slot) -> None:
        assert self.slot_delay is not None
        slot.delay = max(slot.delay, self.slot_delay) if self.throttle is not None else self.slot_delay

    def reached(self, request: Request) -> None:
        """request_reached_downloader: the request's slot is taken (made, if it is new), and its
        delay not yet waited: it gets the rule's."""
        if self.slot_delay is None or self.crawler.engine is None:
            return
        downloader = self.crawler.engine.downloader
        slot = downloader.slots.get(downloader.get_slot_key(request))
        if slot is not None:
            self._set(slot)
