"""A site behind NTLM, as IIS and SharePoint run it: the handshake authenticates the TCP
connection (the server's NTLM context lives on the per-connection handler, as on IIS), so the
crawl must send the negotiate and authenticate messages on one keep-alive connection and may
then use it without a new handshake. The acceptor is pyspnego's, with a credential file
(NTLM_USER_FILE). Checked: the site crawled completely into Solr, the handshake's cost per page,
the handshake redone on a new connection when the server closes one, the password in no DEBUG
log line, report or Solr field, nothing sent to another port of 127.0.0.1, and a refused
password: status 936, nothing removed, the crawl stops asking."""

from __future__ import annotations

import base64
import itertools
import json
import threading
import uuid
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import spnego

from tests.conftest import solr_docs
from tests.e2e.test_site_auth import PASSWORD, AuthSite, auth_source, intranet, sites  # noqa: F401 - the fixture


class NtlmSite:
    """A site on 127.0.0.1 whose every path (robots.txt too) needs an NTLM-authenticated
    connection. ``seen``: (connection number, path, what the request carried: "" or the
    message type, 1 negotiate or 3 authenticate). After ``pages_per_connection`` pages (0: no
    limit) the server closes the connection, saying so (``Connection: close``) or not."""

    def __init__(self, pages: dict[str, str], scheme: str = "NTLM", pages_per_connection: int = 0, say_close: bool = True) -> None:
        self.pages, self.scheme = pages, scheme
        self.pages_per_connection, self.say_close = pages_per_connection, say_close
        self.seen: list[tuple[int, str, str]] = []
        self.away = ""
        numbers = itertools.count(1)
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: the authentication belongs to the connection

            def setup(self) -> None:
                super().setup()
                self.number = next(numbers)
                self.context: spnego.ContextProxy | None = None
                self.authenticated = False
                self.served = 0

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                name, _, token = self.headers.get("Authorization", "").partition(" ")
                if name.lower() == site.scheme.lower() and token:
                    if self.context is None or self.context.complete:  # a new handshake on this connection
                        self.context, self.authenticated = spnego.server(protocol=site.scheme.lower()), False
                        site.seen.append((self.number, self.path, "1"))
                    else:
                        site.seen.append((self.number, self.path, "3"))
                    try:
                        out = self.context.step(base64.b64decode(token))
                    except Exception:  # refused, or not the message expected on this connection (as IIS)
                        self.context = None
                        return self.answer(401, "refused", {"WWW-Authenticate": site.scheme})
                    if not self.context.complete:
                        assert out is not None
                        return self.answer(401, "", {"WWW-Authenticate": f"{site.scheme} {base64.b64encode(out).decode()}"})
                    self.authenticated = True
                else:
                    site.seen.append((self.number, self.path, name))
                    if not self.authenticated:
                        return self.answer(401, "<html><body>log in</body></html>", {"WWW-Authenticate": site.scheme})
                self.served += 1
                if self.path.startswith("/away"):
                    return self.answer(302, "", {"Location": site.away})
                body = site.pages.get(self.path)
                return self.answer(200 if body is not None else 404, body or "")

            def answer(self, status: int, body: str, headers: dict[str, str] | None = None) -> None:
                data = body.encode()
                closing = bool(site.pages_per_connection and self.served >= site.pages_per_connection)
                self.send_response(status)
                for name, value in {"Content-Type": "text/html", **(headers or {})}.items():
                    self.send_header(name, value)
                if closing and site.say_close:
                    self.send_header("Connection", "close")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = self.close_connection or closing

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handshakes_on_their_connection(self) -> bool:
        """Every authenticate message went on the connection its negotiate message went on, next."""
        last: dict[int, str] = {}
        for number, _path, carried in self.seen:
            if carried == "3" and last.get(number) != "1":
                return False
            last[number] = carried
        return True


@pytest.fixture
def ntlm_sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    users = tmp_path / "ntlm-users"
    users.write_text(f"CORP:crawler:{PASSWORD}\n")
    monkeypatch.setenv("NTLM_USER_FILE", str(users))  # the acceptor's credential store (this process's)
    started: list[NtlmSite] = []

    def start(pages: dict[str, str], **options: object) -> NtlmSite:
        site = NtlmSite(pages, **options)  # type: ignore[arg-type]
        started.append(site)
        return site

    yield start
    for site in started:
        site.stop()


TABLE = 'type = "ntlm"\nuser = "CORP\\\\crawler"\nsecret = "INTRANET_SECRET"'


def crawl(project, name: str, site: NtlmSite, other: AuthSite, extra: str = "", secret: str = PASSWORD):
    project.source(name, auth_source(site, other, TABLE, extra))  # type: ignore[arg-type]
    return project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG", INTRANET_SECRET=secret)


