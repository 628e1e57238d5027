"""RobotsMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a source),
fetching real robots.txt files from HTTP servers on 127.0.0.1 through a real, unstarted engine.

The middleware fetches robots.txt with ``crawler.engine.download_async``: through the crawl's
downloader and every downloader middleware (the internal-address guard included). So these tests
build an engine the public way (``ExecutionEngine(crawler, spider_closed_callback)``, set as
``crawler.engine``, the spider made with the spider class's ``from_crawler``, as
``Crawler.crawl()`` does), open the spider with ``open_spider_async`` (``close_if_idle=False``)
and never start the engine: nothing is scheduled, only ``download_async`` is used. The engine is
closed afterwards (``close_async``, which closes the spider, and the ``engine_stopped`` signal,
on which Scrapy closes its download handlers).

This test process runs without a Twisted reactor, so ``get_crawler`` builds the crawler
reactorless and Scrapy downloads http(s) with its asyncio ``AiohttpDownloadHandler``, not the
Twisted HTTP/1.1 handler of a real crawl: the same downloader middlewares and signals
(``bytes_received``, ``StopDownload``), another client library. The crawl's settings differ from
the project's in what opening the spider would otherwise do: Scrapy's own in-memory scheduler (no
durable run), no item pipelines (nothing talks to Solr), no RunMonitor
(``SEARCHCRAWL_PROGRESS_INTERVAL = 0``: its Twisted ``LoopingCall`` would install Twisted's default
reactor for the whole test session) and no memory watchdog (it expects ``engine_started``).
And the engine's downloader gets every downloader middleware of the project but its own
RobotsMiddleware, so that the one under test is the crawl's only one, as in a real crawl: the
engine's would let robots.txt fetches through anyway, but it too counts the bytes of every
robots.txt download (``bytes_received``, into one key of the request's meta): with two counting
instances a download stops after about 250 KiB.

What it checks: a disallowed URL is refused (907, group and line in the reason), an allowed one
passes; robots.txt is fetched once per site (scheme, host and port) for many requests, and
concurrent requests wait for the same fetch (one of them cancelled does not cancel it); 4xx means
no restrictions; 5xx, 429 and no answer make the site's URLs fail for now (935, event FAILED),
and robots.txt is not fetched again in the crawl unless ``SEARCHCRAWL_ROBOTS_RETRY_AFTER`` is set;
redirects are followed up to 5 (relative ones and to another site too; the sixth target is never
fetched: 935), never to a non-http(s) URL or past the internal-address guard (935); the source's
``robots_agent`` group is used before ``*``; ``obey_robots = false`` fetches nothing; only about
the first 500 KiB of a robots.txt are downloaded (the server sees the connection closed early) and
parsed.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy import Request
from scrapy.crawler import Crawler

from searchcrawl import settings as project_settings
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import ROBOTS_REQUEST
from searchcrawl.crawl.middlewares.robots import MAX_ROBOTS_REDIRECTS, SITE_RECORD_BYTES, RobotsMiddleware, SiteRobots
from searchcrawl.crawl.signals import robots_txt_read
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.robots_txt import MAX_ROBOTS_BYTES
from searchcrawl.rules.status_codes import Status
from tests.components import run_with_engine, source_crawler
from tests.conftest import HeldAnswers, Site

ROBOTS_MIDDLEWARE = f"{RobotsMiddleware.__module__}.{RobotsMiddleware.__qualname__}"
# What opening the spider of an unstarted engine needs, and the middleware under test as the
# crawl's only RobotsMiddleware (see the module docstring).
ENGINE_SETTINGS: dict[str, Any] = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "ITEM_PIPELINES": {},
    "SEARCHCRAWL_PROGRESS_INTERVAL": 0,
    "MEMUSAGE_ENABLED": False,
    "DOWNLOADER_MIDDLEWARES": {**project_settings.DOWNLOADER_MIDDLEWARES, ROBOTS_MIDDLEWARE: None},
}
ROBOTS = b"User-agent: *\nDisallow: /private/\n"
DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"


def text(body: bytes, status: int = 200) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "text/plain"}, body


def crawler_of(tmp_path: Path, *sites: str, keys: str = "", **settings: Any) -> Crawler:
    """A crawler of a source whose seeds are ``sites`` (so the guard admits their host:port)."""
    seeds = ", ".join(f'"{site}"' for site in sites)
    return source_crawler(tmp_path, f"seeds = [{seeds}]\n{keys}", **{**ENGINE_SETTINGS, **settings})


def run(crawler: Crawler, scenario: Callable[[RobotsMiddleware], Awaitable[None]]) -> None:
    """Run ``scenario`` on the middleware, with an engine (opened, never started) on the crawler."""
    run_with_engine(crawler, RobotsMiddleware, scenario)


async def refused(middleware: RobotsMiddleware, url: str) -> RequestRefused:
    with pytest.raises(RequestRefused) as caught:
        await middleware.process_request(Request(url))
    return caught.value


def site_of(site: Site) -> str:
    return site.url.rstrip("/")


def held(middleware: RobotsMiddleware, site: str) -> SiteRobots:
    """The site's record, with rules or without."""
    record = middleware.sites.get(site) or middleware.verdicts.get(site)
    assert record is not None, f"no record of {site}"
    return record


