"""Who searches, through Starlette's TestClient without Solr (a search page without a query asks
Solr nothing) and without a directory server (a stand-in with the directory's interface; the
real slapd: tests/e2e/test_web_access.py): the searchers' sign-in and its sessions, apart from
the administrators'; the trusted proxy's user header, believed from the proxy's own connection
only; a directory that does not answer; the proxies' setting."""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from scrapy.exceptions import UsageError
from scrapy.settings import Settings
from starlette.requests import Request
from starlette.testclient import TestClient

from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.directory import Directory, DirectoryUnavailable
from searchcrawl.commands.search import searcher_index
from searchcrawl.commands.web import trusted_proxies, user_header
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.web.app import create_app
from searchcrawl.web.shared import SEARCHER_COOKIE, who_searches
from searchcrawl.web.sign_on.searcher import Proxies, header_user
from searchcrawl.web.sign_on.sessions import FREE_FAILURES, SESSION_COOKIE
from tests.search.test_trimmed_index import Recording
from tests.web.test_app import PASSWORD, attempt, unit_config
from tests.web_site import attempts_at_once

PROXY = "10.0.0.2"


class StandInDirectory:
    """The directory's interface over a dict: passwords, and each user's groups. ``up`` False:
    it does not answer (authenticate raises, principals are public only with the reason)."""

    def __init__(self) -> None:
        self.passwords = {"alice": "alice-secret", "bob": "bob-secret"}
        self.groups = {"alice": ["finance"], "bob": []}
        self.up = True
        self.asked: list[str] = []

    def authenticate(self, user: str, password: str) -> bool:
        if not self.up:
            raise DirectoryUnavailable("the directory at ldap://127.0.0.1:9 does not answer")
        return bool(password) and self.passwords.get(user) == password

    def principals(self, user: str) -> Principals:
        self.asked.append(user)
        if not self.up:
            return Principals(user, Principals.anonymous().entries, "the directory at ldap://127.0.0.1:9 does not answer")
        groups = [Principal(f"group:{name}", f"member of {name}") for name in self.groups.get(user, [])]
        return Principals.of(user, [Principal(f"user:{user}", "uid"), *groups])

    def sid_names(self, sids: Iterable[str]) -> dict[str, str]:
        return {}


def web_client(tmp_path: Path, directory: Directory | None, peer: str = "testclient", **changes: object) -> TestClient:
    """The application with ``directory``, its requests coming from ``peer``."""
    app = create_app(unit_config(tmp_path, directory=directory, **changes))
    return TestClient(app, base_url="http://127.0.0.1", client=(peer, 50000))


@pytest.fixture
def directory() -> StandInDirectory:
    return StandInDirectory()


@pytest.fixture
def web(tmp_path: Path, directory: StandInDirectory) -> TestClient:
    return web_client(tmp_path, directory)


def sign_in(web: TestClient, user: str, password: str, prefix: str = "") -> int:
    token = re.search(r'name="signin_token" value="([^"]+)"', web.get(prefix + "/login").text)
    assert token is not None
    data = {"signin_token": token[1], "username": user, "password": password}
    return web.post(prefix + "/login", data=data, follow_redirects=False).status_code


def signed_in(page: str) -> str | None:
    found = re.search(r'<span class="searcher">Signed in as <strong>([^<]*)</strong>', page)
    return found[1] if found else None


def csrf_of(page: str) -> str:
    found = re.search(r'action="[^"]*/logout" class="inline signout">\s*<input type="hidden" name="csrf" value="([^"]+)"', page)
    assert found is not None, page
    return found[1]