def linked(site: NtlmSite, other: AuthSite) -> None:
    site.away = other.url + "landing.html"  # a redirect to another port of the same host
    site.pages["/index.html"] = site.pages["/index.html"].replace("</body>", f'<a href="{other.url}landing.html">x</a></body>')


@pytest.mark.parametrize("scheme", ["NTLM", "Negotiate"])
def test_an_ntlm_site_is_crawled_with_one_handshake_on_its_connection(project, solr, sites, ntlm_sites, scheme) -> None:  # noqa: F811
    other = sites(None, {"/landing.html": "<html><head><title>Landing</title></head><body>elsewhere</body></html>"})
    site = ntlm_sites(intranet(), scheme=scheme)
    linked(site, other)
    name = f"ntlm-{scheme.lower()}-{uuid.uuid4().hex[:6]}"
    result = crawl(project, name, site, other)
    assert result.returncode == 0, result.stderr[-3000:]
    docs = solr_docs(solr, name)
    assert {"Home", "Page 0", "Page 1", "Page 2", "Page 3", "Landing"} <= {doc["title"] for doc in docs}, (site.seen, result.stderr[-4000:])
    assert other.seen and all(not authorization for _p, authorization, _c in other.seen)  # nothing to another port
    assert PASSWORD not in result.stderr + result.stdout
    assert PASSWORD not in json.dumps(docs)
    report = project.scrapy("report", name, "--json")
    assert report.returncode == 0 and PASSWORD not in report.stdout + report.stderr
    # one connection, one handshake: the first URL costs three requests, every other one one
    pages = [path for _n, path, carried in site.seen if carried not in ("1", "3")]
    assert Counter(carried for _n, _p, carried in site.seen) == Counter({"": len(pages), "1": 1, "3": 1}), site.seen
    assert {number for number, _p, _c in site.seen} == {1} and site.handshakes_on_their_connection()
    assert len(site.seen) == len(set(pages)) + 2, site.seen  # robots.txt, the index, 4 pages, /away: 7 URLs


@pytest.mark.parametrize("say_close", [True, False], ids=["connection-close", "silent-close"])
def test_a_server_closing_connections_gets_the_handshake_again(project, solr, sites, ntlm_sites, say_close: bool) -> None:  # noqa: F811
    other = sites(None, {})
    site = ntlm_sites(intranet(8), pages_per_connection=3, say_close=say_close)
    name = f"ntlm-close-{uuid.uuid4().hex[:6]}"
    result = crawl(project, name, site, other)
    assert result.returncode == 0, result.stderr[-3000:]
    assert {f"Page {n}" for n in range(8)} <= {doc["title"] for doc in solr_docs(solr, name)}
    assert site.handshakes_on_their_connection(), site.seen
    connections = {number for number, _p, _c in site.seen}
    handshakes = [number for number, _p, carried in site.seen if carried == "1"]
    assert len(connections) >= 4 and sorted(handshakes) == sorted(connections), site.seen  # one per connection
    urls = {path for _n, path, carried in site.seen if carried == "3"} | {path for _n, path, carried in site.seen if carried == ""}
    assert len(site.seen) <= len(urls) + 3 * len(connections), site.seen  # at most two more requests a connection


def test_a_refused_ntlm_password_removes_nothing_and_the_crawl_stops_asking(project, solr, sites, ntlm_sites) -> None:  # noqa: F811
    other = sites(None, {})
    site = ntlm_sites(intranet(12))
    name = f"ntlm-refused-{uuid.uuid4().hex[:6]}"
    result = crawl(project, name, site, other)
    assert result.returncode == 0, result.stderr[-3000:]
    indexed = {doc["url"] for doc in solr_docs(solr, name)}
    assert len(indexed) == 13  # the index and twelve pages

    site.seen.clear()
    result = crawl(project, name, site, other, "concurrent_requests = 1\n", secret="an-outdated-password")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "refused the source's credentials 3 times in a row" in result.stderr
    assert "an-outdated-password" not in result.stderr + result.stdout
    assert {doc["url"] for doc in solr_docs(solr, name)} == indexed  # nothing removed
    table = project.table()
    rows = [table.get(name, f"{site.url}page{n}.html") for n in range(12)] + [table.get(name, f"{site.url}index.html")]
    assert {row["status"] for row in rows} == {936}
    assert {row["state"] for row in rows} == {"indexed"} and {row["failures"] for row in rows} == {0}
    asked = {path for _n, path, _c in site.seen if path != "/robots.txt"}
    assert len(asked) == 3, site.seen  # then it stopped asking
