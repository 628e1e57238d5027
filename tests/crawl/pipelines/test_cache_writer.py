"""CachePipeline alone: a document is written to the document cache and marked pending (the
``url_outcome`` signal, recorded by the ledger writer in the document table).

Built with ``build_from_crawler`` on a crawler of ``tests.components``, in a run started as the
frontier scheduler starts it (``start_run``: the pipeline learns of it through ``run_started``,
with its spider arguments); the cache and the document table are the real ones, in the test's
data dir."""

from __future__ import annotations

import pytest
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import ConvertedDocument, CrawledDocument
from searchcrawl.crawl.pipelines.cache_writer import CachePipeline
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.crawl.stores import stores_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.ledger import Ledger
from tests.components import start_run


def document(url: str, checksum: str = "c1", display_url: str | None = None, **options: object) -> CrawledDocument:
    fields = {
        "id": f"unit!{url}",
        "url": url,
        "display_url": display_url or url,
        "source": "unit",
        "title": "A page",
        "content": "Some text",
        "checksum": checksum,
    }
    converted = ConvertedDocument(fields, "", fields["display_url"])  # the attributes stage's, as the cache writer reads it
    return CrawledDocument("unit", url, 1, converted=converted, fields=fields, **options)  # type: ignore[arg-type]


def test_a_document_is_cached_and_marked_pending(crawler_of) -> None:
    crawler = crawler_of()
    stores = stores_of(crawler)
    pipeline = build_from_crawler(CachePipeline, crawler)
    start_run(crawler)
    item = document(
        "http://h.test/a.html",
        canonical_url="http://h.test/a.html",
        record={"content_type": "text/html", "etag": '"e1"', "fetched_with": "static"},
        note="truncated: the first 10 of 20 bytes were parsed",
    )
    assert pipeline.process_item(item) is item
    assert stores.cache.documents() == {"http://h.test/a.html": item.fields}
    row = stores.documents.get("unit", "http://h.test/a.html")
    assert (row["state"], row["status"], row["depth"], row["checksum"]) == ("pending", 200, 1, "c1")
    assert (row["display_url"], row["canonical_url"], row["cached_by"]) == (
        "http://h.test/a.html",
        "http://h.test/a.html",
        stores.cache.id,
    )
    assert (row["content_type"], row["etag"], row["reason"]) == ("text/html", '"e1"', item.note)
    assert stores.documents.pending("unit") == [("http://h.test/a.html", "c1")]
    assert crawler.stats.get_value("searchcrawl/cached") == 1
    assert crawler.stats.get_value("searchcrawl/cached_bytes") > 100
    assert crawler.stats.get_value("searchcrawl/outcome/cached") == 1  # reported, not written by the pipeline


def test_a_changed_document_is_cached_again(crawler_of) -> None:
    crawler = crawler_of()
    stores = stores_of(crawler)
    pipeline = build_from_crawler(CachePipeline, crawler)
    start_run(crawler)
    pipeline.process_item(document("http://h.test/a.html", "c1"))
    pipeline.process_item(document("http://h.test/a.html", "c2"))  # its own display URL: no conflict
    assert stores.documents.pending("unit") == [("http://h.test/a.html", "c2")]
    assert stores.cache.documents()["http://h.test/a.html"]["checksum"] == "c2"


def test_a_display_url_taken_by_another_url_is_refused(crawler_of) -> None:
    crawler = crawler_of()
    stores = stores_of(crawler)
    pipeline = build_from_crawler(CachePipeline, crawler)
    start_run(crawler)
    pipeline.process_item(document("http://h.test/a.html", "c1", display_url="https://www.h.test/a"))
    with pytest.raises(NotIndexed) as raised:
        pipeline.process_item(document("http://h.test/b.html", "c2", display_url="https://www.h.test/a"))
    outcome = raised.value.outcome
    assert (outcome.event, outcome.status, outcome.depth) == (Event.GONE, Status.DISPLAY_URL_CONFLICT, 1)
    assert outcome.reason == "display URL https://www.h.test/a is already http://h.test/a.html's"
    assert crawler.stats.get_value("searchcrawl/display_url_conflicts") == 1
    assert list(stores.cache.documents()) == ["http://h.test/a.html"]  # the refused one is not cached
    assert stores.documents.get("unit", "http://h.test/b.html") is None


