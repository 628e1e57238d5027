"""LedgerWriter alone: what components report through Scrapy's signals becomes the URL's row.

It is an extension (EXTENSIONS -850): the extension manager builds it with the crawler (and keeps
it: signal receivers are weak references), so it is ``ledger_of(crawler)``; a read-only crawl has
none. tests/test_ledger.py covers url_outcome, a NotIndexed drop, a
plain DropItem and item_error; here: spider_error, what has no URL, the stats, the source's
max_failures, and that the writer outlives a garbage collection."""

from __future__ import annotations

import gc

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse, Response
from twisted.python.failure import Failure

from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.ledger_writer import MAX_REASON, LedgerWriter
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.ledger import Ledger
from tests.components import ledger_of, stores_of

SOURCE = 'seeds = ["http://h.test/"]\nmax_failures = 2\n'


def row(crawler: Crawler, url: str) -> dict | None:
    return ledger_of(crawler).table.get("unit", url)


def test_the_extension_manager_builds_and_keeps_one_writer(crawler_of) -> None:
    crawler = crawler_of()
    writer = crawler.get_extension(LedgerWriter)
    assert isinstance(writer, LedgerWriter) and writer.crawler is crawler
    assert writer.table.database is stores_of(crawler).database  # the crawl's document table
    assert writer.max_failures == 2  # the source's
    assert crawler_of(SEARCHCRAWL_READ_ONLY=True).get_extension(LedgerWriter) is None  # a read-only crawl writes nothing
    del writer
    gc.collect()  # the signal receivers are weak references: the extension manager keeps the writer alive
    crawler.signals.send_catch_log(url_outcome, url="http://h.test/a", outcome=Outcome(Event.GONE, 404, "gone", kind="failed"))
    assert row(crawler, "http://h.test/a")["status"] == 404


def test_a_spider_callback_error_gives_the_request_url_status_925(crawler_of) -> None:
    crawler = crawler_of()
    request = Request("http://h.test/bad.html", meta={"depth": 2})
    response = HtmlResponse("http://h.test/bad.html", body=b"<html></html>", request=request)
    failure = Failure(KeyError("title"))
    crawler.signals.send_catch_log(signals.spider_error, failure=failure, response=response, spider=None)
    found = row(crawler, "http://h.test/bad.html")
    assert (found["state"], found["status"], found["depth"], found["failures"]) == ("failed", Status.PROCESSING_ERROR, 2, 1)
    assert found["reason"] == "processing raised KeyError: 'title'"


def test_a_spider_error_without_a_request_takes_the_responses_url(crawler_of) -> None:
    crawler = crawler_of()
    response = Response("http://h.test/orphan.html", body=b"x")
    crawler.signals.send_catch_log(signals.spider_error, failure=Failure(ValueError("x")), response=response, spider=None)
    found = row(crawler, "http://h.test/orphan.html")
    assert (found["status"], found["depth"]) == (Status.PROCESSING_ERROR, None)


def test_a_processing_error_keeps_the_runs_document_until_max_failures(crawler_of) -> None:
    crawler = crawler_of()
    url = "http://h.test/a.html"
    crawler.signals.send_catch_log(url_outcome, url=url, outcome=Outcome(Event.CACHED, 200, columns={"checksum": "c"}))
    Ledger(ledger_of(crawler).table, "unit").mark_indexed([(url, "c")])
    item = CrawledDocument("unit", url, 1)
    error = Failure(RuntimeError("boom " * 200))
    crawler.signals.send_catch_log(signals.item_error, item=item, response=None, spider=None, failure=error)
    first = row(crawler, url)
    assert (first["state"], first["status"], first["failures"]) == ("indexed", Status.PROCESSING_ERROR, 1)
    assert first["reason"].startswith("processing raised RuntimeError: boom")
    assert len(first["reason"]) < MAX_REASON + 50  # the error's message is cut (the ledger adds its count)
    crawler.signals.send_catch_log(signals.item_error, item=item, response=None, spider=None, failure=error)
    assert (row(crawler, url)["state"], row(crawler, url)["failures"]) == ("removing", 2)  # max_failures = 2


def test_what_has_no_url_is_left_alone(crawler_of) -> None:
    crawler = crawler_of()
    send = crawler.signals.send_catch_log
    results = [
        *send(signals.item_dropped, item={"title": "a dict item"}, response=None, spider=None, exception=DropItem("no")),
        *send(signals.item_error, item={"title": "x"}, response=None, spider=None, failure=Failure(ValueError("x"))),
        *send(signals.spider_error, failure=Failure(ValueError("x")), response=None, spider=None),
    ]
    assert not [result for _receiver, result in results if isinstance(result, Failure)]  # no receiver raised
    assert ledger_of(crawler).table.count_by("unit", "state") == {}


def test_each_outcome_is_counted_by_event(crawler_of) -> None:
    crawler = crawler_of()
    send = crawler.signals.send_catch_log
    send(url_outcome, url="http://h.test/a", outcome=Outcome(Event.EXCLUDED, 907, "robots.txt"))
    send(url_outcome, url="http://h.test/b", outcome=Outcome(Event.EXCLUDED, 901, "domain"))
    send(
        signals.item_dropped,
        item=CrawledDocument("unit", "http://h.test/c", 1),
        response=None,
        spider=None,
        exception=DropItem("x"),
    )
    assert crawler.stats.get_value("searchcrawl/outcome/excluded") == 2
    assert crawler.stats.get_value("searchcrawl/outcome/gone") == 1
    assert row(crawler, "http://h.test/c")["status"] == Status.DROPPED


def test_outcome_batches_have_a_thread_of_their_own_over_postgresql_only() -> None:
    """Issue 74, measured: over PostgreSQL each statement is a round trip the crawl would wait on;
    over SQLite a thread only hands Python's lock over."""
    from searchcrawl.crawl.ledger_writer import outcome_thread

    assert outcome_thread("auto", "postgresql+psycopg://u@h/db") is True
    assert outcome_thread("auto", "sqlite:////data/documents.sqlite3") is False
    assert outcome_thread(True, "sqlite:///x") is True and outcome_thread("false", "postgresql://h/db") is False
