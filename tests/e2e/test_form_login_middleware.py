"""FormLoginMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a source
with a form login), logging in to a login-form site of the tests' own on 127.0.0.1 through a
real, unstarted engine (as tests/e2e/test_robots.py does: ``download_async`` only,
every downloader middleware of the project but the one under test).

What it checks: the first page request waits for the login and carries its session number; the
cookie jar is the login's for its origin and the origin's own elsewhere; requests that find their
session expired together make one login, and one of an older session none; a page found expired again
proves the next login (fetched first in the new session) and is sent again, and a page that
expires alone, its proof expired while a page proved before is served, is 936 (not counted, no
failure); logins after sessions that served no page past SEARCHCRAWL_AUTH_LOGIN_LIMIT give the origin up;
while a login runs the gate lets no page request out, and the one it held is sent again after
it; the login page is never a page (903), nor is it indexed through another name of its server
(936), while another server's sign-in box is a page; a form that sends elsewhere, or in its URL,
is never sent (the password reaches no one); failed logins in a row give the origin up; a source
with any other ``[[auth]]`` table gets a cookie jar per origin too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from ipaddress import IPv4Address, ip_address
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse
from scrapy.utils.misc import build_from_crawler

from searchcrawl import settings as project_settings
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import COOKIEJAR, LOGIN_RETRIED, LOGIN_SESSION, ROBOTS_REQUEST
from searchcrawl.crawl.middlewares.form_login import FormLoginGateMiddleware, FormLoginMiddleware, SessionHeld
from searchcrawl.crawl.middlewares.site_auth import SiteAuthError
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.status_codes import Status
from tests.components import run_with_engine, source_crawler
from tests.e2e.test_form_login import LOGIN_FORM, FormSite

PASSWORD = "pw-unit-Vx3"  # noqa: S105 - the test's own secret
MIDDLEWARE = f"{FormLoginMiddleware.__module__}.{FormLoginMiddleware.__qualname__}"
ENGINE_SETTINGS: dict[str, Any] = {
    "SCHEDULER": "scrapy.core.scheduler.Scheduler",
    "ITEM_PIPELINES": {},
    "SEARCHCRAWL_PROGRESS_INTERVAL": 0,
    "MEMUSAGE_ENABLED": False,
    "DOWNLOADER_MIDDLEWARES": {**project_settings.DOWNLOADER_MIDDLEWARES, MIDDLEWARE: None},
}


@pytest.fixture
def site():
    started = FormSite({"/a.html": "<html><body>a</body></html>"}, pages_per_session=100, accept=PASSWORD)
    yield started
    started.stop()


def crawler_of(tmp_path: Path, site: FormSite, monkeypatch: pytest.MonkeyPatch, form: str = "", **settings: Any) -> Crawler:
    monkeypatch.setenv("UNIT_FORM_SECRET", PASSWORD)
    origin = site.url.rstrip("/")
    source = (
        f'seeds = ["{site.url}"]\nobey_robots = false\n[access]\npublic = true\n[[auth]]\norigins = ["{origin}"]\ntype = "form"\n'
        f'user = "crawler"\nsecret = "UNIT_FORM_SECRET"\n[auth.form]\nurl = "{origin}/login"\n{form}'
    )
    return source_crawler(tmp_path, source, **{**ENGINE_SETTINGS, **settings})


def run(crawler: Crawler, scenario: Callable[[FormLoginMiddleware], Awaitable[None]]) -> None:
    """Run ``scenario`` on the middleware, with an engine (opened, never started) on the crawler."""
    run_with_engine(crawler, FormLoginMiddleware, scenario)


def expired(request: Request) -> HtmlResponse:
    """The site's answer to a page of an expired session."""
    return HtmlResponse(request.url, status=302, headers={"Location": "/login?next=/a.html"}, body=b"", request=request)


async def page(middleware: FormLoginMiddleware, url: str) -> Request:
    request = Request(url)
    assert await middleware.process_request(request) is None
    return request


def served(request: Request) -> HtmlResponse:
    return HtmlResponse(request.url, status=200, body=b"<html><body>a page</body></html>", request=request)


