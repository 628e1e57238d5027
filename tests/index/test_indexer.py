"""Batching, the cache, the pusher, documents Solr refuses and its messages (against a real Solr:
tests/e2e/test_indexer.py)."""

import dataclasses
import json
import time

import pysolr

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.content.extract import solr_id
from searchcrawl.crawl.pipelines.cache_writer import access_column
from searchcrawl.crawl.pipelines.checksum import access_update
from searchcrawl.index import cache as cache_module
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.push import PushResult, SolrPusher, push_with_retries, set_anchors
from searchcrawl.index.solr_client import IndexingError, batches, describe
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
    outcomes = [
        PushResult(pending=3, error="down"),
        PushResult(pending=3, error="down"),
        PushResult(indexed=3, refused=1, anchors=2),
    ]
    pauses: list[float] = []
    result = push_with_retries(lambda: outcomes.pop(0), times=5, backoff=0.5, sleep=pauses.append)
    # the anchor fields set in place too: the run's end counts them apart from the documents indexed
    assert (result.indexed, result.refused, result.anchors, result.error, pauses) == (3, 1, 2, None, [0.5, 1.0])


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


def test_a_push_reads_only_the_records_appended_since_the_last_one(tmp_path, monkeypatch) -> None:
    """A spool is only appended to: each push reads the record headers written since the one
    before, not every spool whole (issue 102: a live spool of up to 8 MB at every push, one a
    process with processes = N)."""
    read: list[str] = []

    def counted(path: str, offset: int = 0):
        for record in records(path, offset):
            read.append(record[0])
            yield record

    records = cache_module.spool_records
    monkeypatch.setattr(cache_module, "spool_records", counted)
    cache = DocumentCache(tmp_path / "cache", spool_bytes=300)  # a spool of two or three records
    for number in range(4):
        cache.put({"id": f"s!d{number}", "url": f"d{number}", "checksum": "c", "content": "x" * 50})
    assert cache.scan().select({f"d{number}": "c" for number in range(4)}) == {"d0", "d1", "d2", "d3"}
    assert sorted(read) == ["d0", "d1", "d2", "d3"]
    read.clear()
    cache.put({"id": "s!d1", "url": "d1", "checksum": "new", "content": "changed"})
    scan = cache.scan()
    assert scan.select({"d0": "c", "d1": "new", "d3": "c"}) == {"d0", "d1", "d3"}
    assert read == ["d1"]  # only the record appended since
    assert dict(scan.documents())["d1"] == b'{"id":"s!d1","url":"d1","checksum":"new","content":"changed"}'


def test_the_spool_index_forgets_spools_deleted_and_the_oldest_past_its_limit(tmp_path) -> None:
    from searchcrawl.index.cache import SpoolIndex

    cache = DocumentCache(tmp_path / "cache", spool_bytes=100)  # a spool a record
    cache.index = SpoolIndex(limit=2)
    for number in range(4):
        cache.put({"id": f"s!d{number}", "url": f"d{number}", "checksum": "c", "content": "x" * 50})
    scan = cache.scan()
    assert scan.select({f"d{number}": "c" for number in range(4)}) == {"d0", "d1", "d2", "d3"}
    assert len(cache.index.spools) == 2  # the two newest spools' records kept, the others read again
    scan.acknowledged(["d0", "d1", "d2", "d3"])
    cache.seal()
    scan = cache.scan()
    assert scan.select({f"d{number}": "c" for number in range(4)}) == {"d0", "d1", "d2", "d3"}
    scan.acknowledged(["d0", "d1", "d2", "d3"])
    assert cache.release(scan) == 4
    assert cache.scan().select({"d0": "c"}) == set() and cache.index.spools == {}


def test_the_push_lock_says_when_the_last_push_began(tmp_path) -> None:
    """Whichever process of the machine pushed: the others' intervals count from it
    (pipelines/solr_push.py)."""
    cache = DocumentCache(tmp_path / "cache")
    assert cache.last_push_began() == 0.0
    before = time.time()
    with cache.push_lock(True) as mine:
        assert mine
    assert before - 1 <= DocumentCache(tmp_path / "cache").last_push_began() <= time.time()


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


# --- anchor text (issue 100): the field a push sets, and sets in place --------------------------

