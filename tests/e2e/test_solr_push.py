"""SolrPipeline alone, against the real dev Solr: the cache is pushed past a threshold, after an
interval (after what an earlier crawl left pending, when it opens), and what is left when the
run ends (the pipeline's close, then RunEnd's push: ``the_crawl_ends``); removals, the
mass-deletion guard, test mode, and a Solr that cannot be reached.

Built with ``build_from_crawler`` on a crawler of ``tests.components``, whose run is started as
the frontier scheduler starts it (``start_run``); documents reach the cache through CachePipeline,
as in a crawl. Each test has a source of its own in the shared Solr."""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pysolr
import pytest
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.extensions.run_end import run_end
from searchcrawl.crawl.items import ConvertedDocument, CrawledDocument
from searchcrawl.crawl.pipelines.cache_writer import CachePipeline
from searchcrawl.crawl.pipelines.solr_push import SolrPipeline
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.runs import FINISHING
from tests.components import close_stores, ledger_of, source_crawler, start_run, stores_of
from tests.conftest import solr_docs, wait_for

SOURCE = 'seeds = ["http://h.test/"]\n'
FAST_RETRIES = {"SEARCHCRAWL_SOLR_RETRY_TIMES": 1, "SEARCHCRAWL_SOLR_RETRY_BACKOFF": 0}


@pytest.fixture
def crawler_of(tmp_path: Path) -> Iterator[Callable[..., Crawler]]:
    """crawler_of(source_toml, started=True, **settings): a crawler of a source named for this test
    alone, its run started (``start_run``) unless not ``started``."""
    made: list[Crawler] = []

    def make(source: str = SOURCE, started: bool = True, **settings: object) -> Crawler:
        made.append(source_crawler(tmp_path, source, name=f"push-{uuid.uuid4().hex[:8]}", **settings))
        if started:
            start_run(made[-1])
        return made[-1]

    yield make
    for crawler in made:
        close_stores(crawler)


def name_of(crawler: Crawler) -> str:
    return crawler.spidercls.source.name  # type: ignore[attr-defined]


def run_of(crawler: Crawler) -> Run:
    """The crawl's run, as its components received it with ``run_started`` (RunEnd keeps it)."""
    run = run_end(crawler).run
    assert run is not None, "start the run first"
    return run


def solr_pipeline(crawler: Crawler) -> SolrPipeline:
    """The Solr pipeline, with the run it would have received had it been built before it started."""
    pipeline = build_from_crawler(SolrPipeline, crawler)
    pipeline.run = run_end(crawler).run
    return pipeline


def cache(crawler: Crawler, *paths: str, version: str = "", checksum: str = "") -> list[CrawledDocument]:
    """Documents at ``paths`` of h.test, cached and marked pending by CachePipeline, in the crawl's
    run; with ``checksum``, all of the same content (as two nodes may cache it at once)."""
    name = name_of(crawler)
    writer = build_from_crawler(CachePipeline, crawler)
    writer.run = run_of(crawler)  # as run_started gives it
    items = []
    for path in paths:
        url = f"http://h.test/{path}"
        fields = {
            "id": f"{name}!{url}",
            "url": url,
            "display_url": url,
            "source": name,
            "title": f"Page {path}{version}",
            "content": f"The text of {path}{version}",
            "checksum": checksum or f"sum-{path}{version}",
        }
        converted = ConvertedDocument(fields, "", url)
        items.append(writer.process_item(CrawledDocument(name, url, 1, converted=converted, fields=fields)))
    return items


def in_solr(solr: pysolr.Solr, crawler: Crawler) -> dict[str, str]:
    """url -> title of the source's documents in Solr."""
    return {doc["url"]: doc["title"] for doc in solr_docs(solr, name_of(crawler))}


