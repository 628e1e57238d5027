"""SiteConcurrencyMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source): at most ``concurrent_per_site`` (``CONCURRENT_REQUESTS_PER_DOMAIN``) requests hold a
site's slot at once; the next waits in ``process_request`` until a response or a failure of the
site gives a place back; other sites do not wait; a shared ``download_slot`` is one site; a
request cancelled while waiting (the crawl closing) gives up its place in line; an idle site
keeps no semaphore.

The middleware asks ``crawler.engine.downloader.get_slot_key`` for a request's site, and
``crawler.engine`` is set only when a crawl starts. So these tests build an engine the public way
(``ExecutionEngine(crawler, spider_closed_callback)``, set as ``crawler.engine``, as
``Crawler.crawl()`` does), inside the running event loop (its download handlers need one), never
start it, and close it afterwards (``close_async`` and the ``engine_stopped`` signal, on which
Scrapy closes its download handlers). Building the engine builds every downloader middleware,
the scraper and the item pipelines too: nothing is fetched, nothing is opened. The middleware
under test is a separate instance built by ``build_from_crawler``; its coroutines run with
``asyncio.run`` (they await only an ``asyncio.Semaphore``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from scrapy import Request, signals
from scrapy.core.engine import ExecutionEngine
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.meta import SITE_SLOT
from searchcrawl.crawl.middlewares.site_concurrency import SiteConcurrencyMiddleware
from tests.components import source_crawler


def run(crawler, scenario: Callable[[SiteConcurrencyMiddleware], Awaitable[None]]) -> None:  # type: ignore[no-untyped-def]
    """Run ``scenario`` on the middleware, with an engine (never started) on the crawler."""

    async def main() -> None:
        engine = ExecutionEngine(crawler, lambda _spider: None)
        crawler.engine = engine
        try:
            await scenario(build_from_crawler(SiteConcurrencyMiddleware, crawler))
        finally:
            await engine.close_async()
            await crawler.signals.send_catch_log_async(signal=signals.engine_stopped)

    asyncio.run(main())


async def start(middleware: SiteConcurrencyMiddleware, request: Request) -> asyncio.Task:
    """``process_request`` of ``request`` as a task, given every chance to finish."""
    task = asyncio.ensure_future(middleware.process_request(request))
    for _ in range(5):
        await asyncio.sleep(0)
    return task


def response(request: Request) -> HtmlResponse:
    return HtmlResponse(request.url, body=b"<html></html>", request=request)


def test_at_most_concurrent_per_site_requests_hold_a_site(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, 'seeds = ["http://h.test/"]\nconcurrent_per_site = 2\n')

    async def scenario(middleware: SiteConcurrencyMiddleware) -> None:
        first, second, third, fourth = (Request(f"http://h.test/{n}.html") for n in range(4))
        elsewhere = Request("http://other.test/")
        for request in (first, second):
            assert (await start(middleware, request)).done()
            assert request.meta[SITE_SLOT] == "h.test"
        waiting = await start(middleware, third)
        assert not waiting.done()  # two in flight: the third waits
        assert (await start(middleware, elsewhere)).done()  # another site does not
        returned = response(first)
        assert middleware.process_response(first, returned) is returned
        await asyncio.sleep(0)
        assert waiting.done() and third.meta[SITE_SLOT] == "h.test"  # a response gave its place
        assert SITE_SLOT not in first.meta
        waiting = await start(middleware, fourth)
        assert not waiting.done()
        assert middleware.process_exception(second, ConnectionResetError()) is None
        await asyncio.sleep(0)
        assert waiting.done()  # so did a failure
        for request in (third, fourth, elsewhere):
            middleware.process_response(request, response(request))
        assert middleware.sites == {}  # idle sites keep no semaphore

    run(crawler, scenario)


def test_a_shared_download_slot_is_one_site(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, 'seeds = ["http://h.test/"]\nconcurrent_per_site = 1\n')

    async def scenario(middleware: SiteConcurrencyMiddleware) -> None:
        mirror, origin = Request("http://a.test/", meta={"download_slot": "mirror"}), Request("http://b.test/")
        assert (await start(middleware, mirror)).done()
        assert (await start(middleware, origin)).done()
        waiting = await start(middleware, Request("http://c.test/", meta={"download_slot": "mirror"}))
        assert not waiting.done()  # another host, the same slot
        middleware.process_response(mirror, response(mirror))
        await asyncio.sleep(0)
        assert waiting.done()

    run(crawler, scenario)


def test_a_request_cancelled_while_waiting_leaves_the_line(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path, 'seeds = ["http://h.test/"]\nconcurrent_per_site = 1\n')

    async def scenario(middleware: SiteConcurrencyMiddleware) -> None:
        holder, cancelled = Request("http://h.test/a.html"), Request("http://h.test/b.html")
        assert (await start(middleware, holder)).done()
        waiting = await start(middleware, cancelled)
        waiting.cancel()  # the crawl closes
        await asyncio.sleep(0)
        assert waiting.cancelled() and SITE_SLOT not in cancelled.meta
        middleware.process_response(holder, response(holder))
        assert middleware.sites == {}
        middleware.process_exception(cancelled, ConnectionResetError())  # never held: nothing to give back
        assert (await start(middleware, Request("http://h.test/c.html"))).done()

    run(crawler, scenario)


def test_the_limit_defaults_to_the_projects(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path)  # CONCURRENT_REQUESTS_PER_DOMAIN = 8 in searchcrawl/settings.py

    async def scenario(middleware: SiteConcurrencyMiddleware) -> None:
        started = [await start(middleware, Request(f"http://h.test/{n}.html")) for n in range(9)]
        assert [task.done() for task in started] == [True] * 8 + [False]

    run(crawler, scenario)
