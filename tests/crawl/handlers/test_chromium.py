"""The rendered pages' close (crawl/handlers/chromium.py) against pages that act as Chromium's can: a
close that never ends, a close that needs a second request, a page that is already gone. The same
against real Chromium: tests/e2e/test_rendering.py (pages that refresh themselves)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from searchcrawl.crawl.handlers.chromium import ChromiumDownloadHandler, close_rendered_page


class Context:
    def __init__(self) -> None:
        self.closed = False

    async def close(self) -> None:
        self.closed = True


class Page:
    """Closes on the ``closes_on``-th request to close (never if 0), as Chromium does where a
    close races the page's own navigation."""

    url = "http://127.0.0.1:1/secret/page.html?token=abc"

    def __init__(self, closes_on: int, closed: bool = False) -> None:
        self.closes_on = closes_on
        self.requests: list[bool | None] = []
        self.handlers: dict[str, list[Any]] = {}
        self.closed = closed
        self.context = Context()

    def is_closed(self) -> bool:
        return self.closed

    def on(self, event: str, handler: Any) -> None:
        self.handlers.setdefault(event, []).append(handler)

    async def close(self, *, run_before_unload: bool | None = None) -> None:
        self.requests.append(run_before_unload)
        if len(self.requests) == self.closes_on:
            self.closed = True
            for handler in self.handlers.get("close", []):
                handler(self)
            return
        if not run_before_unload:
            await asyncio.Event().wait()  # acknowledged, never done


def close(page: Page, **kwargs: Any) -> str:
    return asyncio.run(close_rendered_page(page, wait=0.05, **kwargs))


def test_a_page_that_closes_is_closed_once() -> None:
    page = Page(closes_on=1)
    assert close(page) == "closed"
    assert page.requests == [None]


def test_a_closed_page_is_left_alone() -> None:
    page = Page(closes_on=1, closed=True)
    assert close(page) == "closed"
    assert page.requests == []


def test_a_close_that_never_ends_is_asked_again_running_beforeunload_and_its_dialog_accepted() -> None:
    page = Page(closes_on=2)
    assert close(page) == "closed_again"
    assert page.requests == [None, True]
    assert page.handlers.get("dialog")  # a beforeunload dialog would keep the page open
    assert not page.context.closed


def test_a_page_that_never_closes_takes_its_context_down_in_bounded_time(caplog: pytest.LogCaptureFixture) -> None:
    page = Page(closes_on=0)
    started = time.monotonic()
    assert close(page, requests=2) == "context_closed"
    assert time.monotonic() - started < 5  # 1 + 2 x 2 steps of 0.05 s, and the context's close
    assert page.requests == [None, True, True]
    assert page.context.closed
    assert "token=abc" not in caplog.text and "/secret/page.html" in caplog.text


def test_a_close_that_fails_on_a_page_gone_meanwhile_is_done() -> None:
    class Gone(Page):
        async def close(self, *, run_before_unload: bool | None = None) -> None:
            self.closed = True
            raise RuntimeError("Target page, context or browser has been closed")

    assert close(Gone(closes_on=1)) == "closed"


@pytest.fixture
def handler(monkeypatch: pytest.MonkeyPatch) -> ChromiumDownloadHandler:
    """The handler over a stand-in of scrapy-playwright's download: a page in the meta when asked
    to include it, as scrapy-playwright does (no browser starts)."""
    pages: list[Page] = []

    async def download_request(self: Any, request: Request) -> HtmlResponse:
        if request.meta.get("playwright"):
            page = Page(closes_on=1)
            pages.append(page)
            if request.meta.get("playwright_include_page"):
                request.meta["playwright_page"] = page
            if request.meta.get("fail"):
                raise TimeoutError("render timed out")
        return HtmlResponse(request.url, body=b"<html></html>", request=request)

    def init(self: Any, crawler: Any) -> None:  # the parent's starts Playwright's loop
        self.stats = crawler.stats

    monkeypatch.setattr(ScrapyPlaywrightDownloadHandler, "__init__", init)
    monkeypatch.setattr(ScrapyPlaywrightDownloadHandler, "download_request", download_request)
    crawler = get_crawler()
    crawler.stats.open_spider()
    rendering = ChromiumDownloadHandler(crawler)
    rendering.opened = pages  # type: ignore[attr-defined]
    return rendering


def test_the_handler_closes_each_page_it_rendered_and_hands_none_on(handler: ChromiumDownloadHandler) -> None:
    request = Request("http://127.0.0.1:1/a", meta={"playwright": True})
    response = asyncio.run(handler.download_request(request))
    assert "playwright_page" not in response.meta and "playwright_include_page" not in response.meta
    assert [page.closed for page in handler.opened] == [True]  # type: ignore[attr-defined]
    assert handler.stats.get_value("searchcrawl/rendered_pages/closed") == 1


def test_a_failed_render_closes_its_page_too(handler: ChromiumDownloadHandler) -> None:
    request = Request("http://127.0.0.1:1/a", meta={"playwright": True, "fail": True})
    with pytest.raises(TimeoutError):
        asyncio.run(handler.download_request(request))
    assert [page.closed for page in handler.opened] == [True]  # type: ignore[attr-defined]
    assert "playwright_page" not in request.meta  # a retry of the request renders in a new page


def test_a_page_the_spider_asked_for_is_its_own(handler: ChromiumDownloadHandler) -> None:
    request = Request("http://127.0.0.1:1/a", meta={"playwright": True, "playwright_include_page": True})
    response = asyncio.run(handler.download_request(request))
    assert response.meta["playwright_page"].closed is False


def test_a_request_not_rendered_is_not_touched(handler: ChromiumDownloadHandler) -> None:
    request = Request("http://127.0.0.1:1/a")
    asyncio.run(handler.download_request(request))
    assert handler.opened == [] and "playwright_include_page" not in request.meta  # type: ignore[attr-defined]
