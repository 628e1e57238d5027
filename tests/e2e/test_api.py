"""The JSON API and the portals' search box against a real Solr, served by `scrapy web` as a user
starts it (issue 59): tokens made on the administration page; the harbour corpus searched as
JSON with facets and pages, the same hits as the search page's; the trimming (documents with
access tokens and a real LDAP directory): a restricted document never in a visitor token's
answer, in the answer of a token acting for its reader; each token's rate limit (429 with
Retry-After, another token unaffected, searching again after the wait); and the search box on a portal page of
another origin in Debian's Chromium, submitting to the search page."""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pysolr
import pytest
import requests

from tests.conftest import Project, free_port, wait_for
from tests.directory_server import DirectoryServer
from tests.e2e.test_web_access import Corpus as AccessCorpus
from tests.e2e.test_web_access import misspelt
from tests.web_site import PASSWORD, Corpus, serve_web


def page_hits(page: str) -> list[tuple[str, str]]:
    """(URL shown, title) of each hit on a result page: its link goes through /click (query
    analytics, on in `scrapy web`), the URL under its title is the document's."""
    found = re.findall(r'<li class="hit">\s*<h2><a href="[^"]*"[^>]*>(.*?)</a></h2>\s*<div class="url">(.*?)</div>', page)
    return [(url, title) for title, url in found]


CHROMIUM = Path(os.environ.get("SEARCHCRAWL_CHROMIUM_PATH", "/usr/lib/chromium/chromium"))


@pytest.fixture
def harbour_web(harbour_corpus) -> Iterator[tuple[str, Corpus]]:
    project, corpus = harbour_corpus
    project.data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = serve_web(project, port)
    yield f"http://127.0.0.1:{port}", corpus
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def admin_session(base: str) -> requests.Session:
    """A session logged in as the administrator, as one logs in on /admin/login."""
    admin = requests.Session()
    form = admin.get(base + "/admin/login", timeout=30)
    login = re.search(r'name="login_token" value="([^"]+)"', form.text)
    assert login is not None
    data = {"login_token": login[1], "username": "admin", "password": PASSWORD}
    admin.post(base + "/admin/login", data=data, timeout=30).raise_for_status()
    return admin


def make_token(base: str, name: str, on_behalf: bool = False) -> str:
    """A token made as an administrator makes one: logged in, on /admin/api."""
    with admin_session(base) as admin:
        csrf = re.search(r'name="csrf" value="([^"]+)"', admin.get(base + "/admin/api", timeout=30).text)
        assert csrf is not None
        made = admin.post(
            base + "/admin/api", data={"csrf": csrf[1], "name": name, **({"on_behalf": "1"} if on_behalf else {})}, timeout=30
        )
        token = re.search(r'id="new-token">(sct_[^<]+)<', made.text)
        assert made.status_code == 200 and token is not None
        return token[1]


