"""The pages' language (issue 79): from the browser's Accept-Language, or the searcher's choice made
with the selector every page carries (a cookie, then back to the same page of this application
only); the machine interfaces stay English. Through Starlette's TestClient, asking Solr nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from searchcrawl.system.translations import language
from searchcrawl.web.app import create_app
from searchcrawl.web.shared import LANGUAGE_COOKIE
from tests.web.test_app import unit_config


@pytest.fixture
def web(tmp_path: Path) -> TestClient:
    return TestClient(create_app(unit_config(tmp_path)), base_url="http://127.0.0.1")


def words(code: str, message: str) -> str:
    return language(code).translations.gettext(message)


@pytest.mark.parametrize(("accept", "code"), [("de-DE,de;q=0.9", "de"), ("ja,en;q=0.5", "ja"), ("fr-FR", "en"), (None, "en")])
def test_the_browsers_languages_choose_the_pages(web: TestClient, accept: str | None, code: str) -> None:
    page = web.get("/admin/login", headers={"accept-language": accept} if accept else {})
    assert page.status_code == 200
    assert f'<html lang="{code}">' in page.text and page.headers["content-language"] == code
    assert "Accept-Language" in page.headers["vary"]
    assert words(code, "Administration") in page.text and words(code, "Password") in page.text


def test_the_german_and_japanese_pages_are_not_english(web: TestClient) -> None:
    german = web.get("/admin/login", headers={"accept-language": "de"}).text
    japanese = web.get("/admin/login", headers={"accept-language": "ja"}).text
    assert "Passwort" in german and "Verwaltung" in german
    assert "パスワード" in japanese and "管理" in japanese
    assert "Password" not in german and "Password" not in japanese


def test_the_searchers_choice_is_kept_and_wins_over_the_browser(web: TestClient) -> None:
    chosen = web.post("/language", data={"language": "ja", "here": "/admin/login?x=1"}, follow_redirects=False)
    assert chosen.status_code == 303 and chosen.headers["location"] == "/admin/login?x=1"
    cookie = chosen.headers["set-cookie"]
    assert cookie.startswith(f"{LANGUAGE_COOKIE}=ja;") and "HttpOnly" in cookie and "SameSite=lax" in cookie
    page = web.get("/admin/login", headers={"accept-language": "de"})
    assert '<html lang="ja">' in page.text
    # the selector: the current language shown, the others offered, each by its own name
    assert '<strong lang="ja" aria-current="true">日本語</strong>' in page.text
    assert '<button type="submit" name="language" value="de" lang="de">Deutsch</button>' in page.text
    assert 'name="here" value="/admin/login"' in page.text
    # a language not offered clears the choice: the browser's decide again
    cleared = web.post("/language", data={"language": "xx", "here": "/admin/login"}, follow_redirects=False)
    assert f'{LANGUAGE_COOKIE}=""' in cleared.headers["set-cookie"] and "Max-Age=0" in cleared.headers["set-cookie"]
    web.cookies.delete(LANGUAGE_COOKIE)
    assert '<html lang="de">' in web.get("/admin/login", headers={"accept-language": "de"}).text


@pytest.mark.parametrize(
    "here",
    [
        "//evil.example/",
        "https://evil.example/",
        "/\\evil.example",
        "evil",
        "",
        "/x\r\nSet-Cookie: a=b",
        "/" + "a" * 5000,
        "/admin/../../other",
        "/%2e%2e/other",
    ],
)
def test_the_selector_leads_back_to_this_application_only(web: TestClient, here: str) -> None:
    answer = web.post("/language", data={"language": "de", "here": here}, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"] == "/"


def test_a_choice_from_another_site_is_refused(web: TestClient) -> None:
    answer = web.post(
        "/language", data={"language": "de", "here": "/"}, headers={"origin": "https://evil.example"}, follow_redirects=False
    )
    assert answer.status_code == 403 and "set-cookie" not in answer.headers
    german = web.post(
        "/admin/login", data={"x": "1"}, headers={"origin": "https://evil.example", "accept-language": "de"}
    )  # the refusal itself in the page's language
    assert german.status_code == 403 and '<html lang="de">' in german.text and "<h1>Abgelehnt</h1>" in german.text


def test_under_a_prefix_the_way_back_stays_under_it(tmp_path: Path) -> None:
    web = TestClient(create_app(unit_config(tmp_path, prefix="/search")), base_url="http://127.0.0.1")
    answer = web.post("/search/language", data={"language": "de", "here": "/search/admin/login"}, follow_redirects=False)
    assert answer.headers["location"] == "/search/admin/login" and "Path=/search/" in answer.headers["set-cookie"]
    for outside in ("/other/", "/search/../other/", "/search/%2E%2e/other/", "/search/./."):
        answer = web.post("/search/language", data={"language": "de", "here": outside}, follow_redirects=False)
        assert answer.headers["location"] == "/search/", outside
    assert '<html lang="de">' in web.get("/search/admin/login").text


def test_the_machine_interfaces_stay_english(web: TestClient) -> None:
    answer = web.get("/api/search", params={"q": "x"}, headers={"accept-language": "de"})
    assert "content-language" not in answer.headers
