"""Relevance administration in a real browser (Playwright with Debian's Chromium), served by
`scrapy web` against a real Solr core of its own (synonyms are a core's): an administrator adds
a best bet, a boost and a synonym on the relevance page, and searches then show the best bet
above the hits (marked), the boosted document first, and the document the synonym finds; the
best bet edited in place (its form filled with it) pins its new URL, and once its end is past
it is listed as expired and no longer shown."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pysolr
import pytest
from playwright.sync_api import Browser, Page

from searchcrawl.access.tokens import Access
from searchcrawl.dev.solr_runner import DevSolr
from tests.conftest import Project, add_core
from tests.e2e.test_web_browser import CHROMIUM, browser, dialogs_and_errors  # noqa: F401 - the module's Chromium
from tests.web_site import browser_login, web_served

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (apt-get install chromium)")

BASE = "http://relevance-browser.test"
DOCS = [
    ("wiki/old", "Old tide tables", "2015-01-01T00:00:00Z", "tide tables of the harbour"),
    ("docs/new", "New tide tables", "2026-11-01T00:00:00Z", "tide tables of the harbour"),
    ("wiki/parking", "Parking rules", "2024-01-01T00:00:00Z", "automobile parking rules"),
]


@pytest.fixture
def web(dev_solr: DevSolr, tmp_path: Path) -> Iterator[str]:
    solr_url = add_core(dev_solr, f"relevance_browser_{uuid.uuid4().hex[:8]}")
    docs = [
        {
            "id": f"wiki!{BASE}/{path}",
            "url": f"{BASE}/{path}",
            "display_url": f"{BASE}/{path}",
            "source": "wiki",
            "title": title,
            "mimetype": "text/html",
            "last_modified": modified,
            "content": content,
            **Access.public("test").fields(),
        }
        for path, title, modified, content in DOCS
    ]
    pysolr.Solr(solr_url, always_commit=True, timeout=30).add(docs)
    (tmp_path / "sources").mkdir()
    project = Project(tmp_path / "data", tmp_path / "sources", solr_url)
    with web_served(project) as url:
        yield url


def titles(page: Page, url: str, query: str) -> list[str]:
    page.goto(f"{url}/?q={query}")
    page.wait_for_selector(".hits")
    return page.locator(".hitlist .hit h2").all_inner_texts()


def add(page: Page, form: str, fields: dict[str, str], button: str) -> None:
    for name, value in fields.items():
        field = page.locator(f"form.{form} [name={name}]")
        if field.evaluate("element => element.tagName") == "SELECT":
            field.select_option(value)
        else:
            field.fill(value)
    page.click(f"form.{form} button >> text={button}")
    page.wait_for_url(re.compile(r"/admin/relevance$"))


def test_an_administrator_adds_a_best_bet_a_boost_and_a_synonym_in_a_browser(web: str, browser: Browser) -> None:
    page = browser.new_page()
    seen = dialogs_and_errors(page)
    assert titles(page, web, "tide+harbour") == ["Old tide tables", "New tide tables"]
    assert page.locator(".bestbets").count() == 0
    assert titles(page, web, "car") == []
    browser_login(page, web)
    page.click("text=Best bets, boosts and demotions, synonyms and stopwords")
    page.wait_for_url(re.compile(r"/admin/relevance$"))
    add(page, "add-bet", {"queries": "Tide Harbour", "urls": f"{BASE}/wiki/parking"}, "Add best bet")
    assert "Best bet added." in page.inner_text(".flash")
    add(page, "add-boost", {"kind": "url", "value": f"{BASE}/docs/", "factor": "3"}, "Add rule")
    assert "Rule added." in page.inner_text(".flash")
    add(page, "add-synonyms", {"terms": "car, automobile"}, "Add synonyms")
    assert "Synonyms added." in page.inner_text(".flash") and "did not take" not in page.content()
    assert "car, automobile" in page.inner_text("table.synonyms")
    # the search: the best bet above the hits, marked, and not repeated; the boosted document first
    assert titles(page, web, "tide+harbour") == ["New tide tables", "Old tide tables"]
    assert page.locator(".bestbets .hit h2").all_inner_texts() == ["Parking rules"]
    assert page.locator(".bestbets .bet-mark").inner_text().lower() == "best bet"
    first = page.locator(".bestbets, .hitlist").first
    assert first.get_attribute("class") == "bestbets"  # above the hits
    # the synonym finds the document that says "automobile" only, Solr not restarted
    assert titles(page, web, "car") == ["Parking rules"]
    # the best bet edited in place: its form filled with it, saved under the same rule
    page.goto(f"{web}/admin/relevance")
    assert page.locator("table.bets tr.bet").count() == 1 and page.inner_text("table.bets tr.bet td.state") == "active"
    page.click("table.bets a.edit")
    page.wait_for_selector("form.edit-bet")
    assert page.input_value("form.edit-bet [name=urls]") == f"{BASE}/wiki/parking"
    assert page.input_value("form.edit-bet [name=queries]") == "tide harbour"
    add(page, "edit-bet", {"urls": f"{BASE}/wiki/old"}, "Save best bet")
    assert "saved." in page.inner_text(".flash") and page.locator("table.bets tr.bet").count() == 1
    assert titles(page, web, "tide+harbour") == ["New tide tables"]
    assert page.locator(".bestbets .hit h2").all_inner_texts() == ["Old tide tables"]
    # an end already past: listed as expired, not shown
    page.goto(f"{web}/admin/relevance")
    page.click("table.bets a.edit")
    page.wait_for_selector("form.edit-bet")
    add(page, "edit-bet", {"start": "2020-01-01", "end": "2020-12-31 18:00"}, "Save best bet")
    assert page.inner_text("table.bets tr.bet td.state") == "expired"
    assert "from Jan 1, 2020 until Dec 31, 2020, 6:00\u202fPM" in page.inner_text("table.bets tr.bet td.when")
    assert titles(page, web, "tide+harbour") == ["New tide tables", "Old tide tables"]
    assert page.locator(".bestbets").count() == 0
    assert seen == []
    page.close()
