"""Pushing the cache to a real Solr and documents Solr refuses (the batching and the messages
alone: tests.index.test_indexer)."""

import json
import urllib.request
import uuid

import pysolr

from searchcrawl.content.extract import solr_id
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.push import push_pending
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.ledger import Ledger
from tests.conftest import solr_docs
from tests.index.test_indexer import cache_pending


def test_push_pending_to_real_solr(tmp_path, solr_url: str, solr: pysolr.Solr) -> None:
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    cache = DocumentCache(tmp_path / "cache")
    for i in range(25):
        url = f"http://push.test/{i}"
        cache.put(
            {
                "id": solr_id("push", url),
                "url": url,
                "source": "push",
                "title": f"doc {i}",
                "checksum": f"c{i}",
                "content": f'Grüße \u00a0\x07\x00 «{i}» \U0001f600 "quoted"',
            }
        )  # sent as cached: JSON, escaped
        cache_pending(table, "push", url, f"c{i}")
    assert cache.size_bytes > 0
    cache.seal()  # as at the end of a crawl: then the push deletes the spool it empties
    down = push_pending(
        Ledger(table, "push"),
        cache,
        SolrIndex("http://127.0.0.1:9/solr/none", timeout=2),
        max_docs=10,
        max_bytes=10**6,
        requests_at_once=2,
    )
    assert (down.indexed, down.pending, down.refused, down.request_refused) == (0, 25, 0, False)
    assert "cannot connect (Connection refused)" in down.error  # a node failure: everything stays pending
    result = push_pending(Ledger(table, "push"), cache, SolrIndex(solr_url), max_docs=10, max_bytes=10**6, requests_at_once=2)
    assert (result.indexed, result.pending, result.error) == (25, 0, None)
    assert cache.size_bytes == 0 and not list((tmp_path / "cache").glob("*.spool"))
    assert table.count_by("push", "state") == {"indexed": 25}
    solr.commit()
    assert solr.search('source:"push"', rows=0).hits == 25
    assert (
        solr.search('url:"http://push.test/3"', fl="content").docs[0]["content"] == 'Grüße \u00a0\x07\x00 «3» \U0001f600 "quoted"'
    )


def test_a_document_solr_refuses_is_isolated_and_every_other_one_indexed(tmp_path, solr_url: str, solr: pysolr.Solr) -> None:
    """Two update requests in flight, batches of 10. Solr refuses two documents (a 40 KB author:
    an immense term in a string field; a bad date), which makes it refuse their whole requests
    after applying the documents before them. Each refused batch is pushed again in halves until
    the refused document is alone: it gets status 924 with Solr's reason and leaves the pending
    state, its record is spent, and every other document is indexed."""
    source = f"refuse-{uuid.uuid4().hex[:8]}"
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    cache = DocumentCache(tmp_path / "cache")
    urls = [f"http://refuse.test/{i:02d}" for i in range(30)]
    huge_author = "Quincy " * 6000  # 42,000 bytes: more than a string field's term may hold (32,766)
    for i, url in enumerate(urls):
        document = {"id": solr_id(source, url), "url": url, "source": source, "title": f"doc {i}", "checksum": f"c{i}"}
        if i == 14:
            document["author"] = huge_author
        if i == 27:
            document["last_modified"] = "not a date"
        cache.put(document)
        cache_pending(table, source, url, f"c{i}")
    cache.seal()
    result = push_pending(Ledger(table, source), cache, SolrIndex(solr_url), max_docs=10, max_bytes=10**6, requests_at_once=2)

    assert (result.indexed, result.refused, result.pending, result.error) == (28, 2, 0, None)
    assert table.pending(source) == []
    refused = {url: table.get(source, url) for url in (urls[14], urls[27])}
    assert {row["status"] for row in refused.values()} == {924}
    assert "immense term" in refused[urls[14]]["reason"] and 'field="author"' in refused[urls[14]]["reason"]
    assert "Invalid Date String" in refused[urls[27]]["reason"]
    for row in refused.values():  # Solr's reason, readable, never the document
        assert row["reason"].startswith("refused by Solr: HTTP 400: ") and len(row["reason"]) < 400
        assert "Quincy" not in row["reason"] and "120, 120" not in row["reason"]
    assert table.count_by(source, "status").get(924) == 2
    assert not list((tmp_path / "cache").glob("*.spool"))  # the refused records are spent too
    in_solr = {doc["url"]: doc["id"] for doc in solr_docs(solr, source)}
    assert set(in_solr) == set(urls) - {urls[14], urls[27]}
    assert all(doc_id == solr_id(source, url) for url, doc_id in in_solr.items())


def test_when_solr_refuses_most_documents_it_is_its_configuration_and_nothing_is_marked_refused(
    tmp_path, solr_url: str, solr: pysolr.Solr
) -> None:
    """A circuit breaker: every document refused alike (here a bad date in each, as an attribute
    mapping onto a field of the wrong type would do) is not 60 bad documents. The search for them
    stops after REFUSAL_FLOOR, none is marked refused or loses its cache record, all stay pending."""
    source = f"breaker-{uuid.uuid4().hex[:8]}"
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    cache = DocumentCache(tmp_path / "cache")
    for i in range(60):
        url = f"http://breaker.test/{i:02d}"
        cache.put({"id": solr_id(source, url), "url": url, "source": source, "checksum": f"c{i}", "last_modified": "not a date"})
        cache_pending(table, source, url, f"c{i}")  # 60 contents (one content would be 59 duplicates)
    before = solr_update_requests(solr_url)
    result = push_pending(Ledger(table, source), cache, SolrIndex(solr_url), max_docs=30, max_bytes=10**6)
    assert (result.indexed, result.refused, result.pending, result.request_refused) == (0, 0, 60, True)
    assert "a schema or configuration problem?" in result.error and "Invalid Date String" in result.error
    assert len(table.pending(source)) == 60 and table.count_by(source, "status").get(924) is None
    # bounded: the search stopped after 11 refusals (isolating all 60 would take 2 * 60 - 2 requests)
    assert solr_update_requests(solr_url) - before < 58


def test_a_request_solr_refuses_whatever_it_carries_keeps_the_documents_pending(tmp_path, solr_url: str) -> None:
    """A 404 (no such core) refuses the request, not a document: nothing is marked refused."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    cache = DocumentCache(tmp_path / "cache")
    for i in range(5):
        url = f"http://nocore.test/{i}"
        cache.put({"id": solr_id("nocore", url), "url": url, "source": "nocore", "checksum": f"c{i}"})
        cache_pending(table, "nocore", url, f"c{i}")
    missing = solr_url.rsplit("/", 1)[0] + "/no-such-core"
    result = push_pending(Ledger(table, "nocore"), cache, SolrIndex(missing), max_docs=2, max_bytes=10**6, requests_at_once=2)
    assert (result.indexed, result.refused, result.pending, result.request_refused) == (0, 0, 5, True)
    assert "HTTP 404" in result.error
    assert len(table.pending("nocore")) == 5


def solr_update_requests(core_url: str) -> int:
    """Update requests the core has answered since it started (Solr's handler statistics)."""
    with urllib.request.urlopen(f"{core_url}/admin/mbeans?cat=UPDATE&key=/update&stats=true&wt=json", timeout=30) as answer:
        beans = json.load(answer)["solr-mbeans"]
    return int(dict(zip(beans[::2], beans[1::2], strict=False))["UPDATE"]["/update"]["stats"]["UPDATE./update.requests"])
