"""End-to-end crawls for: Batching, pushing the cache to a real Solr, documents Solr refuses, and when a crawl pushes (the components alone: tests.index.test_indexer)."""

import uuid

import pysolr

from searchcrawl.store.runs import Runs
from tests.conftest import add_core, solr_docs
from tests.e2e.test_indexer import solr_update_requests  # noqa: F401 - helpers and fixtures
from tests.sites import build_intranet

BOOLEAN_FIELDS = '<dynamicField name="*_b" type="boolean" indexed="true" stored="true"/>'


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
    result = project.scrapy(
        "crawl",
        name,
        "-s",
        "SEARCHCRAWL_CACHE_MAX_BYTES=20000",
        "-s",
        "CONCURRENT_REQUESTS=2",
        "-s",
        "SEARCHCRAWL_PUSH_INTERVAL=0",
    )
    requests_made = solr_update_requests(solr_url) - before
    assert result.returncode == 0, result.stderr[-3000:]
    assert len(solr_docs(solr, name)) == len(pages)
    cached = sum(path.stat().st_size for path in (project.data_dir / "cache" / name).glob("*.spool"))
    assert cached > 5 * 20000  # the cache was over the threshold for most of the crawl
    # about one push per 20 KB cached (each a request or two), a commit, nothing per document
    assert requests_made <= 2 * cached // 20000 + 4, (requests_made, len(pages))


def test_a_crawl_with_a_document_solr_refuses_indexes_the_rest_and_exits_0(project, serve, tmp_path, dev_solr) -> None:
    """One page carries an attribute the index's schema has no field for (a Solr whose schema
    lags behind the sources: Solr answers 400 "unknown field"). Before text cleaning, a 40 KB
    author (an immense term) was the poison; clean_text now cuts it (tests/content)."""
    name = f"poison-{uuid.uuid4().hex[:8]}"
    core = add_core(dev_solr, name.replace("-", "_"), schema=lambda text: text.replace(BOOLEAN_FIELDS, ""))
    project.solr_url = core
    solr = pysolr.Solr(core, always_commit=True, timeout=30)
    site_root = tmp_path / "site"
    site_root.mkdir()
    site = serve(site_root)
    pages = build_intranet(site_root, sections=2, per_section=3)
    poisoned = site_root / "section1" / "topic2.html"
    html = poisoned.read_text(encoding="utf-8")
    poisoned.write_text(html.replace("<head>", '<head><meta name="flagged" content="yes">', 1), encoding="utf-8")
    project.source(
        name,
        f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n'
        'attributes = { flagged = "flagged" }\nsearch_attributes = { flagged = "boolean" }\n',
    )
    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]  # refused documents are not "left pending" (exit 4)
    log = result.stderr
    bad = f"{site.url}section1/topic2.html"
    assert f"Solr refused document {bad} of {name} (status 924, not indexed): HTTP 400: " in log
    assert "unknown field" in log
    assert "Solr unavailable" not in log and "stay cached and pending" not in log
    assert "1 refused by Solr" in log
    assert {doc["url"] for doc in solr_docs(solr, name)} == {site.url + path for path in pages} - {bad}
    row = project.table().get(name, bad)
    assert row["status"] == 924 and row["state"] != "pending"


def test_a_document_solr_refuses_in_the_last_push_leaves_the_run_finished(project, serve, tmp_path, dev_solr) -> None:
    """The document Solr refuses in the crawl's last push had a duplicate: leaving the index, it
    queued the duplicate to take its place when nothing more was fetched, and the run ended
    suspended (the next crawl resumed it instead of checking the site). The duplicate's turn is
    the next crawl's."""
    name = f"refusedup-{uuid.uuid4().hex[:8]}"
    core = add_core(dev_solr, name.replace("-", "_"), schema=lambda text: text.replace(BOOLEAN_FIELDS, ""))
    project.solr_url = core
    root = tmp_path / "site"
    root.mkdir()
    site = serve(root)
    body = "<title>Same</title></head><body><p>the same title and text</p>"
    (root / "index.html").write_text(
        '<html><head><title>Home</title></head><body><a href="/flagged.html">flagged</a></body></html>'
    )
    # the copy is reached only from the flagged page: the flagged one is the original
    (root / "flagged.html").write_text(
        f'<html><head><meta name="flagged" content="yes">{body}<a href="/copy.html"></a></body></html>'
    )
    (root / "copy.html").write_text(f"<html><head>{body}</body></html>")
    project.source(
        name,
        f'seeds = ["{site.url}index.html"]\nattributes = {{ flagged = "flagged" }}\nsearch_attributes = {{ flagged = "boolean" }}\n',
    )
    result = project.scrapy("crawl", name, "-s", "SEARCHCRAWL_PUSH_INTERVAL=0")  # every document in the last push
    assert result.returncode == 0, result.stderr[-3000:]
    table = project.table()
    assert table.get(name, site.url + "copy.html")["status"] == 911  # a duplicate of the refused one
    assert table.get(name, site.url + "flagged.html")["status"] == 924
    assert Runs(table.database).latest(name)["state"] == "finished"
    again = project.scrapy("crawl", name, "-s", "SEARCHCRAWL_PUSH_INTERVAL=0")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Resuming run" not in again.stderr  # a maintenance crawl of the site