def robots_fetches(site: Site) -> int:
    return site.paths().count("/robots.txt")


def middleware_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The middleware's clock (when a site's robots.txt is fetched again), moved by the test: no
    fixed sleep beside it (issue 99)."""
    now = [1000.0]
    monkeypatch.setattr("searchcrawl.crawl.middlewares.robots.time", SimpleNamespace(monotonic=lambda: now[0]))
    return now


@pytest.fixture
def site(serve, tmp_path: Path) -> Site:
    (tmp_path / "site").mkdir()
    return serve(tmp_path / "site")


# --- the rules ------------------------------------------------------------------------------------


def test_a_disallowed_url_is_refused_and_an_allowed_one_passes(tmp_path: Path, site: Site) -> None:
    site.responses["/robots.txt"] = text(ROBOTS)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        assert await middleware.process_request(Request(f"{site.url}a.html")) is None
        refusal = await refused(middleware, f"{site.url}private/x.html")
        assert refusal.status == Status.EXCLUDED_ROBOTS and int(refusal.status) == 907
        assert refusal.outcome.event == Event.EXCLUDED
        assert refusal.reason == f"robots.txt of {site_of(site)}: User-agent: *: line 2: Disallow: /private/"
        assert crawler.stats.get_value("searchcrawl/excluded/excluded_robots") == 1
        assert {site: record.answer for site, record in middleware.sites.items()} == {
            site_of(site): f"{site.url}robots.txt: HTTP 200, {len(ROBOTS)} bytes"
        }

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt"]  # only robots.txt: the pages are the test's own requests


def test_the_sources_robots_agent_group_is_used_before_the_star_group(tmp_path: Path, site: Site) -> None:
    site.responses["/robots.txt"] = text(
        b"User-agent: *\nDisallow: /\n\nUser-agent: otherbot\nDisallow: /other/\n\n"
        b"User-agent: MyBot/2.0\nDisallow: /mine/\nAllow: /mine/open/\n"
    )
    crawler = crawler_of(tmp_path, site.url, keys='robots_agent = "mybot"\n')

    async def scenario(middleware: RobotsMiddleware) -> None:
        assert await middleware.process_request(Request(f"{site.url}a.html")) is None  # "*" would refuse it
        assert await middleware.process_request(Request(f"{site.url}other/a.html")) is None
        assert await middleware.process_request(Request(f"{site.url}mine/open/a.html")) is None  # longest match
        refusal = await refused(middleware, f"{site.url}mine/a.html")
        assert refusal.reason == f"robots.txt of {site_of(site)}: User-agent: MyBot/2.0: line 8: Disallow: /mine/"

    run(crawler, scenario)


def test_without_a_group_of_its_own_the_default_agent_obeys_the_star_group(tmp_path: Path, site: Site) -> None:
    site.responses["/robots.txt"] = text(b"User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n")
    crawler = crawler_of(tmp_path, site.url)  # robots_agent = "searchcrawl"

    async def scenario(middleware: RobotsMiddleware) -> None:
        assert await middleware.process_request(Request(f"{site.url}a.html")) is None
        refusal = await refused(middleware, f"{site.url}private/a.html")
        assert refusal.reason == f"robots.txt of {site_of(site)}: User-agent: *: line 5: Disallow: /private/"

    run(crawler, scenario)


def test_obey_robots_false_fetches_nothing(tmp_path: Path, site: Site) -> None:
    site.responses["/robots.txt"] = text(DISALLOW_ALL)
    crawler = crawler_of(tmp_path, site.url, keys="obey_robots = false\n")

    async def scenario(middleware: RobotsMiddleware) -> None:
        for path in ("", "a.html", "private/x.html"):
            assert await middleware.process_request(Request(f"{site.url}{path}")) is None
        assert middleware.sites == {} and middleware.verdicts == {}

    run(crawler, scenario)
    assert site.requests == []


def test_robots_fetches_and_non_http_urls_are_not_checked(tmp_path: Path, site: Site) -> None:
    site.responses["/robots.txt"] = text(DISALLOW_ALL)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        own = Request(f"{site.url}robots.txt", meta={ROBOTS_REQUEST: True})
        assert await middleware.process_request(own) is None
        assert await middleware.process_request(Request("file:///tmp/a.html")) is None

    run(crawler, scenario)
    assert site.requests == []


# --- fetched once per site ------------------------------------------------------------------------


def test_robots_txt_is_fetched_once_per_site_for_many_requests(tmp_path: Path, serve) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = serve(tmp_path / "a"), serve(tmp_path / "b")  # one host, two ports: two sites
    first.responses["/robots.txt"] = text(ROBOTS)
    second.responses["/robots.txt"] = text(DISALLOW_ALL)
    crawler = crawler_of(tmp_path, first.url, second.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        for number in range(20):
            assert await middleware.process_request(Request(f"{first.url}p{number}.html")) is None
            await refused(middleware, f"{first.url}private/p{number}.html")
            await refused(middleware, f"{second.url}p{number}.html")  # the other port's rules
        assert crawler.stats.get_value("searchcrawl/excluded/excluded_robots") == 40
        assert set(middleware.sites) == {site_of(first), site_of(second)}

    run(crawler, scenario)
    assert first.paths() == ["/robots.txt"]
    assert second.paths() == ["/robots.txt"]


def weights(middleware: RobotsMiddleware) -> int:
    return sum(record.weight for held_in in (middleware.sites, middleware.verdicts) for record in held_in.values())


def test_the_least_recently_used_sites_records_are_forgotten_beyond_the_bound(tmp_path: Path, serve) -> None:
    """A source reaching many hosts, each with 500 KiB of rules, held 10-13 MB per host for the
    whole crawl: beyond SEARCHCRAWL_ROBOTS_HELD_BYTES the records used least recently are
    forgotten, and fetched again when needed (robots_txt_read sent again). A record weighs its
    file's text and its strings plus SITE_RECORD_BYTES."""
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    first, second, none = serve(tmp_path / "a"), serve(tmp_path / "b"), serve(tmp_path / "c")
    first.responses["/robots.txt"] = text(ROBOTS)
    second.responses["/robots.txt"] = text(ROBOTS)
    none.responses["/robots.txt"] = text(b"", status=404)
    file_weight = [
        len(ROBOTS) + len(f"{site.url}robots.txt: HTTP 200, {len(ROBOTS)} bytes") + SITE_RECORD_BYTES for site in (first, second)
    ]
    verdict_weight = len(f"{none.url}robots.txt: HTTP 404, 0 bytes") + SITE_RECORD_BYTES
    bound = sum(file_weight) + verdict_weight - 1  # both files, or a file and the 404's verdict
    crawler = crawler_of(tmp_path, first.url, second.url, none.url, SEARCHCRAWL_ROBOTS_HELD_BYTES=bound)
    read: list[str] = []

    def on_read(site: str, robots: object) -> None:
        read.append(site)

    crawler.signals.connect(on_read, signal=robots_txt_read)

    async def scenario(middleware: RobotsMiddleware) -> None:
        for site in (none, first, first, second, second, first, none):
            if site is none:
                assert await middleware.process_request(Request(f"{site.url}private/a.html")) is None
            else:
                await refused(middleware, f"{site.url}private/a.html")
            assert middleware.held_bytes == weights(middleware) <= bound
        assert list(middleware.sites) == [site_of(first)] and list(middleware.verdicts) == [site_of(none)]

    run(crawler, scenario)
    assert first.paths() == ["/robots.txt", "/robots.txt"]  # forgotten for second's, the older file
    assert second.paths() == ["/robots.txt"]
    assert none.paths() == ["/robots.txt"]  # a verdict: the files went first
    assert read == [site_of(none), site_of(first), site_of(second), site_of(first)]


