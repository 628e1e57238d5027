"""Download handler: scrapy-playwright's, with every rendered page's close bounded.

scrapy-playwright closes a rendered page with ``await page.close()`` and no bound. Chromium can
acknowledge a close that races the commit of a navigation the page started itself (a
``<meta http-equiv="refresh">``, a script's ``location.reload()``) without ever closing the page
(microsoft/playwright#42366): the close then waits forever, and with it the download, its slot
and the crawl's end. A page that refreshes itself at once had 5 of 60 closes hang here; a
meta-refresh redirect is an ordinary page on many sites. So this handler asks scrapy-playwright
to leave each page open (``playwright_include_page``, its documented switch) and closes the page
itself, with ``close_rendered_page``: every step bounded, the last one closing the page's browser
context (scrapy-playwright makes a new one for the next page; renders in flight there are tried
again, as after a browser crash). A request whose own spider asked for the page keeps it.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import Any, Protocol

from scrapy import Request
from scrapy.http import Response
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from searchcrawl.crawl.meta import PLAYWRIGHT, PLAYWRIGHT_INCLUDE_PAGE, PLAYWRIGHT_PAGE
from searchcrawl.rules.notify_events import safe_url

logger = logging.getLogger(__name__)

CLOSE_WAIT = 2.0
"""Seconds each step of a page's close may take. A close that works takes milliseconds (under
100 ms on 2 busy cores); one that races a navigation never ends, so waiting longer buys nothing."""

CLOSE_REQUESTS = 2
"""How many closes that run the page's ``beforeunload`` (a path Chromium completes where the plain
close hung: 44 of 47 such pages closed on the first, the rest on the second or their context's
close) are asked before the context goes."""


class RenderedPage(Protocol):
    """What ``close_rendered_page`` uses of a Playwright ``Page``."""

    url: str
    context: Any

    def is_closed(self) -> bool: ...
    def on(self, event: str, handler: Any) -> None: ...
    async def close(self, *, run_before_unload: bool | None = None) -> None: ...


async def close_rendered_page(page: RenderedPage, wait: float = CLOSE_WAIT, requests: int = CLOSE_REQUESTS) -> str:
    """Closes ``page`` in a bounded time, whatever the page does; says how: "closed", "closed_again"
    (a later request closed it) or "context_closed". Never raises for the page's sake (Playwright's
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
        "Rendered page %s did not close after %d requests; closing its browser context (renders in it are tried again)",
        safe_url(page.url),
        requests + 1,
    )
    with suppress(Exception):
        await asyncio.wait_for(page.context.close(), wait * 5)
    return "context_closed"


async def _accept(dialog: Any) -> None:
    with suppress(Exception):
        await dialog.accept()


class ChromiumDownloadHandler(ScrapyPlaywrightDownloadHandler):
    """scrapy-playwright's handler; the pages it renders for the crawl are closed by
    ``close_rendered_page``, after the download ended either way."""

    async def download_request(self, request: Request) -> Response:
        if not request.meta.get(PLAYWRIGHT) or request.meta.get(PLAYWRIGHT_INCLUDE_PAGE):
            return await super().download_request(request)
        request.meta[PLAYWRIGHT_INCLUDE_PAGE] = True
        try:
            return await super().download_request(request)
        finally:
            del request.meta[PLAYWRIGHT_INCLUDE_PAGE]
            page = request.meta.pop(PLAYWRIGHT_PAGE, None)  # a retry of the request opens a new page
            if page is not None:
                self.stats.inc_value(f"searchcrawl/rendered_pages/{await close_rendered_page(page)}")