def test_a_searcher_signs_in_and_out(web: TestClient, directory: StandInDirectory) -> None:
    anonymous = web.get("/")
    assert signed_in(anonymous.text) is None and 'href="/login">Sign in</a>' in anonymous.text
    assert anonymous.headers["cache-control"] == "private, no-store"  # a page that depends on who asks
    assert sign_in(web, "alice", "wrong") == 403
    answer = web.post(
        "/login",
        data={"signin_token": web.cookies["searchcrawl_signin"], "username": "alice", "password": "alice-secret"},
        follow_redirects=False,
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookie = next(value for value in answer.headers.get_list("set-cookie") if value.startswith(SEARCHER_COOKIE + "="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/;" in cookie
    page = web.get("/")
    assert signed_in(page.text) == "alice" and directory.asked[-1] == "alice"
    assert "Public documents only" not in page.text
    csrf = csrf_of(page.text)
    assert web.post("/logout", data={"csrf": "stale"}).status_code == 403  # a POST without its token does nothing
    assert signed_in(web.get("/").text) == "alice"
    out = web.post("/logout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303
    assert signed_in(web.get("/").text) is None
    assert web.post("/logout", data={"csrf": csrf}).status_code == 403  # the session is gone on the server


def test_a_wrong_password_is_told_and_an_empty_one_never_asked(web: TestClient, directory: StandInDirectory) -> None:
    token = re.search(r'name="signin_token" value="([^"]+)"', web.get("/login").text)
    assert token is not None
    wrong = web.post("/login", data={"signin_token": token[1], "username": "alice", "password": "guess"})
    assert wrong.status_code == 403 and "Wrong user name or password." in wrong.text
    # an LDAP bind with an empty password is an anonymous bind, which succeeds: never tried
    empty = web.post("/login", data={"signin_token": token[1], "username": "alice", "password": ""})
    assert empty.status_code == 403 and "Wrong user name or password." in empty.text
    stale = web.post("/login", data={"signin_token": "forged", "username": "alice", "password": "alice-secret"})
    assert stale.status_code == 403 and "expired" in stale.text


def test_searchers_and_administrators_are_apart(web: TestClient) -> None:
    """Administrator credentials are not a searcher's; a searcher's session does not open the
    administration, even sent under the administration cookie's name."""
    assert sign_in(web, "admin", PASSWORD) == 403
    assert attempt(web, PASSWORD) == 303  # the administrator logs in ...
    assert signed_in(web.get("/").text) is None  # ... and searches as nobody
    web.cookies.clear()
    assert sign_in(web, "alice", "alice-secret") == 303
    token = web.cookies[SEARCHER_COOKIE]
    assert web.get("/admin", follow_redirects=False).headers["location"] == "/admin/login"
    web.cookies.set(SESSION_COOKIE, token, path="/admin")
    assert web.get("/admin", follow_redirects=False).headers["location"] == "/admin/login"


def test_failed_sign_ins_slow_the_next_down_and_not_the_administrators(web: TestClient) -> None:
    assert [sign_in(web, "alice", f"guess{n}") for n in range(FREE_FAILURES)] == [403] * FREE_FAILURES
    assert sign_in(web, "alice", "alice-secret") == 429  # even the right password waits
    assert attempt(web, PASSWORD) == 303  # a throttle of its own: the administration is not locked out
    web.app.state.web.signin_throttle.succeeded("testclient")  # type: ignore[attr-defined]
    assert sign_in(web, "alice", "alice-secret") == 303


def test_sign_ins_sent_at_once_are_counted_before_the_directory_answers(web: TestClient) -> None:
    """The directory is asked off the event loop: attempts sent together must not all pass while
    the count is still low (each is counted as a failure before it is checked)."""
    token = re.search(r'name="signin_token" value="([^"]+)"', web.get("/login").text)
    assert token is not None
    codes = attempts_at_once(
        web.app, "/login", {"signin_token": token[1], "username": "alice", "password": "guess"}, ("searchcrawl_signin", token[1])
    )
    assert codes.count(403) == FREE_FAILURES and codes.count(429) == 20 - FREE_FAILURES, codes


def test_a_directory_that_does_not_answer(web: TestClient, directory: StandInDirectory, caplog: pytest.LogCaptureFixture) -> None:
    """The sign-in fails with the reason shown and logged (and counts as no guess); a signed-in
    searcher whose principals cannot be had sees public documents only, and is told why."""
    assert sign_in(web, "alice", "alice-secret") == 303
    directory.up = False
    page = web.get("/")
    assert signed_in(page.text) == "alice"
    assert "Only public documents are shown: the directory at ldap://127.0.0.1:9 does not answer" in page.text
    web.cookies.clear()
    with caplog.at_level(logging.WARNING, logger="searchcrawl.web.views.sign_on_views"):
        token = re.search(r'name="signin_token" value="([^"]+)"', web.get("/login").text)
        assert token is not None
        down = web.post("/login", data={"signin_token": token[1], "username": "bob", "password": "bob-secret"})
    assert down.status_code == 503 and "The directory does not answer: the directory at ldap://127.0.0.1:9" in down.text
    assert "the directory does not answer" in caplog.text and "bob-secret" not in caplog.text
    assert len(web.app.state.web.signin_throttle) == 0  # type: ignore[attr-defined]
    directory.up = True
    assert sign_in(web, "bob", "bob-secret") == 303


def test_no_directory_no_sign_in(tmp_path: Path) -> None:
    web = web_client(tmp_path, None)
    page = web.get("/")
    assert "Sign in" not in page.text and "Public documents only" not in page.text
    assert "cache-control" not in page.headers
    assert web.get("/login").status_code == 404
    assert web.post("/login", data={"username": "alice", "password": "x"}).status_code == 404


HEADER = "x-remote-user"


@pytest.mark.parametrize(
    ("peer", "headers", "user"),
    [
        (PROXY, {HEADER: "alice"}, "alice"),
        # the proxy names the client it relays: request.client becomes the client's address, and
        # the header is still the proxy's (believed from the connection's peer, not the client)
        (PROXY, {HEADER: "alice", "x-forwarded-for": "198.51.100.7"}, "alice"),
        (PROXY, {HEADER: "  "}, None),
        (PROXY, {HEADER: "al\x7fice"}, None),
        ("203.0.113.9", {HEADER: "alice"}, None),  # not a proxy
        ("203.0.113.9", {HEADER: "alice", "x-forwarded-for": PROXY}, None),  # naming a proxy changes nothing
        ("testclient", {HEADER: "alice"}, None),
    ],
)
def test_the_user_header_is_believed_from_a_trusted_proxy_only(
    tmp_path: Path, directory: StandInDirectory, peer: str, headers: dict[str, str], user: str | None
) -> None:
    web = web_client(tmp_path, directory, peer, user_header=HEADER, proxies=(PROXY, "10.9.0.0/16"))
    page = web.get("/", headers=headers)
    assert signed_in(page.text) == user
    if user:
        assert 'class="inline signout"' not in page.text  # signing out is the proxy's business
        assert directory.asked == [user]


def test_the_user_header_wins_over_a_session_and_needs_the_setting(tmp_path: Path, directory: StandInDirectory) -> None:
    web = web_client(tmp_path, directory, PROXY, user_header=HEADER, proxies=(PROXY,))
    assert sign_in(web, "bob", "bob-secret") == 303
    assert signed_in(web.get("/").text) == "bob"
    assert signed_in(web.get("/", headers={HEADER: "alice"}).text) == "alice"
    plain = web_client(tmp_path, directory, PROXY, proxies=(PROXY,))  # no user header configured
    assert signed_in(plain.get("/", headers={HEADER: "alice"}).text) is None


def test_the_user_header_without_a_directory_is_the_user_name_alone(tmp_path: Path) -> None:
    web = web_client(tmp_path, None, PROXY, user_header=HEADER, proxies=(PROXY,))
    searcher = asyncio.run(who_searches(web.app.state.web, _request(web, {HEADER: "EXAMPLE\\Alice"})))  # type: ignore[attr-defined]
    assert searcher.user == "EXAMPLE\\Alice" and searcher.known_by == "header" and not searcher.error
    assert searcher.principals.tokens == {"public", "user:alice"}


def _request(web: TestClient, headers: dict[str, str]) -> Request:

    raw = [(name.encode(), value.encode()) for name, value in headers.items()]
    return Request(
        {"type": "http", "method": "GET", "path": "/", "headers": raw, "client": (PROXY, 1), "searchcrawl.peer": PROXY}
    )


def test_the_proxies_and_user_header_settings() -> None:
    assert trusted_proxies([" 10.0.0.2", "10.1.0.0/16 ", ""]) == ("10.0.0.2", "10.1.0.0/16")
    with pytest.raises(UsageError, match="every client"):
        trusted_proxies(["10.0.0.2", "*"])
    assert user_header(" X-Remote-User ", ("10.0.0.2",)) == "x-remote-user"
    assert user_header("", ()) == ""
    with pytest.raises(UsageError, match="needs SEARCHCRAWL_WEB_PROXIES"):
        user_header("X-Remote-User", ())
    with pytest.raises(UsageError, match="not a header name"):
        user_header("X-Remote User:", ("10.0.0.2",))


def test_proxies_and_header_values() -> None:
    proxies = Proxies(["10.0.0.2", "10.1.0.0/16", "::1", "unix-socket"])
    assert "10.0.0.2" in proxies and "10.1.200.3" in proxies and "::1" in proxies and "unix-socket" in proxies
    assert "10.0.0.3" not in proxies and None not in proxies and "" not in proxies and "testclient" not in proxies
    assert not Proxies([" "])
    assert header_user(" alice ") == "alice"
    assert header_user(None) is header_user("") is header_user("a\nb") is header_user("x" * 300) is None


def test_the_explain_access_page_is_an_administrators(web: TestClient) -> None:
    """Logged-in administrators only, its POST with the session's CSRF token; a searcher's session
    is not enough. (Its report against a real Solr and directory: tests/e2e/test_web_access.py.)"""
    assert web.get("/admin/explain-access", follow_redirects=False).headers["location"] == "/admin/login"
    assert sign_in(web, "alice", "alice-secret") == 303
    assert web.post("/admin/explain-access", data={"user": "alice", "url": "https://a.example/"}).status_code == 403
    assert attempt(web, PASSWORD) == 303
    form = web.get("/admin/explain-access")
    assert form.status_code == 200 and form.headers["cache-control"] == "no-store"
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    stale = web.post("/admin/explain-access", data={"csrf": "stale", "user": "alice", "url": "https://a.example/"})
    assert stale.status_code == 403
    junk = web.post("/admin/explain-access", data={"csrf": csrf[1], "user": "alice", "url": "javascript:alert(1)"})
    assert junk.status_code == 200 and "Give a user name and an absolute URL" in junk.text
    overview_form = re.search(r'<form method="post" action="/admin/explain-access"', web.get("/admin").text)
    assert overview_form is not None


def test_behind_a_prefix_the_searchers_cookie_covers_the_search_page_only(tmp_path: Path, directory: StandInDirectory) -> None:
    web = web_client(tmp_path, directory, prefix="/search")
    assert 'href="/search/login">Sign in</a>' in web.get("/search/").text
    token = re.search(r'name="signin_token" value="([^"]+)"', web.get("/search/login").text)
    assert token is not None
    data = {"signin_token": token[1], "username": "alice", "password": "alice-secret"}
    answer = web.post("/search/login", data=data, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/search/"
    cookie = next(value for value in answer.headers.get_list("set-cookie") if value.startswith(SEARCHER_COOKIE + "="))
    assert "Path=/search/;" in cookie
    page = web.get("/search/")
    assert signed_in(page.text) == "alice" and 'action="/search/logout"' in page.text
    assert web.post("/search/logout", data={"csrf": csrf_of(page.text)}, follow_redirects=False).status_code == 303
    assert signed_in(web.get("/search/").text) is None


def test_two_user_headers_are_neither_believed(tmp_path: Path, directory: StandInDirectory) -> None:
    """A proxy that adds its header instead of replacing it passes the client's own on: which of
    two is the proxy's is unknown, so the searcher is nobody (public documents only)."""
    web = web_client(tmp_path, directory, PROXY, user_header=HEADER, proxies=(PROXY,))
    for values in (["admin", "alice"], ["alice", "alice"]):
        raw = [(HEADER.encode(), value.encode()) for value in values]
        scope = {"type": "http", "method": "GET", "path": "/", "headers": raw, "client": (PROXY, 1), "searchcrawl.peer": PROXY}
        searcher = asyncio.run(who_searches(web.app.state.web, Request(scope)))  # type: ignore[attr-defined]
        assert searcher.user is None and searcher.principals.tokens == {"public"}
    page = web.get("/", headers=[(HEADER, "admin"), (HEADER, "alice")])
    assert signed_in(page.text) is None and directory.asked == []
    assert page.headers["cache-control"] == "private, no-store"


@pytest.mark.parametrize(
    ("back", "lands_on"),
    [
        ("?q=harbour+pilots&type=text%2Fhtml&page=2", "/?q=harbour+pilots&type=text%2Fhtml&page=2"),
        ("q=harbour", "/?q=harbour"),
        ("https://evil.example/?q=x", "/"),  # never elsewhere: only a search page's own parameters
        ("//evil.example/?q=x", "/"),
        ("?q=x&next=https://evil.example/", "/?q=x"),
        ("?page=3", "/"),  # no query: the empty search page
        ("", "/"),
    ],
)
def test_a_sign_in_leads_back_to_the_search_it_came_from(web: TestClient, back: str, lands_on: str) -> None:
    form = web.get("/login", params={"back": back}).text
    token = re.search(r'name="signin_token" value="([^"]+)"', form)
    assert token is not None
    carried = re.search(r'name="back" value="([^"]*)"', form)
    data = {"signin_token": token[1], "username": "alice", "password": "alice-secret"}
    if carried is not None:
        data["back"] = html.unescape(carried[1])
    answer = web.post("/login", data=data, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == lands_on


def test_the_search_pages_sign_in_link_carries_the_search(web: TestClient) -> None:
    page = web.get("/", params={"q": "harbour", "type": "text/html"}).text
    assert 'href="/login?back=%3Fq%3Dharbour%26type%3Dtext%252Fhtml"' in page


def test_a_view_gets_the_searchers_index_bound_once_and_no_raw_client(tmp_path: Path) -> None:
    """Issue 95: the request's Searcher carries its TrimmedIndex, bound to its principals where the
    searcher is known (who_searches); the context a view gets has no raw client as an attribute,
    only the operators' accessor."""
    web = web_client(tmp_path, None, PROXY, user_header=HEADER, proxies=(PROXY,))
    ctx = web.app.state.web  # type: ignore[attr-defined]
    searcher = asyncio.run(who_searches(ctx, _request(web, {HEADER: "alice"})))
    assert isinstance(searcher.index, TrimmedIndex) and searcher.index.principals is searcher.principals
    assert searcher.principals.tokens == {"public", "user:alice"} and searcher.known_by == "header"
    visitor = asyncio.run(who_searches(ctx, _request(web, {})))
    assert visitor.index.principals.tokens == {"public"} and visitor.user is None
    assert not hasattr(ctx, "solr") and isinstance(ctx.operator_solr(), SolrIndex)


def test_a_command_gets_the_searchers_index_from_as_user() -> None:
    """`scrapy search`, `relevance` and `demo` get their index from ``searcher_index``: the public's
    without ``--as``; a user without a directory to ask is a usage error, never the public's."""
    solr = SolrIndex("http://127.0.0.1:1/solr/docs")
    index = searcher_index(Settings(), None, solr)
    assert isinstance(index, TrimmedIndex) and index.principals.tokens == {"public"} and index.principals.user is None
    with pytest.raises(UsageError, match="SEARCHCRAWL_LDAP_URL"):
        searcher_index(Settings(), "alice", solr)


class RaisingDirectory(StandInDirectory):
    """A directory that breaks its promise never to raise."""

    def principals(self, user: str) -> Principals:
        raise OSError("the directory's socket closed")


@pytest.mark.parametrize("directory", [StandInDirectory(), RaisingDirectory()], ids=["error", "raises"])
def test_searcher_index_fails_closed_and_says_so_when_the_directory_fails(
    directory: StandInDirectory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review R, 4: ``--as alice`` with a directory that does not answer (or raises) searches the
    public documents only, with the deny filters of incomplete principals, said on stderr; never as
    alice's name alone."""
    directory.up = False
    monkeypatch.setattr("searchcrawl.commands.search.directory_of", lambda _settings: directory)
    recording = Recording()
    index = searcher_index(Settings(), "alice", recording)  # type: ignore[arg-type]
    assert index.principals.tokens == {"public"} and index.principals.error
    index.search("harbour", {})
    assert "*:* -access_deny:[* TO *]" in recording.asked[0]["fq"]
    assert capsys.readouterr().err.rstrip("\n").endswith(": public documents only")