def test_large_files_do_not_flush_the_verdicts_of_unreachable_sites(tmp_path: Path, serve) -> None:
    """A review's attack: a few hosts with large robots.txt files pushed out every other record,
    and a site whose robots.txt answered 503 was asked again each time it came up, though
    SEARCHCRAWL_ROBOTS_RETRY_AFTER (0) says not again in this crawl. Files go first."""
    for name in ("down", "big1", "big2", "big3"):
        (tmp_path / name).mkdir()
    down, *big = (serve(tmp_path / name) for name in ("down", "big1", "big2", "big3"))
    down.responses["/robots.txt"] = text(b"busy", status=503)
    rules = b"User-agent: *\n" + b"".join(b"Disallow: /private/%d/\n" % number for number in range(200))
    for site in big:
        site.responses["/robots.txt"] = text(rules)
    crawler = crawler_of(tmp_path, down.url, *(site.url for site in big), SEARCHCRAWL_ROBOTS_HELD_BYTES=len(rules) + 1000)

    async def scenario(middleware: RobotsMiddleware) -> None:
        for _round in range(3):
            assert (await refused(middleware, f"{down.url}a.html")).status == Status.ROBOTS_UNAVAILABLE
            for site in big:
                assert await middleware.process_request(Request(f"{site.url}a.html")) is None
            assert middleware.held_bytes == weights(middleware) <= len(rules) + 1000
        assert list(middleware.verdicts) == [site_of(down)]

    run(crawler, scenario)
    assert down.paths() == ["/robots.txt"]
    assert [robots_fetches(site) for site in big] == [3, 3, 3]  # one held at a time


