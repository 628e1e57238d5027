"""ScopeMiddleware (a spider middleware) built alone (``build_from_crawler`` on a ``get_crawler``
crawler of a source), its ``process_spider_output`` run with ``asyncio.run`` on a page's output.

With a run started as the frontier scheduler starts it when the spider opens (``start_run`` of
``tests.components``: ``Runs.start``, ``begin_run``, and ``run_started`` with the run's
``Frontier``, which the middleware keeps), a page's
links inside the boundary go into the durable frontier (the real SQLite document table) with
their depth and persisted request data, in one batch before the page's item moves on, and are
not handed back to Scrapy; links outside are dropped and recorded with their crawler code; a
``dont_filter`` request is queued again; a render of the same page keeps the page's depth; a
source deleting orphans marks its links as linked in this run. Without a run, admitted requests
go on to Scrapy's scheduler."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.meta import ADMITTED, RENDER
from searchcrawl.crawl.middlewares.scope import ScopeMiddleware
from searchcrawl.crawl.stores import stores_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.frontier import Frontier
from tests.components import ledger_of, start_run

SOURCE = """seeds = ["http://h.test/"]
max_depth = 2
paths = { "h.test" = { exclude = ["/private/"] } }
"""
PAGE = "http://h.test/docs/index.html"


def page(url: str = PAGE, depth: int = 1) -> Response:
    return HtmlResponse(url, body=b"<html><body>page</body></html>", request=Request(url, meta={"depth": depth}))


def link(url: str, **kwargs: Any) -> Request:
    """A request a (custom) spider made itself, not through its admission: the middleware admits
    it, one level below the page."""
    return Request(url, **kwargs)


def run_output(
    middleware: ScopeMiddleware, response: Response, outputs: list[Any], each: Callable[[Any], None] | None = None
) -> list[Any]:
    """What the middleware hands on for the spider's ``outputs``; ``each`` sees every one as it comes."""

    async def spider_output() -> AsyncIterator[Any]:
        for output in outputs:
            yield output

    async def collect() -> list[Any]:
        handed_on = []
        async for output in middleware.process_spider_output(response, spider_output()):
            if each is not None:
                each(output)
            handed_on.append(output)
        return handed_on

    return asyncio.run(collect())


def queued(frontier: Frontier) -> dict[str, tuple[int, dict[str, Any]]]:
    """The run's queued URLs (leased to read them) with their depth and request data."""
    return {entry.url: (entry.depth, entry.data) for entry in frontier.lease(1000)}


@pytest.fixture
def crawler(crawler_of):  # type: ignore[no-untyped-def]
    return crawler_of()  # of SOURCE; its stores closed after the test


def row(crawler, url: str) -> Any:  # type: ignore[no-untyped-def]
    """The URL's row in the crawl's document table."""
    return stores_of(crawler).documents.get("unit", url)


@pytest.fixture
def middleware(crawler) -> ScopeMiddleware:  # type: ignore[no-untyped-def]
    return build_from_crawler(ScopeMiddleware, crawler)


def parse_feed(response: Response) -> None:  # a callback other than parse: its name is persisted
    pass


def test_a_pages_links_go_into_the_frontier_and_its_item_goes_on(crawler, middleware: ScopeMiddleware) -> None:  # type: ignore[no-untyped-def]
    _run, frontier = start_run(crawler)
    item = {"url": PAGE}
    frontier_when_the_item_came: list[dict[str, int]] = []
    handed_on = run_output(
        middleware,
        page(),
        [
            item,  # the spider may yield its document first: it waits for the links
            link("http://h.test/docs/a.html"),
            link("http://h.test/docs/b.html", meta={RENDER: "auto"}, priority=-2),
            link("http://h.test/feed.xml", callback=parse_feed),
            link("http://h.test/docs/a.html"),  # twice on the page: queued once
        ],
        each=lambda output: frontier_when_the_item_came.append(frontier.counts()),
    )
    assert handed_on == [item]  # requests are the frontier's, not Scrapy's scheduler's
    assert frontier_when_the_item_came == [{"queued": 3, "leased": 0, "done": 0}]  # links first
    assert queued(frontier) == {
        "http://h.test/docs/a.html": (2, {}),
        "http://h.test/docs/b.html": (2, {RENDER: "auto", "priority": -2}),
        "http://h.test/feed.xml": (2, {"callback": "parse_feed"}),
    }


def test_links_outside_the_boundary_are_dropped_and_recorded(crawler, middleware: ScopeMiddleware) -> None:  # type: ignore[no-untyped-def]
    _run, frontier = start_run(crawler)
    excluded = {
        "http://other.test/x.html": Status.EXCLUDED_DOMAIN,
        "http://h.test/private/pay.html": Status.EXCLUDED_PATH,
        "http://h.test/docs/search?q=1": Status.EXCLUDED_DYNAMIC,
        "ftp://h.test/docs/file.txt": Status.EXCLUDED_SCHEME,
    }
    too_deep = link("http://h.test/docs/deeper.html")  # max_depth = 2
    outputs = [link(url) for url in excluded] + [link("http://h.test/docs/ok.html")]
    assert run_output(middleware, page(), outputs) == []
    assert run_output(middleware, page(depth=2), [too_deep]) == []
    assert list(queued(frontier)) == ["http://h.test/docs/ok.html"]
    rows = {url: row(crawler, url) for url in [*excluded, too_deep.url]}
    assert {url: (found["state"], found["status"]) for url, found in rows.items()} == {
        **{url: ("excluded", int(status)) for url, status in excluded.items()},
        too_deep.url: ("excluded", int(Status.EXCLUDED_DEPTH)),
    }
    assert rows[too_deep.url]["depth"] == 3
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_domain") == 1


