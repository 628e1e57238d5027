"""Issue 91: a source whose seed was SOLR_URL's own ``/select?q=*:*&wt=csv&fl=url,content``
indexed Solr's CSV of every document (the private ones included) as one public page. A real crawl
against the test Solr and a site on 127.0.0.1 beside it: the Solr is refused (944) as a seed, as a
redirect's target and under another name of this machine (``localhost``), although the source's
domain rule admits every port of 127.0.0.1; the site on another port of the same address is
crawled and indexed. The unit tests of the rule: tests/rules/test_own_services.py and
tests/crawl/middlewares/test_address_guard.py."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.urls import canonical
from tests.conftest import Project, free_port, solr_docs
from tests.e2e.test_crawl import unique
from tests.e2e.test_redirects import page
from tests.web_site import serve_web


def test_a_source_never_crawls_the_installations_solr(project: Project, serve: Any, tmp_path: Path, solr: Any) -> None:
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    solr_port = urlsplit(project.solr_url).port
    dump = f"{project.solr_url}/select?fl=url,content&q=*:*&wt=csv"
    renamed = f"http://localhost:{solr_port}/solr/admin/cores?action=STATUS"
    (root / "index.html").write_text(page("home", ["/to-solr", renamed, "about.html"]))
    (root / "about.html").write_text(page("about"))
    site.redirect("/to-solr", 302, f"{project.solr_url}/select?q=secret&wt=json")
    name = unique("own")
    project.source(
        name,
        f'seeds = ["{site.url}index.html", "{dump}"]\nmax_depth = 2\nindex_dynamic_pages = true\n'
        'domains = { include = ["127.0.0.1", "localhost"] }\n',
    )
    done = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG")
    assert done.returncode == 0, done.stderr[-3000:]
    table = project.table()
    refused = {row["url"]: row["reason"] for row in table.rows(name, status=Status.OWN_SERVICE, limit=100)}
    assert set(refused) == {canonical(dump), renamed, f"{project.solr_url}/select?q=secret&wt=json"}, table.rows(name, limit=100)
    assert all("a node of Solr of this installation" in reason for reason in refused.values()), refused
    assert table.get(name, site.url + "to-solr")["status"] == 302  # followed by the policy; its target refused
    assert "is a node of Solr of this installation" in done.stderr  # the DEBUG line of each refusal
    assert "A standalone Solr: no SolrCloud live nodes to learn" in done.stderr  # Solr's answer, read: not failing closed
    assert "live nodes cannot be learnt" not in done.stderr
    assert {doc["url"] for doc in solr_docs(solr, name)} == {site.url + "index.html", site.url + "about.html"}


def test_an_agent_never_asks_the_installations_solr(project: Project) -> None:
    """An agent that asks its repository itself (here WebDAV, whose root is the Solr's collection)
    never sends the installation's Solr a request: the run fails before anything is listed."""
    name = unique("own-dav")
    project.source(name, f'type = "webdav"\n[webdav]\nroot = "{project.solr_url}/"\n[access]\npublic = true\n')
    done = project.scrapy("crawl", name)
    assert f"The listing of {name} is refused: 127.0.0.1:" in done.stderr, done.stderr[-3000:]
    assert "is a node of Solr of this installation" in done.stderr
    assert "PROPFIND" not in done.stderr and "answered HTTP" not in done.stderr


@pytest.mark.parametrize("robots", ["true", "false"])
def test_the_installations_solr_by_another_spelling_is_refused_at_the_connection_and_not_retried(
    project: Project, robots: str
) -> None:
    """Issue 99: spellings of this machine the guard does not read as an address before the
    connection (IPv4's short, decimal, hexadecimal and octal forms; the machine's own name, from
    /etc/hosts) are seeds, admitted without a look-up, and the crawl's resolver refuses the Solr
    they lead to when it connects: recorded 944, as docs/status-codes.md promises, not as a name
    that does not resolve (931), and never retried. Obeying robots.txt, the site's robots.txt is
    refused so first, and its URLs with it (not 935, robots.txt unavailable); not obeying it, each
    page is refused when it connects."""
    solr_port = urlsplit(project.solr_url).port
    hosts = ["127.1", "2130706433", "0x7f000001", "0177.0.0.1", socket.gethostname()]
    name = unique("own-spelt")
    seeds = ", ".join(f'"http://{host}:{solr_port}/solr/admin/cores?action=STATUS"' for host in hosts)
    project.source(name, f"seeds = [{seeds}]\nindex_dynamic_pages = true\nobey_robots = {robots}\n")
    done = project.scrapy("crawl", name, "-s", "LOG_LEVEL=DEBUG")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = project.table().rows(name, limit=100)
    assert len(rows) == len(hosts) and {row["status"] for row in rows} == {Status.OWN_SERVICE}, rows
    assert all("of this installation" in row["reason"] for row in rows), rows
    assert "Refused at the connection" in done.stderr
    assert "Retrying" not in done.stderr and "retry/count" not in done.stderr, done.stderr[-3000:]


def test_a_crawl_that_is_not_told_the_web_applications_port_refuses_its_pages(project: Project) -> None:
    """Issue 99: `scrapy web` on a port of its own records where it listens in the data directory;
    a crawl started apart from it (no SEARCHCRAWL_WEB_PORT in its environment: the default 8080
    is all its settings know) reads the record and refuses the application's pages, 944, by its
    address and by another name of this machine. The record goes when the server shuts down."""
    port = free_port()
    web = serve_web(project, port)
    try:
        name = unique("own-web")
        seeds = f'"http://127.0.0.1:{port}/", "http://localhost:{port}/search?q=x"'
        project.source(name, f"seeds = [{seeds}]\nindex_dynamic_pages = true\n")
        done = project.scrapy("crawl", name)
        assert done.returncode == 0, done.stderr[-3000:]
        rows = project.table().rows(name, limit=100)
        assert len(rows) == 2 and {row["status"] for row in rows} == {Status.OWN_SERVICE}, rows
        records = sorted((project.data_dir / "listening").glob("web-*.json"))
        assert [json.loads(record.read_text())["port"] for record in records] == [port], records
        assert all(f"is the web application (its record {records[0]})" in row["reason"] for row in rows), rows
    finally:
        web.send_signal(signal.SIGTERM)
        web.wait(timeout=30)
    assert not list((project.data_dir / "listening").glob("*.json"))
