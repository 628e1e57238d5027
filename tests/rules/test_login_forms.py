"""searchcrawl.rules.login_forms and the [auth.form] table: the login page, what says a session
expired, what says a login failed, and each origin's sessions and failures in a row."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from searchcrawl.config.source import SourceSettings
from searchcrawl.rules.credentials import FormLogin, SiteAuth
from searchcrawl.rules.login_forms import (
    MAX_RESENDS,
    Expiry,
    LoginSessions,
    at_login_path,
    is_login_page,
    login_failure,
    redirect_target,
    session_expired,
)

SITE = "http://127.0.0.1:8081"


def form_rule(**form: object) -> SiteAuth:
    return SiteAuth.model_validate(
        {"origins": [SITE], "type": "form", "user": "crawler", "secret": "PW", "form": {"url": f"{SITE}/login", **form}}
    )


def test_a_form_table_is_complete_and_its_login_page_on_its_origins() -> None:
    rule = form_rule(fields={"remember": "1"}, expired_status=[401], expired_text="Please sign in")
    assert rule.form is not None and rule.form.user_field == "username" and rule.form.password_field == "password"
    for bad in (
        {"origins": [SITE], "type": "form", "user": "u", "secret": "PW"},  # no [auth.form]
        {"origins": [SITE], "type": "basic", "user": "u", "secret": "PW", "form": {"url": f"{SITE}/login"}},
        {"origins": [SITE], "type": "form", "secret": "PW", "form": {"url": f"{SITE}/login"}},  # no user
        {"origins": [SITE], "type": "form", "user": "u", "secret": "PW", "form": {"url": "http://127.0.0.1:9/login"}},
        {"origins": [SITE], "type": "form", "user": "u", "secret": "PW", "form": {"url": f"http://u:p@{SITE[7:]}/login"}},
        {"origins": [SITE], "type": "form", "user": "u", "secret": "PW", "form": {"url": "file:///login"}},
        {
            "origins": [SITE],
            "type": "form",
            "user": "u",
            "secret": "PW",
            "form": {"url": f"{SITE}/l", "fields": {"password": "x"}},
        },
        {"origins": [SITE], "type": "form", "user": "u", "secret": "PW", "form": {"url": f"{SITE}/l", "user_secret": "a b"}},
        {"origins": [SITE], "type": "form", "user": "u", "secret": "PW", "form": {"url": f"{SITE}/l", "expired_status": [99]}},
        {"origins": [SITE], "type": "form", "user": "u", "secret": "PW", "form": {"url": f"{SITE}/l", "form": "form[[x"}},
    ):
        with pytest.raises(ValidationError):
            SiteAuth.model_validate(bad)
    # the user may come from a secret instead
    SiteAuth.model_validate({"origins": [SITE], "type": "form", "secret": "PW", "form": {"url": f"{SITE}/l", "user_secret": "U"}})


def test_an_origin_has_one_form_login_at_most() -> None:
    table = {"origins": [SITE], "type": "form", "user": "u", "secret": "PW", "form": {"url": f"{SITE}/login"}}
    with pytest.raises(ValidationError, match="one form login"):
        SourceSettings.model_validate({"seeds": [f"{SITE}/"], "auth": [table, table]})


def test_the_login_page_is_its_origin_and_path_whatever_the_query() -> None:
    login = f"{SITE}/login"
    assert is_login_page(f"{SITE}/login?next=/a.html", login)
    assert is_login_page("http://127.0.0.1:8081/login", "http://127.0.0.1:8081/login?lang=en")
    assert not is_login_page(f"{SITE}/login/help", login)
    assert not is_login_page("http://127.0.0.1:8082/login", login)  # another port
    assert not is_login_page("https://127.0.0.1:8081/login", login)  # another scheme


def test_a_session_expires_into_a_redirect_to_the_login_page_or_a_configured_status_or_text() -> None:
    plain = FormLogin(url=f"{SITE}/login")
    assert session_expired(plain, f"{SITE}/a.html", 302, "/login?next=/a.html", None) == "HTTP 302 to the login page"
    assert session_expired(plain, f"{SITE}/a.html", 302, "/b.html", None) is None  # another redirect
    assert session_expired(plain, f"{SITE}/a.html", 200, None, "Please sign in") is None  # not configured
    assert session_expired(plain, f"{SITE}/a.html", 401, None, None) is None
    configured = FormLogin(url=f"{SITE}/login", expired_status=[401, 419], expired_text="Please sign in")
    assert session_expired(configured, f"{SITE}/a.html", 419, None, None) == "HTTP 419"
    assert session_expired(configured, f"{SITE}/a.html", 200, None, "<p>Please sign in</p>") == "the page shows the expiry text"
    assert session_expired(configured, f"{SITE}/a.html", 200, None, "<p>Welcome</p>") is None
    assert redirect_target(f"{SITE}/a/b.html", 301, "../c.html") == f"{SITE}/c.html"
    assert redirect_target(f"{SITE}/a.html", 200, "/x") is None and redirect_target(f"{SITE}/a.html", 302, None) is None


def test_what_says_a_login_failed() -> None:
    plain = FormLogin(url=f"{SITE}/login")
    assert login_failure(plain, 200, "<p>Welcome</p>", password_form=False) is None
    assert login_failure(plain, 403, "denied", password_form=False) == "the login was answered HTTP 403"
    assert "password form again" in (login_failure(plain, 200, "wrong password", password_form=True) or "")
    marked = FormLogin(url=f"{SITE}/login", success_text="Sign out")
    assert login_failure(marked, 200, "<a>Sign out</a>", password_form=False) is None
    assert "success text" in (login_failure(marked, 200, "<p>Welcome</p>", password_form=False) or "")
    assert "success text" in (login_failure(marked, 200, None, password_form=False) or "")


def test_sessions_are_numbered_and_failures_in_a_row_give_an_origin_up() -> None:
    sessions = LoginSessions(limit=2)
    assert sessions.session(SITE) == 0 and not sessions.stale(SITE, 0)
    assert sessions.logged_in(SITE) == 1
    assert sessions.stale(SITE, 0) and not sessions.stale(SITE, 1)  # a request of session 0 just tries again
    assert not sessions.failed(SITE) and not sessions.given_up(SITE)
    sessions.needs_session[SITE] = {f"{SITE}/a.html"}
    sessions.served(SITE, 0, f"{SITE}/a.html", 200)  # a page of an older session proves nothing of the newest
    sessions.served(SITE, 1, f"{SITE}/public.html", 200)  # nor one that needs no session
    sessions.served(SITE, 1, f"{SITE}/a.html", 500)  # nor an error
    assert sessions.failures[SITE] == 1
    sessions.served(SITE, 1, f"{SITE}/a.html", 200)  # a page that needs it, served in the newest: no failures
    assert not sessions.failed(SITE)
    assert sessions.failed(SITE) and sessions.given_up(SITE)  # the second in a row gives up
    assert not sessions.failed(SITE) and sessions.given_up(SITE)  # said once; still given up
    sessions.served(SITE, 1, f"{SITE}/a.html", 200)  # a page in flight answered after giving up: still given up
    assert sessions.given_up(SITE) and not sessions.given_up("http://127.0.0.1:8082")


def test_a_session_that_expires_after_serving_pages_is_no_failure() -> None:
    """Issue 53: a session that expires is not a wrong password. Only the first page to find the
    newest session expired starts a login; the others (an older session, or a login under way)
    wait for it; none of it counts toward giving up, however often it happens, once the pages
    sent again are served."""
    sessions = LoginSessions(limit=3)
    for session in range(1, 10):
        assert sessions.logged_in(SITE) == session
        sessions.served(SITE, session, f"{SITE}/{session - 1}.html", 200)  # the page that found the last one expired
        sessions.served(SITE, session, f"{SITE}/other.html", 200)
        assert sessions.expired(SITE, session, 0, False, f"{SITE}/{session}.html") == Expiry(log_in=True)
        assert sessions.expired(SITE, session, 1, True, f"{SITE}/x.html") == Expiry(log_in=False)  # found together
        assert sessions.expired(SITE, session - 1, 1, False, f"{SITE}/y.html") == Expiry(log_in=False)  # an older one
    # the very first expiry came before any page known to need a session: one failure, ended since
    assert not sessions.given_up(SITE) and sessions.failures[SITE] == 0


def test_a_session_that_ends_at_once_is_a_failed_login_and_a_page_is_resent_while_pages_are_served() -> None:
    """Issue 72: the page that found a session expired proves the next login (fetched first in
    the new session): found expired again, the login failed; a session counts once. A page
    whose session another page's expiry replaced is sent again as long as the site serves
    pages, MAX_RESENDS times when it serves none."""
    page = f"{SITE}/a.html"
    sessions = LoginSessions(limit=2)
    sessions.logged_in(SITE)
    # the first session expired before anything proved it (the first login has no proof): a failure
    assert sessions.expired(SITE, 1, 0, False, page) == Expiry(log_in=True) and sessions.failures[SITE] == 1
    sessions.logged_in(SITE)
    assert sessions.disproved(SITE, 2)  # its proof found the fresh session expired: the second in a row gives up
    assert not sessions.disproved(SITE, 2) and sessions.failures[SITE] == 2  # a session counts once
    assert sessions.expired(SITE, 2, 1, False, page).refusal == "not asked again in this crawl: its form login failed"

    sessions = LoginSessions(limit=3)
    sessions.logged_in(SITE)
    sessions.logged_in(SITE)
    assert sessions.expired(SITE, 1, MAX_RESENDS - 1, False, page) == Expiry(log_in=False)
    too_often = sessions.expired(SITE, 1, MAX_RESENDS, False, page)
    assert (
        not too_often.log_in
        and too_often.refusal == f"the page found its session expired {MAX_RESENDS + 1} times, no page served since"
    )
    assert sessions.expired(SITE, 2, MAX_RESENDS, True, page).refusal == too_often.refusal
    sessions.served(SITE, 2, f"{SITE}/b.html", 200)  # the site serves pages: the page is sent again, however often
    assert sessions.expired(SITE, 1, 10 * MAX_RESENDS, False, page) == Expiry(log_in=False)


def test_sessions_of_a_few_pages_renew_without_end_and_no_failure() -> None:
    """Issue 72: a site whose session serves five pages, sixteen requests waiting for each login
    going out before the page that found the last session expired: a session that served no
    page *known to need one* counted a failure, and the third gave the site up. Each login is
    proved by that page, fetched first: however many sessions, no failure, no cap."""
    sessions = LoginSessions(limit=3, login_limit=4)
    sessions.logged_in(SITE)
    for session in range(1, 100):
        for n in range(5):  # pages that never found a session expired
            sessions.served(SITE, session, f"{SITE}/s{session}-{n}.html", 200)
        assert sessions.expired(SITE, session, 0, False, f"{SITE}/s{session}-5.html") == Expiry(log_in=True)
        sessions.proved(SITE, sessions.logged_in(SITE), f"{SITE}/s{session}-5.html")
    assert not sessions.given_up(SITE) and sessions.failures[SITE] == 0


def test_a_wrong_password_the_site_takes_gives_up_though_public_pages_answer() -> None:
    """Issue 53 review: a site that takes a wrong password with a redirect elsewhere (no
    success_text) and sends every protected page to the login page, while a public page (or a
    404, or a 500) answers in each session. Any answer ended the failures in a row: 20 protected
    pages made 121 logins with the wrong password and never gave up (an account lockout). The
    first session's expiry (nothing proved it) and each proof that finds the fresh session
    expired count: three logins."""
    sessions = LoginSessions(limit=3)
    logins = 0

    def log_in() -> int:
        nonlocal logins
        logins += 1
        return sessions.logged_in(SITE)

    log_in()
    for n in range(20):
        if sessions.given_up(SITE):
            break
        seen = sessions.session(SITE)
        for url, status in ((f"{SITE}/", 200), (f"{SITE}/missing", 404), (f"{SITE}/broken", 500)):
            sessions.served(SITE, seen, url, status)
        expiry = sessions.expired(SITE, seen, 0, False, f"{SITE}/p{n}.html")
        assert expiry.log_in
        sessions.disproved(SITE, log_in())  # the proof: the page expires in the new session too (936)
    assert sessions.given_up(SITE) and logins == 3


def test_a_page_that_always_expires_costs_one_login_and_no_failure() -> None:
    """Issue 53 review: a page a working session cannot see (Django's permission_required sends
    a logged-in user without the right to the login page; a help page shows expired_text) was
    sent again 5 times, each with a new login. Its proof finds the new session expired, and the
    page proved before is served there: the page expires alone, 936, no failure."""
    sessions = LoginSessions(limit=3)
    sessions.logged_in(SITE)
    sessions.needs_session[SITE] = {f"{SITE}/a.html"}
    sessions.served(SITE, 1, f"{SITE}/a.html", 200)
    logins = 1
    for n in range(10):
        seen = sessions.session(SITE)
        assert sessions.expired(SITE, seen, 0, False, f"{SITE}/admin{n}.html") == Expiry(log_in=True)
        logins += 1
        session = sessions.logged_in(SITE)
        assert sessions.proven[SITE] == f"{SITE}/a.html"  # the second proof (the middleware's)
        sessions.proved(SITE, session, f"{SITE}/a.html")
    assert logins == 1 + 10 and not sessions.given_up(SITE) and sessions.failures[SITE] == 0


def test_logins_after_sessions_that_served_no_page_are_capped_in_a_crawl() -> None:
    """Issue 53 review: sessions that keep ending (two processes sharing a user on a site that
    allows one session per user) logged in without end. Issue 72: a cap on every login stopped
    a site whose sessions serve a few pages each; it counts the logins after a session that
    served no page (each proved, so no failure)."""
    sessions = LoginSessions(limit=3, login_limit=4)
    sessions.logged_in(SITE)
    for session in range(1, 5):
        sessions.proved(SITE, session, f"{SITE}/a.html")
        expiry = sessions.expired(SITE, session, 0, False, f"{SITE}/b.html")
        if session < 4:
            assert expiry == Expiry(log_in=True)
            sessions.logged_in(SITE)
    assert expiry.gives_up and not expiry.log_in and "without serving a page 4 times" in (expiry.refusal or "")
    assert sessions.given_up(SITE) and not LoginSessions(limit=3).given_up(SITE)


def test_the_login_page_on_another_name_of_its_server_is_its_path_and_port() -> None:
    login = f"{SITE}/login"
    assert at_login_path("http://localhost:8081/login?next=/a.html", login)
    assert at_login_path(f"{SITE}/login", login) and at_login_path("http://LOCALHOST:8081/login", login)
    assert not at_login_path("http://localhost:8082/login", login)  # another port: another server
    assert not at_login_path("https://localhost:8081/login", login)
    assert not at_login_path("http://localhost:8081/login/help", login)
    assert at_login_path("http://intranet/", "http://127.0.0.1/") and at_login_path("https://a/x", "https://[::1]:443/x")
    assert not at_login_path("ftp://localhost:8081/login", login) and not at_login_path("http://localhost:x/login", login)
