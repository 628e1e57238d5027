"""The web application through its HTTP interface (Starlette's TestClient), against a real Solr
holding a crawled corpus (tests/web_site.py) and the crawl's document table."""

from __future__ import annotations

import html
import json
import re
import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from scrapy.settings import Settings
from starlette.testclient import TestClient

from searchcrawl.crawl.spiderloader import SourceSpiderLoader
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.ops.launchers import LocalLauncher
from searchcrawl.search.query import term_filter
from searchcrawl.search.why import explain_lines
from searchcrawl.store import Database
from searchcrawl.store.runs import Runs
from searchcrawl.web.app import WebConfig, create_app
from searchcrawl.web.sign_on.sessions import SESSION_COOKIE
from tests.conftest import ROOT, Project
from tests.web_site import OLD, SCRIPT_TITLE

PASSWORD = "harbour-master-" + uuid.uuid4().hex  # a secret: must appear on no page
# Phrases only this corpus holds (other tests' documents in the same core may say "harbour")
MASTER, BOLD = '"harbour master"', '"claims about the harbour"'


def web_config(project: Project, credentials: tuple[str, str] | None = ("admin", PASSWORD), **changes: object) -> WebConfig:
    """The application's configuration for the project, as `scrapy web` makes it."""
    loader = SourceSpiderLoader(Settings({"SEARCHCRAWL_SOURCES_DIR": str(project.sources_dir)}))
    config = WebConfig(
        solr_url=project.solr_url,
        db_url=f"sqlite:///{project.data_dir / 'documents.sqlite3'}",
        cache_root=project.data_dir / "cache",
        project_dir=ROOT,
        source_names=lambda: sorted(loader.list()),
        schedule_of=lambda name: loader.load(name).source.settings.crawl_schedule,
        launcher=LocalLauncher(ROOT, project.data_dir / "logs"),
        credentials=credentials,
        explain_environ=project.env(),
    )
    for key, value in changes.items():
        setattr(config, key, value)
    return config


def client(project: Project, **changes: object) -> TestClient:
    return TestClient(create_app(web_config(project, **changes)), base_url="http://127.0.0.1")


def hits(page: str) -> list[tuple[str, str]]:
    """(link, title) of each hit on a result page."""
    return re.findall(r'<li class="hit">\s*<h2><a href="([^"]*)"[^>]*>(.*?)</a>', page)


