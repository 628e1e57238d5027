"""CrawlState alone: the crawl's shared state, built by Scrapy's extension manager from the
crawler (``get_crawler`` in ``tests.components``), or with ``build_from_crawler``; refused for
other spiders; required (loudly) by a source spider's components; and the rules' decisions on
URLs (``admit`` for requests, ``rule_excluding`` for known URLs, ``exclude_link``).

The read-only mode and ``steps`` are being reworked elsewhere and are left to their own tests."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from searchcrawl import settings as project_settings
from searchcrawl.crawl.extensions.crawl_state import ADMITTED, CrawlState, crawl_state
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.pipelines.attributes import AttributesPipeline
from searchcrawl.rules.status_codes import Status
from tests.components import state_of

CRAWL_STATE = "searchcrawl.crawl.extensions.crawl_state.CrawlState"
SOURCE = """seeds = ["http://h.test/"]
max_depth = 2
url_rewriter = "tests.rewriters.strip_session"
paths = { "*" = { exclude = ["/private/"] } }
[filters.scope]
exclude_urls = ["*/drafts/*"]
"""


class OtherSpider(Spider):
    name = "other"


# --- building it ------------------------------------------------------------------------------


def test_the_extension_manager_builds_it_with_the_crawls_stores(crawler_of) -> None:
    crawler = crawler_of(SOLR_URL="http://127.0.0.1:9/solr/elsewhere/")
    state = state_of(crawler)  # built by get_crawler's extension manager, as in a crawl
    assert_built_for(state, crawler)
    assert state.index.url == "http://127.0.0.1:9/solr/elsewhere"
    assert isinstance(state.ledger, LedgerWriter) and state.ledger.context is state
    assert (state.forced, state.test_mode, state.force_delete, state.mode, state.shared) == (
        False,
        False,
        False,
        "initial",
        False,
    )
    assert state.run_id is None and state.frontier is None and state.runs is None  # the scheduler attaches the run


def test_build_from_crawler_builds_one_as_scrapy_does(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_SHARED_CRAWL=True, DOWNLOAD_DELAY=1.5)
    state = build_from_crawler(CrawlState, crawler)
    try:
        assert state is not state_of(crawler)
        assert_built_for(state, crawler)
        assert (state.shared, state.site_delay) == (True, 1.5)
    finally:
        state.close()


def assert_built_for(state: CrawlState, crawler: Crawler) -> None:
    """The state of the crawler's source, on the crawl's stores in its data dir."""
    data_dir = Path(crawler.settings["SEARCHCRAWL_DATA_DIR"])
    assert state.source.name == "unit" and state.source.seed_urls == ("http://h.test/",)
    assert state.crawler is crawler
    assert Path(state.table.engine.url.database) == data_dir / "documents.sqlite3"  # a real SQLite table
    assert state.cache.directory == data_dir / "cache" / "unit"


def test_the_crawls_arguments_are_taken_by_configure(crawler_of) -> None:
    state = state_of(crawler_of())
    state.configure({"recrawl": "force", "test_mode": "yes", "delete": "force"})
    assert (state.forced, state.test_mode, state.force_delete, state.table.test_mode) == (True, True, True, True)
    state.configure({"recrawl": "no", "test_mode": "0"})
    assert (state.forced, state.test_mode, state.force_delete, state.table.test_mode) == (False, False, False, False)


def test_another_spiders_crawl_has_none(tmp_path: Path) -> None:
    crawler = get_crawler(OtherSpider, {"EXTENSIONS": {CRAWL_STATE: -900}})
    assert crawler.get_extension(CrawlState) is None  # NotConfigured: Scrapy left it out
    with pytest.raises(NotConfigured, match="not a searchcrawl source spider"):
        build_from_crawler(CrawlState, crawler)
    with pytest.raises(NotConfigured):
        crawl_state(crawler)
    with pytest.raises(NotConfigured):  # so the project's components leave such crawls alone
        build_from_crawler(AttributesPipeline, crawler)


def test_a_source_crawl_without_it_is_refused_loudly(crawler_of) -> None:
    crawler = crawler_of(EXTENSIONS={**project_settings.EXTENSIONS, CRAWL_STATE: None})
    assert crawler.get_extension(CrawlState) is None
    with pytest.raises(RuntimeError, match=r"CrawlState is not enabled \(EXTENSIONS\): a source's crawl needs it"):
        crawl_state(crawler)
    with pytest.raises(RuntimeError, match="CrawlState is not enabled"):
        build_from_crawler(AttributesPipeline, crawler)


def test_it_closes_when_the_engine_stops(crawler_of) -> None:
    from scrapy import signals

    crawler = crawler_of()
    state = state_of(crawler)
    state.cache.put({"url": "http://h.test/a.html", "checksum": "c"})
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert state.cache.scan().sealed  # the cache's spool is sealed: a push may delete it once sent


# --- the rules' decisions -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "depth", "status"),
    [
        ("http://h.test/a.html", 2, None),
        ("http://h.test/a.html", 3, Status.EXCLUDED_DEPTH),
        ("http://other.test/a.html", 1, Status.EXCLUDED_DOMAIN),
        ("http://h.test/private/a.html", 1, Status.EXCLUDED_PATH),
        ("http://h.test/drafts/a.html", 1, Status.EXCLUDED_FILTER),
        ("http://h.test/q?x=1", 1, Status.EXCLUDED_DYNAMIC),
        ("ftp://h.test/a.txt", 1, Status.EXCLUDED_SCHEME),
    ],
)
def test_admit_decides_on_a_request_and_remembers_the_exclusion(crawler_of, url: str, depth: int, status: Status | None) -> None:
    crawler = crawler_of()
    state = state_of(crawler)
    decision = state.admit(url, depth)
    if status is None:
        assert decision.decision == ADMITTED and decision.allowed and state.excluded == []
        return
    assert (decision.allowed, decision.status) == (False, status) and decision.rule
    assert state.excluded == [(url, int(status), depth, decision.rule)]
    assert crawler.stats.get_value(f"searchcrawl/excluded/{status.name.lower()}") == 1
    state.flush_exclusions()  # the document table gets the exclusion with its rule
    row = state.table.get("unit", url)
    assert (row["state"], row["status"], row["reason"], row["depth"]) == ("excluded", status, decision.rule, depth)
    assert state.excluded == []


def test_an_exclusion_is_recorded_once_and_counted_every_time(crawler_of) -> None:
    crawler = crawler_of()
    state = state_of(crawler)
    for _ in range(3):
        state.admit("http://other.test/", 1)
    assert len(state.excluded) == 1
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_domain") == 3
    assert state.counters()["excluded"] == 3


def test_rule_excluding_judges_known_urls_as_they_are(crawler_of) -> None:
    state = state_of(crawler_of())
    assert state.rule_excluding("http://h.test/a.html", 1) is None
    assert state.rule_excluding("http://h.test/private/a.html", 1) == (
        Status.EXCLUDED_PATH,
        state.admit("http://h.test/private/a.html", 1).rule,
    )
    # a URL the rewriter would change or drop is not one the crawl would request now
    assert state.rule_excluding("http://h.test/a.html?sessionid=1", 1) == (
        Status.EXCLUDED_REWRITER,
        "the URL rewriter makes it http://h.test/a.html",
    )
    assert state.rule_excluding("http://h.test/print/a.html", 1) == (Status.EXCLUDED_REWRITER, "dropped by the URL rewriter")
    assert state.rule_excluding("http://h.test:99999/a.html", 1) == (
        Status.EXCLUDED_PORT,
        "invalid port in http://h.test:99999/a.html",
    )


def test_exclude_link_writes_at_once(crawler_of) -> None:
    crawler = crawler_of()
    state = state_of(crawler)
    state.exclude_link("http://h.test/print/a.html", Status.EXCLUDED_REWRITER, 2, "dropped by the URL rewriter")
    row = state.table.get("unit", "http://h.test/print/a.html")
    assert (row["state"], row["status"], row["reason"]) == ("excluded", Status.EXCLUDED_REWRITER, "dropped by the URL rewriter")
    assert crawler.stats.get_value("searchcrawl/excluded/excluded_rewriter") == 1


def test_counters_are_read_from_the_crawls_stats(crawler_of) -> None:
    crawler = crawler_of()
    crawler.stats.set_value("response_received_count", 5)
    crawler.stats.set_value("searchcrawl/cached", 2)
    crawler.stats.set_value("searchcrawl/excluded/excluded_robots", 1)  # RobotsMiddleware's
    state_of(crawler).admit("http://other.test/", 1)
    assert state_of(crawler).counters() == {"pages": 5, "cached": 2, "indexed": 0, "removed": 0, "excluded": 2}


def test_the_table_is_closed_when_the_engine_has_stopped_not_before(crawler_of) -> None:
    """spider_closed receivers (the fleet releasing its site slots, the run's end: RunEnd) may
    still use the database: the state closes it on engine_stopped, which comes after all of them."""
    from scrapy import signals

    crawler = crawler_of()
    state = state_of(crawler)
    closed: list[bool] = []
    state.table.database.close = lambda: closed.append(True)  # type: ignore[method-assign]
    asyncio.run(crawler.signals.send_catch_log_async(signals.spider_closed, spider=None, reason="finished"))
    assert not closed
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert closed