async def answer(gate: FormLoginGateMiddleware, middleware: FormLoginMiddleware, request: Request, response: HtmlResponse):
    """The answer through both: the gate reads it first (before the site's turn is given back)."""
    assert gate.process_response(request, response) is response
    return await middleware.process_response(request, response)


def test_the_first_page_waits_for_the_login_and_expiry_together_makes_one_login(tmp_path, site, monkeypatch) -> None:
    crawler = crawler_of(tmp_path, site, monkeypatch)
    key = site.url.rstrip("/")

    async def scenario(middleware: FormLoginMiddleware) -> None:
        gate = FormLoginGateMiddleware(middleware)
        first, second = await asyncio.gather(page(middleware, f"{site.url}a.html"), page(middleware, f"{site.url}b.html"))
        assert site.logins == 1  # the two first requests waited for one login
        assert first.meta[LOGIN_SESSION] == second.meta[LOGIN_SESSION] == 1 and first.meta[COOKIEJAR] == key
        elsewhere = await page(middleware, "http://127.0.0.1:9/x.html")
        assert elsewhere.meta[COOKIEJAR] == "http://127.0.0.1:9" and LOGIN_SESSION not in elsewhere.meta
        served_first = await page(middleware, f"{site.url}c.html")
        assert await answer(gate, middleware, served_first, served(served_first)) is not None
        # both find the session expired at once: one new login, each sent again once
        retries = await asyncio.gather(*(answer(gate, middleware, r, expired(r)) for r in (first, second)))
        assert site.logins == 2 and all(isinstance(r, Request) and r.dont_filter and r.meta[LOGIN_RETRIED] == 1 for r in retries)
        # a request of session 1 answered late: session 2 exists, it only tries again
        late = Request(f"{site.url}c.html", meta={LOGIN_SESSION: 1})
        assert isinstance(await answer(gate, middleware, late, expired(late)), Request) and site.logins == 2
        # the page that found it expired proved the login: fetched first in the new session,
        # served. Session 1 counted a failure: it expired before serving a page known to need
        # one (c.html may be public); the proof ended the failures in a row
        assert middleware.sessions.failures[key] == 0 and middleware.sessions.working[key] == 2
        # sent again and expired again (a session that ends after serving other pages): the next
        # login, proved by it again, no failure
        retry = retries[0]
        assert isinstance(retry, Request)
        await middleware.process_request(retry)
        again = await answer(gate, middleware, retry, expired(retry))
        assert isinstance(again, Request) and again.meta[LOGIN_RETRIED] == 2 and site.logins == 3
        assert middleware.sessions.failures[key] == 0
        # an answer that is no expiry passes untouched
        fine = await page(middleware, f"{site.url}a.html")
        assert fine.meta[LOGIN_SESSION] == 3
        ok = served(fine)
        assert await answer(gate, middleware, fine, ok) is ok and middleware.sessions.failures[key] == 0

    run(crawler, scenario)
    login = [("GET", "/login"), ("POST", "/login")]
    proof = [("GET", "/a.html")]
    assert [(method, path.split("?")[0]) for method, path, _c in site.seen] == login + (login + proof) * 2
    assert crawler.stats.get_value("searchcrawl/logins") == 3


