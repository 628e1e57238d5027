"""A URL is admitted once, whatever way it enters the crawl (issue 54, point 4).

A link of a page, a seed, a sitemap's entry and a URL a maintenance crawl knows go the whole way
a crawl takes them, with the real components built alone (``tests.components``): the spider,
ScopeMiddleware, SitemapMiddleware, FrontierScheduler (its run on the real SQLite document
table: queued, leased, made a request again) and BoundaryMiddleware, the last check before the
network. The source's rule chain (``RuleChain.steps``) is asked about each URL exactly once, and
the request that reaches the network has the depth the URL got on its way in. (Before, a link was
admitted by the scope middleware and again by the boundary check, a seed by its warning and by
the boundary check, a known URL by the maintenance plan and by the boundary check.)
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.frontier_scheduler import FrontierScheduler
from searchcrawl.crawl.middlewares.boundary_check import BoundaryMiddleware
from searchcrawl.crawl.middlewares.scope import ScopeMiddleware
from searchcrawl.crawl.middlewares.sitemaps import SitemapMiddleware
from searchcrawl.rules.chain import RuleChain
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.frontier import Entry
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import RunState
from tests.components import close_stores, ledger_of, source_crawler, start_run, stores_of

SOURCE = """seeds = ["http://h.test/"]
sitemaps = ["http://h.test/sitemap.xml"]
url_rewriter = "strip_session"
"""


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times the rule chain was asked about each URL."""
    calls: Counter[str] = Counter()
    steps = RuleChain.steps

    def counted(self: RuleChain, url: str, depth: int, **kwargs: Any) -> Any:
        calls[url] += 1
        return steps(self, url, depth, **kwargs)

    monkeypatch.setattr(RuleChain, "steps", counted)
    return calls


@pytest.fixture
def crawler(tmp_path: Path) -> Iterator[Crawler]:
    crawler = source_crawler(tmp_path, SOURCE)
    yield crawler
    close_stores(crawler)


def scheduler_of(crawler: Crawler) -> FrontierScheduler:
    """The scheduler with its run started, as ``open()`` leaves it (without its looping calls;
    its ``run`` is the run's value, where ``open()`` keeps the runs table's ``RunInfo``)."""
    scheduler = build_from_crawler(FrontierScheduler, crawler)
    run, frontier = start_run(crawler, owner=scheduler.owner)
    scheduler.spider = crawler.spidercls.from_crawler(crawler)
    crawler.spider = scheduler.spider
    scheduler.run, scheduler.frontier = run, frontier  # type: ignore[assignment]
    return scheduler


def sent(crawler: Crawler, scheduler: FrontierScheduler) -> dict[str, int]:
    """The URLs the scheduler hands out, and their depths, once each has passed the boundary check."""
    boundary = build_from_crawler(BoundaryMiddleware, crawler)
    depths = {}
    while (request := scheduler.next_request()) is not None:
        boundary.process_request(request)  # raises when it refuses
        depths[request.url] = request.meta["depth"]
    return depths


def test_a_link_is_admitted_once_on_its_way_from_the_page_to_the_network(crawler: Crawler, asked: Counter[str]) -> None:
    middleware = build_from_crawler(ScopeMiddleware, crawler)  # built with the crawl: it receives run_started
    scheduler = scheduler_of(crawler)
    spider = scheduler.spider
    assert spider is not None
    page = "http://h.test/docs/"
    body = b'<html><body><a href="/a.html">a</a> <a href="/b.html?sessionid=7">b</a></body></html>'
    response = HtmlResponse(page, body=body, headers={"Content-Type": "text/html"}, request=Request(page, meta={"depth": 1}))

    async def output() -> AsyncIterator[Any]:
        for item in spider.parse(response):  # type: ignore[attr-defined]
            yield item

    async def through_scope() -> list[Any]:
        return [item async for item in middleware.process_spider_output(response, output())]

    asyncio.run(through_scope())
    assert sent(crawler, scheduler) == {"http://h.test/a.html": 2, "http://h.test/b.html": 2}
    assert asked["http://h.test/a.html"] == 1
    # the rewritten link: the chain asked once about the link as found (the rewriter is its first step)
    assert asked["http://h.test/b.html?sessionid=7"] + asked["http://h.test/b.html"] == 1


