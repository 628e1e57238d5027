"""Suggestions while typing in a real browser (Playwright with Debian's Chromium), served by
`scrapy web` as a user starts it, against a real Solr holding the crawled harbour corpus
(tests/web_site.py): typing shows a list of the index's titles, the keyboard or the mouse chooses
one and searches it, a crawled title holding <script> is offered as text, the search page's
policy lets its own script run and nothing else (no console error, no CSP violation), and
without JavaScript the page is the plain form it was."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Response

from tests.e2e.test_web_browser import CHROMIUM, browser, web  # noqa: F401  # the module's Chromium and `scrapy web`
from tests.web_site import SCRIPT_TITLE

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (apt-get install chromium)")


def watched(page: Page) -> list[str]:
    """Every console message of level warning or error (a CSP violation is one), every script
    error and every dialog the page opens: none may come."""
    seen: list[str] = []

    def console(message: ConsoleMessage) -> None:
        # a resource's failure is told by its response, below (Chromium's own /favicon.ico is none of the page's)
        if message.type in ("error", "warning") and not message.text.startswith("Failed to load resource"):
            seen.append(f"console {message.type}: {message.text}")

    def response(answer: Response) -> None:
        if answer.status >= 400 and urlsplit(answer.url).path != "/favicon.ico":
            seen.append(f"HTTP {answer.status}: {answer.url}")

    page.on("console", console)
    page.on("response", response)
    page.on("pageerror", lambda error: seen.append(f"script error: {error}"))
    page.on("dialog", lambda dialog: (seen.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    return seen


def offered(page: Page, pattern: str) -> None:
    """Wait until the list shown holds options, each of whose texts matches ``pattern``."""
    page.wait_for_function(
        """pattern => {
            const texts = [...document.querySelectorAll("#suggestions [role=option] .text")].map(text => text.textContent);
            return texts.length > 0 && texts.every(text => new RegExp(pattern).test(text));
        }""",
        arg=pattern,
    )


def searched(page: Page) -> str:
    return parse_qs(urlsplit(page.url).query).get("q", [""])[0]


def test_typing_shows_suggestions_and_choosing_one_searches_it(web, browser: Browser) -> None:  # noqa: F811
    url, _project = web
    page = browser.new_page()
    seen = watched(page)
    page.goto(url + "/")
    box = page.locator("form.searchbox input[name=q]")
    assert box.get_attribute("role") == "combobox" and box.get_attribute("aria-expanded") == "false"
    box.press_sequentially("harbour lo", delay=60)  # one key at a time, as a searcher types
    options = page.locator("#suggestions [role=option]")
    offered(page, r"^Harbour log \d\d: the \w+$")  # the list of "harbour lo" (another showed while typing)
    assert box.get_attribute("aria-expanded") == "true"
    texts = [text.split("\n")[0] for text in options.all_inner_texts()]
    assert 1 <= len(texts) <= 8 and all(re.match(r"Harbour log \d\d: the \w+", text) for text in texts), texts
    assert options.first.locator("strong").all_inner_texts() == ["Harbour", "lo"]  # what the words typed begin
    box.press("ArrowDown")
    box.press("ArrowDown")
    assert options.nth(1).get_attribute("aria-selected") == "true"
    assert box.get_attribute("aria-activedescendant") == options.nth(1).get_attribute("id")
    chosen = page.locator("#suggestions [aria-selected=true] .text").inner_text()
    box.press("Enter")
    page.wait_for_url(re.compile(r"\?q="))
    assert searched(page) == chosen
    page.wait_for_selector(".hit")
    assert chosen in page.locator(".hit h2").all_inner_texts()
    # the mouse, and a crawled title holding markup: offered as text, searched as text, no script
    box = page.locator("form.searchbox input[name=q]")
    box.fill("")
    box.press_sequentially("harbour warn", delay=60)
    offered(page, "Harbour warning$")
    option = page.locator("#suggestions [role=option]", has_text="Harbour warning")
    assert option.locator(".text").inner_text() == SCRIPT_TITLE
    assert page.locator("#suggestions script, #suggestions img, #suggestions b").count() == 0
    option.click()
    page.wait_for_url(re.compile(r"\?q=%3Cscript"))
    assert searched(page) == SCRIPT_TITLE
    page.wait_for_selector(".hit")
    assert page.locator(".hit h2").first.inner_text() == SCRIPT_TITLE
    # Escape closes the list; the text typed stays
    box = page.locator("form.searchbox input[name=q]")
    box.fill("")
    box.press_sequentially("harb", delay=60)
    offered(page, "^Harbour")
    box.press("Escape")
    assert page.locator("#suggestions").is_hidden() and box.input_value() == "harb"
    assert seen == []
    page.close()


def test_without_javascript_the_search_page_is_the_plain_form(web, browser: Browser) -> None:  # noqa: F811
    url, _project = web
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(url + "/")
    page.fill("input[name=q]", '"harbour master"')
    page.press("input[name=q]", "Enter")
    page.wait_for_selector(".hit")
    assert "24 documents match" in page.inner_text(".summary")
    assert page.locator("#suggestions").count() == 0
    assert page.locator("form.searchbox input[name=q]").get_attribute("role") is None
    context.close()


def test_the_administration_pages_still_run_no_script(web, browser: Browser) -> None:  # noqa: F811
    url, _project = web
    page = browser.new_page()
    answer = page.goto(url + "/admin/login")
    assert answer is not None and "script-src 'none'" in answer.headers["content-security-policy"]
    search = page.goto(url + "/")
    assert search is not None and "script-src 'self'" in search.headers["content-security-policy"]
    page.close()
