"""Realistic crawls of real third-party sites from ../shared/corpora."""

import re
import time

import pytest

from searchcrawl.rules.navigation_pages import navigation_pattern
from searchcrawl.store import Database, DocumentTable
from tests.conftest import solr_docs, unpack


@pytest.mark.slow
def test_scipy_lectures_site_is_crawled_whole(project, serve, tmp_path, solr) -> None:
    root = unpack("scipy-lectures-site.tar.xz", tmp_path / "site")
    folders = [p for p in root.iterdir() if p.is_dir()]
    if not (root / "index.html").exists() and len(folders) == 1:
        root = folders[0]
    site = serve(root)
    project.source("scipy", f'seeds = ["{site.url}index.html"]\nmax_depth = 20\n')
    started = time.monotonic()
    result = project.scrapy("crawl", "scipy", "-s", "LOG_LEVEL=INFO")
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    docs = solr_docs(solr, "scipy")
    pages = {doc["url"] for doc in docs if doc.get("mimetype") == "text/html"}
    html_files = {p for p in root.rglob("*.html")}
    reachable = len(pages)
    # Every page the crawl reached is in Solr once, and the crawl reached nearly the whole site.
    assert reachable >= 0.9 * len(html_files), (reachable, len(html_files))
    assert len({doc["url"] for doc in docs}) == len(docs)
    table = DocumentTable(Database(f"sqlite:///{project.data_dir / 'documents.sqlite3'}"))
    states = table.count_by("scipy", "state")
    assert states.get("pending", 0) == 0
    assert states["indexed"] == len(docs)
    print(
        f"\nscipy-lectures: {len(docs)} documents indexed ({reachable} HTML of {len(html_files)} files) "
        f"in {elapsed:.1f}s = {len(docs) / elapsed:.1f} documents/s including indexing"
    )
    assert not re.search(r"Traceback", result.stderr)


NUTCH_API = "documentation/javadoc/api/"
CRAWL_PKG = NUTCH_API + "org/apache/nutch/crawl/"
COLLECTION_PKG = NUTCH_API + "org/apache/nutch/collection/"


def nutch_site(tmp_path):
    root = unpack("nutch-site.tar.xz", tmp_path / "nutch") / "nutch-site"
    assert (root / "robots.txt").exists()
    return root


@pytest.mark.slow
def test_nutch_site_with_its_robots_txt(project, serve, tmp_path, solr) -> None:
    root = nutch_site(tmp_path)
    site = serve(root)
    project.source("nutch", f'seeds = ["{site.url}{NUTCH_API}index.html"]\nmax_depth = 50\n')
    started = time.monotonic()
    result = project.scrapy("crawl", "nutch")
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-3000:]
    assert site.paths().count("/robots.txt") == 1  # fetched once, cached for the crawl
    docs = solr_docs(solr, "nutch")
    # the Javadoc's lists and indexes are fetched for their links and kept out of the index (917)
    html = {
        p for p in (root / NUTCH_API).rglob("*.html") if navigation_pattern(f"/{p.relative_to(root).as_posix()}", None) is None
    }
    assert len(docs) >= 0.9 * len(html), (len(docs), len(html))
    assert not [doc["url"] for doc in docs if navigation_pattern(doc["url"], None)]
    assert project.table().get("nutch", f"{site.url}{NUTCH_API}index-all.html")["status"] == 917
    assert len({doc["url"] for doc in docs}) == len(docs)
    print(f"\nnutch javadoc: {len(docs)} documents of {len(html)} HTML files in {elapsed:.1f}s")


def test_nutch_site_robots_group_for_our_agent_and_override(project, serve, tmp_path, solr) -> None:
    root = nutch_site(tmp_path)
    robots = (root / "robots.txt").read_text()
    (root / "robots.txt").write_text(
        f"User-agent: searchcrawl\nDisallow: /{CRAWL_PKG}\n\n" + robots  # the site's own '*' group stays
    )
    site = serve(root)
    scope = (
        f'seeds = ["{site.url}{CRAWL_PKG}package-summary.html", "{site.url}{COLLECTION_PKG}package-summary.html"]\n'
        f'max_depth = 5\npaths = {{ "127.0.0.1" = {{ include = ["/{CRAWL_PKG}", "/{COLLECTION_PKG}"] }} }}\n'
    )
    crawl_pages = {
        f"{site.url}{CRAWL_PKG}{p.relative_to(root / CRAWL_PKG).as_posix()}" for p in (root / CRAWL_PKG).rglob("*.html")
    }

    project.source("nutch-obeyed", scope)
    assert project.scrapy("crawl", "nutch-obeyed").returncode == 0
    ids = {doc["url"] for doc in solr_docs(solr, "nutch-obeyed")}
    assert ids and not ids & crawl_pages
    assert not [p for p in site.paths() if p.startswith(f"/{CRAWL_PKG}")]  # never fetched
    row = project.table().get("nutch-obeyed", f"{site.url}{CRAWL_PKG}package-summary.html")
    assert row["status"] == 907
    assert "User-agent: searchcrawl" in row["reason"] and f"line 2: Disallow: /{CRAWL_PKG}" in row["reason"]

    project.source("nutch-other-agent", scope + 'robots_agent = "otherbot"\n')  # falls to the '*' group
    assert project.scrapy("crawl", "nutch-other-agent").returncode == 0
    assert crawl_pages & {doc["url"] for doc in solr_docs(solr, "nutch-other-agent")}

    (root / "robots.txt").write_text("User-agent: *\nDisallow: /\n")
    project.source("nutch-override", scope + "obey_robots = false\n")
    assert project.scrapy("crawl", "nutch-override").returncode == 0
    overridden = {doc["url"] for doc in solr_docs(solr, "nutch-override")}
    kept_out = {u for u in crawl_pages if "class-use" in u or "-tree" in u or navigation_pattern(u, None)}
    assert crawl_pages <= overridden | kept_out
    assert len(overridden & crawl_pages) > 10