def test_a_seed_is_admitted_once(crawler: Crawler, asked: Counter[str]) -> None:
    scheduler = scheduler_of(crawler)
    spider = scheduler.spider
    assert spider is not None

    async def start() -> None:
        async for request in spider.start():
            assert scheduler.enqueue_request(request)

    asyncio.run(start())
    assert sent(crawler, scheduler) == {"http://h.test/": 0}
    assert asked["http://h.test/"] == 1


def test_a_sitemap_entry_is_admitted_once(crawler: Crawler, asked: Counter[str]) -> None:
    middleware = build_from_crawler(SitemapMiddleware, crawler)  # built with the crawl: it receives run_started
    scheduler = scheduler_of(crawler)
    middleware.queue_pages("http://h.test/sitemap.xml", [("http://h.test/listed.html", None)])
    assert sent(crawler, scheduler) == {"http://h.test/listed.html": 0}
    assert asked["http://h.test/listed.html"] == 1


def test_a_known_url_of_a_maintenance_crawl_is_admitted_once(crawler: Crawler, asked: Counter[str]) -> None:
    table = ledger_of(crawler).table
    url = "http://h.test/known.html"
    Ledger(table, "unit").record(url, Outcome(Event.CACHED, 200, "fetched", 3, columns={"checksum": "c0ffee"}))
    assert Ledger(table, "unit").mark_indexed([(url, "c0ffee")]) == [url]
    scheduler = scheduler_of(crawler)  # a new run: the maintenance plan queues every known URL
    assert stores_of(crawler).runs.latest("unit")["mode"] == "maintenance"  # type: ignore[index]
    assert sent(crawler, scheduler) == {url: 3}
    assert asked[url] == 1


def test_a_resumed_run_judges_what_an_earlier_process_queued_by_the_rules_of_now(tmp_path: Path) -> None:
    """The source file may have changed since the process that queued a URL admitted it: in a
    resumed run, the boundary check judges each leased URL again (the one exception to "once")."""
    first = source_crawler(tmp_path, SOURCE)
    scheduler = scheduler_of(first)
    assert scheduler.frontier is not None
    scheduler.frontier.add([Entry("http://h.test/later/a.html", 1), Entry("http://h.test/b.html", 1)])
    assert scheduler.run is not None
    scheduler.runs.end(scheduler.run.id, RunState.SUSPENDED, {}, "suspended")  # resumed by the next crawl
    close_stores(first)
    now = source_crawler(tmp_path, SOURCE + 'paths = { "h.test" = { exclude = ["/later/"] } }\n')
    resumed = scheduler_of(now)
    assert resumed.run is not None and resumed.run.resumed
    with pytest.raises(RequestRefused) as refused:
        sent(now, resumed)
    assert refused.value.status == Status.EXCLUDED_PATH
    close_stores(now)


def test_a_url_queued_without_this_processs_admission_is_admitted_when_it_is_requested(
    crawler: Crawler, asked: Counter[str]
) -> None:
    """The document table queues some URLs again itself (a duplicate taking the place of an
    original that left; e2e: test_url_life, a redirect target outside the boundary): the
    boundary check admits them, once."""
    scheduler = scheduler_of(crawler)
    assert scheduler.frontier is not None
    scheduler.frontier.add([Entry("http://other.test/landing.html", 1)])  # as the table's own requeue does
    with pytest.raises(RequestRefused) as refused:
        sent(crawler, scheduler)
    assert refused.value.status == Status.EXCLUDED_DOMAIN and asked["http://other.test/landing.html"] == 1
