"""The web application's login and forms through Starlette's TestClient, without Solr or a
database (neither is asked anything on these paths): guessing is slowed down, and a POST that is
not one of the application's small URL-encoded forms is refused before it is read."""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

import pytest
from scrapy.exceptions import UsageError
from scrapy.settings import Settings
from starlette.testclient import TestClient

from searchcrawl.commands.web import trusted_proxies
from searchcrawl.search import trimmed_index
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.trimmed_index import OncePer
from searchcrawl.store import Database
from searchcrawl.store.api_tokens import ApiTokens
from searchcrawl.web.app import WebConfig, create_app
from searchcrawl.web.shared import MAX_FORM_BYTES
from searchcrawl.web.sign_on.sessions import FREE_FAILURES
from searchcrawl.web.views.sign_on_views import throttle_key
from tests.search.test_search_command import Model
from tests.web_site import attempts_at_once

PASSWORD = "unit-password-1"


def unit_config(tmp_path: Path, **changes: object) -> WebConfig:
    """A configuration whose Solr and database are asked nothing on the paths tested here."""
    config = WebConfig(
        solr_url="http://127.0.0.1:9/solr/unit",
        db_url=f"sqlite:///{tmp_path / 'documents.sqlite3'}",
        cache_root=tmp_path / "cache",
        project_dir=tmp_path,
        source_names=lambda: [],
        schedule_of=lambda name: None,
        launcher=None,  # type: ignore[arg-type] # nothing is started here
        credentials=("admin", PASSWORD),
    )
    for key, value in changes.items():
        setattr(config, key, value)
    return config


@pytest.fixture
def web(tmp_path: Path) -> TestClient:
    return TestClient(create_app(unit_config(tmp_path)), base_url="http://127.0.0.1")


def attempt(web: TestClient, password: str) -> int:
    token = re.search(r'name="login_token" value="([^"]+)"', web.get("/admin/login").text)
    assert token is not None
    data = {"login_token": token[1], "username": "admin", "password": password}
    return web.post("/admin/login", data=data, follow_redirects=False).status_code


def test_failed_logins_slow_the_next_attempts_down(web: TestClient) -> None:
    """A hostile review sent 300 wrong passwords in 1.4 s, then the right one got in."""
    assert [attempt(web, f"guess{n}") for n in range(FREE_FAILURES)] == [403] * FREE_FAILURES
    refused = web.post("/admin/login", data={"login_token": "x", "username": "admin", "password": PASSWORD})
    assert refused.status_code == 429 and "Too many failed logins" in refused.text
    assert int(refused.headers["retry-after"]) >= 1
    assert attempt(web, PASSWORD) == 429  # even the right password waits: guessing gains nothing
    throttle = web.app.state.web.throttle  # type: ignore[attr-defined]
    throttle.succeeded("testclient")  # the delay waited out: the count starts again
    throttle.succeeded(throttle_key("testclient", "admin"))
    assert attempt(web, PASSWORD) == 303


def test_a_login_of_ones_own_clears_no_guesses_at_another_name(web: TestClient) -> None:
    """A hostile review: every failure of an address was cleared by any success from it, so a
    user with a role guessed at an administrator's password, logged in as themselves, and again."""
    for number in range(FREE_FAILURES):
        token = re.search(r'name="login_token" value="([^"]+)"', web.get("/admin/login").text)[1]
        web.post("/admin/login", data={"login_token": token, "username": "victim", "password": f"guess{number}"})
    throttle = web.app.state.web.throttle  # type: ignore[attr-defined]
    throttle.succeeded("testclient")  # as if the address's delay were waited out
    assert attempt(web, PASSWORD) == 303  # the attacker's own account
    token = re.search(r'name="login_token" value="([^"]+)"', web.get("/admin/login").text)[1]
    again = web.post("/admin/login", data={"login_token": token, "username": "victim", "password": "guess-again"})
    assert again.status_code == 429  # the guesses at victim still count


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"login_token=x&password=" + b"a" * MAX_FORM_BYTES, "application/x-www-form-urlencoded"),
        (
            b'--b\r\nContent-Disposition: form-data; name="f"; filename="x"\r\n\r\nxx\r\n--b--\r\n',
            "multipart/form-data; boundary=b",
        ),
        (b"{}", "application/json"),
    ],
)
def test_a_post_that_is_not_a_small_url_encoded_form_is_refused_unread(web: TestClient, body: bytes, content_type: str) -> None:
    """Starlette reads any form whole (a 60 MB login POST raised the server's memory by 180 MB
    before its token was checked)."""
    web.get("/admin/login")
    answer = web.post("/admin/login", content=body, headers={"content-type": content_type})
    assert answer.status_code == 413
    assert web.post("/admin/logout", content=body, headers={"content-type": content_type}).status_code == 403  # no session


def test_concurrent_wrong_logins_of_one_address_are_slowed_down_as_if_one_after_the_other(web: TestClient) -> None:
    """The throttle was asked before the form was read and told of the failure after: twenty
    attempts sent at once all passed while the count was still low (a reviewer found it). Sent
    here as twenty ASGI requests on one event loop, each body arriving after a yield."""

    token = re.search(r'name="login_token" value="([^"]+)"', web.get("/admin/login").text)
    assert token is not None
    codes = attempts_at_once(
        web.app,
        "/admin/login",
        {"login_token": token[1], "username": "admin", "password": "guess"},
        ("searchcrawl_login", token[1]),
    )
    assert codes.count(403) == FREE_FAILURES and codes.count(429) == 20 - FREE_FAILURES, codes


