"""Download handler: scrapy-playwright's, with every render and every rendered page's close bounded.

scrapy-playwright closes a rendered page with ``await page.close()`` and no bound. Chromium can
acknowledge a close that races the commit of a navigation the page started itself (a
``<meta http-equiv="refresh">``, a script's ``location.reload()``) without ever closing the page
(microsoft/playwright#42366): the close then waits forever, and with it the download, its slot
and the crawl's end. A page that refreshes itself at once had 5 of 60 closes hang here; a
meta-refresh redirect is an ordinary page on many sites. So this handler asks scrapy-playwright
to leave each page open (``playwright_include_page``, its documented switch) and closes the page
itself, with ``close_rendered_page``: every step bounded, the last one closing the page's browser
context (scrapy-playwright makes a new one for the next page; renders in flight there fail, or
are tried again as after a browser crash). The render itself is bounded too (``render_bound``):
reading a page's content is unbounded in scrapy-playwright, and a page whose script loops after
its load event never gives it. A request whose own spider asked for the page keeps it, unbounded.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import Any, Protocol

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.utils.misc import load_object
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.meta import PLAYWRIGHT, PLAYWRIGHT_INCLUDE_PAGE, PLAYWRIGHT_PAGE, PLAYWRIGHT_PAGE_INIT_CALLBACK
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.notify_events import safe_url

logger = logging.getLogger(__name__)

CLOSE_WAIT = 1.0
"""Seconds each step of a page's close may take. A close that works takes milliseconds (under
100 ms on 2 busy cores); one that races a navigation never ends, so waiting longer buys nothing
(a slow close that works is only asked again: harmless). A page that reloads itself at once hung
28 of 41 closes in one crawl here: each costs its render slot this wait."""

CLOSE_REQUESTS = 2
"""How many closes that run the page's ``beforeunload`` (a path Chromium mostly completes where the
plain close hung) are asked before the context goes. Of 47 pages whose plain close hung (150
pages that reload themselves at once, Playwright alone), 33 closed on the first such request, 9
on the second, 4 on the third and 1 never; a context's close took such pages in under a second."""


class RenderedPage(Protocol):
    """What ``close_rendered_page`` uses of a Playwright ``Page``."""

    url: str
    context: Any

    def is_closed(self) -> bool: ...
    def on(self, event: str, handler: Any) -> None: ...
    async def close(self, *, run_before_unload: bool | None = None) -> None: ...


async def close_rendered_page(page: RenderedPage, wait: float = CLOSE_WAIT, requests: int = CLOSE_REQUESTS) -> str:
    """Closes ``page`` in a bounded time, whatever the page does; says how: "closed", "closed_again"
    (a later request closed it), "context_closed" or "stuck" (still open). Never raises for the page's sake (Playwright's
    errors and timeouts are the steps' outcomes; a cancellation still goes through)."""
    if page.is_closed():
        return "closed"
    closed = asyncio.Event()
    page.on("close", lambda _page: closed.set())
    with suppress(Exception):
        await asyncio.wait_for(page.close(), wait)
    if page.is_closed():
        return "closed"
    # The page's beforeunload handlers run now: a dialog they open is accepted (left unanswered,
    # Playwright dismisses it, which keeps the page open).
    page.on("dialog", _accept)
    for attempt in range(1, requests + 1):
        logger.debug("Rendered page %s did not close; asking again (%d)", safe_url(page.url), attempt)
        with suppress(Exception):
            await asyncio.wait_for(page.close(run_before_unload=True), wait)
            await asyncio.wait_for(closed.wait(), wait)
        if page.is_closed():
            return "closed_again"
    logger.warning(
        "Rendered page %s did not close after %d requests; closing its browser context (renders in flight there fail, or are tried again)",
        safe_url(page.url),
        requests + 1,
    )
    with suppress(Exception):
        await asyncio.wait_for(page.context.close(), wait * 5)
    if page.is_closed():
        return "context_closed"
    # Not seen here (the context's close took every stuck page with it, in under a second): the
    # page keeps its place among the context's render_pages until the browser goes.
    logger.error("Rendered page %s stayed open with its context closed", safe_url(page.url))
    return "stuck"


async def _accept(dialog: Any) -> None:
    with suppress(Exception):
        await dialog.accept()


