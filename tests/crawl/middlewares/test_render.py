"""RenderMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a source):
which requests go through Playwright. A request marked ``searchcrawl_render = 'browser'`` gets
scrapy-playwright's meta (``playwright``, the page methods and ``goto`` arguments built from the
source's render settings); a static request, an ``auto`` one (fetched statically first) and one
already set up for Playwright are left as they are. The marks themselves come from the source
spider's ``request`` (render_js, render_rules), checked here with the spider the crawler builds.
No browser is started: nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

from scrapy import Request
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.meta import RENDER
from searchcrawl.crawl.middlewares.render import RenderMiddleware
from searchcrawl.store.frontier import Entry
from tests.components import source_crawler

URL = "http://h.test/app/page.html"
RENDERING = """seeds = ["http://h.test/"]
render_js = true
render_wait = "networkidle"
render_selector = "#content"
render_delay_ms = 250
render_timeout = 12.5
"""


def methods(request: Request) -> list[tuple[object, tuple, dict]]:
    return [(method.method, method.args, method.kwargs) for method in request.meta["playwright_page_methods"]]


def test_a_page_to_render_gets_the_playwright_meta_of_the_source(tmp_path: Path) -> None:
    middleware = build_from_crawler(RenderMiddleware, source_crawler(tmp_path, RENDERING))
    request = Request(URL, meta={RENDER: "browser", "depth": 2})
    assert middleware.process_request(request) is None  # the request goes on, to scrapy-playwright's handler
    assert request.meta["playwright"] is True
    assert methods(request) == [
        ("wait_for_selector", ("#content",), {"timeout": 12500}),
        ("wait_for_timeout", (250,), {}),
    ]
    assert request.meta["playwright_page_goto_kwargs"] == {"wait_until": "networkidle", "timeout": 12500}
    assert (request.meta[RENDER], request.meta["depth"]) == ("browser", 2)


def test_a_rendered_page_opens_in_a_context_without_service_workers(tmp_path: Path) -> None:
    """Issue 91 review: a service worker's requests do not pass scrapy-playwright's page routing,
    so the address guard never saw them (tests/e2e/test_hostile_network.py shows it in Chromium)."""
    middleware = build_from_crawler(RenderMiddleware, source_crawler(tmp_path, RENDERING))
    request = Request(URL, meta={RENDER: "browser"})
    middleware.process_request(request)
    assert request.meta["playwright_context_kwargs"] == {"service_workers": "block"}


def test_the_defaults_wait_for_load_and_nothing_else(tmp_path: Path) -> None:
    middleware = build_from_crawler(RenderMiddleware, source_crawler(tmp_path, 'seeds = ["http://h.test/"]\nrender_js = true\n'))
    request = Request(URL, meta={RENDER: "browser"})
    middleware.process_request(request)
    assert request.meta["playwright"] is True
    assert methods(request) == []
    assert request.meta["playwright_page_goto_kwargs"] == {"wait_until": "load", "timeout": 30000}


def test_only_requests_marked_browser_are_rendered(tmp_path: Path) -> None:
    middleware = build_from_crawler(RenderMiddleware, source_crawler(tmp_path, RENDERING))
    for meta in ({}, {RENDER: "auto"}, {RENDER: "static"}, {RENDER: None}):
        request = Request(URL, meta=dict(meta))
        middleware.process_request(request)
        assert request.meta == meta, meta  # static first: no Playwright meta at all


def test_a_request_already_set_up_for_playwright_is_left_as_it_is(tmp_path: Path) -> None:
    middleware = build_from_crawler(RenderMiddleware, source_crawler(tmp_path, RENDERING))
    own = {RENDER: "browser", "playwright": True, "playwright_page_methods": ["mine"]}
    request = Request(URL, meta=dict(own))
    middleware.process_request(request)
    assert request.meta == own


def test_the_source_spiders_requests_carry_the_render_mode_of_their_url(tmp_path: Path) -> None:
    """render_js and render_rules (first matching rule wins) decide the mark; the middleware
    turns only ``browser`` into Playwright meta."""
    source = """seeds = ["http://h.test/"]
render_js = false
[[render_rules]]
pattern = "/app/"
render_js = true
[[render_rules]]
pattern = "/maybe/"
render_js = "auto"
"""
    crawler = source_crawler(tmp_path, source)
    spider = crawler.spidercls.from_crawler(crawler)  # the spider as Crawler.crawl() builds it
    middleware = build_from_crawler(RenderMiddleware, crawler)
    rendered = {}
    for path in ("app/page.html", "maybe/page.html", "docs/page.html"):
        request = spider.requests(Entry(f"http://h.test/{path}", 1))  # the crawl's request factory
        middleware.process_request(request)
        rendered[path] = (request.meta.get(RENDER), request.meta.get("playwright", False))
    assert rendered == {
        "app/page.html": ("browser", True),
        "maybe/page.html": ("auto", False),  # rendered only if its static fetch is an empty shell
        "docs/page.html": (None, False),
    }