def test_no_page_goes_out_while_the_session_is_renewed(tmp_path, site, monkeypatch) -> None:
    """Issue 53: requests that had passed the middleware and waited for the site's turn left with
    the dead session while the login waited behind them. The gate, the last middleware before
    the network, reads the expiry before the turn is given back: the next request is held and
    sent again after the login, and so is one carrying an older session's cookies."""
    crawler = crawler_of(tmp_path, site, monkeypatch)

    async def scenario(middleware: FormLoginMiddleware) -> None:
        gate = FormLoginGateMiddleware(middleware)
        finds, waiting, older = [await page(middleware, f"{site.url}{n}.html") for n in range(3)]
        gate.process_request(finds)  # session 1, no login under way: it goes out
        assert await answer(gate, middleware, older, served(older)) is not None
        gate.process_response(finds, expired(finds))  # the gate reads the expiry: the login starts now
        assert middleware.logging_in and site.logins == 1
        with pytest.raises(SessionHeld) as held:
            gate.process_request(waiting)  # it got the site's turn meanwhile: held
        again, resent = await asyncio.gather(
            middleware.process_exception(waiting, held.value), middleware.process_response(finds, expired(finds))
        )
        assert site.logins == 2 and isinstance(again, Request) and again.dont_filter and LOGIN_RETRIED not in again.meta
        assert isinstance(resent, Request) and resent.meta[LOGIN_RETRIED] == 1
        with pytest.raises(SessionHeld):
            gate.process_request(older)  # its session's cookies are those of session 1
        assert await middleware.process_exception(older, ValueError("other")) is None  # not the gate's: not handled
        for request in (again, resent):
            await middleware.process_request(request)
            gate.process_request(request)  # the new session: it goes out
            assert request.meta[LOGIN_SESSION] == 2
        # the page that found the session expired, served in the new one: the login works (no failure)
        assert await answer(gate, middleware, resent, served(resent)) is not None
        assert middleware.sessions.failures[site.url.rstrip("/")] == 0

    run(crawler, scenario)
    # the second login's proof: the page that found the first session expired (a 404 here: it proves nothing)
    assert [path.split("?")[0] for _method, path, _c in site.seen] == ["/login"] * 4 + ["/0.html"]


def test_a_page_that_expires_alone_gets_936_without_another_login(tmp_path, site, monkeypatch) -> None:
    """Issue 53 review: a page a working session cannot see (permission_required sends a
    logged-in user without the right to the login page) was sent again 5 times, each time with
    a new login. Its first expiry cannot be told from the session's end: a login, which it
    proves; found expired again, and a page proved before served in that session, it expires
    alone: 936, no failure, no other login."""
    site.denied = {"/admin.html"}
    crawler = crawler_of(tmp_path, site, monkeypatch)
    key = site.url.rstrip("/")

    async def scenario(middleware: FormLoginMiddleware) -> None:
        gate = FormLoginGateMiddleware(middleware)
        first = await page(middleware, f"{site.url}a.html")
        resent = await answer(gate, middleware, first, expired(first))  # the site ended session 1
        assert isinstance(resent, Request) and site.logins == 2 and middleware.sessions.proven[key] == f"{site.url}a.html"
        denied = await page(middleware, f"{site.url}admin.html")
        with pytest.raises(RequestRefused) as refused:
            await answer(gate, middleware, denied, expired(denied))
        assert refused.value.status == Status.AUTH_REFUSED and not refused.value.outcome.counted
        assert "the page alone found expired a fresh session" in refused.value.reason
        assert not middleware.logging_in and not middleware.sessions.given_up(key) and middleware.sessions.failures[key] == 0

    run(crawler, scenario)
    assert site.logins == 3 and site.posts == 3
    assert [path for method, path, _c in site.seen if method == "GET" and path != "/login"] == [
        "/a.html",
        "/admin.html",
        "/a.html",
    ]


def test_logins_past_the_limit_give_the_origin_up(tmp_path, site, monkeypatch, caplog) -> None:
    """Issue 53 review: sessions that keep ending (two processes sharing a user on a site that
    allows one session per user) made logins without end. Issue 72: the cap counts the logins
    after sessions that served no page (a session that serves pages is renewed as often as the
    site ends it)."""
    crawler = crawler_of(tmp_path, site, monkeypatch, SEARCHCRAWL_AUTH_LOGIN_LIMIT=2)

    async def scenario(middleware: FormLoginMiddleware) -> None:
        gate = FormLoginGateMiddleware(middleware)
        first = await page(middleware, f"{site.url}a.html")
        resent = await answer(gate, middleware, first, expired(first))  # session 1 served nothing: one
        assert isinstance(resent, Request) and site.logins == 2
        await middleware.process_request(resent)
        with pytest.raises(
            RequestRefused, match=r"without serving a page 2 times in this crawl \(SEARCHCRAWL_AUTH_LOGIN_LIMIT\)"
        ):
            await answer(gate, middleware, resent, expired(resent))  # session 2 served nothing either
        with pytest.raises(RequestRefused, match="not asked again"):
            await middleware.process_request(Request(f"{site.url}c.html"))

    run(crawler, scenario)
    assert site.logins == 2
    errors = [record for record in caplog.records if record.levelname == "ERROR"]
    assert len(errors) == 1 and "is not requested again in this crawl" in errors[0].getMessage()


