"""The web application in a real browser (Playwright with Debian's Chromium), served by `scrapy
web` as a user starts it, against a real Solr holding a crawled corpus: search, facets and
pages; a crawled title holding <script> shown as text with no script run; an administrator
logging in, starting a crawl, watching its live page refresh itself, and suspending it."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from searchcrawl.store import Database
from searchcrawl.store.runs import Runs
from searchcrawl.system.processes import process_alive
from tests.conftest import Project, wait_for
from tests.sites import build_intranet
from tests.web_site import PASSWORD, SCRIPT_TITLE, browser_login, kill_crawl, web_served

CHROMIUM = Path(os.environ.get("SEARCHCRAWL_CHROMIUM_PATH", "/usr/lib/chromium/chromium"))
pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (apt-get install chromium)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def web(harbour_corpus) -> Iterator[tuple[str, Project]]:
    project, _harbour = harbour_corpus
    with web_served(project) as url:
        yield url, project


def dialogs_and_errors(page: Page) -> list[str]:
    """Every dialog the page opens (none may) and every console message."""
    seen: list[str] = []
    page.on("dialog", lambda dialog: (seen.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return seen


def test_search_facets_and_pages_in_a_browser(web, browser: Browser) -> None:
    url, _project = web
    page = browser.new_page()
    page.goto(url + "/")
    page.fill("input[name=q]", '"harbour master"')  # a phrase only this corpus holds
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(".hit")
    assert "24 documents match" in page.inner_text(".summary")
    assert page.locator(".hit").count() == 10
    assert page.locator(".hit mark").count() >= 10  # highlighted snippets
    page.click("#facet-modified >> text=over a year ago")
    page.wait_for_url(re.compile(r"modified=older"))
    assert "12 documents match" in page.inner_text(".summary")
    page.click("nav.pages >> text=Next")
    page.wait_for_url(re.compile(r"page=2"))
    assert page.locator(".hit").count() == 2
    titles = page.locator(".hit h2").all_inner_texts()
    assert all(re.match(r"Harbour log \d\d: the \w+", title) for title in titles)
    bookmarked = page.url
    again = browser.new_page()
    again.goto(bookmarked)  # the same page from its URL alone
    assert again.locator(".hit h2").all_inner_texts() == titles
    again.close()
    page.close()


def test_a_hits_cached_copy_in_a_browser(web, browser: Browser) -> None:
    """Issue 79: a searcher opens a hit's cached copy from the results: its indexed text, the
    search's words marked, and back to the results."""
    url, _project = web
    page = browser.new_page()
    seen = dialogs_and_errors(page)
    page.goto(url + "/")
    page.fill("input[name=q]", '"harbour master"')
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(".hit")
    title = page.locator(".hit h2").first.inner_text()
    page.locator(".hit a.cached").first.click()
    page.wait_for_url(re.compile(r"/cached\?id="))
    assert page.locator("h1").inner_text() == title
    assert "harbour master" in {text.lower() for text in page.locator(".cached-text mark").all_inner_texts()}  # the phrase
    page.click("text=Back to the results")
    page.wait_for_selector(".hit")
    assert page.locator(".hit h2").first.inner_text() == title and seen == []
    page.close()


def test_several_types_and_a_sort_by_date_in_a_browser(web, harbour_corpus, browser: Browser) -> None:
    """Issue 59: two values of the type facet clicked one after the other, then a sort chosen:
    links only, no script; the state stays in the URL."""
    url, _project = web
    harbour = harbour_corpus[1]
    page = browser.new_page()
    seen = dialogs_and_errors(page)
    page.goto(f"{url}/?q=harbour+master&source={harbour.main}")  # the words: the logs, the warning, the index, the notes
    page.wait_for_selector(".hit")
    assert "27 documents match" in page.inner_text(".summary")
    page.click('#facet-type >> text="Web page"')
    page.wait_for_url(re.compile(r"type=text%2Fhtml"))
    assert "26 documents match" in page.inner_text(".summary")
    page.click('#facet-type >> text="Text"')  # counted though a type is chosen: it adds to it
    page.wait_for_url(re.compile(r"type=text%2Fhtml&type=text%2Fplain"))
    assert "27 documents match" in page.inner_text(".summary")
    assert page.locator("#facet-type li.selected").count() == 2
    page.click('.sort >> text="Date (newest first)"')
    page.wait_for_url(re.compile(r"sort=date"))
    assert "type=text%2Fhtml&type=text%2Fplain" in page.url and "27 documents match" in page.inner_text(".summary")
    titles = page.locator(".hit h2").all_inner_texts()
    numbers = [int(match[1]) for title in titles if (match := re.match(r"Harbour log (\d\d)", title))]
    assert numbers and all(number % 2 == 0 for number in numbers)  # the first ten: modified now, not two years ago
    assert page.locator(".hit .type").first.inner_text() in ("Web page", "Text")
    assert seen == []
    page.close()


