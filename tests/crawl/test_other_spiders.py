"""The project's settings name searchcrawl's scheduler and redirect middleware for every spider;
a spider that is not a source (``scrapy shell``, ``scrapy fetch``, a spider of one's own) gets
Scrapy's own instead, and searchcrawl's source-only components stay out of its way."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.core.scheduler import Scheduler
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler, get_reactor_settings

from searchcrawl import settings as project_settings
from searchcrawl.crawl.extensions.run_monitor import RunMonitor
from searchcrawl.crawl.frontier_scheduler import FrontierScheduler
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.middlewares.redirect import RedirectPolicyMiddleware
from searchcrawl.crawl.requests import Admission
from searchcrawl.crawl.stores import Stores


class PlainSpider(Spider):
    name = "plain"


@pytest.fixture
def crawler(tmp_path):
    values = {key: getattr(project_settings, key) for key in dir(project_settings) if key.isupper()}
    values["SEARCHCRAWL_DATA_DIR"] = str(tmp_path)
    for key in get_reactor_settings():
        values.pop(key, None)
    return get_crawler(PlainSpider, settings_dict=values)


def test_another_spider_gets_scrapys_scheduler_and_redirects(crawler) -> None:
    # no document table, no ledger, no rules, no run for it
    assert [crawler.get_extension(cls) for cls in (Stores, LedgerWriter, Admission)] == [None, None, None]
    scheduler = build_from_crawler(FrontierScheduler, crawler)
    assert type(scheduler) is Scheduler
    redirects = build_from_crawler(RedirectPolicyMiddleware, crawler)
    assert type(redirects) is RedirectMiddleware


def test_the_run_monitor_stays_out_of_another_spiders_crawl(crawler) -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(RunMonitor, crawler)
