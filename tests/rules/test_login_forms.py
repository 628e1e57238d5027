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
    Sessions,
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
    sessions = Sessions(limit=2)
    assert sessions.session(SITE) == 0 and not sessions.stale(SITE, 0)
    assert sessions.logged_in(SITE) == 1
    assert sessions.stale(SITE, 0) and not sessions.stale(SITE, 1)  # a request of session 0 just tries again
    assert not sessions.failed(SITE) and not sessions.given_up(SITE)
    sessions.served(SITE, 0)  # a page of an older session proves nothing of the newest
    assert sessions.failures[SITE] == 1
    sessions.served(SITE, 1)  # a page served in the newest session ends the failures in a row
    assert not sessions.failed(SITE)
    assert sessions.failed(SITE) and sessions.given_up(SITE)  # the second in a row gives up
    assert not sessions.failed(SITE) and sessions.given_up(SITE)  # said once; still given up
    sessions.served(SITE, 1)  # a page in flight answered after giving up: still given up
    assert sessions.given_up(SITE) and not sessions.given_up("http://127.0.0.1:8082")


def test_a_session_that_expires_after_serving_pages_is_no_failure() -> None:
    """Issue 53: a session that expires is not a wrong password. Only the first page to find the
    newest session expired starts a login; the others (an older session, or a login under way)
    wait for it; none of it counts toward giving up, however often it happens."""
    sessions = Sessions(limit=3)
    for session in range(1, 10):
        assert sessions.logged_in(SITE) == session
        sessions.served(SITE, session)
        assert sessions.expired(SITE, session, resends=0, renewing=False) == Expiry(log_in=True)
        assert sessions.expired(SITE, session, resends=1, renewing=True) == Expiry(log_in=False)  # found together
        assert sessions.expired(SITE, session - 1, resends=1, renewing=False) == Expiry(log_in=False)  # an older one
    assert not sessions.given_up(SITE) and sessions.failures[SITE] == 0


def test_a_session_that_serves_nothing_is_a_failed_login_and_a_page_is_resent_a_few_times() -> None:
    sessions = Sessions(limit=2)
    sessions.logged_in(SITE)
    # the site took the login but its session works for nothing: a failure; the page is sent
    # again once, then 936 if it finds the next fresh session expired too
    assert sessions.expired(SITE, 1, resends=0, renewing=False) == Expiry(log_in=True)
    sessions.logged_in(SITE)
    expiry = sessions.expired(SITE, 2, resends=1, renewing=False)
    assert expiry.gives_up and not expiry.log_in and "failed 2 times in a row" in (expiry.refusal or "")
    assert sessions.expired(SITE, 2, resends=0, renewing=False).refusal == "not asked again in this crawl: its form login failed"

    sessions = Sessions(limit=3)
    sessions.logged_in(SITE)
    sessions.logged_in(SITE)
    assert sessions.expired(SITE, 2, resends=1, renewing=False).refusal == "the session expired again right after a fresh login"
    # a page that always answers with the login page, each time in a session that served others:
    # sent again MAX_RESENDS times, then 936 (a login is still due: the session did expire)
    sessions.served(SITE, 2)
    assert sessions.expired(SITE, 2, resends=MAX_RESENDS - 1, renewing=False) == Expiry(log_in=True)
    too_often = sessions.expired(SITE, 2, resends=MAX_RESENDS, renewing=False)
    assert too_often.log_in and too_often.refusal == f"the page found its session expired {MAX_RESENDS + 1} times"
    assert sessions.expired(SITE, 1, resends=MAX_RESENDS, renewing=False).refusal == too_often.refusal


def test_the_login_page_on_another_name_of_its_server_is_its_path_and_port() -> None:
    login = f"{SITE}/login"
    assert at_login_path("http://localhost:8081/login?next=/a.html", login)
    assert at_login_path(f"{SITE}/login", login) and at_login_path("http://LOCALHOST:8081/login", login)
    assert not at_login_path("http://localhost:8082/login", login)  # another port: another server
    assert not at_login_path("https://localhost:8081/login", login)
    assert not at_login_path("http://localhost:8081/login/help", login)
    assert at_login_path("http://intranet/", "http://127.0.0.1/") and at_login_path("https://a/x", "https://[::1]:443/x")
    assert not at_login_path("ftp://localhost:8081/login", login) and not at_login_path("http://localhost:x/login", login)