def test_a_crawled_script_title_is_harmless_in_a_browser(web, browser: Browser) -> None:
    url, _project = web
    page = browser.new_page()
    seen = dialogs_and_errors(page)
    page.goto(url + "/?q=%22claims+about+the+harbour%22")
    page.wait_for_selector(".hit")
    assert page.locator(".hit h2").first.inner_text() == SCRIPT_TITLE
    assert "<img src=x onerror=alert('img')>" in page.locator(".hit .snippet").first.inner_text()
    assert page.locator(".hit script, .hit img, .hit b").count() == 0  # text, not elements
    page.wait_for_timeout(500)
    assert seen == []
    page.close()


def test_admin_starts_watches_and_suspends_a_crawl(web, browser: Browser, tmp_path: Path, serve) -> None:
    url, project = web
    root = tmp_path / "intranet"
    root.mkdir()
    build_intranet(root)
    site = serve(root)
    name = f"slowharbour-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 3\ndelay = 0.25\nconcurrent_requests = 1\n')
    page = browser.new_page()
    seen = dialogs_and_errors(page)
    browser_login(page, url)
    assert "Solr answers (OK)" in page.content()
    row = page.locator("tr", has=page.locator(f"a[href='/admin/sources/{name}']"))
    assert "never crawled" in row.inner_text()
    row.locator("button[value=start]").click()
    page.wait_for_selector(".flash")
    assert re.search(rf"{name}: crawl started as job \d+", page.inner_text(".flash"))
    database = Database(f"sqlite:///{project.data_dir / 'documents.sqlite3'}", migrate=False)
    try:
        runs = Runs(database)
        wait_for(lambda: (runs.latest(name) or {}).get("state") == "running", 60, "the crawl's run to begin")
        run_id = runs.latest(name)["id"]
        try:
            page.goto(f"{url}/admin/runs/{run_id}")
            assert page.locator("meta[http-equiv=refresh]").count() == 1  # the live page refreshes itself
            wait_for(lambda: page.locator(".counter-pages").count() and int(page.inner_text(".counter-pages")) > 0, 30, "pages")
            first = int(page.inner_text(".counter-pages"))
            # no reload by the test: the page's own refresh shows the crawl's progress
            wait_for(lambda: int(page.inner_text(".counter-pages") or 0) > first, 30, "the page to refresh with more pages")
            assert "pages/min" in page.inner_text(".rate") and "to add" in page.inner_text(".pending")
            assert "spool files" in page.inner_text(".cache") and "failed" in page.inner_text(".errors")
            page.click("button[value=suspend]")
            page.wait_for_selector(".flash")
            assert f"run {run_id} asked to suspend" in page.inner_text(".flash")

            def suspended() -> bool:
                page.reload()
                return "suspended" in page.inner_text(".runstate")

            wait_for(suspended, 60, "the run to be suspended")
            assert page.locator("meta[http-equiv=refresh]").count() == 0
            run = runs.latest(name)
            assert run["state"] == "suspended" and run["reason"]
            wait_for(lambda: not process_alive(run["pid"]), 30, "the crawl process to end")
            queued = run and project.table().count_by(name, "state").get("queued", 0)
            assert queued, "suspended before the end: URLs still wait"
        finally:
            run = runs.latest(name)
            kill_crawl(run and run["pid"], name)
    finally:
        database.close()
    assert seen == []
    page.close()
    log = (project.data_dir.parent / f"web-{url.rsplit(':', 1)[1]}.log").read_text()
    assert "Serving searchcrawl's pages on http://127.0.0.1:" in log and PASSWORD not in log
