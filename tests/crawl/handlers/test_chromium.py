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
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.handlers.chromium import ChromiumDownloadHandler, close_rendered_page, render_bound


class Context:
    """Closing it closes its pages, unless ``keeps`` (a context whose close does not take them)."""

    def __init__(self, keeps: bool = False) -> None:
        self.closed = False
        self.keeps = keeps
        self.pages: list[Page] = []

    async def close(self) -> None:
        self.closed = True
        for page in self.pages:
            page.closed = page.closed or not self.keeps


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
        self.context.pages.append(self)

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


def test_a_page_its_contexts_close_leaves_open_is_said_stuck(caplog: pytest.LogCaptureFixture) -> None:
    page = Page(closes_on=0)
    page.context.keeps = True
    assert close(page) == "stuck"
    assert "stayed open with its context closed" in caplog.text


def test_a_close_that_fails_on_a_page_gone_meanwhile_is_done() -> None:
    class Gone(Page):
        async def close(self, *, run_before_unload: bool | None = None) -> None:
            self.closed = True
            raise RuntimeError("Target page, context or browser has been closed")

    assert close(Gone(closes_on=1)) == "closed"


class Stand:
    """scrapy-playwright's download as the handler sees it: waits ``queued`` seconds for a free
    page, opens one, calls the request's init callback (as scrapy-playwright does, through
    load_object), puts the page in the meta when asked to include it, renders ``render``
    seconds, fails when the request says so."""

    def __init__(self) -> None:
        self.pages: list[Page] = []
        self.queued = 0.0
        self.render = 0.0

    async def download_request(self, handler: Any, request: Request) -> HtmlResponse:
        if request.meta.get("playwright"):
            await asyncio.sleep(self.queued)
            page = Page(closes_on=1)
            self.pages.append(page)
            if callback := request.meta.get("playwright_page_init_callback"):
                await load_object(callback)(page, request)
            if request.meta.get("playwright_include_page"):
                request.meta["playwright_page"] = page
            await asyncio.sleep(self.render)
            if request.meta.get("fail"):
                raise RuntimeError("Page.content: the page is navigating")
        return HtmlResponse(request.url, body=b"<html></html>", request=request)


@pytest.fixture
def stand(monkeypatch: pytest.MonkeyPatch) -> Stand:
    stand = Stand()

    def init(self: Any, crawler: Any) -> None:  # the parent's starts Playwright's loop
        self.stats = crawler.stats

    async def download_request(self: Any, request: Request) -> HtmlResponse:
        return await stand.download_request(self, request)

    monkeypatch.setattr(ScrapyPlaywrightDownloadHandler, "__init__", init)
    monkeypatch.setattr(ScrapyPlaywrightDownloadHandler, "download_request", download_request)
    return stand


def handler_for() -> ChromiumDownloadHandler:
    """The handler over the stand-in, its bound a default source's (no source file is read)."""
    crawler = get_crawler()
    crawler.stats.open_spider()
    handler = ChromiumDownloadHandler.__new__(ChromiumDownloadHandler)
    ScrapyPlaywrightDownloadHandler.__init__(handler, crawler)
    handler.render_bound = render_bound(SourceSettings(render_js=True))
    return handler


def render(handler: ChromiumDownloadHandler, request: Request) -> HtmlResponse:
    return asyncio.run(handler.download_request(request))


def test_the_handler_closes_each_page_it_rendered_and_hands_none_on(stand: Stand) -> None:
    handler = handler_for()
    request = Request("http://127.0.0.1:1/a", meta={"playwright": True})
    response = render(handler, request)
    assert not {"playwright_page", "playwright_include_page", "playwright_page_init_callback"} & set(response.meta)
    assert [page.closed for page in stand.pages] == [True]
    assert handler.stats.get_value("searchcrawl/rendered_pages/closed") == 1
    assert handler.stats.get_value("playwright/page_count/closed") == 1


def test_a_failed_render_closes_its_page_too(stand: Stand) -> None:
    request = Request("http://127.0.0.1:1/a", meta={"playwright": True, "fail": True})
    with pytest.raises(RuntimeError):
        render(handler_for(), request)
    assert [page.closed for page in stand.pages] == [True]
    assert "playwright_page" not in request.meta  # a retry of the request renders in a new page


def test_a_render_past_its_bound_times_out_and_its_page_is_closed(stand: Stand) -> None:
    """A page whose content never comes (its script loops): bounded from the page's opening."""
    handler = handler_for()
    handler.render_bound = 0.2
    stand.render = 3600
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        render(handler, Request("http://127.0.0.1:1/a", meta={"playwright": True}))
    assert time.monotonic() - started < 5
    assert [page.closed for page in stand.pages] == [True]


def test_the_wait_for_a_free_page_is_not_part_of_the_bound(stand: Stand) -> None:
    handler = handler_for()
    handler.render_bound = 0.2
    stand.queued = 0.5
    assert render(handler, Request("http://127.0.0.1:1/a", meta={"playwright": True})).status == 200


def test_the_bound_follows_the_source() -> None:
    assert render_bound(SourceSettings(render_js=True)) == 70  # 30 s navigation, 30 s selector, 10 s
    assert render_bound(SourceSettings(render_js=True, render_timeout=3, render_delay_ms=2000)) == 18


def test_a_spiders_own_init_callback_still_runs_and_stays_its_own(stand: Stand) -> None:
    seen: list[Any] = []

    async def own(page: Any, request: Request) -> None:
        seen.append(page)

    request = Request("http://127.0.0.1:1/a", meta={"playwright": True, "playwright_page_init_callback": own})
    render(handler_for(), request)
    assert seen == stand.pages and request.meta["playwright_page_init_callback"] is own


def test_a_page_the_spider_asked_for_is_its_own(stand: Stand) -> None:
    request = Request("http://127.0.0.1:1/a", meta={"playwright": True, "playwright_include_page": True})
    response = render(handler_for(), request)
    assert response.meta["playwright_page"].closed is False


def test_a_request_not_rendered_is_not_touched(stand: Stand) -> None:
    request = Request("http://127.0.0.1:1/a")
    render(handler_for(), request)
    assert stand.pages == [] and "playwright_include_page" not in request.meta
