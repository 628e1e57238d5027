"""BoundaryMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a source):
a request outside the source's boundary is refused with the boundary's crawler code, and the
refused URL gets its row in the (real, SQLite) document table; robots.txt fetches and a
temporary redirect's target that the redirect policy let out pass."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import ADMITTED, LEAVES_BOUNDARY, ROBOTS_REQUEST
from searchcrawl.crawl.middlewares.boundary_check import BoundaryMiddleware
from searchcrawl.crawl.requests import admitted
from searchcrawl.crawl.stores import stores_of
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.status_codes import Status

SOURCE = """seeds = ["http://h.test/docs/"]
max_depth = 2
paths = { "h.test" = { exclude = ["/docs/private/"] } }
patterns = { exclude_glob = ["*.zip"] }
"""


@pytest.fixture
def crawler(crawler_of):  # type: ignore[no-untyped-def]
    return crawler_of(SEARCHCRAWL_MAX_URL_LENGTH=200)  # of SOURCE; its stores closed after the test


@pytest.fixture
def middleware(crawler) -> BoundaryMiddleware:  # type: ignore[no-untyped-def]
    return build_from_crawler(BoundaryMiddleware, crawler)


@pytest.mark.parametrize(
    "url",
    ["http://h.test/docs/", "http://h.test/docs/a.html", "http://h.test/elsewhere/page.html", "http://H.TEST:80/docs/b.html"],
)
def test_a_request_inside_the_boundary_passes(middleware: BoundaryMiddleware, url: str) -> None:
    request = Request(url, meta={"depth": 1})
    before = (request.url, dict(request.meta), request.headers.to_unicode_dict())
    assert middleware.process_request(request) is None
    assert admitted(request)  # so that a retry of it is not admitted again
    meta = {key: value for key, value in request.meta.items() if key != ADMITTED}
    assert (request.url, meta, request.headers.to_unicode_dict()) == before  # nothing else changes


@pytest.mark.parametrize(
    ("url", "depth", "status"),
    [
        ("ftp://h.test/docs/file.txt", 0, Status.EXCLUDED_SCHEME),
        ("http://other.test/docs/", 0, Status.EXCLUDED_DOMAIN),
        ("http://h.test:8080/docs/", 0, Status.EXCLUDED_PORT),
        ("https://h.test/docs/", 0, Status.EXCLUDED_PORT),  # another port of the seed host
        ("http://h.test/docs/private/salaries.html", 0, Status.EXCLUDED_PATH),
        ("http://h.test/docs/archive.zip", 0, Status.EXCLUDED_PATTERN),
        ("http://h.test/docs/deep.html", 3, Status.EXCLUDED_DEPTH),
        ("http://h.test/docs/search?q=x", 0, Status.EXCLUDED_DYNAMIC),
        ("http://h.test/docs/" + "a" * 300, 0, Status.URL_TOO_LONG),
    ],
)
def test_a_request_outside_the_boundary_is_refused_with_the_rules_code(
    crawler, middleware: BoundaryMiddleware, url: str, depth: int, status: Status
) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RequestRefused) as refused:
        middleware.process_request(Request(url, meta={"depth": depth}))
    assert isinstance(refused.value, IgnoreRequest)  # Scrapy treats it as any refusal
    assert refused.value.status == status
    assert refused.value.reason.startswith("outside the boundary (")
    assert (refused.value.outcome.event, refused.value.outcome.status) == (Event.EXCLUDED, int(status))
    # the refused URL has its row already: the exclusions were flushed to the document table
    row = stores_of(crawler).documents.get("unit", url)
    assert row is not None
    assert (row["state"], row["status"], row["depth"]) == ("excluded", int(status), depth)
    assert row["reason"] and row["reason"] in refused.value.reason
    assert crawler.stats.get_value(f"searchcrawl/excluded/{status.name.lower()}") == 1


def test_the_depth_defaults_to_a_seeds(middleware: BoundaryMiddleware) -> None:
    """A request without ``depth`` meta (a seed) is judged at depth 0."""
    assert middleware.process_request(Request("http://h.test/docs/")) is None


def test_a_robots_txt_fetch_passes_whatever_its_site(middleware: BoundaryMiddleware) -> None:
    request = Request("http://other.test/robots.txt", meta={ROBOTS_REQUEST: True})
    assert middleware.process_request(request) is None


def test_a_temporary_redirects_target_passes_once_let_out(middleware: BoundaryMiddleware) -> None:
    """The redirect policy marks the one URL it lets out of the boundary; only that URL passes."""
    target = "http://other.test/landing.html"
    assert middleware.process_request(Request(target, meta={LEAVES_BOUNDARY: target, "depth": 1})) is None
    with pytest.raises(RequestRefused) as refused:
        middleware.process_request(Request(target, meta={LEAVES_BOUNDARY: "http://other.test/else.html", "depth": 1}))
    assert refused.value.status == Status.EXCLUDED_DOMAIN
    with pytest.raises(RequestRefused):
        middleware.process_request(Request(target, meta={LEAVES_BOUNDARY: None, "depth": 1}))


def test_a_url_refused_twice_gets_one_row_and_two_counts(crawler, middleware: BoundaryMiddleware) -> None:  # type: ignore[no-untyped-def]
    url = "http://other.test/x.html"
    for _ in range(2):
        with pytest.raises(RequestRefused):
            middleware.process_request(Request(url))
    assert stores_of(crawler).documents.count_by("unit", "status") == {int(Status.EXCLUDED_DOMAIN): 1}
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_domain") == 2


def test_a_redirect_inheriting_an_admitted_requests_meta_is_judged_again(crawler, middleware: BoundaryMiddleware) -> None:  # type: ignore[no-untyped-def]
    """Scrapy's RedirectMiddleware copies the meta of the request it redirects, the mark of its
    admission too: the target is judged as what it is, another URL; a retry (a copy of the same
    URL) is not judged again."""
    request = Request("http://h.test/docs/a.html", meta={"depth": 1})
    assert middleware.process_request(request) is None and admitted(request)
    assert middleware.process_request(request.copy()) is None  # a retry: admitted as it is
    redirects = build_from_crawler(RedirectMiddleware, crawler)
    for target, status in [
        ("http://other.test/docs/a.html", Status.EXCLUDED_DOMAIN),
        ("https://h.test/docs/a.html", Status.EXCLUDED_PORT),
        ("http://h.test/docs/private/a.html", Status.EXCLUDED_PATH),
    ]:
        response = HtmlResponse(request.url, status=301, headers={"Location": target}, request=request)
        redirected = redirects.process_response(request, response)
        assert isinstance(redirected, Request) and redirected.url == target
        assert redirected.meta[ADMITTED] == request.url  # inherited, for another URL
        with pytest.raises(RequestRefused) as refused:
            middleware.process_request(redirected)
        assert refused.value.status == status