def test_a_display_url_is_free_again_once_its_owner_left_the_index(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = build_from_crawler(CachePipeline, crawler)
    start_run(crawler)
    pipeline.process_item(document("http://h.test/a.html", "c1", display_url="https://www.h.test/a"))
    gone = Outcome(Event.GONE, 404, "gone", kind="failed")
    crawler.signals.send_catch_log(url_outcome, url="http://h.test/a.html", outcome=gone)
    item = document("http://h.test/b.html", "c2", display_url="https://www.h.test/a")
    assert pipeline.process_item(item) is item


def test_test_mode_caches_nothing(crawler_of) -> None:
    crawler = crawler_of()
    stores = stores_of(crawler)
    pipeline = build_from_crawler(CachePipeline, crawler)
    run, _ = start_run(crawler, {"test_mode": "1"})  # `-a test_mode=1`
    assert run.test_mode
    pipeline.process_item(document("http://h.test/a.html"))
    assert stores.cache.documents() == {}
    assert stores.documents.pending("unit") == []  # the index state is left as it was
    assert crawler.stats.get_value("searchcrawl/cached") == 1
    assert crawler.stats.get_value("searchcrawl/cached_bytes") == 0


def test_in_a_shared_crawl_the_same_content_cached_at_once_is_settled_before_the_push(crawler_of) -> None:
    """Two nodes each found no duplicate (ChangePipeline) and cached the same content: both are
    cached, and the push of either first keeps the original (``settle_pending``, one statement
    per push: the cache writer sends none), the other a duplicate that is not pushed (counted
    cached all the same: its outcome is the settle's)."""
    crawler = crawler_of(SEARCHCRAWL_SHARED_CRAWL=True)
    stores = stores_of(crawler)
    pipeline = build_from_crawler(CachePipeline, crawler)
    run, _ = start_run(crawler)
    assert run.shared
    pipeline.process_item(document("http://h.test/a.html", "same"))
    pipeline.process_item(document("http://h.test/b.html", "same"))
    assert crawler.stats.get_value("searchcrawl/cached") == 2
    assert stores.documents.pending("unit") == [("http://h.test/a.html", "same"), ("http://h.test/b.html", "same")]
    assert Ledger(stores.documents, "unit").settle_pending(stores.cache.id) == ["http://h.test/b.html"]
    row = stores.documents.get("unit", "http://h.test/b.html")
    assert (row["status"], row["duplicate_of"]) == (Status.DUPLICATE, "http://h.test/a.html")
    assert stores.documents.pending("unit") == [("http://h.test/a.html", "same")]
    assert Ledger(stores.documents, "unit").settle_pending(stores.cache.id) == []  # settled once


def test_a_forced_recrawl_reports_the_same_content_unchanged(crawler_of) -> None:
    """Issue 53: a forced recrawl pushes every document again, and called each changed. What it
    caches with the checksum it was indexed with is reported unchanged; new content changed."""
    crawler = crawler_of()
    seen: list[Outcome] = []
    crawler.signals.connect(lambda url, outcome: seen.append(outcome), signal=url_outcome, weak=False)
    pipeline = build_from_crawler(CachePipeline, crawler)  # built before the run starts, as in a crawl
    run, _ = start_run(crawler, {"recrawl": "force"})  # `-a recrawl=force`
    assert run.forced
    previous = {"checksum": "c1", "last_modified": None, "etag": None, "state": "indexed"}
    pipeline.process_item(document("http://h.test/a.html", "c1", previous=previous))
    pipeline.process_item(document("http://h.test/b.html", "c2", previous=previous))
    pipeline.process_item(document("http://h.test/c.html", "c1"))  # not in the index before
    assert [outcome.kind for outcome in seen] == ["unchanged", None, None]
    assert all(outcome.event == Event.CACHED for outcome in seen)


def test_a_crawl_without_a_run_caches_as_a_plain_run(crawler_of) -> None:
    """A source crawled with Scrapy's own SCHEDULER sends no ``run_started``: its documents are
    cached all the same (not refused one by one with status 925, which would take indexed
    documents out of the index after ``max_failures`` such crawls)."""
    crawler = crawler_of()
    pipeline = build_from_crawler(CachePipeline, crawler)
    item = document("http://h.test/a.html")
    assert pipeline.process_item(item) is item
    assert stores_of(crawler).cache.documents() == {"http://h.test/a.html": item.fields}


# --- outcomes written in batches (issue 74) ------------------------------------------------------------

BATCHED = {"SEARCHCRAWL_OUTCOME_BATCH": 100, "SEARCHCRAWL_OUTCOME_INTERVAL": 3600}  # written by a flush only


def test_a_display_url_whose_owner_waits_for_its_batch_is_refused_all_the_same(crawler_of) -> None:
    crawler = crawler_of(**BATCHED)
    pipeline = build_from_crawler(CachePipeline, crawler)
    start_run(crawler)
    pipeline.process_item(document("http://h.test/a.html", "c1", display_url="https://www.h.test/a"))
    assert stores_of(crawler).documents.get("unit", "http://h.test/a.html") is None  # waits for its batch
    with pytest.raises(NotIndexed, match="already http://h.test/a.html's"):
        pipeline.process_item(document("http://h.test/b.html", "c2", display_url="https://www.h.test/a"))


def test_a_full_spool_is_sealed_only_once_its_documents_are_pending(crawler_of) -> None:
    """A push deletes a sealed spool none of whose records the table expects: before the cache
    seals a full spool, the outcomes waiting for their batch are written. Without it, a push
    between the seal and the batch deleted documents the table then called pending."""
    crawler = crawler_of(**BATCHED)
    stores = stores_of(crawler)
    stores.cache.spool_bytes = 1  # every document fills a spool
    pipeline = build_from_crawler(CachePipeline, crawler)
    start_run(crawler)
    pipeline.process_item(document("http://h.test/a.html", "c1"))
    assert stores.documents.pending("unit", stores.cache.id) == []  # waits for its batch; its spool open
    pipeline.process_item(document("http://h.test/b.html", "c2"))  # seals a.html's spool: written first
    assert stores.documents.pending("unit", stores.cache.id) == [("http://h.test/a.html", "c1")]
    scan = stores.cache.scan()
    assert scan.select(dict(stores.documents.pending("unit", stores.cache.id))) == {"http://h.test/a.html"}