async def the_crawl_ends(crawler: Crawler, pipeline: SolrPipeline | None = None, reason: str = "finished") -> None:
    """The pipeline closes, then the run ends: what Scrapy's close does, spider_closed sent as the
    engine sends it (RunEnd's receiver, built with the crawler's extensions)."""
    await (pipeline or solr_pipeline(crawler)).close_spider()
    await crawler.signals.send_catch_log_async(signals.spider_closed, spider=None, reason=reason)


def states(crawler: Crawler) -> dict[str, str]:
    return ledger_of(crawler).table.count_by(name_of(crawler), "state")


def test_documents_left_pending_are_pushed_when_the_spider_opens(crawler_of, solr_url: str, solr: pysolr.Solr) -> None:
    crawler = crawler_of(SOLR_URL=solr_url)
    cache(crawler, "a.html", "b.html")  # an earlier crawl cached them; Solr was down
    pipeline = solr_pipeline(crawler)
    asyncio.run(pipeline.open_spider())
    assert in_solr(solr, crawler) == {"http://h.test/a.html": "Page a.html", "http://h.test/b.html": "Page b.html"}
    assert states(crawler) == {"indexed": 2}
    assert ledger_of(crawler).table.pending(name_of(crawler)) == []
    assert crawler.stats.get_value("searchcrawl/indexed") == 2


@pytest.mark.parametrize("when", ["a push", "the run's end"])
def test_the_same_content_cached_twice_at_once_is_pushed_once(crawler_of, solr_url: str, solr: pysolr.Solr, when: str) -> None:
    """Two nodes of a shared crawl, each finding no copy, cached the same content (here in one
    cache): a push settles the copies first, and the run's end too; the one discovered first goes
    to Solr, the other is its duplicate (status 911) and is never sent."""
    crawler = crawler_of(SOLR_URL=solr_url)
    cache(crawler, "a.html", "b.html", checksum="same")
    if when == "a push":
        asyncio.run(solr_pipeline(crawler).open_spider())  # what is pending goes as the spider opens
    else:
        asyncio.run(the_crawl_ends(crawler))
    assert in_solr(solr, crawler) == {"http://h.test/a.html": "Page a.html"}
    row = ledger_of(crawler).table.get(name_of(crawler), "http://h.test/b.html")
    assert (row["status"], row["duplicate_of"]) == (911, "http://h.test/a.html")
    assert ledger_of(crawler).table.pending(name_of(crawler)) == []


def test_a_process_joining_a_run_leaves_what_is_pending_to_the_others(
    crawler_of, solr_url: str, solr: pysolr.Solr, caplog: pytest.LogCaptureFixture
) -> None:
    """processes = N: the second process came up after the first had cached the seed page. That
    page is the first's of this run, not "left pending by an earlier crawl": the joiner's open
    pushes nothing (it pushed and logged so before), its own pushes take it along later."""
    crawler = crawler_of(started=False, SOLR_URL=solr_url, SEARCHCRAWL_SHARED_CRAWL=True)
    runs, name = stores_of(crawler).runs, name_of(crawler)
    run = runs.start(name, allow_shared=True, owner="other-host:1")  # the first process's run
    pipeline = build_from_crawler(SolrPipeline, crawler)  # built with the crawl: it receives run_started
    joined, _frontier = start_run(crawler)
    assert joined.id == run.id and joined.joined and joined.resumed
    assert sorted(runs.nodes(run.id, 600)) == sorted(["other-host:1", joined.owner])
    cache(crawler, "seed.html")  # what the first process cached of it (the cache is one on this machine)
    with caplog.at_level(logging.INFO, logger="searchcrawl.crawl.pipelines.solr_push"):
        asyncio.run(pipeline.open_spider())
    assert "left pending by an earlier crawl" not in caplog.text
    assert in_solr(solr, crawler) == {} and states(crawler) == {"pending": 1}
    first = Frontier(stores_of(crawler).database, name, run.id, "other-host:1")
    first.add([Entry("http://h.test/next.html", 1)])
    assert first.lease(1)  # the first process still works: the joiner leaves the run's end to it
    asyncio.run(the_crawl_ends(crawler, pipeline))  # its final push pushes whatever its cache holds
    assert in_solr(solr, crawler) == {"http://h.test/seed.html": "Page seed.html"}
    assert runs.latest(name)["state"] == "running" and runs.nodes(run.id, 600) == ["other-host:1"]  # type: ignore[index]


