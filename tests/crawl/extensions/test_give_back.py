"""GiveBack built as Scrapy builds it (the extension of a ``get_crawler`` crawler of a source), on
an engine built the public way and never started: ``give_back()`` ends the leased requests that
wait to be sent, in a middleware's wait (``waiting``) or in a downloader slot's queue, with
``Unsent``; other requests go on; a leased request that reaches a wait afterwards is given back
at once. The end-to-end suspend is tests/e2e/test_resume.py's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.core.downloader import Slot
from twisted.internet.defer import Deferred

from searchcrawl.crawl.exceptions import Unsent
from searchcrawl.crawl.extensions.give_back import GiveBack, waiting
from searchcrawl.crawl.meta import LEASED
from tests.components import engine_of, source_crawler


def leased(url: str) -> Request:
    return Request(url, meta={LEASED: True})


def test_waits_and_slot_queues_of_leased_requests_are_given_back(tmp_path: Path) -> None:
    crawler = source_crawler(tmp_path)

    async def scenario() -> None:
        give_back = crawler.get_extension(GiveBack)
        assert give_back is not None
        turn = asyncio.Event()  # the site's turn, which never comes while the crawl closes
        mine = asyncio.ensure_future(waiting(crawler, leased("http://h.test/a"), turn.wait))
        robots = asyncio.ensure_future(waiting(crawler, Request("http://h.test/robots.txt"), turn.wait))
        slot = crawler.engine.downloader.slots["h.test"] = Slot(concurrency=1, delay=4, jitter=0)  # type: ignore[union-attr]
        queued, other = (leased("http://h.test/b"), Deferred()), (Request("http://h.test/sitemap.xml"), Deferred())
        slot.queue.extend([queued, other])
        await asyncio.sleep(0)
        assert give_back.give_back() == 2
        with pytest.raises(Unsent):
            await mine
        with pytest.raises(Unsent):
            await queued[1]
        assert list(slot.queue) == [other]  # not a leased URL's: it goes on (the URLs waiting for it would fail)
        assert not robots.done()
        turn.set()
        assert await robots is True
        with pytest.raises(Unsent):  # a leased request reaching a wait once the crawl closes
            await waiting(crawler, leased("http://h.test/c"), turn.wait)
        give_back.check(Request("http://h.test/d"))  # others pass
        slot.close()

    async def main() -> None:
        async with engine_of(crawler):
            await scenario()

    asyncio.run(main())


def test_a_wait_cancelled_from_outside_stays_cancelled(tmp_path: Path) -> None:
    """The request's own task cancelled (Scrapy closing it) while the crawl closes: CancelledError,
    never turned into Unsent."""
    crawler = source_crawler(tmp_path)

    async def main() -> None:
        give_back = crawler.get_extension(GiveBack)
        assert give_back is not None
        never = asyncio.Event()
        task = asyncio.ensure_future(give_back.wait(leased("http://h.test/a"), never.wait))
        await asyncio.sleep(0)
        give_back.closing = True
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