PUBLIC_ACCESS = Access.public("test")
HR_ACCESS = Access.of([Grant("group:hr", "test")])


class AnchoredIndex(AnsweringIndex):
    """Solr's side of a push that also holds documents (``stored``: by id, with a ``_version_``),
    reads them back (``latest``) and takes conditional updates, refusing one whose version moved."""

    def __init__(self) -> None:
        super().__init__()
        self.documents: list[dict] = []
        self.stored: dict[str, dict] = {}
        self.updates: list[dict] = []
        self.conflict = False

    def add_json(self, documents: list[bytes]) -> None:
        super().add_json(documents)
        self.documents += [json.loads(document) for document in documents]

    def latest(self, ids: list[str], fields: str) -> dict[str, dict]:
        return {id: self.stored[id] for id in ids if id in self.stored}

    def update_versions(self, updates: list[dict]) -> None:
        if self.conflict:
            raise IndexingError("version conflict", refused=True, status=409, reason="version conflict")
        self.updates += updates


def cache_with_access(cache: DocumentCache, ledger: Ledger, url: str, access: Access, anchors=None, **fields) -> None:
    """A page cached as the pipelines cache it: its Solr fields with its access's, its row pending
    with its access and its anchors."""
    checksum = f"c-{url}"
    cache.put({"id": solr_id(ledger.source, url), "url": url, "checksum": checksum, **access.fields(), **fields})
    columns = {"checksum": checksum, "access": access_column(access)}
    ledger.record(url, Outcome(Event.CACHED, 200, columns=columns, anchors=anchors))


