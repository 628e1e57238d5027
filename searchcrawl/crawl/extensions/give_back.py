"""GiveBack: when a suspend or stop closes the crawl, the requests not yet sent go back to the
frontier at once, instead of being sent one by one at the site's delay.

Scrapy closes a spider only once every request it handed to the downloader has finished. A
site's requests wait to be sent: for the site's turn (middlewares/site_concurrency.py), for a
pause it asked for (middlewares/site_pause.py), and in Scrapy's downloader slot for its delay. A
suspend with ``delay = 2`` waited for all of them, 48 s, not ``SEARCHCRAWL_PROGRESS_INTERVAL``.

On ``give_back()`` (RunMonitor, as it honours a suspend or stop, or finds Scrapy's graceful
shutdown under way: Ctrl-C, SIGTERM), every request the scheduler made
from a leased URL (meta ``LEASED``) that waits in one of those places ends with ``Unsent``: those
waiting in a middleware (their wait goes through ``waiting``) and those queued in a downloader
slot (taken out of ``Slot.queue``, the deferred Scrapy waits on failed); one reaching those places
later ends there too. The spider records no outcome for them, their URLs stay leased, and the
scheduler queues them again as the run closes (``Frontier.requeue_leased``): the resumed run
fetches them. Requests already on the wire are answered as usual; other requests (robots.txt,
sitemaps, form logins) are not given back, since the URLs waiting for them would fail.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from scrapy import Request
from scrapy.crawler import Crawler
from twisted.python.failure import Failure

from searchcrawl.crawl.exceptions import Unsent, not_needed
from searchcrawl.crawl.meta import LEASED

logger = logging.getLogger(__name__)

T = TypeVar("T")


class GiveBack:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.closing = False
        self.waits: set[asyncio.Future[Any]] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GiveBack:
        if getattr(crawler.spidercls, "source", None) is None:
            raise not_needed(cls, "not a searchcrawl source spider")
        return cls(crawler)

    def check(self, request: Request) -> None:
        """Raise Unsent for a leased request once the crawl is closing."""
        if self.closing and request.meta.get(LEASED):
            raise Unsent("the crawl is closing: back to the queue")

    async def wait(self, request: Request, wait: Callable[[], Awaitable[T]]) -> T:
        """``await wait()``, cut short by ``give_back()`` for a leased request (Unsent)."""
        self.check(request)
        if not request.meta.get(LEASED):
            return await wait()
        task = asyncio.ensure_future(wait())
        self.waits.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.closing and task.cancelled() and not (current is not None and current.cancelling()):
                raise Unsent("the crawl is closing: back to the queue") from None
            raise  # the request's own task was cancelled: not ours to turn into anything else
        finally:
            self.waits.discard(task)

    def give_back(self) -> int:
        """The crawl closes: every leased request not yet sent ends (Unsent); returns how many
        were waiting (in a middleware, or in a downloader slot's queue)."""
        self.closing = True
        waiting = [task for task in self.waits if not task.done()]
        for task in waiting:
            task.cancel()
        queued: list[Any] = []
        engine = self.crawler.engine
        for slot in engine.downloader.slots.values() if engine is not None else ():
            kept: deque[Any] = deque()
            while slot.queue:
                entry = slot.queue.popleft()
                (queued if entry[0].meta.get(LEASED) else kept).append(entry)
            slot.queue.extend(kept)
        for _request, deferred in queued:
            deferred.errback(Failure(Unsent("the crawl is closing: back to the queue")))
        given = len(waiting) + len(queued)
        logger.info("%d requests not yet sent go back to the queue", given)
        return given


async def waiting(crawler: Crawler, request: Request, wait: Callable[[], Awaitable[T]]) -> T:
    """``await wait()`` where a request waits to be sent: through the crawl's GiveBack, so that
    a suspend or stop gives the request back (another spider's crawl has none)."""
    give_back = crawler.get_extension(GiveBack)
    if give_back is None:
        return await wait()
    return await give_back.wait(request, wait)
