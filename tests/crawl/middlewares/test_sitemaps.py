"""SitemapMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source): when it is on, which robots.txt sitemaps it reads, and which requests a sitemap's
lastmod spares (only a known, indexed URL in a maintenance run, lastmod not newer than its
last fetch). The run is a value (``Run``), as ``run_started`` gives it."""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import build_from_crawler

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import KNOWN
from searchcrawl.crawl.middlewares.sitemaps import SitemapMiddleware
from searchcrawl.crawl.pipelines.checksum import versioned
from searchcrawl.crawl.run import Run
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.robots_txt import RobotsTxt
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.frontier import Known

SITE = "http://h.test"
FETCHED = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)  # within sitemap_trust_days


CrawlerOf = Callable[..., Crawler]  # the crawler_of fixture (tests/crawl/conftest.py)
MAINTENANCE = Run(1, "unit", "maintenance", FETCHED)


def build(crawler_of: CrawlerOf, extra: str = "") -> SitemapMiddleware:
    """The middleware of a source with ``extra`` keys, in a maintenance run."""
    middleware = build_from_crawler(SitemapMiddleware, crawler_of(f'seeds = ["{SITE}/"]\n{extra}'))
    middleware.run = MAINTENANCE  # what run_started gives it
    return middleware


def known(url: str, state: str = "indexed", fetched: datetime | None = FETCHED) -> Request:
    return Request(url, meta={KNOWN: Known(state, last_fetched=fetched)})


def test_off_without_sitemaps_to_read(crawler_of: CrawlerOf) -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(SitemapMiddleware, crawler_of(f'seeds = ["{SITE}/"]\nsitemaps_from_robots = false\n'))
    with pytest.raises(NotConfigured):
        build_from_crawler(SitemapMiddleware, crawler_of(f'seeds = ["{SITE}/"]\nobey_robots = false\n'))
    assert build(crawler_of, f'obey_robots = false\nsitemaps = ["{SITE}/s.xml"]\n').configured == [f"{SITE}/s.xml"]


def test_robots_txt_sitemaps_on_the_sites_host_only(crawler_of: CrawlerOf) -> None:
    middleware = build(crawler_of)
    robots = RobotsTxt.parse(f"Sitemap: {SITE}/a.xml\nSitemap: https://h.test/b.xml\nSitemap: http://cdn.test/c.xml\n")
    middleware.robots_txt_read(site=SITE, robots=robots)
    assert middleware.sitemaps_of(SITE) == [f"{SITE}/a.xml", "https://h.test/b.xml"]


def test_only_a_known_indexed_page_not_newer_than_its_fetch_is_spared(crawler_of: CrawlerOf) -> None:
    middleware = build(crawler_of)
    middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
    middleware.hints.add(f"{SITE}/same.html", FETCHED)
    middleware.hints.add(f"{SITE}/new.html", FETCHED + timedelta(seconds=1))
    for url in ("old.html", "same.html"):
        with pytest.raises(RequestRefused) as refused:
            middleware.refuse_if_unchanged(known(f"{SITE}/{url}"))
        outcome = refused.value.outcome
        assert (outcome.event, outcome.status, outcome.fetched) == (Event.UNCHANGED, Status.SITEMAP_UNCHANGED, False)
    middleware.refuse_if_unchanged(known(f"{SITE}/new.html"))  # newer: requested
    middleware.refuse_if_unchanged(known(f"{SITE}/unlisted.html"))  # no hint
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html", state="failed"))  # not in the index as it is
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html", fetched=None))
    middleware.run = replace(MAINTENANCE, mode="initial")
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html"))


def test_a_navigation_page_indexed_before_the_rule_is_never_spared(crawler_of: CrawlerOf) -> None:
    """Requested, it leaves the index (917): spared, it would stay as long as its sitemap is trusted."""
    middleware = build(crawler_of)
    middleware.hints.add(f"{SITE}/genindex.html", FETCHED - timedelta(days=3))
    middleware.refuse_if_unchanged(known(f"{SITE}/genindex.html"))
    indexing_them = build(crawler_of, "navigation_pages = []\n")
    indexing_them.hints.add(f"{SITE}/genindex.html", FETCHED - timedelta(days=3))
    with pytest.raises(RequestRefused):  # a source that indexes them spares it as any page
        indexing_them.refuse_if_unchanged(known(f"{SITE}/genindex.html"))