def anchored_push(tmp_path) -> tuple[Ledger, DocumentCache, AnchoredIndex, SolrPusher]:
    ledger = Ledger(DocumentTable(Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")), "s")
    cache = DocumentCache(tmp_path / "cache")
    index = AnchoredIndex()
    return ledger, cache, index, SolrPusher(ledger, cache, index, max_docs=50, max_bytes=10**6, ids_migrated=True)  # type: ignore[arg-type]


def test_a_pushed_document_carries_the_anchors_that_count_for_its_readers(tmp_path) -> None:
    """Hostile: an hr page links a public page with secret words; they are never on it, and they
    are on an hr page it links."""
    ledger, cache, index, pusher = anchored_push(tmp_path)
    public, hr = "http://s.test/public.html", "http://s.test/hr/pay.html"
    cache_with_access(cache, ledger, public, PUBLIC_ACCESS, title="Public")
    cache_with_access(cache, ledger, hr, HR_ACCESS, title="Pay")
    cache_with_access(cache, ledger, "http://s.test/p.html", PUBLIC_ACCESS, ((public, "travel"), (hr, "handbook")))
    cache_with_access(cache, ledger, "http://s.test/hr/x.html", HR_ACCESS, ((public, "layoffs in March"), (hr, "salary")))
    result = pusher.push_once()
    assert result.indexed == 4 and result.anchors == 0
    pushed = {document["url"]: document for document in index.documents}
    assert pushed[public]["anchor"] == ["travel"] and pushed[public]["title"] == "Public"
    assert pushed[hr]["anchor"] == ["handbook", "salary"]
    assert "anchor" not in pushed["http://s.test/p.html"]
    assert "layoffs" not in json.dumps(pushed[public])


def test_an_access_update_always_sets_the_anchor_field_for_the_new_readers(tmp_path) -> None:
    """A page whose readers alone changed (a 304: crawl/pipelines/checksum.py access_update) had
    its field counted for its old readers: the update sets it anew, to nothing if nothing counts."""
    ledger, cache, index, pusher = anchored_push(tmp_path)
    target, other = "http://s.test/hr/a.html", "http://s.test/hr/b.html"
    cache_with_access(cache, ledger, "http://s.test/hr/x.html", HR_ACCESS, ((target, "salary"),))
    for url in (target, other):
        update = access_update("s", url, f"c-{url}+new", PUBLIC_ACCESS)
        assert update["anchor"] == {"set": None}  # the default: nothing until the push computes it
        cache.put(update)
        columns = {"checksum": f"c-{url}+new", "access": access_column(PUBLIC_ACCESS)}
        ledger.record(url, Outcome(Event.CACHED, 200, columns=columns))
    assert pusher.push_once().indexed == 3
    pushed = {document["url"]: document for document in index.documents}
    assert pushed[target]["anchor"] == {"set": None}  # the hr page's words no longer count: it is public now
    assert pushed[other]["anchor"] == {"set": None} and pushed[other]["_version_"] == 1


def test_the_push_sets_in_place_the_field_of_documents_whose_anchors_changed(tmp_path) -> None:
    ledger, cache, index, pusher = anchored_push(tmp_path)
    target, page = "http://s.test/q.html", "http://s.test/p.html"
    for url in (target, "http://s.test/same.html", "http://s.test/gone.html"):
        cache_with_access(cache, ledger, url, PUBLIC_ACCESS)
    cache_with_access(cache, ledger, page, PUBLIC_ACCESS, ((target, "old words"), ("http://s.test/same.html", "same")))
    pusher.push_once()
    index.stored = {
        solr_id("s", target): {"id": solr_id("s", target), "_version_": 7, "anchor": ["old words"], **PUBLIC_ACCESS.fields()},
        solr_id("s", "http://s.test/same.html"): {
            "id": solr_id("s", "http://s.test/same.html"),
            "_version_": 8,
            "anchor": ["same"],
        },
    }
    new = ((target, "new words"), ("http://s.test/same.html", "same"), ("http://s.test/gone.html", "not in Solr"))
    ledger.record(page, Outcome(Event.UNCHANGED, 200, anchors=new))  # its links' words changed, not its text
    assert {row.url for row in ledger.table.anchors_due("s")} == {target, "http://s.test/gone.html"}
    index.conflict = True  # the target was pushed again meanwhile: it stays due
    assert pusher.push_once().anchors == 0
    assert {row.url for row in ledger.table.anchors_due("s")} == {target, "http://s.test/gone.html"}
    index.conflict = False
    assert pusher.push_once().anchors == 1
    assert index.updates == [{"id": solr_id("s", target), "_version_": 7, "anchor": {"set": ["new words"]}}]
    assert ledger.table.anchors_due("s") == []  # and the one Solr does not hold is unmarked


def test_a_pending_document_waits_for_its_push_and_one_out_of_the_index_is_unmarked(tmp_path) -> None:
    ledger, cache, index, pusher = anchored_push(tmp_path)
    target, page = "http://s.test/q.html", "http://s.test/p.html"
    cache_with_access(cache, ledger, target, PUBLIC_ACCESS)
    cache_with_access(cache, ledger, page, PUBLIC_ACCESS, ((target, "words"),))
    assert {row.url for row in ledger.table.anchors_due("s")} == {target}  # pending: its push computes its field
    assert set_anchors(ledger, index, 50) == 0  # type: ignore[arg-type]
    assert {row.url for row in ledger.table.anchors_due("s")} == {target}
    ledger.record(target, Outcome(Event.GONE, 404, "gone"))
    assert set_anchors(ledger, index, 50) == 0 and ledger.table.anchors_due("s") == []  # type: ignore[arg-type]
    assert index.updates == []


def test_a_document_held_in_solr_by_the_deletion_guard_has_its_field_set_too(tmp_path) -> None:
    """A document that must leave but stays searchable (``removing``: the mass-deletion guard held
    it) keeps a field that follows the pages linking it, as an indexed one does."""
    ledger, cache, index, pusher = anchored_push(tmp_path)
    target, page = "http://s.test/q.html", "http://s.test/p.html"
    cache_with_access(cache, ledger, target, PUBLIC_ACCESS)
    cache_with_access(cache, ledger, page, PUBLIC_ACCESS, ((target, "old words"),))
    pusher.push_once()
    ledger.record(target, Outcome(Event.GONE, 404, "gone"))  # to leave; held there by the guard
    index.stored = {solr_id("s", target): {"id": solr_id("s", target), "_version_": 3, "anchor": ["old words"]}}
    ledger.record(page, Outcome(Event.UNCHANGED, 200, anchors=((target, "new words"),)))
    assert [row.state for row in ledger.table.anchors_due("s")] == ["removing"]
    assert pusher.push_once().anchors == 1
    assert index.updates == [{"id": solr_id("s", target), "_version_": 3, "anchor": {"set": ["new words"]}}]