class ChromiumDownloadHandler(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's handler, with a render bounded from its page's opening to its close.

    Each rendered request's page is seen as it opens (scrapy-playwright's documented
    ``playwright_page_init_callback``; a spider's own callback still runs), and the render must
    end within ``render_bound`` of it: nothing in scrapy-playwright bounds ``page.content()``,
    which runs in the page and never answers while the page's script loops (a script busy from
    just after the load event held the crawl forever). A render past its bound raises
    ``TimeoutError`` (status 930, as a navigation's timeout). The wait for a free page
    (``render_pages`` a context) is not part of it: a busy crawl's queue is no failure. Each page
    the request opened is closed by ``close_rendered_page`` as the download ends, either way.
    Linux only, as scrapy-playwright's threaded loop (Windows) is not used here."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.render_bound = render_bound(source_of(crawler).settings)

    async def download_request(self, request: Request) -> Response:
        if not request.meta.get(PLAYWRIGHT) or request.meta.get(PLAYWRIGHT_INCLUDE_PAGE):
            return await super().download_request(request)
        render = RenderWatch(self.render_bound, request.meta.get(PLAYWRIGHT_PAGE_INIT_CALLBACK))
        request.meta[PLAYWRIGHT_INCLUDE_PAGE] = True
        request.meta[PLAYWRIGHT_PAGE_INIT_CALLBACK] = render.opened
        download = asyncio.ensure_future(super().download_request(request))
        try:
            return await render.bounded(download, request.url)
        finally:
            if not download.done():  # our own download cancelled (the engine stopping)
                download.cancel()
            request.meta.pop(PLAYWRIGHT_INCLUDE_PAGE, None)
            request.meta.pop(PLAYWRIGHT_PAGE, None)  # a retry of the request opens a new page
            if render.callback is None:
                request.meta.pop(PLAYWRIGHT_PAGE_INIT_CALLBACK, None)
            else:
                request.meta[PLAYWRIGHT_PAGE_INIT_CALLBACK] = render.callback
            for page in render.pages:
                how = await close_rendered_page(page)
                self.stats.inc_value(f"searchcrawl/rendered_pages/{how}")
                if how == "closed":
                    self.stats.inc_value("playwright/page_count/closed")  # as scrapy-playwright counts its own


def render_bound(settings: SourceSettings) -> float:
    """Seconds a render may take from its page's opening: the navigation's and the selector's
    timeouts (``render_timeout`` each), the source's fixed wait, and 10 s for the rest (reading
    the page's content takes milliseconds)."""
    return 2 * settings.render_timeout + settings.render_delay_ms / 1000 + 10


class RenderWatch:
    """One request's render: the pages it opened (scrapy-playwright opens another when a page's
    target closes under it) and the deadline of the last."""

    def __init__(self, bound: float, callback: Any) -> None:
        self.bound = bound
        self.callback = callback  # the spider's own init callback, if any (a callable or its path)
        self.pages: list[Any] = []
        self.deadline: float | None = None
        self.opening = asyncio.Event()

    async def opened(self, page: Any, request: Request) -> None:
        self.pages.append(page)
        self.deadline = asyncio.get_running_loop().time() + self.bound
        self.opening.set()
        if self.callback is not None:
            await load_object(self.callback)(page, request)

    async def bounded(self, download: asyncio.Future[Response], url: str) -> Response:
        """``download``'s response, or ``TimeoutError`` once a page has been open ``bound``
        seconds (the download cancelled)."""
        loop = asyncio.get_running_loop()
        while not download.done():
            if self.deadline is None:  # waiting for a page: no bound
                opening: asyncio.Future[Any] = asyncio.ensure_future(self.opening.wait())
                try:
                    await asyncio.wait({download, opening}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    opening.cancel()
                continue
            remaining = self.deadline - loop.time()
            if remaining <= 0:
                download.cancel()
                with suppress(asyncio.CancelledError, Exception):
                    await download
                logger.debug("Render of %s past its bound of %.0f s: cancelled", safe_url(url), self.bound)
                raise TimeoutError(f"the page did not finish rendering in {self.bound:.0f} s")
            await asyncio.wait({download}, timeout=remaining)
        return download.result()