def test_no_sparing_when_told_not_to_trust_lastmod_or_when_orphans_need_every_page(crawler_of: CrawlerOf) -> None:
    for extra in ("trust_sitemap_lastmod = false\n", 'orphans = "delete"\n'):
        middleware = build(crawler_of, extra)
        middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
        middleware.refuse_if_unchanged(known(f"{SITE}/old.html"))
    middleware = build(crawler_of)
    middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
    middleware.run = replace(MAINTENANCE, forced=True)
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html"))


def test_a_page_whose_readers_changed_is_requested_whatever_its_lastmod(crawler_of: CrawlerOf) -> None:
    """Its indexed checksum holds the readers it was indexed for (crawl/pipelines/checksum.py):
    when the source's [access] rules now say others, it is requested (a 304 updates its access)."""
    crawler = crawler_of(f'seeds = ["{SITE}/"]\n[access]\nallow = ["group:staff"]\n')
    crawler.spider = crawler.spidercls.from_crawler(crawler)
    middleware = build_from_crawler(SitemapMiddleware, crawler)
    middleware.run = MAINTENANCE
    middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
    content = "c" * 64
    staff, hr = (versioned(content, Access.of([Grant(token, "t")])) for token in ("group:staff", "group:hr"))

    def request(checksum: str) -> Request:
        return Request(f"{SITE}/old.html", meta={KNOWN: Known("indexed", checksum=checksum, last_fetched=FETCHED)})

    with pytest.raises(RequestRefused):
        middleware.refuse_if_unchanged(request(staff))  # the same readers: spared
    middleware.refuse_if_unchanged(request(hr))  # indexed for hr, the source says staff: requested
    middleware.refuse_if_unchanged(request(content))  # indexed as public: requested


class SitemapServer:
    """A stand-in for the engine's ``download_async``: the sitemaps a test serves, and the URLs
    the middleware asked for (what would have reached the network)."""

    def __init__(
        self,
        bodies: dict[str, bytes],
        seconds: float = 0,
        redirects: dict[str, str] | None = None,
        clock: list[float] | None = None,
    ) -> None:
        """Each answer takes ``seconds``: slept, or with ``clock`` (the middleware's, the test's)
        moved on by that much, whatever the machine's speed."""
        self.bodies, self.seconds, self.redirects, self.clock = bodies, seconds, redirects or {}, clock
        self.requested: list[str] = []

    async def download_async(self, request: Request) -> Response:
        self.requested.append(request.url)
        if self.clock is not None:
            self.clock[0] += self.seconds
        await asyncio.sleep(0 if self.clock is not None else self.seconds)
        if request.url in self.redirects:
            return Response(request.url, status=302, headers={"Location": self.redirects[request.url]})
        body = self.bodies.get(request.url)
        return Response(request.url, status=200 if body is not None else 404, body=body or b"")


