"""The crawl's LOG_FORMATTER (searchcrawl/crawl/log_formatter.py): Scrapy's item lines name a
document, never print it (its text, tree, bytes)."""

from __future__ import annotations

import logging

from scrapy.exceptions import DropItem
from scrapy.http import HtmlResponse
from scrapy.logformatter import LogFormatter
from scrapy.utils.misc import build_from_crawler, load_object

from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import CrawledDocument, Fetched
from searchcrawl.crawl.log_formatter import MAX_ITEM_CHARS, item_name
from searchcrawl.rules.lifecycle import Event, Outcome

URL = "http://h.test/report.pdf"


def document() -> CrawledDocument:
    return CrawledDocument(
        "unit", URL, 1, Fetched({"content-type": "application/pdf"}, text="secret words " * 10_000, body=b"%PDF-1.7 " * 100_000)
    )


def line(result: dict) -> str:
    return result["msg"] % result["args"]


def test_the_crawls_formatter_names_a_document_in_every_item_line(crawler_of) -> None:
    crawler = crawler_of()
    spider = crawler.spidercls.from_crawler(crawler)
    formatter = build_from_crawler(load_object(crawler.settings["LOG_FORMATTER"]), crawler)
    assert isinstance(formatter, LogFormatter)
    item, response = document(), HtmlResponse(URL, body=b"")
    dropped = formatter.dropped(
        item, NotIndexed(Outcome(Event.FAILED, 925, "x"), f"Not converted: {URL}", "WARNING"), response, spider
    )
    error = formatter.item_error(item, ValueError("broken"), response, spider)
    scraped = formatter.scraped(item, response, spider)
    assert (dropped["level"], error["level"], scraped["level"]) == (logging.WARNING, logging.ERROR, logging.DEBUG)
    for result in (dropped, error, scraped):
        text = line(result)
        assert f"<CrawledDocument unit {URL}>" in text and "secret words" not in text and "%PDF" not in text
        assert len(text) < 400
    assert line(dropped).startswith(f"Dropped: Not converted: {URL}")


def test_other_items_are_cut() -> None:
    assert item_name({"a": "b"}) == "{'a': 'b'}"
    long = item_name({"text": "x" * 10_000})
    assert len(long) == MAX_ITEM_CHARS and long.endswith("...")
    assert item_name(DropItem("no url")).startswith("DropItem(")