def test_a_push_starts_once_the_threshold_has_been_cached(crawler_of, solr_url: str, solr: pysolr.Solr) -> None:
    crawler = crawler_of(SOLR_URL=solr_url, SEARCHCRAWL_CACHE_MAX_BYTES=600, SEARCHCRAWL_PUSH_INTERVAL=0)
    pipeline = solr_pipeline(crawler)

    async def crawl() -> None:
        (first,) = cache(crawler, "a.html")  # about 250 bytes: below the threshold
        assert pipeline.process_item(first) is first
        assert pipeline.flushing is None and in_solr(solr, crawler) == {}
        for item in cache(crawler, "b.html", "c.html"):  # past it: a push, in a worker thread
            pipeline.process_item(item)
        assert pipeline.flushing is not None
        await pipeline.flushing
        assert set(in_solr(solr, crawler)) == {"http://h.test/a.html", "http://h.test/b.html", "http://h.test/c.html"}
        assert states(crawler) == {"indexed": 3}
        (late,) = cache(crawler, "d.html")  # after the push: below the threshold again
        pipeline.process_item(late)
        assert pipeline.flushing.done() and states(crawler) == {"indexed": 3, "pending": 1}
        await the_crawl_ends(crawler, pipeline)  # the rest goes at the end

    asyncio.run(crawl())
    assert len(in_solr(solr, crawler)) == 4 and states(crawler) == {"indexed": 4}
    assert crawler.stats.get_value("searchcrawl/indexed") == 4
    assert stores_of(crawler).cache.documents() == {}  # pushed and sealed: the spools are gone


def test_a_push_starts_once_documents_have_waited_the_interval(crawler_of, solr_url: str, solr: pysolr.Solr) -> None:
    """Far below the size threshold, what was cached goes to Solr once the interval has passed
    since the last push began: then not again until it has passed once more. (The clock is moved
    by setting when the last push began: no test of wall time on a loaded machine.)"""
    crawler = crawler_of(SOLR_URL=solr_url, SEARCHCRAWL_PUSH_INTERVAL=60)
    pipeline = solr_pipeline(crawler)

    async def crawl() -> None:
        (first,) = cache(crawler, "a.html")
        pipeline.process_item(first)
        assert pipeline.flushing is None  # the crawl began less than 60 s ago
        pipeline.pushed_time -= 61
        (second,) = cache(crawler, "b.html")
        pipeline.process_item(second)
        assert pipeline.flushing is not None
        await pipeline.flushing
        assert set(in_solr(solr, crawler)) == {"http://h.test/a.html", "http://h.test/b.html"}
        (third,) = cache(crawler, "c.html")
        pipeline.process_item(third)  # the interval begins again with each push
        assert pipeline.flushing.done() and states(crawler) == {"indexed": 2, "pending": 1}
        await the_crawl_ends(crawler, pipeline)

    asyncio.run(crawl())
    assert len(in_solr(solr, crawler)) == 3 and states(crawler) == {"indexed": 3}


def test_after_a_failed_push_the_interval_waits_for_the_pause(crawler_of) -> None:
    """Solr down: a push fails, and the next one waits for the pause (SEARCHCRAWL_SOLR_RETRY_BACKOFF,
    growing), not for the interval alone; once it is over, documents cached since are tried again
    during the crawl, whatever the size of the cache."""
    crawler = crawler_of(SEARCHCRAWL_PUSH_INTERVAL=60, SEARCHCRAWL_SOLR_RETRY_BACKOFF=600)  # UNREACHABLE_SOLR
    pipeline = solr_pipeline(crawler)

    async def crawl() -> None:
        pipeline.pushed_time -= 61
        (first,) = cache(crawler, "a.html")
        pipeline.process_item(first)
        assert pipeline.flushing is not None
        await pipeline.flushing
        assert pipeline.failures == 1  # a pause of 600 s
        pipeline.pushed_time -= 61
        (second,) = cache(crawler, "b.html")
        pipeline.process_item(second)  # the interval has passed, the pause has not
        assert pipeline.flushing.done() and pipeline.failures == 1
        pipeline.retry_after = 0  # the pause is over
        (third,) = cache(crawler, "c.html")
        pipeline.process_item(third)
        assert not pipeline.flushing.done()  # tried again
        await pipeline.flushing
        assert pipeline.failures == 2

    asyncio.run(crawl())
    assert states(crawler) == {"pending": 3}