def index(*children: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{child}</loc></sitemap>" for child in children)
    return f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>'.encode()


def test_a_sitemap_is_requested_only_on_its_sites_host_and_port_as_scrapy_reads_it(crawler_of: CrawlerOf) -> None:
    """A backslash made Scrapy request evil.test for a URL whose host read as h.test, and another
    port of the site's host was requested: a hostile review found both (robots.txt and index)."""
    middleware = build(crawler_of)
    escape = "http://evil.test\\@h.test/index.xml"
    robots = RobotsTxt.parse(f"Sitemap: {escape}\nSitemap: {SITE}:6379/s.xml\nSitemap: {SITE}:80/index.xml\n")
    middleware.robots_txt_read(site=SITE, robots=robots)
    assert middleware.sitemaps_of(SITE) == [f"{SITE}:80/index.xml"]
    server = SitemapServer({f"{SITE}:80/index.xml": index(escape.replace("index", "c"), f"{SITE}:6379/s.xml", f"{SITE}/ok.xml")})
    middleware.crawler.engine = server  # type: ignore[assignment]
    asyncio.run(middleware.read_all(middleware.sitemaps_of(SITE)))
    assert server.requested == [f"{SITE}:80/index.xml", f"{SITE}/ok.xml"]


def test_an_index_of_many_children_queues_no_more_than_may_be_read(crawler_of: CrawlerOf) -> None:
    crawler = crawler_of(f'seeds = ["{SITE}/"]\n', SEARCHCRAWL_SITEMAP_MAX_FILES=4)
    middleware = build_from_crawler(SitemapMiddleware, crawler)
    queue: deque[str] = deque()
    middleware.enqueue([f"{SITE}/s{number}.xml" for number in range(50_000)], queue, set())
    assert list(queue) == [f"{SITE}/s{number}.xml" for number in range(4)]
    server = SitemapServer({f"{SITE}/index.xml": index(*(f"{SITE}/s{number}.xml" for number in range(1_000)))})
    middleware.crawler.engine = server  # type: ignore[assignment]
    asyncio.run(middleware.read_all([f"{SITE}/index.xml", f"{SITE}/index.xml"]))
    assert server.requested == [f"{SITE}/index.xml", f"{SITE}/s0.xml", f"{SITE}/s1.xml", f"{SITE}/s2.xml"]


def test_a_page_fetched_longer_ago_than_sitemap_trust_days_is_requested_whatever_its_lastmod(crawler_of: CrawlerOf) -> None:
    middleware = build(crawler_of, "sitemap_trust_days = 7\n")
    long_ago = datetime.now(UTC) - timedelta(days=8)
    middleware.hints.add(f"{SITE}/gone.html", long_ago - timedelta(days=30))
    middleware.refuse_if_unchanged(known(f"{SITE}/gone.html", fetched=long_ago))  # requested: its 404 can be seen
    with pytest.raises(RequestRefused):
        middleware.refuse_if_unchanged(known(f"{SITE}/gone.html", fetched=datetime.now(UTC) - timedelta(days=6)))


def test_a_slow_sites_sitemaps_are_read_for_sitemap_max_seconds_only(crawler_of: CrawlerOf, monkeypatch) -> None:
    """Its pages wait for its sitemaps, holding Scrapy's request slots: 1,000 sitemaps answered
    just inside the download timeout would have held every site's crawl for hours. The
    middleware's clock is the test's, moved on by each answer (issue 99: slept, the index's
    answer alone could outlast the 0.25 s on a loaded machine)."""
    clock = [1000.0]
    monkeypatch.setattr("searchcrawl.crawl.middlewares.sitemaps.time", SimpleNamespace(monotonic=lambda: clock[0]))
    crawler = crawler_of(f'seeds = ["{SITE}/"]\n', SEARCHCRAWL_SITEMAP_MAX_SECONDS=0.25)
    middleware = build_from_crawler(SitemapMiddleware, crawler)
    children = [f"{SITE}/s{number}.xml" for number in range(20)]
    server = SitemapServer({f"{SITE}/index.xml": index(*children)}, seconds=0.1, clock=clock)
    middleware.crawler.engine = server  # type: ignore[assignment]
    asyncio.run(middleware.read_all([f"{SITE}/index.xml"]))
    assert server.requested == [f"{SITE}/index.xml", f"{SITE}/s0.xml", f"{SITE}/s1.xml"]  # the third answer ends past 0.25 s


def test_a_sitemap_redirect_to_a_url_that_cannot_be_read_is_passed_over_quietly(
    crawler_of: CrawlerOf, caplog: pytest.LogCaptureFixture
) -> None:
    """It raised out of the fetch, logged as an ERROR with a traceback (a reviewer found it)."""
    middleware = build(crawler_of)
    server = SitemapServer({f"{SITE}/ok.xml": index()}, redirects={f"{SITE}/bad.xml": "http://[::1/s.xml"})
    middleware.crawler.engine = server  # type: ignore[assignment]
    with caplog.at_level(logging.INFO):
        asyncio.run(middleware.read_all([f"{SITE}/bad.xml", f"{SITE}/ok.xml"]))
    assert server.requested == [f"{SITE}/bad.xml", f"{SITE}/ok.xml"]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert "redirects to a URL that cannot be read" in caplog.text


def test_what_is_held_per_site_is_bounded_by_the_crawls_files(crawler_of: CrawlerOf) -> None:
    """A review's find: every host left a finished read in ``reading``, and a host whose
    robots.txt listed 10,000 sitemaps and disallowed every page kept the list for the whole crawl.
    The lists waiting for their site's first request hold at most max_files URLs (the oldest
    dropped), a site without sitemaps leaves nothing, and a robots.txt fetched again lists
    nothing once its site has been read."""
    middleware = build(crawler_of, "")
    middleware.max_files = 5
    middleware.crawler.engine = SitemapServer({})  # type: ignore[assignment]
    hosts = [f"http://h{number}.test" for number in range(4)]
    for host in hosts:
        many = "".join(f"Sitemap: {host}/s{number}.xml\n" for number in range(3))
        middleware.robots_txt_read(site=host, robots=RobotsTxt.parse(many))
        assert middleware.listed_urls == sum(len(urls) for urls in middleware.listed.values()) <= 5
    assert list(middleware.listed) == [hosts[3]]  # each list of 3 dropped the one before it
    huge = RobotsTxt.parse("".join(f"Sitemap: {SITE}/{number}.xml\n" for number in range(10_000)))
    middleware.robots_txt_read(site=SITE, robots=huge)
    assert list(middleware.listed) == [SITE] and middleware.listed_urls == 5

    async def requests() -> None:
        await middleware.process_request(Request(f"{hosts[0]}/page.html"))  # its list was dropped
        await middleware.process_request(Request(f"{SITE}/page.html"))

    asyncio.run(requests())
    assert list(middleware.reading) == [SITE] and middleware.listed == {} and middleware.listed_urls == 0
    assert middleware.crawler.engine.requested == [f"{SITE}/{number}.xml" for number in range(5)]  # type: ignore[attr-defined]
    middleware.robots_txt_read(site=SITE, robots=huge)  # fetched again: read already
    middleware.robots_txt_read(site=hosts[1], robots=RobotsTxt.parse(f"Sitemap: {hosts[1]}/s.xml\n"))  # files spent
    assert middleware.listed == {}


def test_a_failing_page_is_never_spared(crawler_of: CrawlerOf) -> None:
    """Spared, a failing page's count of failures started again from 0 (a hostile review)."""
    middleware = build(crawler_of)
    middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
    failing = Request(f"{SITE}/old.html", meta={KNOWN: Known("indexed", last_fetched=FETCHED, failures=1)})
    middleware.refuse_if_unchanged(failing)  # requested
    with pytest.raises(RequestRefused):
        middleware.refuse_if_unchanged(known(f"{SITE}/old.html"))


def test_the_source_files_sitemaps_no_request_waited_for_are_read_at_idle(crawler_of: CrawlerOf) -> None:
    """Every request refused before it reached the middleware (robots.txt, a rule): the source
    file's sitemaps are read once the crawl is idle, which waits for them, once; robots.txt's
    are not (their site let no request through); a read-only crawl (ledger None) reads none."""

    async def run() -> None:
        middleware = build(crawler_of, f'sitemaps = ["{SITE}/s.xml"]\n')
        middleware.robots_txt_read(site="http://other.test", robots=RobotsTxt.parse("Sitemap: http://other.test/o.xml\n"))
        server = SitemapServer({f"{SITE}/s.xml": index()})
        middleware.crawler.engine = server  # type: ignore[assignment]
        middleware.ledger = object()  # type: ignore[assignment]  # a crawl that writes
        with pytest.raises(DontCloseSpider):
            middleware.idle()
        middleware.idle()  # being read, or read: the crawl may close
        await middleware.reading[""]
        assert server.requested == [f"{SITE}/s.xml"]
        middleware.idle()

        read_only = build(crawler_of, f'sitemaps = ["{SITE}/s.xml"]\n')
        read_only.ledger = None
        read_only.idle()
        assert read_only.reading == {}

    asyncio.run(run())


def test_no_sitemap_is_read_once_the_spider_has_closed(crawler_of: CrawlerOf) -> None:
    """A reading left going (started at idle, or by a request a stop left waiting) was not
    cancelled: it sent requests and queued pages after the crawl (a hostile review)."""

    async def run() -> None:
        middleware = build(crawler_of, f'sitemaps = ["{SITE}/s.xml"]\n')
        children = [f"{SITE}/s{number}.xml" for number in range(5)]
        server = SitemapServer({f"{SITE}/s.xml": index(*children)}, seconds=0.05)
        middleware.crawler.engine = server  # type: ignore[assignment]
        reading = middleware.start_reading("")
        assert reading is not None
        while not server.requested:  # its first request sent
            await asyncio.sleep(0)
        middleware.spider_closed()
        with pytest.raises(asyncio.CancelledError):
            await reading
        assert server.requested == [f"{SITE}/s.xml"]
        assert middleware.start_reading(SITE) is None

    asyncio.run(run())
