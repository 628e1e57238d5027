"""Sitemaps, crawled as a user runs the crawl: found through robots.txt's ``Sitemap:`` line (an
index naming a gzip-compressed sitemap and a plain one) or given in the source file; their URLs
join the crawl as seeds, through the source's rules; and in maintenance crawls a page whose
``lastmod`` is not newer than its last fetch is not requested at all, over several crawls of a
changing site."""

from __future__ import annotations

import gzip
import json
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import solr_docs

LONG_AGO = "2026-01-01T00:00:00Z"


class SitemapSite:
    """A site on 127.0.0.1: HTML pages with a sitemap ``lastmod`` each, a robots.txt naming a
    sitemap index, the index naming two sitemaps (one gzip-compressed); a log of requested paths."""

    def __init__(self) -> None:
        self.pages: dict[str, tuple[str, str | None]] = {}  # path -> (text, lastmod)
        self.linked: list[str] = []  # pages the home page links to
        self.extra_entries: list[str] = []  # other <loc>s of sitemap-b (hostile, out of scope)
        self.seen: list[str] = []
        self.failing: set[str] = set()  # pages that answer 503 (their sitemap entries stay)
        self.unlisted: set[str] = set()  # pages the sitemaps leave out
        self.robots_sitemap = True
        self.disallow = ["/private/"]
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.seen.append(self.path)
                status, content_type, body = site.answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def answer(self, path: str) -> tuple[int, str, bytes]:
        if path == "/robots.txt":
            line = f"Sitemap: {self.url}sitemap_index.xml\n" if self.robots_sitemap else ""
            rules = "".join(f"Disallow: {path}\n" for path in self.disallow)
            return 200, "text/plain", f"User-agent: *\n{rules}{line}".encode()
        if path == "/sitemap_index.xml":
            children = "".join(
                f"<sitemap><loc>{self.url}{name}</loc></sitemap>" for name in ("sitemap-a.xml.gz", "sitemap-b.xml")
            )
            return (
                200,
                "application/xml",
                f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{children}</sitemapindex>'.encode(),
            )
        paths = sorted(self.pages)
        if path == "/sitemap-a.xml.gz":
            return 200, "application/x-gzip", gzip.compress(self.urlset(paths[: len(paths) // 2]))
        if path == "/sitemap-b.xml":
            return 200, "application/xml", self.urlset(paths[len(paths) // 2 :], self.extra_entries)
        if path == "/index.html":
            links = "".join(f'<a href="{link}">{link}</a> ' for link in self.linked)
            return 200, "text/html", f"<html><head><title>Home</title></head><body>{links}</body></html>".encode()
        if path in self.failing:
            return 503, "text/html", b"<html><body>busy</body></html>"
        if path in self.pages:
            text = self.pages[path][0]
            return 200, "text/html", f"<html><head><title>{path}</title></head><body><p>{text}</p></body></html>".encode()
        return 404, "text/html", b"<html><body>not here</body></html>"

    def urlset(self, paths: list[str], extra: list[str] = ()) -> bytes:  # type: ignore[assignment]
        entries = []
        for path in [path for path in paths if path not in self.unlisted]:
            lastmod = self.pages[path][1]
            entries.append(
                f"<url><loc>{self.url}{path.lstrip('/')}</loc>{f'<lastmod>{lastmod}</lastmod>' if lastmod else ''}</url>"
            )
        entries += [f"<url><loc>{loc}</loc><lastmod>{LONG_AGO}</lastmod></url>" for loc in extra]
        return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{"".join(entries)}</urlset>'.encode()

    def page_requests(self) -> list[str]:
        """The pages asked, not the crawl's own requests (robots.txt, sitemaps, the not-found probe)."""
        return [
            path
            for path in self.seen
            if not path.startswith(("/robots.txt", "/sitemap")) and "/searchcrawl-not-found-" not in path
        ]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def site():
    started = SitemapSite()
    yield started
    started.stop()


def delta(project, name: str) -> dict[str, int]:
    report = project.scrapy("report", name, "--json")
    assert report.returncode == 0, report.stderr[-2000:]
    return json.loads(report.stdout)["counts"]


def test_sitemaps_add_pages_and_spare_unchanged_ones_their_requests(project, solr, site) -> None:
    for n in range(4):
        site.pages[f"/page{n}.html"] = (f"Linked page {n}.", LONG_AGO)
    for n in range(3):
        site.pages[f"/lonely{n}.html"] = (f"A page only the sitemap names, {n}.", "2026-01-01")  # a date alone
    site.pages["/private/secret.html"] = ("robots.txt keeps it out", LONG_AGO)
    site.pages["/undated.html"] = ("No lastmod: always asked.", None)
    site.linked = ["/page0.html", "/page1.html", "/page2.html", "/page3.html"]
    # hostile or out-of-scope entries: another host (localhost is 127.0.0.1 by another name), a pattern rule
    site.extra_entries = [f"http://localhost:{site.port}/elsewhere.html", f"{site.url}drafts/plan.html"]
    name = f"sitemap-{uuid.uuid4().hex[:6]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n[patterns]\nexclude_glob = ["*/drafts/*"]\n')

    result = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG")
    assert result.returncode == 0, result.stderr[-3000:]
    expected = {"/index.html", "/undated.html"} | {f"/page{n}.html" for n in range(4)} | {f"/lonely{n}.html" for n in range(3)}
    indexed = {doc["url"].removeprefix(site.url.rstrip("/")) for doc in solr_docs(solr, name)}
    assert indexed == expected
    assert "/private/secret.html" not in site.seen and "/drafts/plan.html" not in site.seen
    assert "/elsewhere.html" not in site.seen  # another host's page, named by this host's sitemap
    assert site.seen.count("/sitemap-a.xml.gz") == 1 and site.seen.count("/sitemap-b.xml") == 1
    table = project.table()
    first_fetch = table.get(name, f"{site.url}lonely0.html")["last_fetched"]

    # an unchanged site: no page is requested but the one without lastmod and the home page
    site.seen.clear()
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(site.page_requests()) == ["/index.html", "/undated.html"]
    assert len([path for path in site.seen if path.startswith("/searchcrawl-not-found-")]) == 1  # and its probe
    rows = {path: table.get(name, f"{site.url}{path.lstrip('/')}") for path in expected}
    assert {rows[path]["status"] for path in expected - {"/index.html", "/undated.html"}} == {915}
    assert {row["state"] for row in rows.values()} == {"indexed"}
    assert rows["/lonely0.html"]["last_fetched"] == first_fetch  # its last fetch stays (a sitemap may lag)
    assert delta(project, name).get("unchanged") == 9
    assert {doc["url"].removeprefix(site.url.rstrip("/")) for doc in solr_docs(solr, name)} == expected

    # one page changes and says so; a new page appears, named only by the sitemap. The lastmod
    # has whole seconds: a second after the last fetch at least, or it says "not since then"
    # (two crawls of this site can now run within one second)
    time.sleep(1.1)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    site.pages["/page2.html"] = ("Page two, rewritten with quarterly figures.", now)
    site.pages["/lonely3.html"] = ("A new page.", now)
    site.seen.clear()
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sorted(site.page_requests()) == ["/index.html", "/lonely3.html", "/page2.html", "/undated.html"]
    docs = {doc["url"].removeprefix(site.url.rstrip("/")): doc for doc in solr_docs(solr, name)}
    assert "quarterly figures" in json.dumps(docs["/page2.html"]) and "/lonely3.html" in docs

    # a page that leaves the sitemap is asked again; with trust_sitemap_lastmod = false, every page is
    del site.pages["/lonely1.html"]
    site.seen.clear()
    assert project.scrapy("crawl", name).returncode == 0
    assert "/lonely1.html" in site.page_requests() and "/page0.html" not in site.page_requests()
    assert f"{site.url}lonely1.html" not in {doc["url"] for doc in solr_docs(solr, name)}  # a 404 now: gone
    project.source(
        name, f'seeds = ["{site.url}index.html"]\ntrust_sitemap_lastmod = false\n[patterns]\nexclude_glob = ["*/drafts/*"]\n'
    )
    site.seen.clear()
    assert project.scrapy("crawl", name).returncode == 0
    assert {f"/page{n}.html" for n in range(4)} <= set(site.page_requests())


def test_a_sitemap_given_in_the_source_file_and_a_hostile_one(project, solr, site) -> None:
    site.robots_sitemap = False
    for n in range(3):
        site.pages[f"/doc{n}.html"] = (f"Document {n}.", LONG_AGO)
    name = f"sitemap-src-{uuid.uuid4().hex[:6]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nsitemaps = ["{site.url}sitemap-b.xml"]\n')
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    indexed = {doc["url"].removeprefix(site.url.rstrip("/")) for doc in solr_docs(solr, name)}
    assert indexed == {"/index.html", "/doc1.html", "/doc2.html"}  # sitemap-b holds the second half
    assert "/sitemap_index.xml" not in site.seen

    # a gzip bomb, an entity bomb, and not XML at all: each read is refused, the pages still crawled
    bomb = gzip.compress(b"<" * (60 * 1024 * 1024))
    entities = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        b'<!ENTITY f SYSTEM "file:///etc/passwd">]><urlset><url><loc>&f;</loc></url><url><loc>&b;</loc></url></urlset>'
    )
    answers = {"/bomb.xml.gz": bomb, "/entities.xml": entities, "/binary.xml": bytes(range(256))}
    original = site.answer
    site.answer = lambda path: (200, "application/octet-stream", answers[path]) if path in answers else original(path)  # type: ignore[method-assign]
    listed = ", ".join(f'"{site.url}{path.lstrip("/")}"' for path in answers)
    project.source(name, f'seeds = ["{site.url}index.html"]\nsitemaps = [{listed}]\n')
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "bomb.xml.gz is more than" in result.stderr
    assert "root:" not in result.stderr
    assert {doc["url"].removeprefix(site.url.rstrip("/")) for doc in solr_docs(solr, name)} >= {"/index.html"}


def test_lastmod_of_a_late_sitemap_does_not_hide_a_change(project, solr, site) -> None:
    """The sitemap is regenerated late: a page changed after its fetch, but its lastmod still
    names an older day; the skipped crawl keeps the page's last fetch time, so when the sitemap
    catches up (a lastmod after that fetch, though before the skipped crawl) the page is fetched."""
    site.pages["/report.html"] = ("First version.", LONG_AGO)
    name = f"sitemap-late-{uuid.uuid4().hex[:6]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    fetched = project.table().get(name, f"{site.url}report.html")["last_fetched"]
    changed = (fetched.replace(tzinfo=UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    site.pages["/report.html"] = ("Second version.", LONG_AGO)  # changed; the sitemap lags
    assert project.scrapy("crawl", name).returncode == 0
    assert "Second" not in json.dumps(solr_docs(solr, name))
    site.pages["/report.html"] = ("Second version.", changed)  # the sitemap catches up, late
    site.seen.clear()
    assert project.scrapy("crawl", name).returncode == 0
    assert "/report.html" in site.page_requests()
    assert "Second version" in json.dumps(solr_docs(solr, name))


def test_a_page_changed_while_it_failed_is_fetched_when_it_answers_again(project, solr, site) -> None:
    """A page changes (its lastmod says when), then answers 503 when the next crawl asks for it:
    that request read nothing, so it is no fetch of the page. When the page answers again, its
    lastmod is older than that failed request but newer than the content last read: it is
    requested, and its new version indexed. (Before, a failure was a fetch: the page was spared
    as unchanged, and the index kept the old version for as long as the sitemap was trusted.)
    Found by the sequence test with sitemaps."""
    site.pages["/report.html"] = ("First version.", LONG_AGO)
    name = f"sitemap-failed-{uuid.uuid4().hex[:6]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    read = project.table().get(name, f"{site.url}report.html")["last_fetched"].replace(tzinfo=UTC)
    changed = (read + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    site.pages["/report.html"] = ("Second version.", changed)
    site.failing.add("/report.html")
    while datetime.now(UTC) <= read + timedelta(seconds=2):  # the failing request comes after the change
        time.sleep(0.05)
    assert project.scrapy("crawl", name).returncode == 0
    failed = project.table().get(name, f"{site.url}report.html")
    assert failed["status"] == 503 and "First version" in json.dumps(solr_docs(solr, name))
    site.failing.clear()
    site.seen.clear()
    assert project.scrapy("crawl", name).returncode == 0
    assert "/report.html" in site.page_requests()
    assert "Second version" in json.dumps(solr_docs(solr, name))


def test_a_sitemap_is_read_though_robots_txt_refuses_every_known_page(project, solr, site) -> None:
    """A site's sitemaps were read as the first page request passed: when robots.txt refused
    every request of the crawl (its seed, its known pages), no sitemap was read, and a page new
    to the sitemap, which robots.txt allows, waited for a crawl with an allowed request. They
    are read once the crawl is idle. (Found by the sequence test with sitemaps: a source's
    sitemap entries outside its boundary were excluded a crawl late.)"""
    site.pages["/news/new.html"] = ("A page only the sitemap names.", LONG_AGO)
    site.robots_sitemap = False
    site.disallow = ["/private/", "/index.html"]  # the seed, the only page a link would lead to
    name = f"sitemap-idle-{uuid.uuid4().hex[:6]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nsitemaps = ["{site.url}sitemap-b.xml"]\n')
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "/sitemap-b.xml" in site.seen and site.page_requests() == ["/news/new.html"]
    assert {doc["url"] for doc in solr_docs(solr, name)} == {f"{site.url}news/new.html"}
    table = project.table()
    assert table.get(name, f"{site.url}index.html")["status"] == 907  # refused by robots.txt, as before


def test_a_failing_page_is_requested_whatever_its_lastmod_says(project, solr, site) -> None:
    """A page left out of the sitemap for a crawl fails (503); listed again with its old lastmod,
    while it still fails, it is requested again, and its failures count on: spared, its count
    started again from 0 each time, and a page that failed for good stayed in the index for as long
    as its sitemap was trusted (a hostile review of issue 58's sparing)."""
    site.pages["/flaky.html"] = ("A page that will fail.", LONG_AGO)
    name = f"sitemap-failing-{uuid.uuid4().hex[:6]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    site.failing.add("/flaky.html")
    site.unlisted.add("/flaky.html")
    assert project.scrapy("crawl", name).returncode == 0
    assert project.table().get(name, f"{site.url}flaky.html")["failures"] == 1
    site.unlisted.clear()  # listed again, LONG_AGO: older than its last fetch
    site.seen.clear()
    assert project.scrapy("crawl", name).returncode == 0
    assert "/flaky.html" in site.page_requests()
    row = project.table().get(name, f"{site.url}flaky.html")
    assert (row["status"], row["failures"]) == (503, 2), row


def test_a_page_robots_txt_now_refuses_leaves_though_its_sitemap_says_unchanged(project, solr, site) -> None:
    """Issue 58's bulk sparing records a sitemap's unchanged pages without a request, so no
    downloader middleware sees them: robots.txt must still decide first. A page robots.txt now
    disallows leaves the index (its exclusion's status), whatever its stale sitemap says; the
    others are spared (915)."""
    site.pages["/news/a.html"] = ("News, soon disallowed.", LONG_AGO)
    for n in range(60):  # more than the crawl's requests in flight while the sitemaps are read
        site.pages[f"/doc{n:02}.html"] = (f"A document, {n}.", LONG_AGO)
    name = f"sitemap-robots-{uuid.uuid4().hex[:6]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    assert f"{site.url}news/a.html" in {doc["url"] for doc in solr_docs(solr, name)}
    site.disallow = ["/private/", "/news/"]
    site.seen.clear()
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    table = project.table()
    assert {table.get(name, f"{site.url}doc{n:02}.html")["status"] for n in range(60)} == {915}
    assert "/news/a.html" not in site.page_requests()  # refused before it is asked
    assert "unchanged by their lastmod (not requested)" in result.stderr  # the bulk sparing, not the requests
    news = table.get(name, f"{site.url}news/a.html")
    assert news["status"] == 907 and news["state"] in ("removing", "removed"), news
    assert f"{site.url}news/a.html" not in {doc["url"] for doc in solr_docs(solr, name)}
