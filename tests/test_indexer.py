"""Batching, and pushing the cache to a real Solr."""

from pathlib import Path

import pysolr

from searchcrawl.cache import DocumentCache
from searchcrawl.db import DocumentTable, State
from searchcrawl.indexer import SolrIndex, batches, push_pending, push_with_retries, PushResult


def test_batches_bounded_by_count_and_bytes() -> None:
    docs = [({"id": str(i)}, 10) for i in range(7)]
    assert [len(b) for b in batches(docs, max_docs=3, max_bytes=1000)] == [3, 3, 1]
    assert [len(b) for b in batches(docs, max_docs=100, max_bytes=25)] == [2, 2, 2, 1]
    assert [len(b) for b in batches([({"id": "big"}, 500)], max_docs=10, max_bytes=100)] == [1]


def test_retries_back_off_and_stop_when_done() -> None:
    outcomes = [PushResult(pending=3, error="down"), PushResult(pending=3, error="down"), PushResult(indexed=3)]
    pauses: list[float] = []
    result = push_with_retries(lambda: outcomes.pop(0), times=5, backoff=0.5, sleep=pauses.append)
    assert (result.indexed, result.error, pauses) == (3, None, [0.5, 1.0])


def test_cache_returns_only_the_version_the_table_expects(tmp_path) -> None:
    cache = DocumentCache(tmp_path / "cache")
    # The text quotes a checksum field: JSON escapes its quotes, so it is not taken for the field.
    cache.put({"id": "u", "checksum": "new", "content": 'says "checksum":"old"'})
    assert cache.get_json_if("u", "new") == cache.get_json("u")
    assert cache.get_json_if("u", "old") is None
    assert cache.get_json_if("missing", "new") is None
    Path(cache.path("w")).write_text('{"id": "w", "checksum": "x"}')  # not put's compact form: decoded
    assert cache.get_json_if("w", "x") is not None and cache.get_json_if("w", "y") is None


def test_push_pending_to_real_solr(tmp_path, solr_url: str, solr: pysolr.Solr) -> None:
    table = DocumentTable(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    cache = DocumentCache(tmp_path / "cache")
    for i in range(25):
        url = f"http://push.test/{i}"
        table.record_fetch("push", url, state=State.FETCHED, status=200)
        cache.put({"id": url, "url": url, "source": "push", "title": f"doc {i}", "checksum": f"c{i}",
                   "content": f"Grüße \u00a0\x07\x00 «{i}» \U0001f600 \"quoted\""})  # sent as cached: JSON, escaped
        table.mark_pending("push", url, f"c{i}")
    assert cache.size_bytes > 0
    down = push_pending("push", table, cache, SolrIndex("http://127.0.0.1:9/solr/none", timeout=2), max_docs=10, max_bytes=10**6,
                        requests_at_once=2)
    assert (down.indexed, down.pending) == (0, 25) and down.error
    result = push_pending("push", table, cache, SolrIndex(solr_url), max_docs=10, max_bytes=10**6, requests_at_once=2)
    assert (result.indexed, result.pending, result.error) == (25, 0, None)
    assert cache.size_bytes == 0 and not list((tmp_path / "cache").glob("*.json"))
    assert table.count_by("push", "state") == {"indexed": 25}
    solr.commit()
    assert solr.search('source:"push"', rows=0).hits == 25
    assert solr.search('id:"http://push.test/3"', fl="content").docs[0]["content"] == "Grüße \u00a0\x07\x00 «3» \U0001f600 \"quoted\""


def test_a_refused_batch_stays_pending_while_the_others_in_flight_land(tmp_path, solr_url: str, solr: pysolr.Solr) -> None:
    """Two update requests in flight: the batch Solr refuses (a bad date) stays pending, with
    exactly its own documents; batches sent beside it are marked indexed."""
    table = DocumentTable(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    cache = DocumentCache(tmp_path / "cache")
    for i in range(30):
        url = f"http://inflight.test/{i:02d}"
        table.record_fetch("inflight", url, state=State.FETCHED, status=200)
        document = {"id": url, "url": url, "source": "inflight", "title": f"doc {i}", "checksum": f"c{i}"}
        if i == 14:
            document["last_modified"] = "not a date"  # Solr answers 400 for the whole batch
        cache.put(document)
        table.mark_pending("inflight", url, f"c{i}")
    result = push_pending("inflight", table, cache, SolrIndex(solr_url), max_docs=10, max_bytes=10**6, requests_at_once=2)
    assert result.error and "400" in result.error
    pending = sorted(url for url, _checksum in table.pending("inflight"))
    assert pending == [f"http://inflight.test/{i:02d}" for i in range(10, 20)]
    assert (result.indexed, result.pending) == (20, 10)
    solr.commit()
    in_solr = {document["id"] for document in solr.search('source:"inflight"', rows=100, fl="id").docs}
    # Solr keeps the refused batch's documents before the bad one; they stay pending here and a
    # later push overwrites them (uniqueKey), so nothing is indexed twice.
    assert {f"http://inflight.test/{i:02d}" for i in [*range(10), *range(20, 30)]} <= in_solr
    assert not in_solr & {f"http://inflight.test/{i:02d}" for i in range(14, 20)}
