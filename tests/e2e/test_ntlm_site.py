"""A site behind NTLM, as IIS and SharePoint run it: the handshake authenticates the TCP
connection (the server's NTLM context lives on the per-connection handler, as on IIS), so the
crawl must send the negotiate and authenticate messages on one keep-alive connection and may
then use it without a new handshake. The acceptor is pyspnego's, with a credential file
(NTLM_USER_FILE). Checked: the site crawled completely into Solr, the handshake's cost per page,
the handshake redone on a new connection when the server closes one, the password in no DEBUG
log line, report or Solr field, nothing sent to another port of 127.0.0.1, and a refused
password: status 936, nothing removed, the crawl stops asking."""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest

from tests.conftest import solr_docs
from tests.e2e.test_site_auth import AuthSite, auth_source, intranet, sites  # noqa: F401 - the fixture
from tests.ntlm_site import PASSWORD, NtlmSite, ntlm_sites  # noqa: F401 - the fixture

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
    assert {"Home", "Page 0", "Page 1", "Page 2", "Page 3", "Landing"} <= {doc["title"] for doc in docs}, (
        site.seen,
        result.stderr[-4000:],
    )
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
    urls = {path for _n, path, carried in site.seen}
    assert len(site.seen) == len(urls) + 2 * len(connections), site.seen  # a handshake costs two more requests


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
