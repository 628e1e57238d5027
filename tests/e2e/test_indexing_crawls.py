"""End-to-end crawls for: Batching, pushing the cache to a real Solr, documents Solr refuses, and when a crawl pushes (the components alone: tests.index.test_indexer)."""

import uuid

from tests.conftest import solr_docs
from tests.index.test_indexer import solr_update_requests  # noqa: F401 - helpers and fixtures
from tests.sites import build_intranet


def test_a_crawl_pushes_in_batches_of_the_threshold_even_with_preserve_cache(project, serve, tmp_path, solr_url, solr) -> None:
    """preserve_cache keeps every pushed spool, so the cache stays over a small threshold: a push
    must still wait for another threshold's worth of documents, not start with every one."""
    site_root = tmp_path / "site"
    site_root.mkdir()
    site = serve(site_root)
    pages = build_intranet(site_root, sections=6, per_section=8)  # 103 pages of about 1.2 KB
    name = f"batches-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 3\npreserve_cache = true\n')
    before = solr_update_requests(solr_url)
    result = project.scrapy("crawl", name, "-s", "SEARCHCRAWL_CACHE_MAX_BYTES=20000", "-s", "CONCURRENT_REQUESTS=2")
    requests_made = solr_update_requests(solr_url) - before
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(solr_docs(solr, name)) == len(pages)
    cached = sum(path.stat().st_size for path in (project.data_dir / "cache" / name).glob("*.spool"))
    assert cached > 5 * 20000  # the cache was over the threshold for most of the crawl
    # about one push per 20 KB cached (each a request or two), a commit, nothing per document
    assert requests_made <= 2 * cached // 20000 + 4, (requests_made, len(pages))


def test_a_crawl_with_a_document_solr_refuses_indexes_the_rest_and_exits_0(project, serve, tmp_path, solr) -> None:
    site_root = tmp_path / "site"
    site_root.mkdir()
    site = serve(site_root)
    pages = build_intranet(site_root, sections=2, per_section=3)
    poisoned = site_root / "section1" / "topic2.html"
    html = poisoned.read_text(encoding="utf-8")
    author = html.split('<meta name="author" content="', 1)[1].split('"', 1)[0]
    poisoned.write_text(html.replace(f'content="{author}"', f'content="{"Quincy " * 6000}"'), encoding="utf-8")
    name = f"poison-{uuid.uuid4().hex[:8]}"
    project.source(name, f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n')
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]  # refused documents are not "left pending" (exit 4)
    log = result.stderr
    bad = f"{site.url}section1/topic2.html"
    assert f"Solr refused document {bad} of {name} (status 924, not indexed): HTTP 400: " in log
    assert "immense term" in log and "Quincy Quincy" not in log
    assert "Solr unavailable" not in log and "stay cached and pending" not in log
    assert "1 refused by Solr" in log
    assert {doc["url"] for doc in solr_docs(solr, name)} == {site.url + path for path in pages} - {bad}
    row = project.table().get(name, bad)
    assert row["status"] == 924 and row["state"] != "pending"
