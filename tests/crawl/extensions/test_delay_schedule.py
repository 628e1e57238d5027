"""DelaySchedule alone: built by Scrapy's extension manager (``get_crawler`` in
``tests.components``) for a source with ``delay_rules``, not configured without them or for
another spider. ``apply(moment)`` takes the delay of the rule that holds at that time of day and
day of week (else the source's ``delay``) as its ``current`` delay and as the delay of every
download slot of the real downloader, and of each slot made later, as a request reaches it
(``request_reached_downloader``, sent by the downloader itself); with AutoThrottle the rule's
delay is AutoThrottle's floor; in a shared crawl only ``current`` is set, the site delay of the
fleet middleware (which spaces requests: tests/e2e/test_fleet.py checks that it follows the rules).

What is not run here: ``opened`` (the spider_opened receiver). It starts a
``twisted.internet.task.LoopingCall`` of ``apply``, which needs a Twisted reactor, and this test
process runs without one (a LoopingCall installs Twisted's default reactor when it is built). So
``apply`` (what the loop calls every minute) is called directly, with the moment to judge.

The downloader is an ``ExecutionEngine``'s, built the public way and never started (as in
middlewares/test_site_concurrency.py), without downloader middlewares: a request reaches it
through ``Downloader.fetch`` (the slot is made, the signal sent) and its download fails at once
(a source crawl has no handler for data: URLs)."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime

import pytest
from scrapy import Request, Spider
from scrapy.core.engine import ExecutionEngine
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured, NotSupported
from scrapy.extensions.throttle import AutoThrottle
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from searchcrawl.crawl.extensions.delay_schedule import DelaySchedule
from searchcrawl.crawl.middlewares.fleet import FleetPolitenessMiddleware
from searchcrawl.ops.local_fleet import shared_crawl
from tests.components import BARE_DOWNLOADER, engine_of

RULES = """delay = 1.0
[[delay_rules]]
days = ["mon", "tue", "wed", "thu", "fri"]
hours = "08:00-18:00"
delay = 5.0
[[delay_rules]]
days = ["sat", "sun"]
delay = 0.25
"""
SOURCE = 'seeds = ["http://h.test/"]\n' + RULES


def source(keys: str) -> str:
    """The source with more top-level keys (before the rules' tables)."""
    return f'seeds = ["http://h.test/"]\n{keys}\n{RULES}'


OFFICE_HOURS = datetime(2024, 5, 6, 10, 0)  # a Monday
EVENING = datetime(2024, 5, 6, 20, 0)  # no rule: the source's delay
WEEKEND = datetime(2024, 5, 11, 12, 0)  # a Saturday
CRAWLER_SETTINGS = BARE_DOWNLOADER  # the crawler_of fixture's defaults (tests/crawl/conftest.py)
LOGGER = "searchcrawl.crawl.extensions.delay_schedule"


def schedule_of(crawler: Crawler) -> DelaySchedule:
    """The crawl's DelaySchedule, as Scrapy's extension manager built it."""
    schedule = crawler.get_extension(DelaySchedule)
    assert schedule is not None
    return schedule


async def reach(engine: ExecutionEngine, slot: str) -> None:
    """A request reaches the downloader in ``slot`` (made with DOWNLOAD_DELAY if new)."""
    with pytest.raises(NotSupported):
        await maybe_deferred_to_future(engine.downloader.fetch(Request("data:,", meta={"download_slot": slot})))


def delays(engine: ExecutionEngine) -> dict[str, float]:
    return {key: slot.delay for key, slot in engine.downloader.slots.items()}


# --- building it ----------------------------------------------------------------------------------


class OtherSpider(Spider):
    name = "other"


def test_not_configured_without_delay_rules(crawler_of) -> None:
    crawler = crawler_of('seeds = ["http://h.test/"]\ndelay = 1.0\n')
    assert crawler.get_extension(DelaySchedule) is None  # the extension manager left it out
    with pytest.raises(NotConfigured):
        build_from_crawler(DelaySchedule, crawler)


def test_not_configured_for_another_spider() -> None:
    crawler = get_crawler(OtherSpider, {"EXTENSIONS": {"searchcrawl.crawl.extensions.delay_schedule.DelaySchedule": 510}})
    assert crawler.get_extension(DelaySchedule) is None
    with pytest.raises(NotConfigured, match="not a searchcrawl source spider"):
        build_from_crawler(DelaySchedule, crawler)


def test_built_for_a_source_with_delay_rules(crawler_of) -> None:
    crawler = crawler_of()
    schedule = schedule_of(crawler)
    assert [rule.delay for rule in schedule.settings.delay_rules] == [5.0, 0.25]
    assert (schedule.current, schedule.slot_delay, schedule.throttle, schedule.loop) == (None, None, None, None)
    schedule.closed()  # spider_closed before it opened: no loop to stop
    assert isinstance(build_from_crawler(DelaySchedule, crawler), DelaySchedule)


# --- apply ------------------------------------------------------------------------------------------


def test_apply_sets_the_rule_of_the_moment_for_the_crawl_and_every_slot(crawler_of, caplog) -> None:
    crawler = crawler_of()
    schedule = schedule_of(crawler)

    async def scenario() -> None:
        async with engine_of(crawler) as engine:
            await reach(engine, "a.test")
            assert delays(engine) == {"a.test": 1.0}  # DOWNLOAD_DELAY (the source's delay); no rule applied yet
            with caplog.at_level(logging.INFO, logger=LOGGER):
                assert schedule.apply(OFFICE_HOURS) == 5.0
                assert schedule.apply(datetime(2024, 5, 10, 17, 59)) == 5.0  # the same rule: nothing to change
            assert [record.getMessage() for record in caplog.records if record.name == LOGGER] == [
                "Delay between requests to one site is now 5.00 s (delay_rules, fixed)"
            ]
            assert (schedule.current, delays(engine)) == (5.0, {"a.test": 5.0})
            assert engine.downloader.slots["a.test"].jitter == 0.5  # Scrapy's jitter is left as it is
            await reach(engine, "b.test")  # a slot made later gets the rule's delay as the request reaches it
            assert delays(engine) == {"a.test": 5.0, "b.test": 5.0}
            assert schedule.apply(EVENING) == 1.0
            assert (schedule.current, delays(engine)) == (1.0, {"a.test": 1.0, "b.test": 1.0})
            assert schedule.apply(WEEKEND) == 0.25
            await reach(engine, "c.test")
            assert (schedule.current, delays(engine)) == (0.25, {"a.test": 0.25, "b.test": 0.25, "c.test": 0.25})

    asyncio.run(scenario())


def test_with_autothrottle_the_rule_is_its_floor(crawler_of) -> None:
    crawler = crawler_of(source("autothrottle = true"))
    schedule = schedule_of(crawler)
    throttle = crawler.get_extension(AutoThrottle)
    assert throttle is not None  # built by Scrapy's extension manager (AUTOTHROTTLE_ENABLED)

    async def scenario() -> None:
        async with engine_of(crawler) as engine:
            await reach(engine, "a.test")
            assert schedule.apply(WEEKEND) == 0.25
            assert schedule.throttle is throttle and throttle.mindelay == 0.25
            assert delays(engine) == {"a.test": 1.0}  # above the floor: AutoThrottle's to lower
            assert schedule.apply(OFFICE_HOURS) == 5.0
            assert (throttle.mindelay, delays(engine)) == (5.0, {"a.test": 5.0})  # raised to the floor
            await reach(engine, "b.test")  # a new slot (DOWNLOAD_DELAY) is raised to it as well
            assert delays(engine) == {"a.test": 5.0, "b.test": 5.0}
            assert schedule.apply(EVENING) == 1.0
            assert (throttle.mindelay, delays(engine)) == (1.0, {"a.test": 5.0, "b.test": 5.0})
            assert schedule.current == 1.0

    asyncio.run(scenario())


def test_in_a_shared_crawl_only_the_site_delay_is_set(crawler_of) -> None:
    crawler = crawler_of(source("shared = true"))
    schedule = schedule_of(crawler)
    assert shared_crawl(crawler.settings)

    async def scenario() -> None:
        async with engine_of(crawler) as engine:
            await reach(engine, "a.test")
            assert schedule.apply(OFFICE_HOURS) == 5.0
            assert schedule.current == 5.0
            assert schedule.slot_delay is None and schedule.throttle is None
            await reach(engine, "b.test")
            assert delays(engine) == {"a.test": 1.0, "b.test": 1.0}  # local slots are the fleet middleware's
            # (built now: its own receivers would set the slots' delays) what its reservations space requests by
            assert build_from_crawler(FleetPolitenessMiddleware, crawler).site_delay == 5.0

    asyncio.run(scenario())
