"""Query analytics in a real browser (Playwright with Debian's Chromium), served by `scrapy web`
as a user starts it, against a real Solr holding the crawled harbour corpus: a searcher's
searches and the hits they open (links through /click, no script), then the administrator's
analytics pages show them, and a report downloads as CSV."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.conftest import wait_for
from tests.e2e.test_web_browser import CHROMIUM, browser, dialogs_and_errors  # noqa: F401 - the module's browser
from tests.web_site import PASSWORD, web_served

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (apt-get install chromium)")


@pytest.fixture
def web(harbour_corpus, tmp_path: Path) -> Iterator[str]:
    project, _harbour = harbour_corpus
    with web_served(project, SEARCHCRAWL_DB_URL=f"sqlite:///{tmp_path / 'analytics.sqlite3'}") as url:
        yield url


def test_searches_and_clicks_in_a_browser_show_on_the_analytics_pages(web: str, browser: Browser) -> None:  # noqa: F811
    url = web
    page = browser.new_page()
    seen = dialogs_and_errors(page)
    page.goto(url + "/")
    page.fill("input[name=q]", '"harbour master"')
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(".hit")
    first_title = page.locator(".hit h2").first.inner_text()
    page.locator(".hit h2 a").first.click()  # through /click to the document
    page.wait_for_url(re.compile(r"/log\d\d\.html$"))
    assert page.title() == first_title
    page.go_back()
    page.wait_for_selector(".hit")
    page.click("nav.pages >> text=Next")
    page.wait_for_url(re.compile(r"page=2"))
    page.locator(".hit h2 a").nth(2).click()  # rank 13
    page.wait_for_url(re.compile(r"/log\d\d\.html$"))
    page.goto(url + "/")
    page.fill("input[name=q]", "quaysidezqxnothinghere")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(".none")
    page.goto(url + "/")
    page.fill("input[name=q]", "<b>tugboat</b>")  # markup as a query: text on the pages below
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(".hit, .none")

    admin = browser.new_page()
    seen += dialogs_and_errors(admin)
    admin.goto(url + "/admin/login")
    admin.fill("input[name=username]", "admin")
    admin.fill("input[name=password]", PASSWORD)
    admin.click("main button[type=submit]")
    admin.wait_for_url(url + "/admin")
    admin.click("text=What is searched")
    admin.wait_for_url(re.compile(r"/admin/analytics$"))

    def shown() -> bool:
        admin.reload()
        return admin.inner_text("#total-searches") == "4"

    wait_for(shown, 30, "the searches on the analytics page")
    assert admin.inner_text("#total-clicks") == "2" and admin.inner_text("#total-clicked").startswith("2 ")
    top = [row.split("\t") for row in admin.locator(".analytics-top tbody tr").all_inner_texts()]
    assert top[0][:3] == ['"harbour master"', "2", "24.0"] and top[0][3] == "100%"  # two pages, a click on each
    assert any(row[:2] == ["<b>tugboat</b>", "1"] for row in top)
    assert admin.locator(".analytics-top b").count() == 0  # the query shown as text
    none = [row.split("\t") for row in admin.locator(".analytics-none tbody tr").all_inner_texts()]
    assert none[0][:2] == ["quaysidezqxnothinghere", "1"]
    abandoned = [row.split("\t") for row in admin.locator(".analytics-abandoned tbody tr").all_inner_texts()]
    assert [row[:2] for row in abandoned] == [["<b>tugboat</b>", "1"]]  # found documents, none opened
    positions = {
        row.split("\t")[0]: row.split("\t")[1:] for row in admin.locator(".analytics-positions tbody tr").all_inner_texts()
    }
    assert positions["1"] == ["1", "50.0%"] and positions["11+"] == ["1", "50.0%"] and positions["2"] == ["0", "0.0%"]
    admin.click("text=last 30 days")
    admin.wait_for_url(re.compile(r"days=30"))
    assert admin.inner_text("#total-searches") == "4"
    with admin.expect_download() as download:
        admin.locator("section.none >> text=CSV").click()
    saved = download.value
    assert re.fullmatch(r"searchcrawl-none-\d{4}-\d\d-\d\d-\d{4}-\d\d-\d\d\.csv", saved.suggested_filename)
    rows = list(csv.reader(io.StringIO(Path(saved.path()).read_text(encoding="utf-8"))))
    assert rows[1][:2] == ["quaysidezqxnothinghere", "1"]
    assert seen == []
    page.close()
    admin.close()
