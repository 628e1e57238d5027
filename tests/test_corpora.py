"""Realistic crawls of real third-party sites from ../shared/corpora."""

import re
import time

import pytest

from searchcrawl.db import DocumentTable

from .conftest import solr_docs, unpack


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
    pages = {doc["id"] for doc in docs if doc.get("mimetype") == "text/html"}
    html_files = {p for p in root.rglob("*.html")}
    reachable = len(pages)
    # Every page the crawl reached is in Solr once, and the crawl reached nearly the whole site.
    assert reachable >= 0.9 * len(html_files), (reachable, len(html_files))
    assert len({doc["id"] for doc in docs}) == len(docs)
    table = DocumentTable(f"sqlite:///{project.data_dir / 'documents.sqlite3'}")
    states = table.count_by("scipy", "state")
    assert states.get("pending", 0) == 0
    assert states["indexed"] == len(docs)
    print(f"\nscipy-lectures: {len(docs)} documents indexed ({reachable} HTML of {len(html_files)} files) "
          f"in {elapsed:.1f}s = {len(docs) / elapsed:.1f} documents/s including indexing")
    assert not re.search(r"Traceback", result.stderr)