def test_the_login_page_is_never_a_page(tmp_path, site, monkeypatch) -> None:
    crawler = crawler_of(tmp_path, site, monkeypatch)

    async def scenario(middleware: FormLoginMiddleware) -> None:
        with pytest.raises(RequestRefused) as refused:
            await middleware.process_request(Request(f"{site.url}login?next=/a.html"))
        assert refused.value.status == Status.EXCLUDED_PATH and "login page" in refused.value.reason

    run(crawler, scenario)
    assert site.seen == []


def test_the_login_page_through_another_name_of_its_server_is_never_indexed(tmp_path, site, monkeypatch) -> None:
    """Issue 53: localhost:port/login, the login page of the table's 127.0.0.1:port, was indexed.
    It gets 936 (a transient failure: an indexed page stays) when the address answering is the
    one its login page came from and the form is the login form."""
    crawler = crawler_of(tmp_path, site, monkeypatch)
    alias = f"http://localhost:{site.port}"
    server = ip_address("127.0.0.1")

    def shown(url: str, body: str, address: IPv4Address | None = server) -> HtmlResponse:
        return HtmlResponse(url, status=200, body=body.encode(), request=Request(url), ip_address=address)

    async def scenario(middleware: FormLoginMiddleware) -> None:
        form = LOGIN_FORM.format(message="", csrf="t", next="/")
        before = shown(f"{alias}/login", form)  # before any login: its server unknown, a page like any other
        assert await middleware.process_response(before.request, before) is before
        await page(middleware, f"{site.url}a.html")  # logs in: the login page came from 127.0.0.1
        for url in (f"{alias}/login", f"{alias}/login?next=/a.html", f"http://127.0.0.2:{site.port}/login"):
            response = shown(url, form)
            with pytest.raises(RequestRefused) as refused:
                await middleware.process_response(response.request, response)
            outcome = refused.value.outcome
            assert outcome.event == Event.FAILED and not outcome.counted and refused.value.status == Status.AUTH_REFUSED
            assert f"reached as {url.split('/login')[0]}" in refused.value.reason
        # another path, another port, no login form there: a page like any other
        for url, body in (
            (f"{alias}/signin", form),
            (f"http://localhost:{site.port + 1}/login", form),
            (f"{alias}/login", "<html><body><form><input name=q></form></body></html>"),
        ):
            response = shown(url, body)
            assert await middleware.process_response(response.request, response) is response
        assert middleware.login_addresses == {site.url.rstrip("/"): {"127.0.0.1"}}

    run(crawler, scenario)
    assert site.logins == 1


def test_a_sign_in_box_of_another_server_is_a_page(tmp_path, site, monkeypatch) -> None:
    """Issue 53 review: with the login at https://app.corp/, https://www.corp/ showing a sign-in
    box in its header (any form with a password input) was taken for the login page: 903, an
    EXCLUDED event that removed the indexed home page, its links not followed. Only another
    name of the login page's server (the same address answering) showing the login form (sent
    to the login page's path, or with the table's user and password inputs) is the login page."""
    crawler = crawler_of(tmp_path, site, monkeypatch)
    header = '<html><body><form action="/search"><input type="password" name="pin"></form></body></html>'
    login_form = LOGIN_FORM.format(message="", csrf="t", next="/")

    async def scenario(middleware: FormLoginMiddleware) -> None:
        await page(middleware, f"{site.url}a.html")
        for body, address in (
            (login_form, ip_address("10.0.0.8")),  # another server: its own home page
            (login_form, None),  # the address unknown
            (header, ip_address("127.0.0.1")),  # the same server, another form
        ):
            url = f"http://www.corp.test:{site.port}/login"
            response = HtmlResponse(url, body=body.encode(), request=Request(url), ip_address=address)
            assert await middleware.process_response(response.request, response) is response

    run(crawler, scenario)