def test_the_interval_is_checked_while_nothing_more_is_cached(crawler_of, solr_url: str, solr: pysolr.Solr) -> None:
    """A maintenance crawl: one changed page, then unchanged ones that cache nothing. The page is
    pushed an interval after the last push began, not at the end of the crawl."""
    crawler = crawler_of(SOLR_URL=solr_url, SEARCHCRAWL_PUSH_INTERVAL=0.2)
    pipeline = solr_pipeline(crawler)

    async def crawl() -> None:
        await pipeline.open_spider()
        (changed,) = cache(crawler, "a.html")
        pipeline.process_item(changed)  # less than an interval since the push of the spider's opening
        for _ in range(100):  # no other document comes; the ticker pushes it
            await asyncio.sleep(0.1)
            if states(crawler) == {"indexed": 1}:
                break
        assert states(crawler) == {"indexed": 1}
        await the_crawl_ends(crawler, pipeline)
        assert pipeline.ticker is not None and pipeline.ticker.cancelled()

    asyncio.run(crawl())
    assert set(in_solr(solr, crawler)) == {"http://h.test/a.html"}


def test_another_process_pushing_keeps_the_pause_as_it_is(crawler_of) -> None:
    """A turn skipped because another process sharing the cache is pushing says nothing of Solr:
    neither the failures nor the pause are reset (with every process trying every interval, a
    Solr that hangs would otherwise be asked back to back)."""
    crawler = crawler_of(SEARCHCRAWL_SOLR_RETRY_BACKOFF=600)
    pipeline = solr_pipeline(crawler)
    cache(crawler, "a.html")
    asyncio.run(pipeline.open_spider())  # UNREACHABLE_SOLR: fails
    assert pipeline.failures == 1
    pause = pipeline.retry_after
    with stores_of(crawler).cache.push_lock(True):  # as another process holding it would
        result = pipeline.push_once(wait=False)
    assert result.skipped
    pipeline._account(result)
    assert pipeline.failures == 1 and pipeline.retry_after == pause


def test_a_push_another_process_began_within_the_interval_counts_for_this_ones(crawler_of) -> None:
    """processes = N share one cache, and a push sends what every process cached: a process
    whose interval has passed does not push when another began a push less than an interval
    ago; its interval starts from that push (issue 102: N processes pushed N times as often as
    one, each push reading the table and the spools)."""
    crawler = crawler_of(SEARCHCRAWL_PUSH_INTERVAL=60)  # UNREACHABLE_SOLR: a push fails, which is all the same here
    pipeline = solr_pipeline(crawler)
    cache_of = stores_of(crawler).cache

    async def crawl() -> None:
        pipeline.pushed_time -= 61  # this process's interval has passed
        with cache_of.push_lock(True):  # another process of the crawl begins a push
            pass
        (first,) = cache(crawler, "a.html")
        pipeline.process_item(first)
        assert pipeline.flushing is None
        assert time.monotonic() - pipeline.pushed_time < 5  # its interval counts from the other's push
        lock = cache_of.directory / ".push.lock"
        long_ago = time.time() - 61
        os.utime(lock, (long_ago, long_ago))  # the other's push began an interval ago
        pipeline.pushed_time -= 61
        (second,) = cache(crawler, "b.html")
        pipeline.process_item(second)
        assert pipeline.flushing is not None
        await pipeline.flushing

    asyncio.run(crawl())


