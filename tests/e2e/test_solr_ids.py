"""Solr ids per source (``<source>!<url>``): sources crawling one URL are independent in Solr,
`scrapy search` shows a page once, and indexes written with the URL as id are migrated."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pysolr

from searchcrawl.access.decision import Principals
from searchcrawl.access.tokens import Access
from searchcrawl.commands.search import format_hits, search
from searchcrawl.content.extract import solr_document, solr_id
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.id_migration import migrate_ids
from searchcrawl.index.push import push_pending
from searchcrawl.index.solr_client import SolrIndex, found_documents
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.ledger import Ledger
from tests.conftest import solr_docs
from tests.index.test_indexer import cache_pending


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def page(title: str, text: str, links: list[str] = ()) -> str:
    anchors = "".join(f'<a href="{href}">{href}</a> ' for href in links)
    return f"<html><head><title>{title}</title></head><body><p>{text}</p>{anchors}</body></html>"


def small_site(root: Path, count: int = 6) -> list[str]:
    """index.html linking to p0.html ... p<count-1>.html; returns the paths."""
    paths = [f"p{i}.html" for i in range(count)]
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.html").write_text(page("home", "the index of the shared pages", paths))
    for i, path in enumerate(paths):
        (root / path).write_text(page(f"Shared page {i}", f"Page {i} about the walrus migration handbook."))
    return ["index.html", *paths]


def test_the_solr_id_is_the_source_then_the_url() -> None:
    assert solr_id("handbook", "http://h.test/a!b?c") == "handbook!http://h.test/a!b?c"
    document = solr_document("handbook", "http://h.test/a", {"title": "A", "id": "not this"}, {})
    assert (document["id"], document["url"], document["source"]) == ("handbook!http://h.test/a", "http://h.test/a", "handbook")
    assert next(iter(document)) == "id"  # first: the push sends a cached document as it is


def test_search_collapses_the_copies_of_a_url_and_keeps_their_snippets(solr_url: str, solr: pysolr.Solr) -> None:
    url = f"http://collapse.test/{uuid.uuid4().hex[:8]}"
    sources = [unique("col-a"), unique("col-b")]
    solr.add(
        [
            {
                "id": solr_id(source, url),
                "url": url,
                "display_url": url,
                "source": source,
                "title": "Okapi report",
                "content": f"The okapi census of {source}.",
                **Access.public("a test").fields(),  # searches show documents with access tokens only
            }
            for source in sources
        ]
    )
    index = TrimmedIndex(SolrIndex(solr_url), Principals.anonymous())
    page = search(index, "okapi census")
    mine = [hit for hit in page.hits if hit.url == url]
    assert len(mine) == 1 and mine[0].id in {solr_id(source, url) for source in sources}
    lines = format_hits(page)
    assert lines.count(f"   {url}") == 1
    assert any("*okapi*" in line for line in lines[lines.index(f"   {url}") :][:2])  # highlighting found by the Solr id
    assert search(index, "okapi census", source=sources[1]).hits[0].id == solr_id(sources[1], url)


def old_documents(source: str, count: int, host: str = "old.test") -> list[dict]:
    """Documents as searchcrawl indexed them before ids were per source: the id is the URL."""
    docs = []
    for i in range(count):
        url = f"http://{host}/{source}/{i}"
        docs.append(
            {
                "id": url,
                "url": url,
                "display_url": url,
                "source": source,
                "host": host,
                "title": f"Old document {i}",
                "content": f"Kept text {i}.",
                "subject": ["alpha", f"s{i}"],
                "author": "Ann",
                "language": "en",
                "mimetype": "text/html",
                "checksum": f"c{i}",
                "last_modified": "2023-04-05T06:07:08Z",
                "crawled_at": "2024-01-02T03:04:05Z",
                "version_i": i,
                "tags_ss": ["x", "y"],
            }
        )
    return docs


def without(document: dict, *names: str) -> dict:
    return {name: value for name, value in document.items() if name not in names}


def test_migrate_ids_gives_old_documents_their_per_source_ids(solr_url: str, solr: pysolr.Solr) -> None:
    source, other = unique("mig"), unique("mig-other")
    old = old_documents(source, 7)
    solr.add(old)
    solr.add(old_documents(other, 3))
    kept = {**old_documents(source, 9)[8]}  # already migrated (or pushed by this version)
    kept["id"] = solr_id(source, kept["url"])
    newer = {**old[6], "id": solr_id(source, old[6]["url"]), "title": "Pushed by a crawl meanwhile"}
    solr.add([kept, newer])

    assert migrate_ids(SolrIndex(solr_url), source, max_docs=3) == 7  # three pages of the cursor
    docs = {doc["id"]: doc for doc in solr_docs(solr, source)}
    assert set(docs) == {solr_id(source, doc["url"]) for doc in [*old, kept]}  # 8: no old id left, no copy
    for document in old[:6]:
        assert without(docs[solr_id(source, document["url"])], "_version_", "id") == without(document, "id")
    assert docs[newer["id"]]["title"] == "Pushed by a crawl meanwhile"  # not overwritten with the old copy
    assert {doc["id"] for doc in solr_docs(solr, other)} == {doc["url"] for doc in old_documents(other, 3)}
    assert migrate_ids(SolrIndex(solr_url), source) == 0


def test_migration_follows_the_document_table(tmp_path, solr_url: str, solr: pysolr.Solr) -> None:
    """Under the old ids two sources crawling one page shared one document: each source holding
    it in its table gets its own copy; a document no source holds any more is deleted."""
    source, other = unique("held"), unique("held-other")
    old = old_documents(source, 3)
    solr.add(old)
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    shared, removed, kept = (document["url"] for document in old)
    for holder, url in ((source, shared), (other, shared), (source, kept)):
        Ledger(table, holder).record(url, Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
        Ledger(table, holder).mark_indexed([(url, "c")])
    Ledger(table, source).record(removed, Outcome(Event.GONE, 404, "gone"))
    assert migrate_ids(SolrIndex(solr_url), source, holders=table.holders) == 3
    assert {doc["id"] for doc in solr_docs(solr, source)} == {solr_id(source, shared), solr_id(source, kept)}
    assert [doc["id"] for doc in solr_docs(solr, other)] == [solr_id(other, shared)]


def test_documents_cached_by_the_earlier_version_are_pushed_with_their_new_id(tmp_path, solr_url, solr) -> None:
    source = unique("old-spool")
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    directory = tmp_path / "cache"
    directory.mkdir()
    url = f"http://spool.test/{source}"
    document = json.dumps(
        {"id": url, "url": url, "source": source, "title": "cached before", "checksum": "c"}, separators=(",", ":")
    ).encode()
    header = json.dumps([url, "c", len(document)], separators=(",", ":")).encode()
    (directory / "0000000000000000001-1-abcdefgh.spool").write_bytes(header + b"\n" + document + b"\n")
    cache = DocumentCache(directory)
    cache_pending(table, source, url, "c")
    result = push_pending(Ledger(table, source), cache, SolrIndex(solr_url), max_docs=10, max_bytes=10**6)
    assert (result.indexed, result.error) == (1, None)
    assert [(doc["id"], doc["title"]) for doc in solr_docs(solr, source)] == [(solr_id(source, url), "cached before")]


def test_found_documents_lists_what_solr_holds_of_a_source_page_by_page(solr_url: str, solr: pysolr.Solr) -> None:
    """What a new document table takes over (tests/e2e/test_maintenance.py): the source's
    documents, old ids too, a cursor page at a time; other sources' and URL-less ones are not."""
    source = unique("found")
    ours = [
        {"id": solr_id(source, f"http://f.test/{i}"), "url": f"http://f.test/{i}", "source": source, "checksum": f"c{i}"}
        for i in range(5)
    ]
    ours[0]["display_url"] = "http://shown.test/0"
    old = old_documents(source, 2)
    solr.add([*ours, *old, *old_documents(unique("found-other"), 2), {"id": f"{source}!no-url", "source": source}])
    solr.commit()
    pages = list(found_documents(SolrIndex(solr_url), source, rows=3))
    assert len(pages) == 3 and sum(map(len, pages)) == 7  # 8 documents of the source, one without a URL
    found = {url: (shown, checksum) for page in pages for url, shown, checksum in page}
    assert found == {
        **{doc["url"]: (doc.get("display_url"), doc["checksum"]) for doc in ours},
        **{doc["url"]: (doc.get("display_url"), doc.get("checksum")) for doc in old},
    }