def test_verdicts_without_files_are_held_within_the_bound(tmp_path: Path, serve) -> None:
    """Hosts answering 404 each leave a record: at most the bound's worth is kept."""
    sites = []
    for name in range(6):
        (tmp_path / str(name)).mkdir()
        sites.append(serve(tmp_path / str(name)))
        sites[-1].responses["/robots.txt"] = text(b"", status=404)
    one = len(f"{sites[0].url}robots.txt: HTTP 404, 0 bytes") + SITE_RECORD_BYTES  # the same length for each
    crawler = crawler_of(tmp_path, *(site.url for site in sites), SEARCHCRAWL_ROBOTS_HELD_BYTES=3 * one)

    async def scenario(middleware: RobotsMiddleware) -> None:
        for site in sites:
            assert await middleware.process_request(Request(f"{site.url}a.html")) is None
        assert list(middleware.verdicts) == [site_of(site) for site in sites[-3:]] and middleware.sites == {}
        assert middleware.held_bytes == weights(middleware) == 3 * one

    run(crawler, scenario)


def test_a_records_strings_are_weighed(tmp_path: Path, site: Site) -> None:
    """A review's attack: a redirect's Location of bytes over 0x7F becomes a URL six times as long
    in the record's answer (16 KB, the longest header line Twisted reads, made 96 KB), which
    weighed 64 bytes: 65,536 such hosts held gigabytes."""
    target = "/" + "%C3%A9" * 1300  # what w3lib makes of 1,300 bytes 0xE9 read as Latin-1
    site.redirect("/robots.txt", 302, target)
    site.responses[target] = text(b"", status=404)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        assert await middleware.process_request(Request(f"{site.url}a.html")) is None  # the target: 404
        record = held(middleware, site_of(site))
        assert len(record.answer) > 7800 and record.weight >= len(record.answer) + SITE_RECORD_BYTES
        assert middleware.held_bytes == record.weight

    run(crawler, scenario)


