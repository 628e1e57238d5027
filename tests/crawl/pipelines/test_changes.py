"""ChangePipeline alone: unchanged documents and duplicates do not reach the cache, and the
``NotIndexed`` drops carry their outcomes.

Built with ``build_from_crawler`` on a crawler of ``tests.components``; what the document table
holds is reported the way the crawl reports it (``url_outcome``, recorded by the ledger writer);
a run, where a test needs one, is started as the frontier scheduler starts it (``start_run``)."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler

from searchcrawl.access.tokens import Access, Grant
from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import CrawledDocument, Fetched
from searchcrawl.crawl.pipelines.changes import ChangePipeline
from searchcrawl.crawl.pipelines.checksum import versioned
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.crawl.stores import stores_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.frontier import Entry
from searchcrawl.store.ledger import Ledger
from tests.components import ledger_of, start_run

SOURCE = 'seeds = ["http://h.test/"]\n'
DATE = "Wed, 01 May 2024 10:00:00 GMT"


def item(
    url: str, checksum: str, previous: dict[str, Any] | None = None, source: str = "unit", **options: Any
) -> CrawledDocument:
    headers = {key: value for key, value in (("last-modified", options.pop("last_modified", None)),) if value}
    return CrawledDocument(source, url, 3, Fetched(headers), fields={"checksum": checksum}, previous=previous, **options)


def cached(crawler: Crawler, url: str, checksum: str) -> None:
    """``url`` was cached with ``checksum`` (as CachePipeline reports it): pending, in the index."""
    crawler.signals.send_catch_log(url_outcome, url=url, outcome=Outcome(Event.CACHED, 200, columns={"checksum": checksum}))


def outcomes(crawler: Crawler) -> list[tuple[str, Outcome]]:
    """What the pipeline reports through ``url_outcome`` from now on."""
    seen: list[tuple[str, Outcome]] = []

    def receive(url: str, outcome: Outcome) -> None:
        seen.append((url, outcome))

    crawler.signals.connect(receive, signal=url_outcome, weak=False)
    return seen


def test_a_new_document_goes_on(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    document = item("http://h.test/new.html", "c1")
    assert pipeline.process_item(document) is document
    assert stores_of(crawler).documents.get("unit", "http://h.test/new.html") is None  # the pipeline writes nothing itself


def test_an_unchanged_document_is_dropped_with_its_outcome_and_stays_indexed(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    cached(crawler, "http://h.test/a.html", "c1")
    previous = {"checksum": "c1", "last_modified": DATE, "etag": None, "state": "pending"}
    document = item("http://h.test/a.html", "c1", previous, last_modified=DATE)
    with pytest.raises(NotIndexed) as raised:
        pipeline.process_item(document)
    outcome = raised.value.outcome
    assert (outcome.event, outcome.status, outcome.reason, outcome.depth, outcome.kind) == (
        Event.UNCHANGED,
        Status.UNCHANGED,
        "same content as indexed",
        3,
        "unchanged",
    )
    # Scrapy's item_dropped hands the outcome to the ledger writer: the row keeps its state
    crawler.signals.send_catch_log(signals.item_dropped, item=document, response=None, spider=None, exception=raised.value)
    row = stores_of(crawler).documents.get("unit", "http://h.test/a.html")
    assert (row["state"], row["status"]) == ("pending", Status.UNCHANGED)


def test_an_unchanged_document_keeps_its_new_validators_for_the_next_conditional_get(crawler_of) -> None:
    """A file touched (its agent's token, sent as the ETag, is new) or a page served with a new
    date over the same text: unchanged, and its new validators are kept, so that the next crawl
    sends them and gets its 304 instead of reading and converting it again in every crawl."""
    crawler = crawler_of(SOURCE + 'modified_when = ["checksum"]\n')
    pipeline = build_from_crawler(ChangePipeline, crawler)
    cached(crawler, "http://h.test/a.html", "c1")
    previous = {"checksum": "c1", "last_modified": DATE, "etag": "1024:1700000000", "state": "pending"}
    later = "Thu, 02 May 2024 10:00:00 GMT"
    document = item("http://h.test/a.html", "c1", previous, last_modified=later)
    document.record = {"etag": "1024:1800000000", "last_modified": later, "content_type": "text/plain", "via": None}
    with pytest.raises(NotIndexed) as raised:
        pipeline.process_item(document)
    outcome = raised.value.outcome
    assert (outcome.validators, outcome.compared_checksum) == ({"etag": "1024:1800000000", "last_modified": later}, "c1")
    crawler.signals.send_catch_log(signals.item_dropped, item=document, response=None, spider=None, exception=raised.value)
    row = stores_of(crawler).documents.get("unit", "http://h.test/a.html")
    assert (row["state"], row["status"], row["etag"], row["last_modified"]) == (
        "pending",
        Status.UNCHANGED,
        "1024:1800000000",
        later,
    )
    assert row["checksum"] == "c1"  # what Solr holds: the indexed content's


def test_a_change_of_readers_alone_is_a_change_whatever_the_signals(crawler_of) -> None:
    """The checksum holds who may read the document (crawl/pipelines/checksum.py): another access
    over the same text and date goes on to the cache, even when only the date is compared."""
    crawler = crawler_of(SOURCE + 'modified_when = ["date"]\n')
    pipeline = build_from_crawler(ChangePipeline, crawler)
    content = "c" * 64
    hr = versioned(content, Access.of([Grant("group:hr", "t")]))
    previous = {"checksum": content, "last_modified": DATE, "etag": None, "state": "indexed"}
    document = item("http://h.test/a.html", hr, previous, last_modified=DATE)
    assert pipeline.process_item(document) is document  # public before, restricted now
    previous = {**previous, "checksum": hr}
    with pytest.raises(NotIndexed):  # the same readers, the same date: unchanged
        pipeline.process_item(item("http://h.test/a.html", hr, previous, last_modified=DATE))
    board = versioned(content, Access.of([Grant("group:board", "t")]))
    document = item("http://h.test/a.html", board, previous, last_modified=DATE)
    assert pipeline.process_item(document) is document
    document = item("http://h.test/a.html", content, previous, last_modified=DATE)
    assert pipeline.process_item(document) is document  # public again


def test_any_signal_that_differs_is_a_change(crawler_of) -> None:
    pipeline = build_from_crawler(ChangePipeline, crawler_of())
    previous = {"checksum": "c1", "last_modified": DATE, "etag": None}
    newer = item("http://h.test/a.html", "c1", previous, last_modified="Thu, 02 May 2024 10:00:00 GMT")
    assert pipeline.process_item(newer) is newer
    other_text = item("http://h.test/a.html", "c2", previous, last_modified=DATE)
    assert pipeline.process_item(other_text) is other_text


def test_only_the_sources_modified_when_signals_count(crawler_of) -> None:
    pipeline = build_from_crawler(ChangePipeline, crawler_of(SOURCE + 'modified_when = ["checksum"]\n'))
    previous = {"checksum": "c1", "last_modified": DATE, "etag": '"x"'}
    with pytest.raises(NotIndexed):  # a new date alone is no change for this source
        pipeline.process_item(item("http://h.test/a.html", "c1", previous, last_modified="Thu, 02 May 2024 10:00:00 GMT"))


def test_a_forced_recrawl_reindexes_unchanged_documents(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    start_run(crawler, {"recrawl": "force"})  # `-a recrawl=force`
    assert pipeline.forced  # told by run_started
    document = item("http://h.test/a.html", "c1", {"checksum": "c1", "last_modified": None, "etag": None})
    assert pipeline.process_item(document) is document


def test_a_duplicate_of_an_indexed_document_is_dropped(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    cached(crawler, "http://h.test/a.html", "same")
    with pytest.raises(NotIndexed) as raised:
        pipeline.process_item(item("http://h.test/copy.html", "same"))
    outcome = raised.value.outcome
    assert (outcome.event, outcome.status, outcome.reason, outcome.kind, outcome.depth) == (
        Event.GONE,
        Status.DUPLICATE,
        "duplicate of http://h.test/a.html",
        "duplicate",
        3,
    )
    # with the content and the canonical it names: a copy of the group, weighed as one
    assert outcome.columns == {"duplicate_of": "http://h.test/a.html", "checksum": "same", "canonical_url": None}
    crawler.signals.send_catch_log(
        signals.item_dropped, item=item("http://h.test/copy.html", "same"), response=None, spider=None, exception=raised.value
    )
    row = stores_of(crawler).documents.get("unit", "http://h.test/copy.html")
    assert (row["status"], row["duplicate_of"]) == (Status.DUPLICATE, "http://h.test/a.html")
    # another source's document with the same content is no duplicate
    other = build_from_crawler(ChangePipeline, crawler_of(name="other"))
    assert other.process_item(item("http://h.test/copy.html", "same", source="other")) is not None


def test_the_canonical_copy_takes_the_place_and_the_other_becomes_its_duplicate(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    cached(crawler, "http://h.test/b.html", "same")
    reported = outcomes(crawler)
    canonical = item("http://h.test/canonical.html", "same", canonical_url="http://h.test/canonical.html")
    assert pipeline.process_item(canonical) is canonical
    assert [(url, outcome.status, outcome.columns) for url, outcome in reported] == [
        ("http://h.test/b.html", Status.DUPLICATE, {"duplicate_of": "http://h.test/canonical.html"})
    ]
    row = stores_of(crawler).documents.get("unit", "http://h.test/b.html")  # it was pending: it leaves the index
    assert (row["state"], row["status"], row["duplicate_of"]) == ("removing", Status.DUPLICATE, "http://h.test/canonical.html")


def test_the_copy_discovered_first_is_kept_whatever_order_downloads_finish_in(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    send = crawler.signals.send_catch_log
    # /first.html was met first (its row is older: here a failed fetch), /later.html cached first
    send(url_outcome, url="http://h.test/first.html", outcome=Outcome(Event.FAILED, 503, "HTTP 503"))
    cached(crawler, "http://h.test/later.html", "same")
    reported = outcomes(crawler)
    first = item("http://h.test/first.html", "same")
    assert pipeline.process_item(first) is first
    assert [(url, outcome.status) for url, outcome in reported] == [("http://h.test/later.html", Status.DUPLICATE)]


def test_a_document_a_canonical_copy_replaces_is_still_fetched_in_the_run(crawler_of) -> None:
    """Found by the long sequence (seed 34, crawl 22, two processes): a canonical copy came to hold
    the content another URL was indexed with, which was then marked its duplicate and finished in
    the run before its own request: its page had changed (its new text stayed out of the index
    for a crawl), or answered 404 (the next crawl listed it failed again). It leaves for the copy,
    and its request, still queued, goes out."""
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    _run, frontier = start_run(crawler)
    table = ledger_of(crawler).table  # the run's: its writes finish the run's frontier entries
    cached(crawler, "http://h.test/b.html", "same")
    Ledger(table, "unit").mark_indexed([("http://h.test/b.html", "same")])
    fetched_before = table.get("unit", "http://h.test/b.html")["last_fetched"]
    frontier.add([Entry("http://h.test/b.html", 1)], again=True)  # the maintenance crawl queued it
    canonical = item("http://h.test/canonical.html", "same", canonical_url="http://h.test/canonical.html")
    assert pipeline.process_item(canonical) is canonical
    row = table.get("unit", "http://h.test/b.html")
    assert (row["state"], row["duplicate_of"]) == ("removing", "http://h.test/canonical.html")
    assert (row["frontier"], row["last_fetched"]) == ("queued", fetched_before)  # still to be fetched, not fetched
    assert [entry.url for entry in frontier.lease(5)] == ["http://h.test/b.html"]
    # fetched: its page changed, and its new content enters the index
    cached(crawler, "http://h.test/b.html", "new")
    row = table.get("unit", "http://h.test/b.html")
    assert (row["state"], row["duplicate_of"], row["checksum"]) == ("pending", None, "new")


def test_a_copy_named_canonical_by_a_late_copy_takes_the_place_whatever_the_order(crawler_of) -> None:
    """Issue 53, item 26: B held the content, A was its duplicate (B was discovered first); then
    C, a copy naming A canonical, came. C is B's duplicate while B holds the content; A, fetched
    again in the run, takes B's place; and B, fetched again, stays A's duplicate."""
    crawler = crawler_of()
    pipeline = build_from_crawler(ChangePipeline, crawler)
    _run, frontier = start_run(crawler)
    table = ledger_of(crawler).table  # the run's: its writes finish the run's frontier entries
    a, b, c = (f"http://h.test/{name}.html" for name in "abc")
    frontier.add([Entry(b, 1), Entry(a, 1), Entry(c, 1)])
    assert len(frontier.lease(3)) == 3
    cached(crawler, b, "same")
    Ledger(table, "unit").mark_indexed([(b, "same")])

    def dropped(document: CrawledDocument) -> Outcome:
        with pytest.raises(NotIndexed) as raised:
            pipeline.process_item(document)
        crawler.signals.send_catch_log(signals.item_dropped, item=document, response=None, spider=None, exception=raised.value)
        return raised.value.outcome

    assert dropped(item(a, "same")).columns["duplicate_of"] == b
    assert table.get("unit", a)["frontier"] == "done"
    outcome = dropped(item(c, "same", canonical_url=a))
    assert (outcome.columns["duplicate_of"], outcome.columns["canonical_url"]) == (b, a)
    assert [entry.url for entry in frontier.lease(3)] == [a]  # fetched again, to hold the content
    reported = outcomes(crawler)
    assert pipeline.process_item(item(a, "same")) is not None
    assert [(url, outcome.columns["duplicate_of"]) for url, outcome in reported] == [(b, a)]
    cached(crawler, a, "same")
    assert dropped(item(b, "same")).columns["duplicate_of"] == a  # B, fetched again: A's duplicate


# --- outcomes written in batches (issue 74) ------------------------------------------------------------

BATCHED = {"SEARCHCRAWL_OUTCOME_BATCH": 100, "SEARCHCRAWL_OUTCOME_INTERVAL": 3600}  # written by a flush only


def test_a_copy_whose_original_waits_for_its_batch_is_still_a_duplicate(crawler_of) -> None:
    """With outcomes written in batches, the original's outcome may still wait in memory when
    its copy is compared: the pipeline writes it first (``flush_for``), and finds the copy a
    duplicate as it would without batches. Without the flush the copy went on, to be indexed twice."""
    crawler = crawler_of(**BATCHED)
    pipeline = build_from_crawler(ChangePipeline, crawler)
    cached(crawler, "http://h.test/a.html", "same")
    cached(crawler, "http://h.test/other.html", "other")
    assert stores_of(crawler).documents.get("unit", "http://h.test/a.html") is None  # waits for its batch
    with pytest.raises(NotIndexed, match="Duplicate of http://h.test/a.html"):
        pipeline.process_item(item("http://h.test/copy.html", "same"))
    assert pipeline.process_item(item("http://h.test/new.html", "new")) is not None  # no wait where none carries it
