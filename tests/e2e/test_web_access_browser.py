"""Secure search in a real browser (Playwright with Debian's Chromium, as tests/e2e/test_web_browser.py
drives it): `scrapy web` started as a user starts it, with a real LDAP directory (slapd,
tests/directory_server.py) and documents with access tokens in a real Solr; a searcher signs in,
sees exactly the documents they may read, and signs out."""

from __future__ import annotations

import re
import signal

from playwright.sync_api import Browser, Page

from tests.conftest import Project, free_port
from tests.directory_server import DirectoryServer
from tests.e2e.test_web_access import Corpus
from tests.e2e.test_web_browser import browser, dialogs_and_errors, pytestmark  # noqa: F401 - the fixture, Chromium's check
from tests.web_site import serve_web


def test_a_searcher_signs_in_sees_exactly_their_documents_and_signs_out(
    browser: Browser, project: Project, solr, directory_server: DirectoryServer
) -> None:
    """`scrapy web` with the directory of tests/directory_server.py; documents with access tokens
    in Solr (tests/e2e/test_web_access.py's Corpus)."""
    corpus = Corpus(solr, directory_server)
    project.data_dir.mkdir(parents=True)
    port = free_port()
    process = serve_web(project, port, **directory_server.settings())
    url = f"http://127.0.0.1:{port}"
    search = f"{url}/?q={corpus.word}&source={corpus.source}"

    def titles(page: Page) -> set[str]:
        return {title.split(" (", 1)[0] for title in page.locator(".hit h2").all_inner_texts()}

    try:
        page = browser.new_page()
        seen = dialogs_and_errors(page)
        page.goto(search)
        assert titles(page) == corpus.readers[None] and "Public documents only" in page.inner_text("main")
        page.click("a.signin")
        page.wait_for_url(re.compile(r"/login\?back="))  # the search it came from travels along
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", "wrong")
        page.click("button[type=submit] >> text=Sign in")
        assert "Wrong user name or password." in page.inner_text(".error")
        page.fill("input[name=username]", "alice")
        page.fill("input[name=password]", directory_server.passwords["alice"])
        page.click("button[type=submit] >> text=Sign in")
        page.wait_for_url(search)  # back on the search signed in from, now alice's
        assert page.inner_text(".searcher") == "Signed in as alice"
        assert titles(page) == corpus.readers["alice"]
        assert f"{len(corpus.readers['alice'])} documents match" in page.inner_text(".summary")
        page.click("button >> text=Sign out")
        page.wait_for_url(url + "/")
        assert page.locator(".searcher").count() == 0 and page.locator("a.signin").count() == 1
        page.goto(search)
        assert titles(page) == corpus.readers[None]
        assert seen == []
        page.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    log = (project.data_dir.parent / f"web-{port}.log").read_text()
    assert directory_server.passwords["alice"] not in log and directory_server.bind_password not in log


def test_each_administration_role_in_a_browser(browser: Browser, project: Project, directory_server: DirectoryServer) -> None:
    """Issue 79: `scrapy web` with roles for directory users, set in the environment as a systemd
    unit sets them: an operator, a relevance editor and an administrator log in by name, each sees
    the links of their role, the relevance editor adds a stopword, a page of another role is
    refused, and the administrator finds both on the audit page."""
    project.data_dir.mkdir(parents=True)
    project.source("roles-site", 'seeds = ["http://127.0.0.1:9/"]\n')
    port = free_port()
    roles = {
        "SEARCHCRAWL_WEB_ADMINISTRATORS": "user:carol",
        "SEARCHCRAWL_WEB_OPERATORS": f"group:{directory_server.group_dn('finance')}",  # alice, through accounting
        "SEARCHCRAWL_WEB_RELEVANCE_EDITORS": "user:bob",
    }
    process = serve_web(project, port, **directory_server.settings(), **roles)
    url = f"http://127.0.0.1:{port}"

    def log_in(page: Page, user: str) -> None:
        page.goto(url + "/admin")
        page.wait_for_url(re.compile(r"/admin/login$"))
        page.fill("input[name=username]", user)
        page.fill("input[name=password]", directory_server.passwords[user])
        page.click("button[type=submit] >> text=Log in")
        page.wait_for_url(re.compile(r"/admin$"))

    try:
        alice = browser.new_page()
        seen = dialogs_and_errors(alice)
        log_in(alice, "alice")
        assert "operator" in alice.inner_text("header") and alice.locator("a >> text=The last 24 hours").count() == 1
        assert alice.locator("a >> text=API tokens").count() == 0 and alice.locator("a >> text=Best bets, boosts").count() == 0
        alice.goto(url + "/admin/relevance")
        assert "do not allow this page" in alice.inner_text("main")
        bob = browser.new_page()
        log_in(bob, "bob")
        bob.click("a >> text=Best bets, boosts and demotions, synonyms and stopwords")
        bob.fill("form.add-stopword input[name=word]", "quayside")
        bob.click("form.add-stopword button[type=submit]")
        bob.wait_for_url(re.compile(r"/admin/relevance$"))
        assert "quayside" in bob.inner_text("table.stopwords")
        carol = browser.new_page()
        log_in(carol, "carol")
        carol.click("a >> text=Audit log")
        rows = carol.locator("table.audit tbody tr").all_inner_texts()
        assert any("bob" in row and "relevance editor" in row and "relevance:add-stopword" in row for row in rows), rows
        assert any("alice" in row and "operator" in row and "login" in row for row in rows), rows
        assert seen == []
        for page in (alice, bob, carol):
            page.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
    log = (project.data_dir.parent / f"web-{port}.log").read_text()
    assert all(password not in log for password in directory_server.passwords.values())
