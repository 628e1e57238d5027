"""End-to-end crawls for: Solr ids per source (``<source>!<url>``): sources crawling one URL are independent in Solr, (the components alone: tests.e2e.test_solr_ids)."""

from __future__ import annotations

from searchcrawl.content.extract import solr_id
from tests.conftest import solr_docs
from tests.e2e.test_solr_ids import old_documents, page, small_site, unique, without  # noqa: F401 - helpers and fixtures


def test_two_sources_crawling_one_site_keep_their_own_documents(project, serve, tmp_path, solr) -> None:
    root = tmp_path / "site"
    paths = small_site(root)
    site = serve(root)
    first, second = unique("ids-a"), unique("ids-b")
    for name in (first, second):
        project.source(name, f'seeds = ["{site.url}index.html"]\n')
        result = project.scrapy("crawl", name)
        assert result.returncode == 0, result.stderr[-3000:]
    urls = {site.url + path for path in paths}
    for name in (first, second):
        docs = solr_docs(solr, name)
        assert {doc["url"] for doc in docs} == urls
        assert {doc["id"] for doc in docs} == {solr_id(name, url) for url in urls}

    # A page gone from the site leaves the first source's index; the second's copy stays.
    (root / "p3.html").unlink()
    result = project.scrapy("crawl", first)
    assert result.returncode == 0, result.stderr[-3000:]
    assert {doc["url"] for doc in solr_docs(solr, first)} == urls - {site.url + "p3.html"}
    assert {doc["url"] for doc in solr_docs(solr, second)} == urls

    # `scrapy search` shows each page once, whichever source holds it.
    shown = project.scrapy("search", "walrus migration handbook", "--rows", "50")
    assert shown.returncode == 0, shown.stderr
    listed = [line.strip() for line in shown.stdout.splitlines() if line.startswith("   http")]
    ours = [url for url in listed if url.startswith(site.url)]
    assert sorted(ours) == sorted(site.url + f"p{i}.html" for i in range(6))  # p3 too: the second source has it
    only = project.scrapy("search", "walrus migration handbook", "--source", first, "--rows", "50")
    assert sorted(line.strip() for line in only.stdout.splitlines() if line.startswith("   http")) == sorted(
        site.url + f"p{i}.html" for i in range(6) if i != 3
    )


def test_scrapy_solr_migrate_ids_for_named_sources_then_all(project, solr) -> None:
    first, second = unique("cmd-a"), unique("cmd-b")
    solr.add(old_documents(first, 4) + old_documents(second, 2))
    named = project.scrapy("solr", "migrate-ids", first)
    assert named.returncode == 0, named.stdout + named.stderr
    assert f"{first}: 4 documents migrated" in named.stdout
    assert {doc["id"] for doc in solr_docs(solr, first)} == {solr_id(first, doc["url"]) for doc in old_documents(first, 4)}
    assert {doc["id"] for doc in solr_docs(solr, second)} == {doc["url"] for doc in old_documents(second, 2)}
    everything = project.scrapy("solr", "migrate-ids")
    assert everything.returncode == 0, everything.stdout + everything.stderr
    assert f"{second}: 2 documents migrated" in everything.stdout and f"{first}: 0 documents migrated" in everything.stdout
    assert {doc["id"] for doc in solr_docs(solr, second)} == {solr_id(second, doc["url"]) for doc in old_documents(second, 2)}


def test_migrate_ids_reports_an_unreachable_solr(offline_project) -> None:
    result = offline_project.scrapy("solr", "migrate-ids", "x")
    assert result.returncode == 1 and "cannot connect" in result.stderr


def test_a_crawl_migrates_its_old_documents_before_pushing(project, serve, tmp_path, solr) -> None:
    """An index written by the earlier version (id = URL) and a maintenance crawl that finds
    nothing changed: the crawl gives the documents their new ids, and later removals find them."""
    root = tmp_path / "site"
    paths = small_site(root)
    site = serve(root)
    name = unique("mig-crawl")
    project.source(name, f'seeds = ["{site.url}index.html"]\n')
    assert project.scrapy("crawl", name).returncode == 0
    current = solr_docs(solr, name)
    assert len(current) == len(paths)
    solr.add([{**without(doc, "_version_"), "id": doc["url"]} for doc in current])  # as the old version had them
    solr.delete(id=[doc["id"] for doc in current])
    assert {doc["id"] for doc in solr_docs(solr, name)} == {site.url + path for path in paths}

    result = project.scrapy("crawl", name)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Migrated {len(paths)} Solr documents of {name}" in result.stderr
    docs = solr_docs(solr, name)
    assert sorted(doc["id"] for doc in docs) == sorted(solr_id(name, site.url + path) for path in paths)
    assert [without(doc, "_version_", "id") for doc in sorted(docs, key=lambda d: d["url"])] == [
        without(doc, "_version_", "id") for doc in sorted(current, key=lambda d: d["url"])
    ]  # not re-indexed, moved

    (root / "p1.html").unlink()
    again = project.scrapy("crawl", name)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Migrated" not in again.stderr
    assert {doc["url"] for doc in solr_docs(solr, name)} == {site.url + path for path in paths} - {site.url + "p1.html"}
