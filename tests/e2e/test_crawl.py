"""End-to-end: `scrapy crawl <source>` against real HTTP servers on 127.0.0.1 and a real Solr."""

from __future__ import annotations

import hashlib
import time
import uuid

import pysolr
import pytest

from searchcrawl.content.extract import solr_id
from searchcrawl.dev.solr_runner import DevSolr
from searchcrawl.index.cache import DocumentCache
from searchcrawl.store import Database, DocumentTable
from tests.conftest import free_port, solr_docs
from tests.sites import build_intranet


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def source_text(seed: str, max_depth: int = 2, extra: str = "") -> str:
    return f'description = "test"\nseeds = ["{seed}"]\nmax_depth = {max_depth}\n{extra}'


def test_crawl_puts_exactly_the_in_scope_pages_into_solr(project, serve, tmp_path, solr) -> None:
    (tmp_path / "other").mkdir()
    other = serve(tmp_path / "other")
    site_root = tmp_path / "site"
    site_root.mkdir()
    site = serve(site_root)
    offsite = (f"http://localhost:{site.port}/index.html", f"http://127.0.0.1:{other.port}/trap.html")
    pages = build_intranet(site_root, offsite=offsite)
    name = unique("intranet")
    project.source(name, source_text(site.url + "index.html", max_depth=2))

    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]

    in_scope = {site.url + path for path, page in pages.items() if page.depth <= 2}
    assert len(in_scope) == 57
    docs = {doc["url"]: doc for doc in solr_docs(solr, name)}
    assert set(docs) == in_scope
    # off-site links were not followed; depth was honoured
    assert other.requests == []
    assert all(host == f"127.0.0.1:{site.port}" for _m, host, _p in site.requests)
    assert not [p for p in site.paths() if "/deep/" in p]
    assert sorted(site.paths()) == sorted(set(site.paths()))  # each page fetched once

    page = pages["section3/topic4.html"]
    doc = docs[site.url + page.path]
    assert doc["title"] == page.title
    assert doc["description"] == page.description
    assert doc["subject"] == list(page.keywords)
    assert doc["author"] == page.author
    assert doc["language"] == "en"
    assert (doc["host"], doc["mimetype"], doc["source"]) == (f"127.0.0.1:{site.port}", "text/html", name)  # a port not http's own
    assert doc["url"] == doc["display_url"] and doc["id"] == solr_id(name, doc["url"])
    assert page.text.split(".")[0] in doc["content"]
    assert doc["checksum"] == hashlib.sha256(f"{doc['title']}\n{doc['content']}".encode()).hexdigest()
    assert doc["last_modified"].endswith("Z") and doc["crawled_at"].endswith("Z")

    table = DocumentTable(Database(f"sqlite:///{project.data_dir / 'documents.sqlite3'}"))
    assert table.count_by(name, "state") == {"indexed": 57, "excluded": 48 + 2}
    assert table.count_by(name, "status") == {200: 57, 905: 48, 901: 1, 902: 1}
    row = table.get(name, offsite[0])
    assert row["status"] == 901 and "localhost" in row["reason"]
    assert not list((project.data_dir / "cache" / name).glob("*.spool"))  # cache emptied after indexing


def test_file_seeds_custom_spider_and_preserve_cache(project, tmp_path, solr) -> None:
    site_root = tmp_path / "site"
    site_root.mkdir()
    pages = build_intranet(site_root, sections=2, per_section=3)
    name = unique("files")
    project.source(
        name,
        source_text(
            (site_root / "index.html").as_uri(),
            max_depth=2,
            extra='spider_class = "topics_only"\npreserve_cache = true\n',
        ),
    )
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    expected = {(site_root / path).as_uri() for path, page in pages.items() if page.depth == 2}
    assert {doc["url"] for doc in solr_docs(solr, name)} == expected
    assert DocumentCache(project.data_dir / "cache" / name).documents().keys() == expected


def test_document_table_on_postgresql(project, serve, tmp_path, solr, postgres_url) -> None:
    site_root = tmp_path / "site"
    site_root.mkdir()
    site = serve(site_root)
    pages = build_intranet(site_root, sections=2, per_section=2)
    name = unique("pg")
    project.db_url = postgres_url
    project.source(name, source_text(site.url + "index.html", max_depth=3))
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(solr_docs(solr, name)) == len(pages)
    assert DocumentTable(Database(postgres_url)).count_by(name, "state") == {"indexed": len(pages)}


