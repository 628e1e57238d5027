"""LanguagePipeline alone, and with the pipelines before it: a document nothing declared a
language for gets one detected, after the change check, so that an unchanged page or a duplicate
never loads the detection model.

Built with ``build_from_crawler`` on a crawler of ``tests.components``."""

from __future__ import annotations

import asyncio

import pytest
from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler

from searchcrawl import settings as project_settings
from searchcrawl.content import language_detection
from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import CrawledDocument, Fetched
from searchcrawl.crawl.pipelines.attributes import AttributesPipeline
from searchcrawl.crawl.pipelines.changes import ChangePipeline
from searchcrawl.crawl.pipelines.checksum import ChecksumPipeline
from searchcrawl.crawl.pipelines.language import LanguagePipeline

SOURCE = 'seeds = ["http://h.test/"]\n'
TEXT = "Cats and dogs have lived with people for thousands of years, and they still do today."


def text_item(url: str = "http://h.test/notes.txt", **headers: str) -> CrawledDocument:
    return CrawledDocument("unit", url, 1, Fetched({"content-type": "text/plain", **headers}, text=TEXT))


def attributed(crawler: Crawler, item: CrawledDocument) -> CrawledDocument:
    """``item`` through the stages before the change check: attributes, checksum."""
    item = asyncio.run(build_from_crawler(AttributesPipeline, crawler).process_item(item))
    return build_from_crawler(ChecksumPipeline, crawler).process_item(item)


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How often the detection model is loaded from now on (this process may have loaded it)."""
    counted: list[int] = []
    load = language_detection.load_model

    def counting() -> object:
        counted.append(1)
        return load()

    monkeypatch.setattr(language_detection, "_model", None)
    monkeypatch.setattr(language_detection, "load_model", counting)
    return counted


def test_it_runs_after_the_change_check_and_before_the_cache() -> None:
    order = project_settings.ITEM_PIPELINES
    key = "searchcrawl.crawl.pipelines.language.LanguagePipeline"
    assert order["searchcrawl.crawl.pipelines.changes.ChangePipeline"] < order[key]
    assert order[key] < order["searchcrawl.crawl.pipelines.cache_writer.CachePipeline"]


def test_an_undeclared_language_is_detected_after_the_attributes(crawler_of, loads) -> None:
    crawler = crawler_of()
    item = attributed(crawler, text_item())
    assert item.converted is not None and item.converted.detect_language
    checked = item.fields  # the checksum stage's document
    assert "language" not in checked and not loads
    item = build_from_crawler(LanguagePipeline, crawler).process_item(item)
    assert item.fields["language"] == "en" and loads == [1]
    # a new document, built from the checksum stage's: that one, and the attributes stage's
    # result, stay as their stages made them
    assert "language" not in checked and dict(item.fields) == {**checked, "language": "en"}
    assert "language" not in item.converted.fields
    with pytest.raises(TypeError):
        item.fields["language"] = "de"  # type: ignore[index]


def test_a_declared_language_or_detection_off_is_left_alone(crawler_of, loads) -> None:
    declared = attributed(crawler_of(), text_item(**{"content-language": "de"}))
    off = attributed(crawler_of(SOURCE + "detect_language = false\n"), text_item())
    pipeline = build_from_crawler(LanguagePipeline, crawler_of())
    assert pipeline.process_item(declared).fields["language"] == "de"
    assert "language" not in pipeline.process_item(off).fields
    assert not loads


def test_an_unchanged_document_never_loads_the_model(crawler_of, loads) -> None:
    crawler = crawler_of()
    item = attributed(crawler, text_item())
    item.previous = {"checksum": item.fields["checksum"], "last_modified": None, "etag": None, "state": "indexed"}
    with pytest.raises(NotIndexed):
        build_from_crawler(ChangePipeline, crawler).process_item(item)
    assert not loads