def test_concurrent_requests_wait_for_the_same_fetch(tmp_path: Path, serve) -> None:
    (tmp_path / "site").mkdir()
    answers = HeldAnswers()
    site = serve(tmp_path / "site", in_flight=answers)  # robots.txt is answered when the test says
    site.responses["/robots.txt"] = text(ROBOTS)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        urls = [f"{site.url}p{number}.html" for number in range(10)] + [f"{site.url}private/x.html"]
        tasks = [asyncio.ensure_future(middleware.process_request(Request(url))) for url in urls]
        cancelled = asyncio.ensure_future(middleware.process_request(Request(f"{site.url}gone.html")))
        # the moment the fetch ends, before its waiters resume, a request finds the site in
        # ``fetching`` or its record kept, never neither: it left ``fetching`` before its waiters
        # kept the record, and a request in between started a second fetch (a review's find)
        known: list[bool] = []
        await asyncio.sleep(0)  # the tasks start: the first asks for the fetch
        middleware.fetching[site_of(site)].add_done_callback(
            lambda _done: known.append(
                site_of(site) in middleware.fetching or site_of(site) in middleware.sites or site_of(site) in middleware.verdicts
            )
        )
        try:
            assert await asyncio.to_thread(answers.arrived.wait, 60)  # the fetch is at the site
            assert not any(task.done() for task in [*tasks, cancelled])  # all wait for the one fetch
            assert list(middleware.fetching) == [site_of(site)]
            cancelled.cancel()  # e.g. the crawl closing: the others' fetch goes on
        finally:
            answers.released.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert results[:-1] == [None] * 10
        assert isinstance(results[-1], RequestRefused) and results[-1].status == Status.EXCLUDED_ROBOTS
        assert cancelled.cancelled()
        assert middleware.fetching == {}  # the finished fetch is forgotten; its rules are kept
        assert known == [True]
        assert await middleware.process_request(Request(f"{site.url}later.html")) is None

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt"]


