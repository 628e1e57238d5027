"""SitePauseMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source), and its plain logic (``asked_pause``, ``SitePauses``): a 429 or 503 with ``Retry-After``
up to ``SEARCHCRAWL_RETRY_AFTER_MAX``, seen as it is downloaded (the ``response_downloaded``
signal), pauses its whole site: ``process_request`` (a coroutine awaiting only ``asyncio.sleep``)
holds the site's requests until then, and the site's downloader slot counts its delay from the
pause's end. The middleware asks ``crawler.engine.downloader`` for a request's site and slot: an
engine is built the public way and never started, as in test_site_concurrency.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

from scrapy import Request, signals
from scrapy.core.downloader import Slot
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.middlewares.site_pause import SitePauseMiddleware
from searchcrawl.rules.politeness import SitePauses, asked_pause
from tests.components import engine_of, source_crawler

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def test_asked_pause_is_a_retry_after_on_429_or_503_within_the_cap() -> None:
    assert asked_pause(503, b"2", NOW, 120) == 2
    assert asked_pause(429, format_datetime(NOW + timedelta(seconds=30), usegmt=True), NOW, 120) == 30
    assert asked_pause(503, "121", NOW, 120) is None  # beyond the cap: the URL waits for the next crawl
    assert asked_pause(503, "0", NOW, 120) is None
    assert asked_pause(503, format_datetime(NOW - timedelta(minutes=5), usegmt=True), NOW, 120) is None
    assert asked_pause(503, "soon", NOW, 120) is None
    assert asked_pause(503, None, NOW, 120) is None
    assert asked_pause(500, "2", NOW, 120) is None
    assert asked_pause(200, "2", NOW, 120) is None


def test_a_retry_after_of_digits_other_than_ascii_asks_nothing() -> None:
    """str.isdigit() holds for a superscript or an Arabic-Indic digit: int() raised on '\xb2' (an
    ERROR traceback on every such answer, and the URL given an exception's status instead of a
    retry), and read '\u0663' as 3. RFC 9110's delay-seconds is ASCII digits."""
    assert asked_pause(503, b"\xb2", NOW, 120) is None
    assert asked_pause(503, "\u0663", NOW, 120) is None
    assert asked_pause(503, b" 7 ", NOW, 120) == 7


def test_a_site_pause_is_only_ever_extended_and_then_forgotten() -> None:
    pauses = SitePauses()
    assert pauses.remaining("h", 0.0) == 0
    assert pauses.pause("h", 10.0) == 10.0
    assert pauses.pause("h", 5.0) == 10.0  # a shorter pause asked later does not shorten it
    assert pauses.remaining("h", 4.0) == 6.0
    assert pauses.remaining("other", 4.0) == 0
    assert pauses.pause("h", 12.0) == 12.0
    assert pauses.remaining("h", 12.0) == 0
    assert pauses._until == {}  # over: forgotten


def run(tmp_path: Path, scenario: Callable[[SitePauseMiddleware], Awaitable[None]]) -> None:
    crawler = source_crawler(tmp_path)

    async def main() -> None:
        async with engine_of(crawler):
            await scenario(build_from_crawler(SitePauseMiddleware, crawler))

    asyncio.run(main())


def downloaded(middleware: SitePauseMiddleware, url: str, status: int, retry_after: str | None) -> None:
    """What Scrapy's downloader sends as the answer arrives, before any middleware sees it."""
    request = Request(url)
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    response = HtmlResponse(url, status=status, headers=headers, body=b"busy", request=request)
    middleware.crawler.signals.send_catch_log(signals.response_downloaded, response=response, request=request, spider=None)


async def held(middleware: SitePauseMiddleware, url: str) -> float:
    """Seconds ``process_request`` holds a request to ``url`` before it may start."""
    start = time.monotonic()
    assert await middleware.process_request(Request(url)) is None
    return time.monotonic() - start


def test_a_503_with_retry_after_holds_every_request_of_its_site(tmp_path: Path) -> None:
    async def scenario(middleware: SitePauseMiddleware) -> None:
        downloaded(middleware, "http://h.test/busy.html", 503, "1")
        downloaded(middleware, "http://h.test/other.html", 429, "0")  # does not shorten the pause
        assert await held(middleware, "http://other.test/page.html") < 0.2  # another site is not held
        # two of the site's requests at once (waiting for its turn when the 503 came): both held
        waits = await asyncio.gather(held(middleware, "http://h.test/a.html"), held(middleware, "http://h.test/b.html"))
        assert all(0.8 <= wait < 2.5 for wait in waits), waits
        assert await held(middleware, "http://h.test/after.html") < 0.2  # then free again

    run(tmp_path, scenario)


def test_answers_that_ask_no_pause_hold_nothing(tmp_path: Path) -> None:
    async def scenario(middleware: SitePauseMiddleware) -> None:
        for status, header in [(503, None), (500, "5"), (200, "5"), (503, "soon"), (429, "86400")]:
            downloaded(middleware, "http://h.test/x.html", status, header)
        assert await held(middleware, "http://h.test/next.html") < 0.2

    run(tmp_path, scenario)


def test_the_sites_downloader_slot_counts_its_delay_from_the_pauses_end(tmp_path: Path) -> None:
    """Requests queued in Scrapy's slot for its delay start from ``lastseen`` plus the delay."""

    async def scenario(middleware: SitePauseMiddleware) -> None:
        downloader = middleware.crawler.engine.downloader  # type: ignore[union-attr]
        slot = downloader.slots["h.test"] = Slot(concurrency=1, delay=0.5, jitter=0)
        slot.lastseen = time.monotonic()
        downloaded(middleware, "http://h.test/busy.html", 503, "3")
        assert slot.lastseen - time.monotonic() > 2.5
        downloaded(middleware, "http://h.test/busy.html", 503, "1")  # never moved back
        assert slot.lastseen - time.monotonic() > 2.5
        slot.close()

    run(tmp_path, scenario)