def test_proxies_of_the_setting() -> None:
    assert trusted_proxies(["127.0.0.1"]) == ("127.0.0.1",)
    assert trusted_proxies([" 10.0.0.2", "10.1.0.0/16 "]) == ("10.0.0.2", "10.1.0.0/16")
    assert trusted_proxies([]) == trusted_proxies([""]) == ()
    with pytest.raises(UsageError, match="every client"):
        trusted_proxies(["10.0.0.2", "*"])
    settings = Settings({"SEARCHCRAWL_WEB_PROXIES": "10.0.0.2, 10.0.0.3"})  # a string from -s or the environment
    assert trusted_proxies(settings.getlist("SEARCHCRAWL_WEB_PROXIES")) == ("10.0.0.2", "10.0.0.3")


def test_searches_solr_fails_are_logged_once_a_minute_their_query_cut(
    web: TestClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 91: every search Solr refused or did not answer logged its whole query at WARNING,
    without a limit (20 searches, 20 lines of 1,197 characters). Now at most once a minute, as
    the other warnings, the query cut short; the others at DEBUG."""
    now = [0.0]
    monkeypatch.setattr(trimmed_index, "SEARCH_FAILED_LOG", OncePer(60, clock=lambda: now[0]), raising=False)
    query = "harbour " * 150
    with caplog.at_level(logging.DEBUG, logger="searchcrawl"):
        for number in range(20):
            now[0] = number * 2.0  # 20 searches in 40 s
            assert web.get("/", params={"q": query}).status_code == 503  # Solr (port 9) does not answer
        now[0] = 100.0
        assert web.get("/", params={"q": query}).status_code == 503
    failed = [record for record in caplog.records if "failed" in record.getMessage() and "harbour" in record.getMessage()]
    warnings = [record for record in failed if record.levelno == logging.WARNING]
    assert len(warnings) == 2 and len(failed) == 21  # at 0 s and at 100 s
    assert all(len(record.getMessage()) < 500 for record in failed)


def test_suggestions_cached_copies_and_the_api_solr_fails_share_the_once_a_minute_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 91 review: the search page's failures were logged once a minute, but suggestions,
    cached copies and the API's suggestions still logged Solr's whole message at WARNING for every
    request. Every Solr failure of a searcher's request goes through log_failed_search: one
    WARNING a minute for them all, the rest at DEBUG, each line short."""
    monkeypatch.setattr(trimmed_index, "SEARCH_FAILED_LOG", OncePer(60, clock=lambda: 0.0), raising=False)
    config = unit_config(tmp_path)
    web = TestClient(create_app(config), base_url="http://127.0.0.1")
    _id, token = ApiTokens(Database(config.db_url)).create("portal")
    bearer = {"authorization": f"Bearer {token}"}
    query = "harbour " * 150
    with caplog.at_level(logging.DEBUG, logger="searchcrawl"):
        for _ in range(5):  # Solr (port 9) does not answer
            assert web.get("/suggest", params={"q": query[:60]}).status_code == 503
            assert web.get("/cached", params={"id": "s!http://h.test/a", "q": query}).status_code == 503
            assert web.get("/api/suggest", params={"q": query[:60]}, headers=bearer).status_code == 503
            assert web.get("/api/search", params={"q": query}, headers=bearer).status_code == 503
    failed = [record for record in caplog.records if "failed" in record.getMessage() and record.name.startswith("searchcrawl")]
    kinds = {record.getMessage().split(" failed")[0].split(" (")[0].split(" '")[0] for record in failed}
    assert kinds == {"Suggestions", "Cached copy", "API suggestions", "API search"}, kinds
    assert [record.levelno for record in failed].count(logging.WARNING) == 1, [r.getMessage()[:80] for r in failed]
    assert all(len(record.getMessage()) < 500 for record in failed)


class Previous(Model):
    model_id = "test/previous/0123456789ab"


class Blocking:
    """A backfill's ``complete`` check whose Solr is slow: it waits (at most ``bound`` seconds)
    until released, and says whether it was."""

    def __init__(self, bound: float = 5) -> None:
        self.entered, self.released, self.bound = threading.Event(), threading.Event(), bound
        self.held_to_the_end = False

    def __call__(self, _model_id: str) -> bool:
        self.entered.set()
        self.held_to_the_end = not self.released.wait(self.bound)
        return False


@pytest.mark.parametrize("path", ["/?q=harbour", "/api/search?q=harbour"])
def test_choosing_the_semantic_model_keeps_no_other_request_waiting(tmp_path: Path, path: str) -> None:
    """Review R, 8: while SEARCHCRAWL_EMBEDDINGS_PREVIOUS is set, ``for_request`` asks Solr whether
    the new model's passages are complete, once a minute; asked on the event loop, a slow Solr held
    every request (a /suggest while typing here) for as long."""
    config = unit_config(tmp_path)
    _id, token = ApiTokens(Database(config.db_url)).create("portal")
    app = create_app(config)
    check = Blocking()
    current, previous = SemanticModel(Model(), 0.5), SemanticModel(Previous(), 0.5)
    app.state.web.semantic = SemanticSearch(current, previous, complete=check)
    with TestClient(app, base_url="http://127.0.0.1") as web:
        searching = threading.Thread(target=web.get, args=(path,), kwargs={"headers": {"authorization": f"Bearer {token}"}})
        searching.start()
        try:
            assert check.entered.wait(5)
            web.get("/suggest?q=harb")  # answered (its Solr refuses: 503) while the search waits on Solr
        finally:
            check.released.set()
            searching.join(10)
    assert not check.held_to_the_end
