"""RedirectPolicyMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source), fed Scrapy ``Request``/``HtmlResponse`` objects; its coroutine ``process_response`` runs
with ``asyncio.run`` (it awaits only ``asyncio.to_thread``).

What it checks: only http(s) targets are followed (file:, ftp:, data: refused with 900); Scrapy's
own safety rules still hold (Cookie/Authorization dropped on a change of host or scheme, a 303
or a 301/302 after POST becomes a GET without Content-* headers); the policy's outcome of a
followed redirect (``url_outcome`` signal: permanent = GONE "moved to", temporary = REDIRECTED
with its target), recorded by the ledger writer in the real document table; the boundary of
the target (a permanent redirect out is refused as GONE and its target gets the boundary's row,
a temporary one is let out once, but never to an excluded port); loops and the chain bound (940).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import LEAVES_BOUNDARY
from searchcrawl.crawl.middlewares.boundary_check import BoundaryMiddleware
from searchcrawl.crawl.middlewares.redirect import RedirectPolicyMiddleware
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.crawl.stores import stores_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status

SOURCE = """seeds = ["http://h.test/"]
domains = { include = ["h.test", "other.test"] }
ports = { "*" = { include = [80, 443] } }
paths = { "h.test" = { exclude = ["/private/"] } }
"""
ORIGIN = "http://h.test/a.html"


@pytest.fixture
def crawler(crawler_of):  # type: ignore[no-untyped-def]
    return crawler_of(REDIRECT_MAX_TIMES=3)  # of SOURCE; its stores closed after the test


@pytest.fixture
def middleware(crawler) -> RedirectPolicyMiddleware:  # type: ignore[no-untyped-def]
    return build_from_crawler(RedirectPolicyMiddleware, crawler)


@pytest.fixture
def outcomes(crawler) -> Iterator[list[tuple[str, Outcome]]]:  # type: ignore[no-untyped-def]
    """What the middleware reports through the ``url_outcome`` signal, as (url, outcome)."""
    received: list[tuple[str, Outcome]] = []

    def receiver(url: str, outcome: Outcome) -> None:
        received.append((url, outcome))

    crawler.signals.connect(receiver, signal=url_outcome)
    yield received  # the receiver lives as long as the test: signal receivers are weak references
    crawler.signals.disconnect(receiver, signal=url_outcome)


def redirect(status: int, location: str, request: Request | None = None) -> tuple[Request, Response]:
    """A request (by default: ORIGIN, found one link from a seed) and its ``status`` answer to ``location``."""
    request = request or Request(ORIGIN, meta={"depth": 1})
    return request, HtmlResponse(request.url, status=status, headers={"Location": location}, body=b"", request=request)


def follow(middleware: RedirectPolicyMiddleware, request: Request, response: Response) -> Request | Response:
    return asyncio.run(middleware.process_response(request, response))


def row(crawler, url: str):  # type: ignore[no-untyped-def]
    return stores_of(crawler).documents.get("unit", url)


# --- schemes ------------------------------------------------------------------------------------


def test_a_redirect_to_anything_but_http_is_refused(middleware: RedirectPolicyMiddleware, outcomes: list) -> None:
    for status, location, scheme in [
        (302, "file:///etc/passwd", "file"),
        (301, "file:///etc/passwd", "file"),
        (307, "ftp://h.test/etc/passwd", "ftp"),
        (303, "data:text/html,<p>canary</p>", "data"),
        (308, "gopher://h.test/", "gopher"),
    ]:
        with pytest.raises(RequestRefused) as refused:
            follow(middleware, *redirect(status, location))
        assert refused.value.status == Status.EXCLUDED_SCHEME, location
        assert refused.value.outcome.event == Event.EXCLUDED
        assert refused.value.reason == f"{status} to a {scheme}: URL, never fetched"
    assert outcomes == []


def test_dont_redirect_and_other_answers_reach_the_spider(middleware: RedirectPolicyMiddleware, outcomes: list) -> None:
    request = Request(ORIGIN, meta={"dont_redirect": True})
    response = HtmlResponse(ORIGIN, status=302, headers={"Location": "file:///etc/passwd"}, request=request)
    assert follow(middleware, request, response) is response
    for answer in (
        HtmlResponse(ORIGIN, status=200, body=b"<html></html>", request=Request(ORIGIN)),
        HtmlResponse(ORIGIN, status=302, request=Request(ORIGIN)),  # no Location
        HtmlResponse(ORIGIN, status=304, headers={"Location": "/b.html"}, request=Request(ORIGIN)),
    ):
        assert follow(middleware, answer.request, answer) is answer
    assert outcomes == []


# --- Scrapy's safety rules, kept ----------------------------------------------------------------


def test_credentials_do_not_follow_a_redirect_to_another_host_or_scheme(middleware: RedirectPolicyMiddleware) -> None:
    for origin, location, kept in [
        ("http://h.test/a.html", "/b.html", {"Cookie", "Authorization"}),  # same site
        ("http://h.test/a.html", "http://other.test/b.html", set()),  # another host
        ("http://h.test/a.html", "https://h.test/b.html", {"Cookie"}),  # to https: no Authorization
        ("https://h.test/a.html", "http://h.test/b.html", set()),  # to plain http: neither
    ]:
        request = Request(origin, headers={"Cookie": "session=1", "Authorization": "Basic dTpw"}, meta={"depth": 1})
        redirected = follow(middleware, *redirect(302, location, request))
        assert isinstance(redirected, Request)
        assert {name for name in ("Cookie", "Authorization") if name in redirected.headers} == kept, (origin, location)


def post(url: str = ORIGIN) -> Request:
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "Content-Encoding": "identity",
        "Content-Language": "en",
        "Content-Location": "/form",
        "X-Kept": "1",
    }
    return Request(url, method="POST", body=b"q=1", headers=headers, meta={"depth": 1})


def test_a_303_or_a_301_302_after_post_becomes_a_get_without_content_headers(middleware: RedirectPolicyMiddleware) -> None:
    for status in (301, 302, 303):
        redirected = follow(middleware, *redirect(status, "/result.html", post(f"http://h.test/form{status}")))
        assert isinstance(redirected, Request)
        assert (redirected.method, redirected.body, redirected.url) == ("GET", b"", "http://h.test/result.html"), status
        assert not [name for name in redirected.headers if name.lower().startswith(b"content-")], status
        assert redirected.headers.get("X-Kept") == b"1"


def test_a_307_after_post_stays_a_post(middleware: RedirectPolicyMiddleware) -> None:
    redirected = follow(middleware, *redirect(307, "/result.html", post()))
    assert isinstance(redirected, Request)
    assert (redirected.method, redirected.body) == ("POST", b"q=1")
    assert redirected.headers.get("Content-Type") == b"application/x-www-form-urlencoded"


# --- the policy's outcomes ----------------------------------------------------------------------


def test_a_permanent_redirect_inside_the_boundary_is_followed_and_the_url_moved(
    crawler, middleware: RedirectPolicyMiddleware, outcomes: list
) -> None:  # type: ignore[no-untyped-def]
    target = "http://h.test/docs/new.html"
    for status in (301, 308):
        origin = f"http://h.test/old{status}.html"
        redirected = follow(middleware, *redirect(status, "/docs/new.html", Request(origin, meta={"depth": 1})))
        assert isinstance(redirected, Request)
        assert redirected.url == target
        assert redirected.meta["redirect_urls"] == [origin] and redirected.meta["redirect_reasons"] == [status]
        assert redirected.meta[LEAVES_BOUNDARY] is None
        assert outcomes == [(origin, Outcome(Event.GONE, status, f"moved to {target}", 1))]
        recorded = row(crawler, origin)  # the ledger writer recorded it: the URL leaves the index
        assert (recorded["state"], recorded["status"], recorded["reason"]) == ("fetched", status, f"moved to {target}")
        outcomes.clear()


def test_a_temporary_redirect_is_followed_and_the_url_keeps_its_target(
    crawler, middleware: RedirectPolicyMiddleware, outcomes: list
) -> None:  # type: ignore[no-untyped-def]
    target = "http://other.test/landing.html"
    for status in (302, 303, 307):
        origin = f"http://h.test/go{status}"
        redirected = follow(middleware, *redirect(status, target, Request(origin, meta={"depth": 1})))
        assert isinstance(redirected, Request) and redirected.url == target
        assert redirected.meta[LEAVES_BOUNDARY] is None  # other.test is inside the boundary
        expected = Outcome(Event.REDIRECTED, status, f"redirected to {target}", 1, columns={"target": target})
        assert outcomes == [(origin, expected)]
        recorded = row(crawler, origin)
        assert (recorded["state"], recorded["status"], recorded["target"]) == ("fetched", status, target)
        outcomes.clear()


def test_a_temporary_redirect_to_a_login_page_is_a_soft_error(middleware: RedirectPolicyMiddleware, outcomes: list) -> None:
    for status in (302, 303, 307):
        with pytest.raises(RequestRefused) as refused:
            follow(middleware, *redirect(status, "http://h.test/sso/login?next=a"))
        # the source signs in nowhere: the page went private, and counts toward max_failures
        assert refused.value.outcome == Outcome(
            Event.FAILED, Status.SOFT_ERROR, "a login page: redirected to http://h.test/sso/login?next=a", counted=True
        )
    assert outcomes == []


def test_a_page_moved_for_good_to_a_login_path_moved(crawler, middleware: RedirectPolicyMiddleware, outcomes: list) -> None:  # type: ignore[no-untyped-def]
    """A help page renamed (301 to /help/sign-in) moved: a login wall answers a lost session, for
    now, never with a permanent redirect (a browser would keep it). Taken for a login wall, the
    old URL kept its old copy (928 in a session is never counted), and its new one was not crawled."""
    for status in (301, 308):
        origin = f"http://h.test/help/signing-in-{status}"
        redirected = follow(middleware, *redirect(status, "/help/sign-in", Request(origin, meta={"depth": 1})))
        assert isinstance(redirected, Request) and redirected.url == "http://h.test/help/sign-in"
        assert outcomes == [(origin, Outcome(Event.GONE, status, "moved to http://h.test/help/sign-in", 1))]
        outcomes.clear()


def test_the_target_is_resolved_and_canonical(middleware: RedirectPolicyMiddleware) -> None:
    redirected = follow(middleware, *redirect(302, "../docs/./page.html#part"))
    assert isinstance(redirected, Request)
    assert redirected.url == "http://h.test/docs/page.html"


# --- the boundary of the target -----------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 308])
def test_a_permanent_redirect_out_of_the_boundary_is_not_followed(
    crawler, middleware: RedirectPolicyMiddleware, outcomes: list, status: int
) -> None:  # type: ignore[no-untyped-def]
    for target, target_status in [
        ("http://third.test/new.html", Status.EXCLUDED_DOMAIN),
        ("http://h.test/private/new.html", Status.EXCLUDED_PATH),
    ]:
        with pytest.raises(RequestRefused) as refused:
            follow(middleware, *redirect(status, target))
        assert refused.value.status == status  # the old URL keeps its redirect status: it moved ...
        assert refused.value.outcome.event == Event.GONE  # ... and leaves the index
        assert f"{status} to {target}, outside the boundary" in refused.value.reason
        recorded = row(crawler, target)  # the target has its row, with the rule that excludes it
        assert (recorded["state"], recorded["status"]) == ("excluded", int(target_status))
    assert outcomes == []  # the refusal carries the outcome


def test_a_temporary_redirect_out_of_the_boundary_is_let_out_once(
    crawler, middleware: RedirectPolicyMiddleware, outcomes: list
) -> None:  # type: ignore[no-untyped-def]
    boundary = build_from_crawler(BoundaryMiddleware, crawler)  # the last check before the network
    for status in (302, 303, 307):
        target = f"http://third.test/landing{status}.html"
        redirected = follow(middleware, *redirect(status, target))
        assert isinstance(redirected, Request) and redirected.url == target
        assert redirected.meta[LEAVES_BOUNDARY] == target
        assert outcomes[-1][1].event == Event.REDIRECTED
        assert boundary.process_request(redirected) is None  # exactly that request goes out
        with pytest.raises(RequestRefused):
            boundary.process_request(redirected.replace(url="http://third.test/other.html"))


def test_a_redirect_to_an_excluded_port_is_refused_whatever_its_status(
    middleware: RedirectPolicyMiddleware, outcomes: list
) -> None:
    for status in (301, 302, 303, 307, 308):
        with pytest.raises(RequestRefused) as refused:
            follow(middleware, *redirect(status, "http://other.test:8080/admin"))
        if status in (301, 308):  # moved out of the boundary
            assert (refused.value.status, refused.value.outcome.event) == (status, Event.GONE)
        else:  # temporary redirects may leave the boundary, never to a port the rules exclude
            assert (refused.value.status, refused.value.outcome.event) == (Status.EXCLUDED_PORT, Event.EXCLUDED)
    assert outcomes == []


def test_a_redirect_to_a_url_too_long_is_refused(middleware: RedirectPolicyMiddleware) -> None:
    with pytest.raises(RequestRefused) as refused:
        follow(middleware, *redirect(302, "/" + "a" * 3000))
    assert refused.value.status == Status.URL_TOO_LONG


# --- loops and chains ---------------------------------------------------------------------------


def test_a_redirect_loop_is_refused(middleware: RedirectPolicyMiddleware, outcomes: list) -> None:
    first = follow(middleware, *redirect(302, "/loop2"))
    assert isinstance(first, Request) and first.url == "http://h.test/loop2"
    with pytest.raises(RequestRefused) as refused:
        follow(middleware, *redirect(302, ORIGIN, first))
    assert refused.value.status == Status.REDIRECT_LOOP
    assert refused.value.reason == f"redirect loop back to {ORIGIN}"
    assert [url for url, _outcome in outcomes] == [ORIGIN]


def test_a_chain_longer_than_redirect_max_times_is_refused(middleware: RedirectPolicyMiddleware) -> None:
    request = Request(ORIGIN, meta={"depth": 1})
    for hop in range(3):  # REDIRECT_MAX_TIMES=3
        request = follow(middleware, *redirect(302, f"/hop{hop}", request))  # type: ignore[assignment]
        assert isinstance(request, Request)
    assert request.meta["redirect_times"] == 3
    with pytest.raises(RequestRefused) as refused:
        follow(middleware, *redirect(302, "/hop3", request))
    assert refused.value.status == Status.REDIRECT_LOOP
    assert refused.value.reason == "more than 3 redirects in a row"


def test_a_redirect_to_a_url_that_cannot_be_read_gets_a_status_of_its_own(
    middleware: RedirectPolicyMiddleware, outcomes: list
) -> None:
    """w3lib raised out of Scrapy's middleware for these (a hostile review found it): the URL got
    a connection failure's status, as if the site were down."""
    for location in ("http://h.test:80:1/", "http://[::1/"):
        with pytest.raises(RequestRefused) as refused:
            follow(middleware, *redirect(302, location))
        assert refused.value.status == Status.REDIRECT_UNREADABLE and int(refused.value.status) == 943
        assert refused.value.reason.startswith("302 to a URL that cannot be read (")
    assert outcomes == []


def test_only_the_last_step_of_a_chain_may_leave_the_boundary(middleware: RedirectPolicyMiddleware) -> None:
    """A hostile review: third.test -> 302 -> fourth.test was followed too."""
    first = follow(middleware, *redirect(302, "http://third.test/a.html"))
    assert isinstance(first, Request) and first.meta[LEAVES_BOUNDARY] == "http://third.test/a.html"
    with pytest.raises(RequestRefused) as refused:
        follow(middleware, *redirect(302, "http://fourth.test/b.html", first))
    assert refused.value.status == Status.EXCLUDED_DOMAIN
    assert "a second step outside the boundary" in refused.value.reason
    back_inside = follow(middleware, *redirect(302, "http://h.test/c.html", first))
    assert isinstance(back_inside, Request) and back_inside.meta[LEAVES_BOUNDARY] is None