@pytest.fixture
def outage_solr(tmp_path_factory) -> DevSolr:
    solr = DevSolr(tmp_path_factory.mktemp("outage-solr"), free_port())
    solr.start(timeout=600)
    yield solr
    solr.stop()


def test_solr_outage_loses_nothing_and_indexes_nothing_twice(project, serve, tmp_path, outage_solr) -> None:
    site_root = tmp_path / "site"
    site_root.mkdir()
    site = serve(site_root)
    pages = build_intranet(site_root, sections=8, per_section=6)
    name = unique("outage")
    project.solr_url = outage_solr.url
    project.source(name, source_text(site.url + "index.html", max_depth=3))
    client = pysolr.Solr(outage_solr.url, timeout=10)

    # A slow crawl that pushes after every document; Solr is stopped once the first ones are in.
    crawl = project.popen(
        "crawl",
        name,
        "-s",
        "SEARCHCRAWL_CACHE_MAX_BYTES=1",
        "-s",
        "DOWNLOAD_DELAY=0.1",
        "-s",
        "CONCURRENT_REQUESTS=1",
        "-s",
        "SEARCHCRAWL_SOLR_RETRY_TIMES=2",
        "-s",
        "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.5",
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        client.commit(softCommit=True)
        if client.search("*:*", rows=0).hits > 0:
            break
        time.sleep(0.2)
    outage_solr.stop()
    output, _ = crawl.communicate(timeout=600)
    assert crawl.returncode == 4, output[-3000:]  # exit 4: documents left cached and pending (README)
    assert "stay cached and pending" in output

    table = DocumentTable(Database(f"sqlite:///{project.data_dir / 'documents.sqlite3'}"))
    states = table.count_by(name, "state")
    assert states.get("pending", 0) > 0 and states.get("indexed", 0) > 0
    assert sum(states.get(s, 0) for s in ("pending", "indexed")) == len(pages)

    outage_solr.start(timeout=600)
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "left pending by an earlier crawl" in result.stderr
    assert table.count_by(name, "state") == {"indexed": len(pages)}
    client.commit()
    ids = [doc["url"] for doc in client.search("*:*", rows=1000, fl="url")]
    assert sorted(ids) == sorted(site.url + path for path in pages)  # each page exactly once


def test_network_failures_get_their_status(project, serve, tmp_path) -> None:
    """Connection refused and a server that never answers: a status each, and the crawl goes on."""
    import socket as socketlib

    from scrapy.exceptions import CannotResolveHostError
    from twisted.internet.error import DNSLookupError

    from searchcrawl.rules.status_codes import Status, status_for_exception

    assert status_for_exception(CannotResolveHostError("x")) == status_for_exception(DNSLookupError()) == Status.DNS_FAILURE
    silent = socketlib.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections, never answers
    refused_port = free_port()
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    silent_url = f"http://127.0.0.1:{silent.getsockname()[1]}/slow.html"
    refused_url = f"http://127.0.0.1:{refused_port}/none.html"
    (root / "index.html").write_text(
        f'<html><body><a href="{silent_url}">slow</a> <a href="{refused_url}">refused</a></body></html>'
    )
    name = f"failures-{uuid.uuid4().hex[:8]}"
    project.source(
        name,
        f"""seeds = ["{site.url}index.html"]
domains = {{ include = ["127.0.0.1"] }}
obey_robots = false  # with robots.txt obeyed, an unreachable robots.txt excludes the site first (907)
""",
    )
    try:
        result = project.scrapy("crawl", name, "-s", "DOWNLOAD_TIMEOUT=2", "-s", "RETRY_TIMES=0")
    finally:
        silent.close()
    assert result.returncode == 0, result.stderr[-3000:]
    table = project.table()
    assert table.get(name, silent_url)["status"] == Status.TIMEOUT
    assert table.get(name, refused_url)["status"] == Status.CONNECTION_REFUSED
    assert table.get(name, site.url + "index.html")["state"] == "indexed"
