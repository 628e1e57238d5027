"""Batching, the cache, the pusher, documents Solr refuses and its messages (against a real Solr:
tests/e2e/test_indexer.py)."""

import dataclasses
import json

import pysolr

from searchcrawl.content.extract import solr_id
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.push import PushResult, SolrPusher, push_with_retries
from searchcrawl.index.solr_client import batches, describe
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.ledger import Ledger


def cache_pending(table: DocumentTable, source: str, url: str, checksum: str) -> None:
    """Mark ``url`` cached and pending with ``checksum``, as the cache pipeline does."""
    Ledger(table, source).record(url, Outcome(Event.CACHED, 200, columns={"checksum": checksum}))


def test_batches_bounded_by_count_and_bytes() -> None:
    docs = [({"id": str(i)}, 10) for i in range(7)]
    assert [len(b) for b in batches(docs, max_docs=3, max_bytes=1000)] == [3, 3, 1]
    assert [len(b) for b in batches(docs, max_docs=100, max_bytes=25)] == [2, 2, 2, 1]
    assert [len(b) for b in batches([({"id": "big"}, 500)], max_docs=10, max_bytes=100)] == [1]


def test_retries_back_off_and_stop_when_done() -> None:
    outcomes = [PushResult(pending=3, error="down"), PushResult(pending=3, error="down"), PushResult(indexed=3, refused=1)]
    pauses: list[float] = []
    result = push_with_retries(lambda: outcomes.pop(0), times=5, backoff=0.5, sleep=pauses.append)
    assert (result.indexed, result.refused, result.error, pauses) == (3, 1, None, [0.5, 1.0])


class AnsweringIndex:
    """Solr's side of a push, answered at once and recorded: the push's logic alone (a real Solr's
    answers: tests/e2e/test_indexer.py)."""

    def __init__(self) -> None:
        self.added: list[str] = []
        self.deleted: list[str] = []

    def add_json(self, documents: list[bytes]) -> None:
        self.added += [json.loads(document)["id"] for document in documents]

    def delete(self, ids: list[str]) -> None:
        self.deleted += ids


def test_the_pusher_is_given_the_ledger_alone(tmp_path) -> None:
    """Issue 95: the pusher was handed the ledger's table beside the ledger. Given the ledger
    alone, it reads what is pending and what must leave in the ledger's table, and writes what
    Solr answered through the ledger."""
    table = DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}"))
    cache = DocumentCache(tmp_path / "cache")
    ledger = Ledger(table, "push")
    urls = [f"http://push.test/{n}" for n in range(3)]
    for n, url in enumerate(urls):
        cache.put({"id": solr_id("push", url), "url": url, "source": "push", "checksum": f"c{n}"})
        cache_pending(table, "push", url, f"c{n}")
    gone = "http://push.test/gone"
    cache_pending(table, "push", gone, "g")
    ledger.mark_indexed([(gone, "g")])
    ledger.record(gone, Outcome(Event.GONE, 410, "gone", kind="failed"))
    index = AnsweringIndex()
    pusher = SolrPusher(ledger, cache, index, max_docs=2, max_bytes=10**6, ids_migrated=True)  # type: ignore[arg-type]
    result = pusher.push_once(remove=True)
    assert (result.indexed, result.removed, result.pending, result.error) == (3, 1, 0, None)
    assert sorted(index.added) == [solr_id("push", url) for url in urls] and index.deleted == [solr_id("push", gone)]
    assert table.pending("push") == [] and table.removals("push") == []
    assert pusher.source == "push" and "table" not in {field.name for field in dataclasses.fields(SolrPusher)}


def test_cache_returns_only_the_version_the_table_expects(tmp_path) -> None:
    cache = DocumentCache(tmp_path / "cache", spool_bytes=200)  # a new spool every other document
    cache.put({"id": "s!u", "url": "u", "checksum": "old", "content": "first"})  # keyed by url, not by id
    cache.put({"id": "s!u", "url": "u", "checksum": "new", "content": 'says "checksum":"old"'})
    cache.put({"id": "s!u", "url": "u", "checksum": "old", "content": "again"})
    cache.put({"id": "s!v", "url": "v", "checksum": "c", "content": "v\nline"})
    scan = cache.scan()
    assert scan.select({"u": "new", "v": "c", "missing": "c"}) == {"u", "v"}
    assert dict(scan.documents()) == {
        "u": b'{"id":"s!u","url":"u","checksum":"new","content":"says \\"checksum\\":\\"old\\""}',
        "v": b'{"id":"s!v","url":"v","checksum":"c","content":"v\\nline"}',
    }
    assert cache.documents()["u"]["content"] == "again"  # the newest record, whatever its checksum


def test_spools_are_deleted_once_sealed_and_pushed_and_a_killed_writers_tail_is_skipped(tmp_path) -> None:
    cache = DocumentCache(tmp_path / "cache", spool_bytes=100)
    for number in range(4):
        cache.put({"id": f"s!d{number}", "url": f"d{number}", "checksum": "c", "content": "x" * 50})
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


def test_solr_messages_are_made_readable() -> None:
    immense = pysolr.SolrError(
        "Solr responded with an error (HTTP 400): [Reason: Exception writing document id s!http://a/ to the index; "
        'possible analysis error: Document contains at least one immense term in field="author" (whose UTF8 encoding '
        "is longer than the max length 32766), all of which were skipped.  Please correct the analyzer to not produce "
        "such terms.  The prefix of the first immense term is: '[81, 117, 105, 110, 99, 121]...', original message: "
        "bytes can be at most 32766 in length; got 42000. Perhaps the document has an indexed string field "
        "(solr.StrField) which is too large]"
    )
    text = describe(immense)
    assert text.startswith(
        "HTTP 400: Exception writing document id s!http://a/ to the index; possible analysis error: "
        'Document contains at least one immense term in field="author"'
    )
    assert "81, 117" not in text and len(text) <= 310
    value = pysolr.SolrError(
        "Solr responded with an error (HTTP 400): [Reason: ERROR: [doc=s!u] Error adding field "
        f"'title'='{'very long title ' * 20}' msg=too long]"
    )
    assert "very long title " * 4 not in describe(value)