def test_a_dont_filter_request_is_queued_again_in_the_same_run(crawler, middleware: ScopeMiddleware) -> None:  # type: ignore[no-untyped-def]
    _run, frontier = start_run(crawler)
    url = "http://h.test/docs/a.html"
    run_output(middleware, page(), [link(url)])
    assert list(queued(frontier)) == [url]  # now leased: being fetched
    run_output(middleware, page("http://h.test/docs/other.html"), [link(url)])
    assert frontier.counts() == {"queued": 0, "leased": 1, "done": 0}  # a plain link: already in the run
    run_output(middleware, page("http://h.test/docs/other.html"), [link(url, dont_filter=True)])
    assert frontier.counts() == {"queued": 1, "leased": 0, "done": 0}  # once more in this run


def test_a_render_of_the_page_itself_keeps_the_pages_depth(crawler, middleware: ScopeMiddleware) -> None:  # type: ignore[no-untyped-def]
    """The spider asks for a browser render of an empty shell: the page's own request again,
    admitted already, at its depth (one deeper could take it past max_depth); the page itself
    made without its admission is judged at its depth too."""
    _run, frontier = start_run(crawler)
    deepest = page("http://h.test/docs/app.html", depth=2)
    again = Request(deepest.url, dont_filter=True, meta={"depth": 2, RENDER: "browser", ADMITTED: deepest.url})
    assert run_output(middleware, deepest, [again]) == []
    assert queued(frontier) == {deepest.url: (2, {RENDER: "browser"})}
    assert run_output(middleware, deepest, [link(deepest.url, dont_filter=True, meta={RENDER: "browser"})]) == []
    assert queued(frontier) == {deepest.url: (2, {RENDER: "browser"})}


def test_without_a_run_admitted_requests_go_on_to_scrapy(crawler, middleware: ScopeMiddleware) -> None:  # type: ignore[no-untyped-def]
    assert middleware.frontier is None  # no run_started
    inside, outside, item = link("http://h.test/docs/a.html"), link("http://other.test/"), {"url": PAGE}
    assert run_output(middleware, page(), [inside, item, outside]) == [inside, item]
    assert row(crawler, outside.url)["status"] == Status.EXCLUDED_DOMAIN


@pytest.mark.parametrize("batch", [1, 100])
def test_a_source_deleting_orphans_marks_its_links_as_linked(crawler_of, batch: int) -> None:  # type: ignore[no-untyped-def]
    # with outcomes in batches too: its links are queued at once, not with its outcome's batch
    crawler = crawler_of(SOURCE + 'orphans = "delete"\n', SEARCHCRAWL_OUTCOME_BATCH=batch)
    middleware = build_from_crawler(ScopeMiddleware, crawler)
    run, _frontier = start_run(crawler)
    run_output(middleware, page(), [link("http://h.test/docs/a.html"), link("http://other.test/")])
    assert row(crawler, "http://h.test/docs/a.html")["linked_run"] == run.id
    assert row(crawler, "http://other.test/")["linked_run"] is None


def test_a_request_inheriting_the_pages_meta_is_judged_as_a_link(crawler, middleware: ScopeMiddleware) -> None:  # type: ignore[no-untyped-def]
    """A custom spider's request made with the page's meta (its mark of admission, its depth) is
    judged as a link of the page, one level below it, outside the boundary or too deep."""
    response = page(depth=2)  # max_depth = 2: the page's links are too deep
    response.meta[ADMITTED] = PAGE
    outputs = [Request(url, meta=dict(response.meta)) for url in ("http://other.test/", "http://h.test/docs/b.html")]
    assert run_output(middleware, response, outputs) == []
    statuses = {url: row(crawler, url)["status"] for url in ("http://other.test/", "http://h.test/docs/b.html")}
    assert statuses == {
        "http://other.test/": int(Status.EXCLUDED_DOMAIN),
        "http://h.test/docs/b.html": int(Status.EXCLUDED_DEPTH),
    }


@pytest.mark.parametrize("with_outcomes", [True, False])
def test_batching_outcomes_a_pages_links_are_queued_in_its_outcomes_batch(crawler_of, with_outcomes) -> None:  # type: ignore[no-untyped-def]
    """Issue 94: with outcomes in batches, a page's links wait for the batch of its outcome and
    are queued in its transaction, before it (``SEARCHCRAWL_LINKS_WITH_OUTCOMES``, the default);
    turned off, in a transaction of their own at once, as before."""
    crawler = crawler_of(
        SEARCHCRAWL_OUTCOME_BATCH=100, SEARCHCRAWL_OUTCOME_INTERVAL=60, SEARCHCRAWL_LINKS_WITH_OUTCOMES=with_outcomes
    )
    middleware = build_from_crawler(ScopeMiddleware, crawler)
    _run, frontier = start_run(crawler)
    ledger = ledger_of(crawler)
    run_output(middleware, page(), [link("http://h.test/docs/a.html"), link("http://h.test/docs/b.html")])
    assert frontier.counts()["queued"] == (0 if with_outcomes else 2)
    ledger.url_outcome(PAGE, Outcome(Event.FAILED, 503, "HTTP 503"))
    assert ledger.flush() == (2 if with_outcomes else 1)  # its links and its outcome, or its outcome
    assert ledger.outcomes.batches == 1  # one transaction for both
    assert set(queued(frontier)) == {"http://h.test/docs/a.html", "http://h.test/docs/b.html"}
