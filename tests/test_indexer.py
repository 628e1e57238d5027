"""Batching, and pushing the cache to a real Solr."""

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
    cache = DocumentCache(tmp_path / "cache", spool_bytes=200)  # a new spool every other document
    cache.put({"id": "u", "checksum": "old", "content": "first"})
    cache.put({"id": "u", "checksum": "new", "content": 'says "checksum":"old"'})
    cache.put({"id": "u", "checksum": "old", "content": "again"})
    cache.put({"id": "v", "checksum": "c", "content": "v\nline"})
    scan = cache.scan()
    assert scan.select({"u": "new", "v": "c", "missing": "c"}) == {"u", "v"}
    assert dict(scan.documents()) == {"u": b'{"id":"u","checksum":"new","content":"says \\"checksum\\":\\"old\\""}',
                                      "v": b'{"id":"v","checksum":"c","content":"v\\nline"}'}
    assert cache.documents()["u"]["content"] == "again"  # the newest record, whatever its checksum


def test_spools_are_deleted_once_sealed_and_pushed_and_a_killed_writers_tail_is_skipped(tmp_path) -> None:
    cache = DocumentCache(tmp_path / "cache", spool_bytes=100)
    for number in range(4):
        cache.put({"id": f"d{number}", "checksum": "c", "content": "x" * 50})
    spools = sorted((tmp_path / "cache").glob("*.spool"))
    assert len(spools) == 4 and cache.size_bytes == sum(path.stat().st_size for path in spools)
    with open(spools[-1], "ab") as stream:  # what a writer killed in the middle of a record leaves
        stream.write(b'["d9","c",500]\n{"id":"d9"')
    scan = cache.scan()
    assert len(scan.sealed) == 3  # the last spool is still this cache's open one
    assert scan.select({"d0": "c", "d1": "c", "d3": "c", "d9": "c"}) == {"d0", "d1", "d3"}
    assert [url for url, _data in scan.documents()] == ["d0", "d1", "d3"]
    scan.acknowledged(["d0", "d3"])
    assert cache.release(scan) == 2  # d1 still waits; d2's spool holds nothing the table expects
    assert sorted((tmp_path / "cache").glob("*.spool")) == [spools[1], spools[3]]
    cache.seal()
    scan = cache.scan()
    scan.select({})
    assert cache.release(scan) == 2 and cache.size_bytes == 0


def test_documents_cached_one_file_each_by_an_earlier_version_are_adopted(tmp_path) -> None:
    directory = tmp_path / "cache"
    directory.mkdir()
    (directory / "0123abcd.json").write_text('{"id": "http://old/", "checksum": "c", "content": "kept"}')
    cache = DocumentCache(directory)
    assert not list(directory.glob("*.json"))
    scan = cache.scan()
    assert scan.select({"http://old/": "c"}) == {"http://old/"} and len(scan.sealed) == 1


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
    cache.seal()  # as at the end of a crawl: then the push deletes the spool it empties
    down = push_pending("push", table, cache, SolrIndex("http://127.0.0.1:9/solr/none", timeout=2), max_docs=10, max_bytes=10**6,
                        requests_at_once=2)
    assert (down.indexed, down.pending) == (0, 25) and down.error
    result = push_pending("push", table, cache, SolrIndex(solr_url), max_docs=10, max_bytes=10**6, requests_at_once=2)
    assert (result.indexed, result.pending, result.error) == (25, 0, None)
    assert cache.size_bytes == 0 and not list((tmp_path / "cache").glob("*.spool"))
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