# --- answers other than 200 -----------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 404, 410])
def test_a_4xx_robots_txt_means_no_restrictions(tmp_path: Path, site: Site, status: int) -> None:
    site.responses["/robots.txt"] = text(DISALLOW_ALL, status)  # the body of an error page is not rules
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        for path in ("", "a.html", "private/x.html"):
            assert await middleware.process_request(Request(f"{site.url}{path}")) is None
        record = held(middleware, site_of(site))
        assert record.unavailable is None
        assert record.answer == f"{site.url}robots.txt: HTTP {status}, {len(DISALLOW_ALL)} bytes"

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt"]


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_5xx_or_429_robots_txt_fails_the_sites_urls_and_is_not_fetched_again(
    tmp_path: Path, site: Site, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = middleware_clock(monkeypatch)
    site.responses["/robots.txt"] = text(b"busy", status)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        for path in ("a.html", "b.html", "private/x.html"):
            refusal = await refused(middleware, f"{site.url}{path}")
            assert refusal.status == Status.ROBOTS_UNAVAILABLE and int(refusal.status) == 935
            assert refusal.outcome.event == Event.FAILED  # a failure that may pass, not a rule
            assert refusal.reason == f"robots.txt of {site_of(site)} answered {status}"
        site.responses["/robots.txt"] = text(b"User-agent: *\nAllow: /\n")  # back, but not for this crawl
        now[0] += 3600  # an hour later in the crawl
        assert (await refused(middleware, f"{site.url}c.html")).status == Status.ROBOTS_UNAVAILABLE
        assert crawler.stats.get_value("searchcrawl/robots_unavailable") == 4
        assert crawler.stats.get_value("searchcrawl/excluded/excluded_robots") is None
        assert held(middleware, site_of(site)).answer == f"{site.url}robots.txt answered {status}"

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt"]


def test_an_unreachable_robots_txt_fails_the_sites_urls_and_is_not_fetched_again(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on (the source admits it: its seed)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    crawler = crawler_of(tmp_path, f"http://127.0.0.1:{port}/")

    async def scenario(middleware: RobotsMiddleware) -> None:
        started = time.monotonic()
        refusal = await refused(middleware, f"http://127.0.0.1:{port}/a.html")
        assert refusal.status == Status.ROBOTS_UNAVAILABLE and refusal.outcome.event == Event.FAILED
        assert refusal.reason.startswith(f"robots.txt of http://127.0.0.1:{port} is unreachable ("), refusal.reason
        assert time.monotonic() - started < 5  # refused at once: not retried by RetryMiddleware
        fetching = asyncio.ensure_future(middleware.process_request(Request(f"http://127.0.0.1:{port}/b.html")))
        await asyncio.sleep(0)
        assert fetching.done()  # the answer is kept: no second fetch
        assert isinstance(fetching.exception(), RequestRefused)

    run(crawler, scenario)


def test_with_robots_retry_after_an_unavailable_robots_txt_is_fetched_again(
    tmp_path: Path, site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = middleware_clock(monkeypatch)  # "not yet" is not yet however slow the machine
    site.responses["/robots.txt"] = text(b"down", 503)
    crawler = crawler_of(tmp_path, site.url, SEARCHCRAWL_ROBOTS_RETRY_AFTER=0.5)

    async def scenario(middleware: RobotsMiddleware) -> None:
        assert (await refused(middleware, f"{site.url}a.html")).status == Status.ROBOTS_UNAVAILABLE
        site.responses["/robots.txt"] = text(ROBOTS)
        assert (await refused(middleware, f"{site.url}a.html")).status == Status.ROBOTS_UNAVAILABLE  # not yet
        assert robots_fetches(site) == 1
        now[0] += 0.6
        assert await middleware.process_request(Request(f"{site.url}a.html")) is None  # fetched again: 200
        assert (await refused(middleware, f"{site.url}private/a.html")).status == Status.EXCLUDED_ROBOTS
        assert held(middleware, site_of(site)).unavailable is None
        now[0] += 0.6
        assert await middleware.process_request(Request(f"{site.url}b.html")) is None  # a 200 is kept for good

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt", "/robots.txt"]


# --- redirects ------------------------------------------------------------------------------------


def chain(site: Site, redirects: int) -> list[str]:
    """/robots.txt redirecting ``redirects`` times (301, 302, 307, 308; some Locations relative)
    to /hopN.txt, which disallows everything; the paths of the chain."""
    hops = ["/robots.txt", *(f"/hop{number}.txt" for number in range(1, redirects + 1))]
    for number, (source, target) in enumerate(zip(hops, hops[1:], strict=False)):
        location = target if number % 2 else f"{site.url}{target.lstrip('/')}"
        site.redirect(source, (301, 302, 307, 308)[number % 4], location)
    site.responses[hops[-1]] = text(DISALLOW_ALL)
    return hops


def test_redirects_are_followed_up_to_5(tmp_path: Path, site: Site) -> None:
    hops = chain(site, MAX_ROBOTS_REDIRECTS)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        refusal = await refused(middleware, f"{site.url}a.html")
        assert refusal.status == Status.EXCLUDED_ROBOTS  # the rules at the end of the chain
        assert refusal.reason == f"robots.txt of {site_of(site)}: User-agent: *: line 2: Disallow: /"
        answer = f"{site.url}hop5.txt: HTTP 200, {len(DISALLOW_ALL)} bytes (after 5 redirects)"
        assert held(middleware, site_of(site)).answer == answer

    run(crawler, scenario)
    assert site.paths() == hops


def test_a_sixth_redirect_is_not_followed(tmp_path: Path, site: Site) -> None:
    hops = chain(site, MAX_ROBOTS_REDIRECTS + 1)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        refusal = await refused(middleware, f"{site.url}a.html")
        assert refusal.status == Status.ROBOTS_UNAVAILABLE and refusal.outcome.event == Event.FAILED
        assert refusal.reason == f"robots.txt of {site_of(site)} redirects more than 5 times"
        await refused(middleware, f"{site.url}b.html")

    run(crawler, scenario)
    assert site.paths() == hops[:-1]  # 6 fetches, 5 redirects followed, the sixth target never fetched


def test_a_redirect_to_another_site_gives_that_sites_rules(tmp_path: Path, serve) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    site, other = serve(tmp_path / "a"), serve(tmp_path / "b")
    site.redirect("/robots.txt", 302, f"{other.url}rules.txt")
    other.responses["/rules.txt"] = text(ROBOTS)
    crawler = crawler_of(tmp_path, site.url, other.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        assert await middleware.process_request(Request(f"{site.url}a.html")) is None
        assert (await refused(middleware, f"{site.url}private/a.html")).status == Status.EXCLUDED_ROBOTS
        answer = f"{other.url}rules.txt: HTTP 200, {len(ROBOTS)} bytes (after 1 redirect)"
        assert held(middleware, site_of(site)).answer == answer

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt"] and other.paths() == ["/rules.txt"]


@pytest.mark.parametrize("location", ["ftp://127.0.0.1/robots.txt", "file:///etc/passwd", "data:text/plain,Allow:%20/"])
def test_a_redirect_to_a_non_http_url_is_not_followed(tmp_path: Path, site: Site, location: str) -> None:
    site.redirect("/robots.txt", 302, location)
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        refusal = await refused(middleware, f"{site.url}a.html")
        assert refusal.status == Status.ROBOTS_UNAVAILABLE and refusal.outcome.event == Event.FAILED
        assert refusal.reason == f"robots.txt of {site_of(site)} redirects to a non-http(s) URL"

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt"]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ((302, {}, b""), "answered 302 without a Location to follow"),
        ((304, {}, b""), "answered 304 without a Location to follow"),
        ((300, {"Location": ""}, b""), "answered 300 without a Location to follow"),
        ((302, {"Location": "http://127.0.0.1:80:1/robots.txt"}, b""), "redirects to a URL that cannot be read"),
        ((301, {"Location": "http://[::1/robots.txt"}, b""), "redirects to a URL that cannot be read"),
    ],
)
def test_a_redirect_that_cannot_be_followed_fails_the_sites_urls_once(
    tmp_path: Path, site: Site, answer: tuple[int, dict[str, str], bytes], reason: str
) -> None:
    """A hostile review found them: no Location gave every URL 907 (an exclusion: the whole site
    left the index at once), and a Location w3lib cannot read raised out of the fetch, so nothing
    was cached and every page of the site fetched robots.txt again."""
    site.responses["/robots.txt"] = answer
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        for path in ("a.html", "b.html", "c.html"):
            refusal = await refused(middleware, f"{site.url}{path}")
            assert refusal.status == Status.ROBOTS_UNAVAILABLE and refusal.outcome.event == Event.FAILED
            assert refusal.reason.startswith(f"robots.txt of {site_of(site)} {reason}"), refusal.reason

    run(crawler, scenario)
    assert site.paths() == ["/robots.txt"]


def test_a_redirect_to_an_internal_address_is_stopped_by_the_guard(tmp_path: Path, site: Site, serve) -> None:
    (tmp_path / "internal").mkdir()
    internal = serve(tmp_path / "internal", host="127.0.0.2")  # not admitted by the source
    internal.responses["/robots.txt"] = text(b"User-agent: *\nAllow: /\n")
    site.redirect("/robots.txt", 302, f"{internal.url}robots.txt")
    crawler = crawler_of(tmp_path, site.url)

    async def scenario(middleware: RobotsMiddleware) -> None:
        refusal = await refused(middleware, f"{site.url}a.html")
        assert refusal.status == Status.ROBOTS_UNAVAILABLE
        assert refusal.reason.startswith(f"robots.txt of {site_of(site)} is unreachable (RequestRefused: ")
        assert "is an internal address" in refusal.reason

    run(crawler, scenario)
    assert internal.requests == []  # through the crawl's downloader middlewares: the guard held
    assert site.paths() == ["/robots.txt"]


# --- the size cap ---------------------------------------------------------------------------------


def huge_robots_txt() -> tuple[bytes, bytes]:
    """The first 500 KiB of a huge robots.txt, and what follows: a ``*`` group disallowing
    /early/, a long comment line, a line disallowing /edge/ that ends 13 bytes before the cap,
    then "Disallow: /late/" cut in two by the cap after "/la" (a cut line is dropped: "Disallow:
    /la" would disallow too much)."""
    head = b"User-agent: *\nDisallow: /early/\n"
    edge = b"Disallow: /edge/\n"
    filler = MAX_ROBOTS_BYTES - 13 - len(head) - len(edge)
    first = head + b"#" + b"x" * (filler - 2) + b"\n" + edge + b"Disallow: /la"
    return first, b"te/\n"


class HugeRobots:
    """A server whose /robots.txt (no Content-Length) is ``huge_robots_txt`` followed by comment
    lines, ``size`` bytes in all. Remembers how much it could send before the client went away.
    ``challenge``: the first request gets a digest challenge (401) instead, the next the file."""

    def __init__(self, size: int, challenge: bool = False) -> None:
        self.size = size
        self.challenge = challenge
        self.sent = 0
        self.complete = False
        self.done = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/"
        threading.Thread(target=self.serve, daemon=True).start()

    def body(self) -> Iterator[bytes]:
        first, rest = huge_robots_txt()
        yield first
        yield rest
        filler = (b"#" + b"x" * 1022 + b"\n") * 64  # 64 KiB of comment lines
        while True:
            yield filler

    def serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
            if self.challenge:
                with conn:
                    conn.recv(65536)
                    conn.sendall(
                        b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n"
                        b'WWW-Authenticate: Digest realm="r", qop="auth", nonce="n1"\r\n\r\n'
                    )
                conn, _ = self.sock.accept()
        except OSError:
            return
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n")
            try:
                for chunk in self.body():
                    chunk = chunk[: self.size - self.sent]
                    if not chunk:
                        self.complete = True
                        break
                    conn.sendall(chunk)
                    self.sent += len(chunk)
            except OSError:  # the client closed the connection
                pass
            finally:
                self.done.set()

    def close(self) -> None:
        self.sock.close()


@pytest.mark.parametrize("digest", [False, True])  # behind digest: the request sent again is capped too
def test_only_the_first_500_kib_are_downloaded_and_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digest: bool) -> None:
    first, rest = huge_robots_txt()
    assert len(first) == MAX_ROBOTS_BYTES and first.endswith(b"\nDisallow: /la") and rest.startswith(b"te/\n")
    server = HugeRobots(size=64 * 1024 * 1024, challenge=digest)  # far more than socket buffers hold
    monkeypatch.setenv("ROBOTS_DIGEST_SECRET", "s3cret-value")
    auth = f'[access]\npublic = true\n[[auth]]\norigins = ["{server.url.rstrip("/")}"]\ntype = "digest"\nuser = "u"\nsecret = "ROBOTS_DIGEST_SECRET"\n'
    crawler = crawler_of(tmp_path, server.url, keys=auth if digest else "")

    async def scenario(middleware: RobotsMiddleware) -> None:
        assert (await refused(middleware, f"{server.url}early/a.html")).status == Status.EXCLUDED_ROBOTS
        edge = await refused(middleware, f"{server.url}edge/a.html")  # the last whole line before the cap
        assert edge.reason.endswith(": line 4: Disallow: /edge/"), edge.reason
        assert await middleware.process_request(Request(f"{server.url}late/a.html")) is None  # past the cap
        assert await middleware.process_request(Request(f"{server.url}lab.html")) is None  # the cut line dropped
        answer = held(middleware, server.url.rstrip("/")).answer
        received = int(answer.split(", ")[1].split()[0])
        assert MAX_ROBOTS_BYTES < received < 2 * MAX_ROBOTS_BYTES, answer  # stopped just past the cap

    try:
        run(crawler, scenario)
        assert server.done.wait(10)
    finally:
        server.close()
    assert not server.complete and server.sent < 16 * 1024 * 1024  # the connection was closed early