def api(base: str, token: str, **params: str) -> requests.Response:
    return requests.get(base + "/api/search", params=params, headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_the_api_answers_the_search_pages_hits_facets_and_pages(harbour_web) -> None:
    base, corpus = harbour_web
    token = make_token(base, "portal")
    assert requests.get(base + "/api/search", params={"q": "harbour"}, timeout=30).status_code == 401
    assert api(base, "sct_" + "x" * 43, q="harbour").status_code == 401
    params = {"q": '"harbour master"', "source": corpus.main}
    first = api(base, token, **params)
    assert first.status_code == 200, first.text
    data = first.json()
    assert (data["total"], data["page"], data["rows"], data["pages"]) == (24, 1, 10, 3)
    assert len(data["hits"]) == 10 and all(hit["title"] in corpus.pages.values() for hit in data["hits"])
    assert all(any(part["match"] for part in hit["snippet_parts"]) for hit in data["hits"])
    assert {hit["type"] for hit in data["hits"]} == {"Web page"} and data["hits"][0]["language"] == "en"
    assert data["facets"]["modified"]["values"][-1]["count"] == 12  # half are two years old
    sources = {value["value"]: value for value in data["facets"]["source"]["values"]}
    assert sources[corpus.main]["count"] == 24 and sources[corpus.main]["chosen"]
    # each page: the search page's hits, in its order
    for number in ("1", "2", "3"):
        answer = api(base, token, **params, page=number).json()
        page = requests.get(base + "/", params={**params, "page": number}, timeout=30)
        assert [(hit["url"], hit["title"]) for hit in answer["hits"]] == page_hits(page.text), number
    older = api(base, token, **params, modified="older", rows="20").json()
    assert (older["total"], len(older["hits"]), older["pages"]) == (12, 12, 1)
    assert [value["value"] for value in older["facets"]["modified"]["values"] if value["chosen"]] == ["older"]
    # nothing found: the spelling suggestions, as the page's "did you mean"
    missed = api(base, token, q="harbuor").json()
    assert missed["total"] == 0 and missed["hits"] == [] and isinstance(missed["spelling"], list)


def test_a_token_over_its_rate_gets_429_with_retry_after_and_searches_again_after_the_wait(harbour_corpus) -> None:
    """SEARCHCRAWL_WEB_API_RATE and _BURST set as a user sets them (``-s``): a burst of 3, then one
    request every 2 seconds; a browser origin named, so the 429 carries the CORS headers."""
    project, corpus = harbour_corpus
    project.data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base, origin = f"http://127.0.0.1:{port}", "http://portal.example"
    settings = ("-s", "SEARCHCRAWL_WEB_API_RATE=30", "-s", "SEARCHCRAWL_WEB_API_BURST=3")
    process = serve_web(project, port, *settings, SEARCHCRAWL_WEB_API_ORIGINS=origin)
    try:
        busy, other = make_token(base, "busy portal"), make_token(base, "other portal")
        params = {"q": '"harbour master"', "source": corpus.main}

        def search(token: str) -> requests.Response:
            headers = {"authorization": f"Bearer {token}", "origin": origin}
            return requests.get(base + "/api/search", params=params, headers=headers, timeout=30)

        answers = [search(busy) for _ in range(3)]
        assert [answer.status_code for answer in answers] == [200, 200, 200], answers[-1].text
        # the burst spent: refused until a request's worth has come back (2 s at most; a slow
        # machine may have refilled one already: the next is refused then)
        refused = next((answer for answer in (search(busy) for _ in range(3)) if answer.status_code == 429), None)
        assert refused is not None, "no 429 after the burst"
        assert refused.headers["retry-after"] in ("1", "2"), refused.headers
        assert refused.json()["error"] == "rate_limited" and busy not in refused.text
        assert refused.headers["access-control-allow-origin"] == origin and refused.headers["cache-control"] == "no-store"
        other_answer = search(other)  # a bucket of its own
        assert other_answer.status_code == 200 and other_answer.json()["total"] == 24
        # once the wait has passed, the busy token searches again
        wait_for(lambda: search(busy).status_code == 200, 10, "the busy token's bucket to refill")
        log = (project.data_dir.parent / f"web-{port}.log").read_text()
        assert "refused over the rate limit" in log and "'busy portal'" in log and busy not in log
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


@pytest.fixture
def access_web(project: Project, solr: pysolr.Solr, directory_server: DirectoryServer) -> Iterator[tuple[str, AccessCorpus]]:
    """`scrapy web` with this worker's LDAP directory, over documents with access tokens."""
    corpus = AccessCorpus(solr, directory_server)
    project.data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    process = serve_web(project, port, **directory_server.settings())
    yield f"http://127.0.0.1:{port}", corpus
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def names(corpus: AccessCorpus, answer: requests.Response) -> set[str]:
    assert answer.status_code == 200, answer.text
    return {corpus.name_of(hit["url"]) for hit in answer.json()["hits"]}


def test_a_token_sees_public_documents_and_a_named_users_for_a_token_acting_for_users(
    access_web, directory_server: DirectoryServer
) -> None:
    base, corpus = access_web
    visitor, acting = make_token(base, "visitor"), make_token(base, "intranet", on_behalf=True)
    params = {"q": corpus.word, "source": corpus.source, "rows": "20"}
    assert names(corpus, api(base, visitor, **params)) == corpus.readers[None] == {"public"}
    assert names(corpus, api(base, acting, **params)) == {"public"}  # no user named: a visitor
    # a token that may not act for users cannot name one
    refused = api(base, visitor, **params, user="alice")
    assert refused.status_code == 403 and "insufficient_scope" in refused.headers["www-authenticate"]
    for user in ("alice", "bob", "carol"):
        answer = api(base, acting, **params, user=user)
        assert names(corpus, answer) == corpus.readers[user], user
        assert answer.json()["searcher"] == {"user": user, "public_only": False, "error": ""}
        assert answer.json()["total"] == len(corpus.readers[user])
    # alice's own document, by its one word: hers only
    assert names(corpus, api(base, acting, q=corpus.secret, user="alice")) == {"alice-own"}
    two = f"{misspelt(corpus.word)} {corpus.typo}"  # a near miss of a word they may read, and of hers
    assert api(base, acting, q=two, user="alice").json()["spelling"] == [f"{corpus.word} {corpus.secret}"]
    for token, user in ((visitor, {}), (acting, {"user": "bob"})):
        for query in (corpus.secret, corpus.typo, two):  # nor spelt for them (issue 72 (1))
            data = api(base, token, q=query, **user).json()
            assert data.pop("q") == query and data["total"] == 0 and corpus.secret not in json.dumps(data), query
    # a user the directory does not know: their name alone, no group: public documents
    assert names(corpus, api(base, acting, **params, user="nobody-here")) == {"public"}
    # another entry, named bob@realm, and a name the directory matches to bob (fullwidth): none
    # of bob's documents (they were: the name folded to user:bob, the entry found was bob's)
    with directory_server.added_person("bob@partner.example", "partner-password"):
        for name in ("bob@partner.example", "\uff42ob"):
            assert names(corpus, api(base, acting, **params, user=name)) == {"public"}, name


class Portal(http.server.ThreadingHTTPServer):
    """A portal's page on a loopback origin of its own, including the search box with the CSP a
    portal needs for it (script-src and form-action naming the search's origin)."""

    def __init__(self, search: str, box: bool = True) -> None:
        page = (
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Portal</title></head><body>"
            "<h1>Intranet portal</h1><div id='box'></div>"
            + (
                f"<script src='{search}/static/searchbox.js' data-target='#box' data-placeholder='Search the harbour'></script>"
                if box
                else ""
            )
            + "</body></html>"
        ).encode()
        policy = f"default-src 'none'; script-src {search}; form-action {search}; connect-src {search}"

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("content-security-policy", policy)
                self.send_header("content-length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/"
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (apt-get install chromium)")
def test_the_search_box_on_a_portal_of_another_origin_submits_to_the_search_page(harbour_web) -> None:
    from playwright.sync_api import sync_playwright

    base, _corpus = harbour_web
    portal = Portal(base)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
            page = browser.new_page()
            refused: list[str] = []
            page.on("console", lambda message: refused.append(message.text) if "Refused" in message.text else None)
            page.goto(portal.url)
            box = page.locator("#box form.searchcrawl-box")
            box.wait_for()
            assert box.get_attribute("action") == base + "/" and box.get_attribute("method") == "get"
            assert page.get_attribute("#box input[name=q]", "placeholder") == "Search the harbour"
            page.fill("#box input[name=q]", '"harbour master"')
            page.press("#box input[name=q]", "Enter")
            page.wait_for_url(re.compile(re.escape(base) + r"/\?q="))
            page.wait_for_selector(".hit")
            assert "24 documents match" in page.inner_text(".summary")
            assert refused == []  # no CSP violation on the portal, none on our page (its favicon is a 404)
            browser.close()
    finally:
        portal.shutdown()
        portal.server_close()


@pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} missing (apt-get install chromium)")
def test_a_portal_page_of_an_origin_named_calls_the_api_and_another_cannot_read_it(harbour_corpus) -> None:
    """CORS in a real browser: SEARCHCRAWL_WEB_API_ORIGINS names one portal; its page's fetch
    with a token (a preflight: the Authorization header) reads the answer; another origin's is
    blocked by the browser."""
    from playwright.sync_api import sync_playwright

    project, corpus = harbour_corpus
    project.data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    allowed, other = Portal(base, box=False), Portal(base, box=False)
    process = serve_web(project, port, SEARCHCRAWL_WEB_API_ORIGINS=allowed.url.rstrip("/"))
    try:
        token = make_token(base, "portal page")
        script = """async ([url, token]) => {
            try {
                const answer = await fetch(url, {headers: {Authorization: "Bearer " + token}});
                return (await answer.json()).total;
            } catch (error) {
                return "blocked";
            }
        }"""
        url = f"{base}/api/search?q=%22harbour+master%22&source={corpus.main}"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
            page = browser.new_page()
            page.goto(allowed.url)
            assert page.evaluate(script, [url, token]) == 24
            page.goto(other.url)
            assert page.evaluate(script, [url, token]) == "blocked"
            browser.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        for portal in (allowed, other):
            portal.shutdown()
            portal.server_close()