def test_with_preserve_cache_pushes_go_by_size_only(crawler_of) -> None:
    crawler = crawler_of(SOURCE + "preserve_cache = true\n", SEARCHCRAWL_PUSH_INTERVAL=60)
    assert solr_pipeline(crawler).interval == 0


def test_the_end_of_the_crawl_pushes_and_removes(crawler_of, solr_url: str, solr: pysolr.Solr) -> None:
    crawler = crawler_of(SOURCE + "max_delete_share = 1.0\n", SOLR_URL=solr_url)
    pipeline = solr_pipeline(crawler)
    cache(crawler, "a.html", "b.html")
    asyncio.run(pipeline.open_spider())
    # the next crawl: a.html is gone, b.html changed
    crawler.signals.send_catch_log(url_outcome, url="http://h.test/a.html", outcome=Outcome(Event.GONE, 404, "gone"))
    cache(crawler, "b.html", version=" v2")
    asyncio.run(the_crawl_ends(crawler, pipeline))
    assert in_solr(solr, crawler) == {"http://h.test/b.html": "Page b.html v2"}
    table, name = ledger_of(crawler).table, name_of(crawler)
    assert (table.get(name, "http://h.test/a.html")["state"], table.get(name, "http://h.test/b.html")["state"]) == (
        "removed",
        "indexed",
    )
    assert crawler.stats.get_value("searchcrawl/removed") == 1
    assert crawler.stats.get_value("searchcrawl/pending") == 0


def test_the_node_that_ends_a_shared_run_waits_for_the_others_to_leave_it(crawler_of, solr_url: str, solr: pysolr.Solr) -> None:
    """Two processes: the other's last URL was done (its lease ended) before its document was
    through its pipelines, where it turned out the duplicate of one cached at the same moment,
    and left the index. The node ending the run had settled and pushed its removals already: the
    document stayed in Solr until the next crawl's end (the sequence test, seed 35, crawl 58)."""
    crawler = crawler_of(SOURCE + "max_delete_share = 1.0\n", SOLR_URL=solr_url, SEARCHCRAWL_SHARED_CRAWL=True)
    cache(crawler, "a.html", "b.html")
    asyncio.run(the_crawl_ends(crawler))  # an earlier crawl indexed both
    runs, name = stores_of(crawler).runs, name_of(crawler)
    run = runs.start(name, allow_shared=True, owner="other-host:1")
    joined, _frontier = start_run(crawler)  # this node joins the other's run
    assert joined.id == run.id and joined.joined

    def the_other_node_finishes() -> None:  # once this node has claimed the run's end, and waits
        wait_for(lambda: (runs.get(run.id) or {}).get("control") == FINISHING, timeout=30, what="the claim of the run's end")
        Ledger(ledger_of(crawler).table, name).record(
            "http://h.test/b.html", Outcome(Event.GONE, 911, "duplicate of http://h.test/a.html")
        )
        runs.leave(run.id, "other-host:1")

    other = threading.Thread(target=the_other_node_finishes)
    other.start()
    asyncio.run(the_crawl_ends(crawler))  # this node ends the run
    other.join()
    assert in_solr(solr, crawler) == {"http://h.test/a.html": "Page a.html"}
    assert ledger_of(crawler).table.get(name, "http://h.test/b.html")["state"] == "removed"