@pytest.mark.parametrize(
    ("form", "why"),
    [
        ('<form action="http://127.0.0.1:{other}/steal" method="post">', "not one of its [[auth]] table's origins"),
        ('<form action="/login" method="get">', "sends its fields in its URL"),
    ],
)
def test_a_form_sending_elsewhere_or_in_its_url_is_never_sent(tmp_path, site, monkeypatch, form: str, why: str) -> None:
    other = FormSite({}, pages_per_session=1)
    try:
        site.login_form = LOGIN_FORM.replace('<form action="/login" method="post">', form.format(other=other.port))
        crawler = crawler_of(tmp_path, site, monkeypatch)

        async def scenario(middleware: FormLoginMiddleware) -> None:
            with pytest.raises(RequestRefused) as refused:
                await middleware.process_request(Request(f"{site.url}a.html"))
            assert refused.value.status == Status.AUTH_REFUSED and why in refused.value.reason

        run(crawler, scenario)
        assert other.seen == [] and site.posts == 0 and all(method == "GET" for method, _p, _c in site.seen)
    finally:
        other.stop()


def test_failed_logins_in_a_row_give_the_origin_up(tmp_path, site, monkeypatch) -> None:
    site.accept = "another-password"
    crawler = crawler_of(tmp_path, site, monkeypatch, SEARCHCRAWL_AUTH_REFUSED_LIMIT=2)

    async def scenario(middleware: FormLoginMiddleware) -> None:
        for n in range(2):
            with pytest.raises(RequestRefused, match="the answer to the login shows a password form again"):
                await middleware.process_request(Request(f"{site.url}{n}.html"))
        with pytest.raises(RequestRefused, match="not asked again"):
            await middleware.process_request(Request(f"{site.url}later.html"))

    run(crawler, scenario)
    assert site.posts == 2 and len(site.seen) == 4


def test_a_success_text_is_read_where_the_login_leads(tmp_path, site, monkeypatch) -> None:
    crawler = crawler_of(tmp_path, site, monkeypatch, form='success_text = "Welcome back"\n')
    site.pages["/index.html"] = "<html><body>Hello</body></html>"  # where the login leads: no such text

    async def scenario(middleware: FormLoginMiddleware) -> None:
        with pytest.raises(RequestRefused, match="does not show the success text"):
            await middleware.process_request(Request(f"{site.url}a.html"))
        site.pages["/index.html"] = "<html><body>Welcome back, crawler</body></html>"
        assert await middleware.process_request(Request(f"{site.url}a.html")) is None

    run(crawler, scenario)
    assert site.logins == 2 and site.served == ["/index.html", "/index.html"]


def test_a_user_secret_that_is_not_set_stops_the_crawl_naming_it(tmp_path, site, monkeypatch) -> None:
    monkeypatch.delenv("UNIT_FORM_USER", raising=False)
    crawler = crawler_of(tmp_path, site, monkeypatch, form='user_secret = "UNIT_FORM_USER"\n')
    with pytest.raises(SiteAuthError, match="UNIT_FORM_USER"):
        build_from_crawler(FormLoginMiddleware, crawler)


@pytest.mark.parametrize("kind", ["basic", "digest", "bearer", "cookie"])
def test_any_auth_table_gives_every_origin_its_own_cookie_jar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """Without a form login too: the cookies a site sets once it has the credentials (its
    session) stay with its origin, on every request (a robots.txt's, a redirect's)."""
    monkeypatch.setenv("UNIT_AUTH_SECRET", PASSWORD)
    origin = "http://127.0.0.1:8070"
    user = 'user = "crawler"\n' if kind in ("basic", "digest") else ""
    source = f'seeds = ["{origin}/"]\n[access]\npublic = true\n[[auth]]\norigins = ["{origin}"]\ntype = "{kind}"\n{user}secret = "UNIT_AUTH_SECRET"\n'
    middleware = build_from_crawler(FormLoginMiddleware, source_crawler(tmp_path, source))
    requests = [
        Request(f"{origin}/a.html"),
        Request("http://127.0.0.1:8071/robots.txt", meta={ROBOTS_REQUEST: True, COOKIEJAR: origin}),
        Request("http://127.0.0.1:8071/b.html", meta={COOKIEJAR: origin}),  # a redirect, its meta copied
    ]
    for request in requests:
        assert asyncio.run(middleware.process_request(request)) is None
    assert [request.meta[COOKIEJAR] for request in requests] == [origin, "http://127.0.0.1:8071", "http://127.0.0.1:8071"]