def login(web: TestClient, prefix: str = "", password: str = PASSWORD) -> str:
    """Log in; returns the session's CSRF token."""
    form = web.get(prefix + "/admin/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)[1]
    answer = web.post(
        prefix + "/admin/login", data={"login_token": token, "username": "admin", "password": password}, follow_redirects=False
    )
    assert answer.status_code == 303, answer.text
    page = web.get(prefix + "/admin")
    return re.search(r'name="csrf" value="([^"]+)"', page.text)[1]


def test_search_page_hits_facets_pagination_and_one_hit_per_url(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    first = web.get("/", params={"q": MASTER})
    assert first.status_code == 200
    # the 24 logs; log00 once though two sources hold it
    assert "24 documents match" in first.text
    shown = hits(first.text)
    assert len(shown) == 10
    assert all(link in harbour.pages for link, _title in shown)
    assert re.search(r"<mark>harbour( master)?</mark>", first.text, re.IGNORECASE)  # the snippet, highlighted
    assert f'<span class="source">{harbour.main}</span>' in first.text
    assert '<span class="type" title="text/html">Web page</span>' in first.text  # each hit's type, by name
    # facets: both sources (log00 is the second source's too, one hit of the page), the host (with
    # the site's port, not http's own), the type and the language by name, and the last-modified
    # ranges (half the logs are two years old)
    sources = dict(re.findall(r'source=([^"]+)">[^<]+</a> <span class="count">(\d+)</span>', first.text))
    # a source's count is the hits it alone gives: log00 counts in both sources (a URL is a hit once)
    assert sources == {harbour.main: "24", harbour.second: "1"}
    assert "1 document matches" in web.get("/", params={"q": MASTER, "source": harbour.second}).text
    port = harbour.site.port
    assert re.search(rf'host=127.0.0.1%3A{port}">127.0.0.1:{port}</a> <span class="count">24</span>', first.text)
    assert re.search(r'type=text%2Fhtml" title="text/html">Web page</a> <span class="count">24</span>', first.text)
    assert re.search(r'lang=en" title="en">English</a> <span class="count">24</span>', first.text)
    assert re.search(r'modified=day">past day</a> <span class="count">12</span>', first.text)
    assert re.search(r'modified=older">over a year ago</a> <span class="count">12</span>', first.text)
    # pagination: page 3 holds the last 4; every page's links are bookmarkable URLs
    third = web.get("/?q=%22harbour+master%22&page=3")
    assert len(hits(third.text)) == 4 and "showing 21&ndash;24" in third.text
    pages = set()
    for number in (1, 2, 3):
        pages |= {link for link, _ in hits(web.get("/", params={"q": MASTER, "page": number}).text)}
    assert len(pages) == 24
    # any of the words (the /select handler's edismax): also the warning, the notes (text/plain) and the index
    words = web.get("/", params={"q": "harbour master", "source": harbour.main})
    assert "27 documents match" in words.text
    assert re.search(r'type=text%2Fplain" title="text/plain">Text</a> <span class="count">1</span>', words.text)
    # a facet link narrows, and the narrowed page is a URL of its own
    old = web.get("/?q=%22harbour+master%22&modified=older")
    assert "12 documents match" in old.text
    assert all(int(re.search(r"log(\d+)", link)[1]) % 2 for link, _ in hits(old.text))
    german = web.get("/?q=Hafenmeister&lang=de")
    assert "1 document matches;" in german.text and "Hafenbuch" in german.text
    # one hit per URL: log00 is in Solr twice (two sources), shown once
    one = web.get("/", params={"q": '"harbour log 00"'})
    assert [link for link, _ in hits(one.text)] == [harbour.site.url + "log00.html"]


def test_search_page_field_queries_and_phrases_have_the_index_semantics(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    titled = web.get("/", params={"q": "title:tugboat"})
    assert {title for _link, title in hits(titled.text)} == {"Harbour log 11: the tugboat", "Harbour log 23: the tugboat"}
    # a stop word inside a phrase keeps its place: "the" between "about" and "cargo" matches
    phrase = web.get("/", params={"q": '"about the cargo"', "source": harbour.main})
    assert {title for _link, title in hits(phrase.text)} == {"Harbour log 02: the cargo", "Harbour log 14: the cargo"}


def test_zero_results_are_explained_with_spelling_suggestions(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    page = web.get("/", params={"q": "lighthuose"})
    assert "No document matches <strong>lighthuose</strong>" in page.text
    suggestion = re.search(r'Did you mean <a href="/\?([^"]+)">([^<]+)</a>', page.text)
    assert suggestion and suggestion[2] == "lighthouse"
    followed = web.get("/?" + suggestion[1].replace("&amp;", "&"))
    assert "12 documents match" in followed.text
    filtered = web.get("/", params={"q": "harbour", "type": "application/x-nothing"})
    assert "with the filters chosen" in filtered.text and "Remove a filter" in filtered.text


def test_scrapy_search_is_the_search_pages_search(harbour_corpus) -> None:
    """Issue 95: one run_search for the page and `scrapy search`: the same hits in the same order
    for the same query and searcher, and the page's "Did you mean" (the command had none)."""
    project, harbour = harbour_corpus
    page = client(project).get("/", params={"q": "harbour master", "source": harbour.main, "rows": "50"})
    searched = project.scrapy("search", "harbour master", "--source", harbour.main, "--rows", "50")
    assert searched.returncode == 0, searched.stdout + searched.stderr
    lines = searched.stdout.splitlines()
    assert lines[0] == "27 documents match 'harbour master'"
    shown = [
        (lines[number + 1].strip(), line.split(". ", 1)[1]) for number, line in enumerate(lines) if re.match(r"\d+\. ", line)
    ]
    assert shown == [(html.unescape(link), html.unescape(title)) for link, title in hits(page.text)] and len(shown) == 27
    typo = project.scrapy("search", "lighthuose")
    assert typo.stdout.splitlines()[:2] == ["0 documents match 'lighthuose'", "Did you mean lighthouse?"], typo.stdout


def test_crawled_markup_is_shown_as_text_and_no_script_may_run(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    page = web.get("/", params={"q": BOLD})
    assert "<script>alert" not in page.text and "<img src=x" not in page.text and "<b>bold" not in page.text
    assert "&lt;script&gt;alert(&#39;owned&#39;)&lt;/script&gt; Harbour warning" in page.text
    assert "&lt;img src=x onerror=alert(&#39;img&#39;)&gt;" in page.text
    policy = page.headers["content-security-policy"]
    # the search page runs this application's own script files alone (suggestions), never inline
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy and "unsafe" not in policy
    assert re.findall(r"<script[^>]*>", page.text) == ['<script src="/static/suggest.js" defer>']
    assert page.headers["x-content-type-options"] == "nosniff"
    assert SCRIPT_TITLE  # the title as crawled, for the reader


def test_query_text_and_hostile_parameters_are_harmless(harbour_corpus) -> None:
    project, _harbour = harbour_corpus
    web = client(project)
    page = web.get(
        "/", params={"q": '"><script>alert(1)</script>', "page": "-3", "source": "x}{!lucene}*:*", "modified": "forever"}
    )
    assert page.status_code == 200 and "<script>alert(1)" not in page.text
    assert "&#34;&gt;&lt;script&gt;" in page.text or "&quot;&gt;&lt;script&gt;" in page.text
    assert web.get("/", params={"q": "harbour", "page": "100000"}).status_code == 200
    broken = web.get("/", params={"q": "harbour AND (", "source": "nothing"})
    assert broken.status_code in (200, 503) and "Traceback" not in broken.text


def test_administration_is_off_without_credentials(harbour_corpus) -> None:
    project, _harbour = harbour_corpus
    web = client(project, credentials=None)
    for path in ("/admin", "/admin/login", "/admin/runs/1"):
        answer = web.get(path)
        assert answer.status_code == 404 and "SEARCHCRAWL_WEB_PASSWORD" in answer.text
    assert web.post("/admin/login", data={"username": "admin", "password": ""}).status_code == 404
    assert "Administration" not in web.get("/").text  # no link to pages that are off


def test_login_and_csrf(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    assert web.get("/admin", follow_redirects=False).headers["location"] == "/admin/login"
    form = web.get("/admin/login")
    token = re.search(r'name="login_token" value="([^"]+)"', form.text)[1]
    wrong = web.post("/admin/login", data={"login_token": token, "username": "admin", "password": "guess"})
    assert wrong.status_code == 403 and "Wrong user name or password" in wrong.text
    forged = TestClient(create_app(web_config(project)), base_url="http://127.0.0.1")  # a login without the form's token
    assert forged.post("/admin/login", data={"username": "admin", "password": PASSWORD}).status_code == 403
    csrf = login(web)
    cookie = web.cookies.get(SESSION_COOKIE)
    set_cookie = web.get("/admin/login").headers.get("set-cookie", "")
    assert "samesite=strict" in set_cookie.lower() and "httponly" in set_cookie.lower()
    assert cookie and PASSWORD not in cookie
    # a POST without its session's token is refused, and does nothing
    refused = web.post(f"/admin/sources/{harbour.main}/control", data={"action": "start"})
    assert refused.status_code == 403
    refused = web.post(f"/admin/sources/{harbour.main}/control", data={"action": "start", "csrf": "x" + csrf})
    assert refused.status_code == 403
    database = Database(f"sqlite:///{project.data_dir / 'documents.sqlite3'}", migrate=False)
    try:
        assert Runs(database).latest(harbour.main)["state"] == "finished"
    finally:
        database.close()
    out = web.post("/admin/logout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303
    assert web.get("/admin", follow_redirects=False).status_code == 303  # logged out on the server


def test_admin_pages_show_sources_runs_reports_documents_and_explain(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    csrf = login(web)
    scheduled = f"scheduled-{uuid.uuid4().hex[:8]}"
    project.source(scheduled, f'seeds = ["{harbour.site.url}index.html"]\nrefresh_interval = "6h"\n')
    overview = web.get("/admin")
    row = re.search(rf"<tr>\s*<td><a href=\"/admin/sources/{scheduled}\">.*?</tr>", overview.text, re.S)[0]
    assert "never crawled" in row and "<td>due now</td>" in row  # first seen by the scheduler: due at once
    (project.sources_dir / f"{scheduled}.toml").unlink()
    assert overview.headers["cache-control"] == "no-store"
    assert "Solr answers (OK)" in overview.text
    row = re.search(rf"<tr>\s*<td><a href=\"/admin/sources/{harbour.main}\">.*?</tr>", overview.text, re.S)[0]
    assert "finished" in row and "not scheduled" in row and '<td class="number">28</td>' in row  # 28 indexed: every page
    run_id = int(re.search(r'href="/admin/runs/(\d+)"', row)[1])
    run = web.get(f"/admin/runs/{run_id}")
    assert 'http-equiv="refresh"' not in run.text  # a finished run does not refresh itself
    assert "Delta report" in run.text and f"{harbour.site.url}log05.html" in run.text
    assert re.search(r"<th><a href=\"#delta-new\">new</a></th><td class=\"number\">28</td>", run.text)
    # the run's counters read as counts, the delta report's too, never as a Python dict
    delta = re.search(r'<dd class="counter-delta">([^<]*)</dd>', run.text)[1]
    assert "new 28" in delta and "{" not in delta and "&#39;" not in run.text
    source = web.get(f"/admin/sources/{harbour.main}")
    # the runs list counts each run's pages, documents and changes
    listed = re.search(rf'<a href="/admin/runs/{run_id}">run {run_id}</a>.*?</tr>', source.text, re.S)[0]
    assert '<td class="number counter-indexed">28</td>' in listed and re.search(r'<td class="changes">[^<]*new 28', listed)
    assert "not fetched yet" not in source.text and "OK" in source.text
    documents = web.get(f"/admin/sources/{harbour.main}/documents", params={"status": 200})
    assert documents.text.count('<td class="url">') == 28 and "Status 200: HTTP OK" in documents.text
    explained = web.post(f"/admin/sources/{harbour.main}/explain", data={"csrf": csrf, "url": harbour.site.url + "log03.html"})
    assert explained.status_code == 200 and "verdict:       CRAWLED" in explained.text
    assert (
        "Not logged in"
        in TestClient(create_app(web_config(project)))
        .post(f"/admin/sources/{harbour.main}/explain", data={"url": harbour.site.url})
        .text
    )
    for page in (overview, run, source, documents, explained):
        assert PASSWORD not in page.text


def test_control_buttons_do_what_scrapy_control_does(harbour_corpus, tmp_path: Path) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    csrf = login(web)
    # nothing runs: suspend says so, as `scrapy control <source> suspend` prints it
    answer = web.post(f"/admin/sources/{harbour.second}/control", data={"action": "suspend", "csrf": csrf})
    assert f"{harbour.second}: no running or suspended crawl" in answer.text
    # a suspended run (its process gone) is stopped for good by Stop
    database = Database(f"sqlite:///{project.data_dir / 'documents.sqlite3'}", migrate=False)
    try:
        runs = Runs(database)
        run = runs.start(harbour.second, fresh=True)
        runs.end(run.id, "suspended", {}, "suspended for the test")
        answer = web.post(f"/admin/sources/{harbour.second}/control", data={"action": "stop", "csrf": csrf, "back": "/admin"})
        assert f"{harbour.second}: run {run.id} is stopped" in answer.text and "<h1>Sources</h1>" in answer.text
        assert runs.latest(harbour.second)["state"] == "stopped"
    finally:
        database.close()


def test_prefix_behind_a_reverse_proxy(harbour_corpus) -> None:
    project, _harbour = harbour_corpus
    web = client(project, prefix="/search")
    page = web.get("/search/", params={"q": MASTER, "page": 2})
    assert "24 documents match" in page.text
    assert 'href="/search/static/style.css"' in page.text and 'action="/search/"' in page.text
    assert re.search(r'href="/search/\?q=%22harbour\+master%22&amp;page=3"', page.text)
    assert web.get("/search/static/style.css").status_code == 200
    login(web, "/search")
    assert web.get("/search/admin").status_code == 200
    assert all((cookie.path or "").startswith("/search/admin") for cookie in web.cookies.jar)


def test_bookmarkable_url_round_trip(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    page = web.get("/", params={"q": MASTER, "source": harbour.main, "modified": "older", "page": 2})
    links = re.findall(r'href="/\?([^"]+)"', page.text)
    params = [parse_qs(urlsplit("?" + link.replace("&amp;", "&")).query) for link in links]
    assert any(p.get("source") == [harbour.main] and p.get("modified") == ["older"] for p in params)


def titles_of(page: str) -> list[str]:
    return [html.unescape(title) for _link, title in hits(page)]


def log_numbers(page: str) -> list[int]:
    """The numbers of the harbour logs among a page's hits, in order."""
    return [int(match[1]) for title in titles_of(page) if (match := re.match(r"Harbour log (\d\d)", title))]


def test_search_page_sorts_by_date_or_title_and_shows_the_hits_a_page_chosen(harbour_corpus) -> None:
    """Issue 59: sort and hits per page. Even logs were modified now, odd ones two years ago."""
    project, harbour = harbour_corpus
    web = client(project)
    newest = web.get("/", params={"q": MASTER, "sort": "date", "rows": 50})
    assert "24 documents match; showing 1&ndash;24." in newest.text
    assert [number % 2 for number in log_numbers(newest.text)] == [0] * 12 + [1] * 12  # newest first
    assert '<strong aria-current="true">Date (newest first)</strong>' in newest.text
    titled = web.get("/", params={"q": MASTER, "sort": "title", "rows": 50})
    assert titles_of(titled.text) == sorted(harbour.pages[harbour.site.url + f"log{n:02d}.html"] for n in range(24))
    # a sort and a page size go with every link: the next page continues the same order
    second = web.get("/", params={"q": MASTER, "sort": "title", "rows": 20, "page": 2})
    assert log_numbers(second.text) == [20, 21, 22, 23] and "showing 21&ndash;24" in second.text
    twenty = web.get("/", params={"q": MASTER, "rows": 20})
    assert len(hits(twenty.text)) == 20 and "showing 1&ndash;20" in twenty.text
    assert re.search(r'href="/\?q=%22harbour\+master%22&amp;rows=20&amp;page=2"', twenty.text)
    # junk is the default: relevance, the application's 10 a page
    junk = web.get("/", params={"q": MASTER, "sort": "score desc", "rows": "1000"})
    assert junk.status_code == 200 and len(hits(junk.text)) == 10


def test_several_values_of_one_facet_are_ored_and_facets_anded(harbour_corpus) -> None:
    """Issue 59: the words "harbour master" find the 24 logs, the warning and the index (HTML) and
    the notes (text) of the main source."""
    project, harbour = harbour_corpus
    web = client(project)
    base = [("q", "harbour master"), ("source", harbour.main)]
    html_only = web.get("/", params=[*base, ("type", "text/html")])
    assert "26 documents match" in html_only.text
    # the type facet still counts the other types (its own filter left out), each a link that adds it
    added = re.search(r'href="/\?([^"]+)" title="text/plain">Text</a> <span class="count">1</span>', html_only.text)
    assert added, html_only.text
    assert parse_qs(html.unescape(added[1]))["type"] == ["text/html", "text/plain"]
    both = web.get("/?" + html.unescape(added[1]))
    assert "27 documents match" in both.text  # OR within the facet
    assert both.text.count('<li class="selected">') == 3  # the source and both types
    older = web.get("/", params=[*base, ("type", "text/html"), ("type", "text/plain"), ("modified", "older")])
    assert "12 documents match" in older.text and all(n % 2 for n in log_numbers(older.text))  # AND across facets
    # dropping one value keeps the other
    dropped = re.search(r'<li class="selected"><a href="/\?([^"]+)" title="text/html">Web page</a>', both.text)
    assert parse_qs(html.unescape(dropped[1]))["type"] == ["text/plain"]
    assert "1 document matches" in web.get("/?" + html.unescape(dropped[1])).text
    # the host facet names the site's port: the old value (the name alone) finds nothing
    port = harbour.site.port
    assert re.search(rf'>127.0.0.1:{port}</a> <span class="count">27</span>', both.text)
    assert "1 document matches" in web.get("/", params=[*base, ("host", f"127.0.0.1:{port}"), ("type", "text/plain")]).text
    assert "No document matches" in web.get("/", params=[*base, ("host", "127.0.0.1")]).text  # the port is the host's


def test_a_date_range_includes_both_of_its_days(harbour_corpus) -> None:
    """Issue 59: the odd logs were last modified on one day two years ago (UTC)."""
    project, harbour = harbour_corpus
    web = client(project)
    old = datetime.fromtimestamp(OLD, UTC).date()

    def found(start: date | None = None, end: date | None = None) -> list[int]:
        days = {"from": str(start) if start else "", "to": str(end) if end else ""}
        page = web.get("/", params={"q": MASTER, "source": harbour.main, "rows": 50, **days})
        assert page.status_code == 200
        return sorted(log_numbers(page.text))

    odd, even = list(range(1, 24, 2)), list(range(0, 24, 2))
    assert found(start=old, end=old) == odd  # one day: from its first moment to its last
    assert found(start=old - timedelta(days=1), end=old) == odd  # the last day included
    assert found(start=old, end=old + timedelta(days=1)) == odd  # the first day included
    assert found(end=old - timedelta(days=1)) == []
    assert found(start=old + timedelta(days=1)) == even
    assert found(start=old + timedelta(days=1), end=datetime.now(UTC).date() + timedelta(days=1)) == even
    # with a last-modified range both apply
    page = web.get("/", params={"q": MASTER, "modified": "older", "from": str(old + timedelta(days=1))})
    assert "No document matches" in page.text and "Date range: from " in page.text
    # the form keeps the search's state in hidden inputs, and says the days chosen
    form = web.get("/", params={"q": MASTER, "type": "text/html", "sort": "date", "from": str(old)}).text
    chosen = re.search(r'<form method="get" action="/" class="daterange">(.*?)</form>', form, re.S)[1]
    assert '<input type="hidden" name="q" value="&#34;harbour master&#34;">' in chosen
    assert '<input type="hidden" name="type" value="text/html">' in chosen and 'name="sort" value="date"' in chosen
    assert f'name="from" value="{old}"' in chosen and 'name="to" value=""' in chosen
    junk = web.get("/", params={"q": MASTER, "from": "2024-02-30", "to": "x] OR *:*"})
    assert "24 documents match" in junk.text  # ignored


def why_answer(page: str) -> str:
    """The why page's answer and explanation as text."""
    parts = re.findall(r'<(?:p|dl) class="why-answer">(.*?)</(?:p|dl)>|<pre class="explanation">(.*?)</pre>', page, re.DOTALL)
    return html.unescape(re.sub(r"<[^>]+>", " ", " ".join(a + b for a, b in parts)))


def test_why_page_explains_a_hit_in_words_and_needs_an_administrator(harbour_corpus) -> None:
    project, harbour = harbour_corpus
    web = client(project)
    url = next(link for link, title in harbour.pages.items() if title == "Harbour log 11: the tugboat")
    unauthenticated = web.get("/admin/why", params={"q": "tugboat", "id": url}, follow_redirects=False)
    assert unauthenticated.status_code == 303 and unauthenticated.headers["location"] == "/admin/login"
    login(web)
    assert 'action="/admin/why"' in web.get("/admin").text  # the overview's form
    ranks = {}
    for target in (url, f"{harbour.main}!{url}"):  # by URL or by Solr id
        page = web.get("/admin/why", params={"q": "tugboat", "id": target})
        assert page.status_code == 200
        answer = why_answer(page.text)
        assert "‘tugboat’ in title:" in answer and "‘tugboat’ in content:" in answer, answer
        assert re.search(r"it occurs [2-9] times here", answer), answer  # the content says it more than once
        ranks[target] = re.search(r"hit (\d) of this search", answer)[1]  # type: ignore[index]
    # log 11 and log 23 are the two tugboat logs: one of the first two hits, whichever is asked by
    assert set(ranks.values()) <= {"1", "2"} and len(set(ranks.values())) == 1
    # a document of the index that does not match; one the index does not hold
    assert "does not match the query" in why_answer(
        web.get("/admin/why", params={"q": "tugboat", "id": harbour.site.url + "hafen.html"}).text
    )
    missing = why_answer(web.get("/admin/why", params={"q": "tugboat", "id": url + "-nowhere"}).text)
    assert "not among the hits this search can show" in missing
    # the query text is escaped, and bounded like the search page's
    hostile = web.get("/admin/why", params={"q": "<script>tugboat" + "x" * 5000, "id": url})
    assert "<script>tugboat" not in hostile.text and "&lt;script&gt;tugboat" in hostile.text


def test_solrs_explanation_has_the_shape_the_why_page_reads(harbour_corpus) -> None:
    """A real explanation (tests/search/test_why.py's sample has this shape) read into words."""
    project, harbour = harbour_corpus
    solr = SolrIndex(project.solr_url)
    found = solr.search("tugboat", fq=term_filter("source", harbour.main), fl="id,score,[explain style=nl]", rows=1)
    tree = found.docs[0]["[explain]"]
    print(json.dumps(tree, ensure_ascii=False))
    assert {"match", "value", "description", "details"} <= set(tree)
    lines, truncated = explain_lines(tree)
    assert not truncated
    assert any(line.text.startswith("‘tugboat’ in title: ") and "rare in title" in line.text for line in lines), lines