def test_the_mass_deletion_guard_holds_removals_unless_confirmed(crawler_of, solr_url: str, solr: pysolr.Solr) -> None:
    crawler = crawler_of(SOLR_URL=solr_url)  # max_delete_share: 30 % by default
    cache(crawler, "a.html", "b.html")
    asyncio.run(the_crawl_ends(crawler))  # an earlier crawl indexed both
    name = name_of(crawler)
    run, _frontier = start_run(crawler)  # the next crawl's run (what FrontierScheduler starts): its delta report
    for path in ("a.html", "b.html"):  # the whole site answers 404 tonight
        crawler.signals.send_catch_log(url_outcome, url=f"http://h.test/{path}", outcome=Outcome(Event.GONE, 404, "gone"))
    asyncio.run(the_crawl_ends(crawler))
    assert len(in_solr(solr, crawler)) == 2  # held: still searchable
    assert crawler.stats.get_value("searchcrawl/deletions_held") == 2
    assert ledger_of(crawler).table.get(name, "http://h.test/a.html")["delta"] == "held" and states(crawler) == {"removing": 2}

    run_end(crawler).run = replace(run, force_delete=True)  # the run's end as `-a delete=force` makes it
    asyncio.run(the_crawl_ends(crawler))
    assert in_solr(solr, crawler) == {} and states(crawler) == {"removed": 2}


def test_test_mode_sends_nothing_to_solr(crawler_of, solr_url: str, solr: pysolr.Solr, caplog: pytest.LogCaptureFixture) -> None:
    crawler = crawler_of(started=False, SOLR_URL=solr_url, SEARCHCRAWL_CACHE_MAX_BYTES=1)
    pipeline = build_from_crawler(SolrPipeline, crawler)  # built with the crawl: it receives run_started
    run, _frontier = start_run(crawler, {"test_mode": "1"})  # `-a test_mode=1`
    assert run.test_mode and pipeline.run is run
    item = CrawledDocument("x", "http://h.test/a.html", 0, fields={"url": "http://h.test/a.html"})

    async def crawl() -> None:
        await pipeline.open_spider()
        assert pipeline.process_item(item) is item and pipeline.flushing is None
        with caplog.at_level(logging.INFO, logger="searchcrawl.crawl.pipelines.solr_push"):
            await the_crawl_ends(crawler, pipeline)

    asyncio.run(crawl())
    assert "Test mode: nothing was sent to Solr" in caplog.text
    assert in_solr(solr, crawler) == {} and crawler.stats.get_value("searchcrawl/indexed") is None


def test_without_solr_documents_stay_cached_and_pending(crawler_of, caplog: pytest.LogCaptureFixture) -> None:
    crawler = crawler_of(**FAST_RETRIES)  # tests.components.UNREACHABLE_SOLR
    cache(crawler, "a.html")
    pipeline = solr_pipeline(crawler)
    with caplog.at_level(logging.WARNING, logger="searchcrawl.crawl.pipelines.solr_push"):
        asyncio.run(pipeline.open_spider())
        assert pipeline.failures == 1 and crawler.stats.get_value("searchcrawl/solr_failures") == 1
        asyncio.run(the_crawl_ends(crawler, pipeline))
    assert "Solr push failed; 1 documents stay cached and pending" in caplog.text
    assert "Solr unavailable: 1 documents of" in caplog.text
    assert crawler.stats.get_value("searchcrawl/not_indexed") == 1  # what `scrapy crawl` exits with 4 for
    assert states(crawler) == {"pending": 1}
    assert list(stores_of(crawler).cache.documents()) == ["http://h.test/a.html"]  # for the next crawl


def test_the_push_under_way_at_the_close_queues_no_duplicate_to_take_a_refused_documents_place(crawler_of) -> None:
    """The pipelines close once nothing more is fetched: a document leaving the index then (the
    push under way's refusals) must not queue its duplicates, which nothing would fetch (the run
    would end suspended). The flag is off before that push is awaited, not only at the run's end."""
    crawler = crawler_of()
    pipeline = solr_pipeline(crawler)
    ledger = ledger_of(crawler)
    seen: list[bool] = []

    async def crawl() -> None:
        async def push_under_way() -> None:  # it writes through the crawl's table of the moment (a value)
            seen.append(ledger.table.promotes_duplicates)

        pipeline.flushing = asyncio.ensure_future(push_under_way())
        await pipeline.close_spider()

    assert ledger.table.promotes_duplicates
    asyncio.run(crawl())
    assert seen == [False]
