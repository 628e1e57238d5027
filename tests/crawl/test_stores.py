"""The crawl's store handles alone (stores.py): built by Scrapy's extension manager
from the crawler (``get_crawler`` in ``tests.components``), or with ``build_from_crawler``; or
made by hand from in-memory stores, which is how a component's own test may build what it uses.
Refused for other spiders; required (loudly) by a source spider's components; closed once the
engine has stopped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from searchcrawl import settings as project_settings
from searchcrawl.crawl.pipelines.attributes import AttributesPipeline
from searchcrawl.crawl.stores import Stores, stores_of
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.store import Database, DocumentTable
from tests.components import UNREACHABLE_SOLR

STORES = "searchcrawl.crawl.stores.Stores"


class OtherSpider(Spider):
    name = "other"


def test_the_extension_manager_builds_them_on_the_crawls_data_dir(crawler_of) -> None:
    crawler = crawler_of(SOLR_URL="http://127.0.0.1:9/solr/elsewhere/")
    stores = stores_of(crawler)  # built by get_crawler's extension manager, as in a crawl
    data_dir = Path(crawler.settings["SEARCHCRAWL_DATA_DIR"])
    assert Path(stores.database.engine.url.database) == data_dir / "documents.sqlite3"
    assert stores.cache.directory == data_dir / "cache" / "unit"
    assert stores.index.url == "http://127.0.0.1:9/solr/elsewhere"
    assert stores.documents.run_id is None and not stores.read_only  # the run is the ledger's, not the stores'


def test_build_from_crawler_builds_others_as_scrapy_does(crawler_of) -> None:
    crawler = crawler_of()
    stores = build_from_crawler(Stores, crawler)
    try:
        assert stores is not stores_of(crawler) and stores.database is not stores_of(crawler).database
    finally:
        stores.close()


def test_a_read_only_crawl_opens_no_cache(crawler_of) -> None:
    stores = stores_of(crawler_of(SEARCHCRAWL_READ_ONLY=True))
    assert stores.read_only and stores.document_cache is None
    with pytest.raises(RuntimeError, match="has no document cache"):
        stores.cache  # noqa: B018


def test_they_can_be_made_of_in_memory_stores() -> None:
    """What a component's test may hand it: a migrated in-memory table, an unreachable Solr."""
    stores = Stores(DocumentTable(Database("sqlite://")), SolrIndex(UNREACHABLE_SOLR))
    try:
        assert stores.documents.knows("unit") is False and stores.runs.latest("unit") is None
        with pytest.raises(RuntimeError, match="without a converter"):
            stores.converter  # noqa: B018
    finally:
        stores.close()


def test_another_spiders_crawl_has_none() -> None:
    crawler = get_crawler(OtherSpider, {"EXTENSIONS": {STORES: -900}})
    assert crawler.get_extension(Stores) is None  # NotConfigured: Scrapy left it out
    with pytest.raises(NotConfigured, match="not a searchcrawl source spider"):
        build_from_crawler(Stores, crawler)
    with pytest.raises(NotConfigured):
        stores_of(crawler)
    with pytest.raises(NotConfigured):  # so the project's components leave such crawls alone
        build_from_crawler(AttributesPipeline, crawler)


def test_a_source_crawl_without_them_is_refused_loudly(crawler_of) -> None:
    crawler = crawler_of(EXTENSIONS={**project_settings.EXTENSIONS, STORES: None})
    assert crawler.get_extension(Stores) is None
    with pytest.raises(RuntimeError, match=r"Stores is not enabled \(EXTENSIONS\): a source's crawl needs it"):
        stores_of(crawler)
    with pytest.raises(RuntimeError, match="Stores is not enabled"):
        build_from_crawler(AttributesPipeline, crawler)


def test_the_cache_is_sealed_when_the_engine_stops(crawler_of) -> None:
    crawler = crawler_of()
    stores = stores_of(crawler)
    stores.cache.put({"url": "http://h.test/a.html", "checksum": "c"})
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert stores.cache.scan().sealed  # the cache's spool is sealed: a push may delete it once sent


def test_the_table_is_closed_when_the_engine_has_stopped_not_before(crawler_of) -> None:
    """spider_closed receivers (the fleet releasing its site slots, the run's end: RunEnd) may
    still use the database: the stores close it on engine_stopped, which comes after all of them."""
    crawler = crawler_of()
    stores = stores_of(crawler)
    closed: list[bool] = []
    stores.database.close = lambda: closed.append(True)  # type: ignore[method-assign]
    asyncio.run(crawler.signals.send_catch_log_async(signals.spider_closed, spider=None, reason="finished"))
    assert not closed
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert closed
