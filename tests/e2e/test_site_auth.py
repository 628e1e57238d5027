"""Sites behind credentials, crawled as a user runs the crawl: basic, digest, a bearer token, a
header and a cookie, each read from a secret, sent to its origin only (a link or a redirect to
another port of 127.0.0.1 carries none of it), the secret in no log line (at DEBUG), report or
Solr field; and a site that refuses the credentials: status 936, nothing removed, the crawl stops
asking it."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import solr_docs

PASSWORD = "pw-Zq81-secret"  # noqa: S105 - the test's own secret


class AuthSite:
    """A site on 127.0.0.1 whose every page needs ``mode``'s credentials (None: no credentials),
    with a log of the headers each request carried. ``robots``: its robots.txt, behind the same
    credentials (None: a 404 to anyone); ``cookie``: a ``Set-Cookie`` on every answer, as a
    site's session."""

    def __init__(
        self, mode: str | None, pages: dict[str, str], accept: str = PASSWORD, robots: str | None = None, cookie: str = ""
    ) -> None:
        self.mode, self.pages, self.accept, self.robots, self.cookie = mode, pages, accept, robots, cookie
        self.seen: list[tuple[str, str, str]] = []  # (path, Authorization, Cookie)
        self.nonce = uuid.uuid4().hex
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.seen.append((self.path, self.headers.get("Authorization", ""), self.headers.get("Cookie", "")))
                if self.path == "/robots.txt" and site.robots is None:
                    return self.answer(404, "")
                if self.path.startswith("/away"):
                    return self.answer(302, "", {"Location": site.away})
                if not site.allowed(self):
                    challenge = {"WWW-Authenticate": f'Digest realm="intranet", qop="auth", nonce="{site.nonce}"'}
                    return self.answer(401, "<html><body>log in</body></html>", challenge if site.mode == "digest" else {})
                if self.path == "/robots.txt":
                    return self.answer(200, site.robots or "", {"Content-Type": "text/plain"})
                body = site.pages.get(self.path)
                kind = "application/xml" if self.path.endswith(".xml") else "text/html"
                return self.answer(200 if body is not None else 404, body or "", {"Content-Type": kind})

            def answer(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
                data = body.encode()
                self.send_response(status)
                for name, value in {"Content-Type": "text/html", **(headers or {})}.items():
                    self.send_header(name, value)
                if site.cookie:
                    self.send_header("Set-Cookie", f"{site.cookie}; Path=/")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        self.away = self.url
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def allowed(self, request: BaseHTTPRequestHandler) -> bool:
        authorization = request.headers.get("Authorization", "")
        if self.mode is None:
            return True
        if self.mode == "basic":
            return authorization == "Basic " + base64.b64encode(f"crawler:{self.accept}".encode()).decode()
        if self.mode == "bearer":
            return authorization == f"Bearer {self.accept}"
        if self.mode == "header":
            return request.headers.get("X-Api-Key") == self.accept
        if self.mode == "cookie":
            return f"session={self.accept}" in [c.strip() for c in request.headers.get("Cookie", "").split(";")]
        assert self.mode == "digest"
        if not authorization.startswith("Digest "):
            return False
        fields = dict(
            (key.strip(), value.strip().strip('"'))
            for key, value in (part.split("=", 1) for part in authorization[7:].split(","))
        )

        def md5(text: str) -> str:
            return hashlib.md5(text.encode()).hexdigest()  # noqa: S324 - digest's own hash

        ha1, ha2 = md5(f"crawler:intranet:{self.accept}"), md5(f"GET:{request.path}")
        expected = md5(f"{ha1}:{self.nonce}:{fields.get('nc')}:{fields.get('cnonce')}:auth:{ha2}")
        return fields.get("uri") == request.path and fields.get("response") == expected

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def intranet(count: int = 4) -> dict[str, str]:
    links = "".join(f'<a href="/page{n}.html">page {n}</a> ' for n in range(count))
    pages = {"/index.html": f"<html><head><title>Home</title></head><body>{links}<a href='/away'>away</a></body></html>"}
    for n in range(count):
        pages[f"/page{n}.html"] = f"<html><head><title>Page {n}</title></head><body><p>Text of page {n}.</p></body></html>"
    return pages


@pytest.fixture
def sites():
    started: list[AuthSite] = []

    def start(mode: str | None, pages: dict[str, str], accept: str = PASSWORD, **options: str) -> AuthSite:
        site = AuthSite(mode, pages, accept, **options)
        started.append(site)
        return site

    yield start
    for site in started:
        site.stop()


def auth_source(site: AuthSite, other: AuthSite, table: str, extra: str = "") -> str:
    """A source crawling ``site``, with ``other`` (another port of 127.0.0.1) in its scope."""
    ports = f'ports = {{ "127.0.0.1" = {{ include = [{site.port}, {other.port}] }} }}'
    return f'seeds = ["{site.url}index.html"]\n{ports}\n{extra}[access]\npublic = true\n[[auth]]\norigins = ["{site.url.rstrip("/")}"]\n{table}\n'


TABLES = {
    "basic": 'type = "basic"\nuser = "crawler"\nsecret = "INTRANET_SECRET"',
    "digest": 'type = "digest"\nuser = "crawler"\nsecret = "INTRANET_SECRET"',
    "bearer": 'type = "bearer"\nsecret = "INTRANET_SECRET"',
    "header": 'type = "header"\nheader = "X-Api-Key"\nsecret = "INTRANET_SECRET"',
    "cookie": 'type = "cookie"\nsecret = "INTRANET_SECRET"',
}


@pytest.mark.parametrize("mode", list(TABLES))
def test_a_site_behind_credentials_is_crawled_and_they_stay_at_home(project, solr, sites, mode: str) -> None:
    """Its credentials, and the cookies it sets (a session standing for them), reach no other
    port of its host: not through a link, a redirect or that port's robots.txt."""
    landing = {
        "/landing.html": "<html><head><title>Landing</title></head><body>elsewhere</body></html>",
        "/moved.html": "<html><head><title>Moved</title></head><body>moved here</body></html>",
        "/listed.html": "<html><head><title>Listed</title></head><body>in a sitemap</body></html>",
    }
    other = sites(None, landing, robots="User-agent: *\nAllow: /\n", cookie="other=theirs")
    other.pages["/sitemap.xml"] = (
        '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{other.url}listed.html</loc></url></urlset>"
    )
    site = sites(mode, intranet(), cookie="site=session-of-the-credentials")
    site.away = other.url + "moved.html"  # a redirect to another port of the same host
    site.pages["/index.html"] = site.pages["/index.html"].replace("</body>", f'<a href="{other.url}landing.html">x</a></body>')
    name = f"auth-{mode}-{uuid.uuid4().hex[:6]}"
    project.source(name, auth_source(site, other, TABLES[mode], f'sitemaps = ["{other.url}sitemap.xml"]\n'))
    secret = f"session={PASSWORD}" if mode == "cookie" else PASSWORD
    result = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG", INTRANET_SECRET=secret)
    assert result.returncode == 0, result.stderr[-3000:]
    docs = solr_docs(solr, name)
    titles = {doc["title"] for doc in docs}
    assert {"Home", "Page 0", "Page 1", "Page 2", "Page 3", "Landing", "Moved", "Listed"} <= titles, titles
    assert other.seen and all(not authorization and PASSWORD not in cookie for _p, authorization, cookie in other.seen)
    paths = {path for path, _a, _c in other.seen if "searchcrawl-not-found-" not in path}
    assert paths == {"/robots.txt", "/landing.html", "/moved.html", "/sitemap.xml", "/listed.html"}, other.seen
    # and its not-found probe (content/soft_errors.py), without the credentials as every request there
    assert len([path for path, _a, _c in other.seen if "searchcrawl-not-found-" in path]) == 1, other.seen
    assert [(path, cookie) for path, _a, cookie in other.seen if "site=" in cookie] == []  # the site's cookie stays home
    assert [(path, cookie) for path, _a, cookie in site.seen if "other=" in cookie] == []  # and the other's there
    assert any("site=session-of-the-credentials" in cookie for _p, _a, cookie in site.seen[1:]), site.seen  # kept
    assert PASSWORD not in result.stderr + result.stdout
    assert PASSWORD not in json.dumps(docs)
    report = project.scrapy("report", name, "--json")
    assert report.returncode == 0 and PASSWORD not in report.stdout + report.stderr
    if mode == "digest":  # one challenge, answered; then every request answers it at once
        unanswered = [path for path, authorization, _c in site.seen if not authorization and path != "/robots.txt"]
        # the first request of the site: its not-found probe, which its pages wait for
        assert len(unanswered) == 1 and "searchcrawl-not-found-" in unanswered[0], site.seen


def test_refused_credentials_remove_nothing_and_the_crawl_stops_asking(project, solr, sites) -> None:
    other = sites(None, {})
    site = sites("basic", intranet(12))
    name = f"auth-refused-{uuid.uuid4().hex[:6]}"
    project.source(name, auth_source(site, other, TABLES["basic"]))
    assert project.scrapy("crawl", name, INTRANET_SECRET=PASSWORD).returncode == 0
    indexed = {doc["url"] for doc in solr_docs(solr, name)}
    assert len(indexed) == 13  # the index and twelve pages

    site.accept = "a-new-password"  # the secret is out of date
    site.seen.clear()
    project.source(name, auth_source(site, other, TABLES["basic"], "concurrent_requests = 1\nconcurrent_per_site = 1\n"))
    result = project.scrapy("crawl", name, INTRANET_SECRET=PASSWORD)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refused the source's credentials 3 times in a row" in result.stderr
    assert {doc["url"] for doc in solr_docs(solr, name)} == indexed  # nothing removed
    table = project.table()
    rows = [table.get(name, f"{site.url}page{n}.html") for n in range(12)] + [table.get(name, f"{site.url}index.html")]
    assert {row["status"] for row in rows} == {936}
    assert {row["state"] for row in rows} == {"indexed"} and {row["failures"] for row in rows} == {0}
    asked = [path for path, _a, _c in site.seen if path not in ("/robots.txt", "/away")]
    assert len(asked) == 3, asked  # then it stopped asking


def test_a_robots_txt_behind_digest_is_read_and_obeyed(project, solr, sites) -> None:
    """robots.txt answers the digest challenge as the pages do: its Disallow keeps /private/ out
    (the crawl never asks for it, `scrapy explain` says so) and its Sitemap line is read."""
    other = sites(None, {})
    site = sites("digest", intranet(2))
    site.robots = f"User-agent: *\nDisallow: /private/\nSitemap: {site.url}sitemap.xml\n"
    site.pages["/index.html"] = site.pages["/index.html"].replace("</body>", '<a href="/private/secret.html">s</a></body>')
    site.pages["/private/secret.html"] = "<html><head><title>Private</title></head><body>not for search</body></html>"
    site.pages["/sitemap.xml"] = (
        '<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.url}unlinked.html</loc></url></urlset>"
    )
    site.pages["/unlinked.html"] = "<html><head><title>Unlinked</title></head><body>in the sitemap only</body></html>"
    name = f"auth-robots-{uuid.uuid4().hex[:6]}"
    project.source(name, auth_source(site, other, TABLES["digest"]))

    explained = project.scrapy("explain", name, f"{site.url}private/secret.html", INTRANET_SECRET=PASSWORD)
    assert explained.returncode == 0, explained.stdout + explained.stderr
    assert f"robots.txt:    {site.url}robots.txt: HTTP 200" in explained.stdout, explained.stdout
    assert explained.stdout.rstrip().splitlines()[-1].startswith("verdict:       EXCLUDED (907 excluded_robots)")
    assert [path for path, _a, _c in site.seen] == ["/robots.txt", "/robots.txt"]  # challenged, then answered

    site.seen.clear()
    result = project.scrapy("crawl", name, INTRANET_SECRET=PASSWORD)
    assert result.returncode == 0, result.stderr[-3000:]
    paths = [path for path, _a, _c in site.seen]
    assert "/private/secret.html" not in paths and "/sitemap.xml" in paths, paths
    assert paths.count("/robots.txt") == 2, paths
    unanswered = [path for path, authorization, _c in site.seen if not authorization]
    assert unanswered == ["/robots.txt"], site.seen  # the one challenge, on the first request
    titles = {doc["title"] for doc in solr_docs(solr, name)}
    assert {"Home", "Page 0", "Page 1", "Unlinked"} == titles, titles
    row = project.table().get(name, f"{site.url}private/secret.html")
    assert row is not None and row["status"] == 907, row
    assert PASSWORD not in result.stderr + result.stdout + explained.stdout + explained.stderr
