"""The run's end (searchcrawl/crawl/extensions/run_end.py): its decisions as plain functions,
tested directly (fake clocks, stub tables: no waiting); the component built by ``get_crawler``'s
extension manager, its steps' order, and its hook, ``spider_closed``. Solr is never reached
(UNREACHABLE_SOLR, one attempt): tests/crawl/pipelines/test_solr_push.py pushes to a real one."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from typing import Any

import pytest
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler
from scrapy.utils.test import get_crawler

from searchcrawl import settings as project_settings
from searchcrawl.crawl.extensions.run_end import (
    RunEnd,
    claims_end,
    closing_state,
    delta_summary,
    guard_removals,
    run_complete,
    run_end,
    settle_run,
    wait_for_other_nodes,
)
from searchcrawl.crawl.frontier_scheduler import FrontierScheduler
from searchcrawl.crawl.run import Run, run_counters
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.index.push import PushResult
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.database import now
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import FrontierState, RunState
from searchcrawl.store.runs import Runs
from tests.components import engine_of, ledger_of, start_run, stores_of

SOURCE = 'seeds = ["http://h.test/"]\n'
CRAWLER_SETTINGS = {"SEARCHCRAWL_SOLR_RETRY_TIMES": 1}  # the last push to UNREACHABLE_SOLR fails at once
EMPTY = {FrontierState.QUEUED: 0, FrontierState.LEASED: 0, FrontierState.DONE: 3}


# --- the decisions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "queued", "state"),
    [
        ("finished", 0, RunState.FINISHED),
        ("finished", 2, RunState.SUSPENDED),  # closed while work remained (a limit): resumable
        ("shutdown", 0, RunState.SUSPENDED),  # Ctrl-C, SIGTERM
        ("suspended", 0, RunState.SUSPENDED),
        ("stopped", 2, RunState.STOPPED),
        ("failed", 0, RunState.FAILED),
    ],
)
def test_the_runs_state_follows_the_close_reason(reason: str, queued: int, state: RunState) -> None:
    assert closing_state(reason, queued) == state


def test_a_run_is_complete_when_nothing_is_queued_or_leased() -> None:
    assert run_complete(EMPTY) and run_complete({})
    assert not run_complete({**EMPTY, FrontierState.QUEUED: 1})
    assert not run_complete({**EMPTY, FrontierState.LEASED: 1})  # a shutdown, or another node working


def test_one_process_alone_ends_its_run_and_in_a_shared_crawl_one_finishing_node_does() -> None:
    asked: list[bool] = []

    def claim(wins: bool) -> Any:
        return lambda: asked.append(wins) or wins

    assert claims_end(False, RunState.SUSPENDED, {FrontierState.QUEUED: 5}, claim(False)) and asked == []
    assert claims_end(True, RunState.FINISHED, EMPTY, claim(True)) and asked == [True]
    assert not claims_end(True, RunState.FINISHED, EMPTY, claim(False))  # another node won the claim
    asked.clear()
    assert not claims_end(True, RunState.FINISHED, {**EMPTY, FrontierState.LEASED: 1}, claim(True))  # others work
    assert not claims_end(True, RunState.SUSPENDED, EMPTY, claim(True))  # a shutdown never claims
    assert asked == []  # the claim (a write) is only made when the rest says yes


class Clock:
    """A clock that moves only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_the_ending_node_waits_until_the_others_have_left_and_no_longer_than_its_bound() -> None:
    clock = Clock()
    assert wait_for_other_nodes(lambda: [], 60, 0.02, clock, clock.sleep) == [] and clock.now == 0  # alone: no wait

    leaving = [["b:1", "c:2"]] * 3 + [["c:2"]] * 2 + [[]]
    assert wait_for_other_nodes(lambda: leaving.pop(0), 60, 0.02, clock, clock.sleep) == []
    assert clock.now == pytest.approx(5 * 0.02) and leaving == []  # asked until none was left

    clock = Clock()  # a node killed at its very end stays listed until its lease expires
    assert wait_for_other_nodes(lambda: ["b:1"], 60, 0.02, clock, clock.sleep) == ["b:1"]
    assert 60 <= clock.now < 60.05


class StubTable:
    """What settle_run asks of the ledger (its writes) and of the ledger's table (its reads)."""

    def __init__(self, orphans: list[str]) -> None:
        self.orphan_urls = orphans
        self.recorded: list[tuple[str, int]] = []

    @property
    def table(self) -> StubTable:
        return self

    def drop_stale_targets(self, excluding: Any) -> int:
        return 0

    def orphans(self, source: str) -> list[str]:
        return self.orphan_urls

    def record(self, url: str, outcome: Outcome) -> None:
        self.recorded.append((url, outcome.status))


def test_orphans_leave_unless_the_site_hid_pages_from_the_crawl(crawler_of, caplog: pytest.LogCaptureFixture) -> None:
    source = crawler_of('seeds = ["http://h.test/"]\norphans = "delete"\n').spidercls.source
    table = StubTable(["http://h.test/", "http://h.test/old.html"])
    settle_run(source, table, lambda url, depth: None, refused=0, unreached=0)  # type: ignore[arg-type]
    assert table.recorded == [("http://h.test/old.html", int(Status.ORPHAN))]  # a seed is never an orphan

    table = StubTable(["http://h.test/old.html"])
    with caplog.at_level(logging.WARNING):
        settle_run(source, table, lambda url, depth: None, refused=2, unreached=0)  # type: ignore[arg-type]
    assert table.recorded == [] and "Orphans of unit are kept" in caplog.text

    kept = crawler_of().spidercls.source  # orphans = "keep", the default
    table = StubTable(["http://h.test/old.html"])
    settle_run(kept, table, lambda url, depth: None, refused=0, unreached=0)  # type: ignore[arg-type]
    assert table.recorded == []


def test_the_mass_deletion_guard_holds_removals_beyond_the_share(crawler_of) -> None:
    crawler = crawler_of()  # max_delete_share: 30 % by default
    start_run(crawler)  # the run whose delta report says "held"
    source, ledger = crawler.spidercls.source, ledger_of(crawler)
    Ledger(ledger.table, "unit").record_found([[(f"http://h.test/{n}.html", None, f"sum-{n}") for n in range(10)]])
    gone(crawler, "http://h.test/0.html")
    assert guard_removals(source, ledger, force_delete=False) == 0  # 1 of 10: they go
    for n in range(1, 5):
        gone(crawler, f"http://h.test/{n}.html")
    assert guard_removals(source, ledger, force_delete=True) == 0  # `-a delete=force`
    assert guard_removals(source, ledger, force_delete=False) == 5  # 5 of 10: held
    assert ledger.table.get("unit", "http://h.test/1.html")["delta"] == "held"  # type: ignore[index]


def test_the_delta_summary_names_every_kind_and_the_skipped_entries() -> None:
    summary = delta_summary({"new": 2, "deleted": 1}, skipped=0)
    assert summary.startswith("new 2, changed 0, ") and ", deleted 1, " in summary and "skipped" not in summary
    assert delta_summary({}, skipped=3).endswith(", skipped 3 (no documents: see the listing's warning)")


def gone(crawler: Crawler, url: str) -> None:
    crawler.signals.send_catch_log(url_outcome, url=url, outcome=Outcome(Event.GONE, 404, "gone"))


# --- the component ---------------------------------------------------------------------------------


class OtherSpider(Spider):
    name = "other"


def test_it_is_built_with_the_crawls_extensions_and_only_for_source_spiders(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.5, SEARCHCRAWL_LEASE_SECONDS=90)
    end = run_end(crawler)
    assert isinstance(end, RunEnd) and (end.retry_times, end.backoff, end.lease_seconds) == (1, 0.5, 90)
    with pytest.raises(NotConfigured):
        build_from_crawler(RunEnd, get_crawler(OtherSpider))


def test_the_frontier_scheduler_refuses_a_crawl_whose_runs_nothing_would_end(crawler_of) -> None:
    crawler = crawler_of(EXTENSIONS={**project_settings.EXTENSIONS, "searchcrawl.crawl.extensions.run_end.RunEnd": None})
    with pytest.raises(RuntimeError, match="RunEnd is not enabled"):
        build_from_crawler(FrontierScheduler, crawler)


def attached(crawler: Crawler, owner: str | None = None) -> tuple[Runs, Run, Frontier]:
    """A run of the crawler's source, started as FrontierScheduler.open starts it (``start_run``):
    the runs table, the run and its frontier. ``owner``: another node started it, this one joins."""
    runs = stores_of(crawler).runs
    if owner is not None:
        runs.start("unit", allow_shared=True, owner=owner)
    run, frontier = start_run(crawler)
    return runs, run, frontier


def steps_of(end: RunEnd) -> list[str]:
    """Replaces the end's steps with recorders; returns what they record, in order."""
    called: list[str] = []
    for name in ("wait_for_other_nodes", "settle", "report", "leave_or_suspend"):
        setattr(end, name, lambda *args, name=name: called.append(name))
    end.guard = lambda run: called.append("guard") or True  # type: ignore[method-assign]
    end.push_at_end = lambda run, remove: called.append(f"push(remove={remove})")  # type: ignore[method-assign]
    return called


def test_the_ending_process_goes_through_the_steps_in_their_order(crawler_of) -> None:
    crawler = crawler_of()
    _runs, run, frontier = attached(crawler)
    called = steps_of(run_end(crawler))
    run_end(crawler).end(run, frontier, "finished")
    assert called == ["wait_for_other_nodes", "settle", "guard", "push(remove=True)", "report"]


def test_a_node_that_does_not_end_the_run_pushes_its_own_documents_and_leaves(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_SHARED_CRAWL=True)
    runs, run, frontier = attached(crawler, owner="other-host:1")
    other = Frontier(stores_of(crawler).database, "unit", run.id, "other-host:1")
    other.add([Entry("http://h.test/", 0)])
    assert other.lease(1)  # the other node still works
    called = steps_of(run_end(crawler))
    run_end(crawler).end(run, frontier, "finished")
    assert called == ["push(remove=False)", "leave_or_suspend"]
    assert runs.claim_finish(run.id)  # nobody claimed it: the other node will


async def opened_and_closed(crawler: Crawler, reason: str) -> None:
    """spider_opened then spider_closed, as the engine sends them (the other receivers need both)."""
    spider = crawler.spidercls.from_crawler(crawler)
    await crawler.signals.send_catch_log_async(signals.spider_opened, spider=spider)
    await crawler.signals.send_catch_log_async(signals.spider_closed, spider=spider, reason=reason)


def test_spider_closed_ends_the_run_and_records_its_report(crawler_of) -> None:
    crawler = crawler_of()
    runs, run, frontier = attached(crawler)
    run_id = run.id
    frontier.add([Entry("http://h.test/", 0)])
    frontier.lease(1)
    crawler.signals.send_catch_log(
        url_outcome, url="http://h.test/", outcome=Outcome(Event.CACHED, 200, "fetched", columns={"checksum": "x"})
    )
    asyncio.run(opened_and_closed(crawler, "finished"))
    run = runs.get(run_id)
    assert run is not None and (run["state"], run["reason"]) == ("finished", "finished")
    assert json.loads(run["counters"])["delta"] == {"new": 1}
    assert json.loads(run["counters"])["documents"] == 0  # in the index after the run (its one waits for Solr)
    assert runs.nodes(run_id, 600) == []  # it left the run
    assert crawler.stats.get_value("searchcrawl/pending") == 1  # its last push ran (nothing cached: nothing sent)
    assert ledger_of(crawler).table.promotes_duplicates is False  # it fetches nothing more


def test_a_process_that_took_no_run_ends_nothing(crawler_of) -> None:
    crawler = crawler_of()
    # FrontierScheduler found the run ended: this process crawled nothing, and no run_started was sent
    end = run_end(crawler)
    asyncio.run(end.closed("finished"))
    assert end.run is None and end.frontier is None
    assert crawler.stats.get_value("searchcrawl/pending") is None and ledger_of(crawler).table.promotes_duplicates


def test_the_ending_node_gives_up_waiting_for_a_node_that_never_leaves(crawler_of, caplog) -> None:
    crawler = crawler_of(SEARCHCRAWL_SHARED_CRAWL=True)
    runs, run, frontier = attached(crawler, owner="other-host:1")  # on another host: alive for its heartbeat
    end = run_end(crawler)
    end.others_leave_wait = 0  # the bound itself is tested with a fake clock above
    with caplog.at_level(logging.WARNING):
        end.end(run, frontier, "finished")
    assert f"Run {run.id} of unit ends without other-host:1, which did not leave it in 0 s" in caplog.text
    assert runs.get(run.id)["state"] == "finished"  # type: ignore[index]


def test_the_last_node_of_a_suspended_shared_run_records_it(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_SHARED_CRAWL=True)
    runs, run, frontier = attached(crawler, owner="other-host:1")
    run_end(crawler).end(run, frontier, "shutdown")  # the other node still works: this one leaves
    assert runs.get(run.id)["state"] == "running" and runs.nodes(run.id, 600) == ["other-host:1"]  # type: ignore[index]
    runs.leave(run.id, "other-host:1")
    runs.start("unit", allow_shared=True, owner=run.owner)  # this node joins again, and is shut down last
    run_end(crawler).end(run, frontier, "shutdown")
    assert runs.get(run.id)["state"] == "suspended"  # type: ignore[index]


def test_a_node_stays_alive_in_its_run_until_its_end_is_over(crawler_of) -> None:
    """Its scheduler's lease renewal (and heartbeat) stopped when it closed; its last push may
    take long (Solr retries): the node ending the run must go on seeing it until it leaves."""
    from sqlalchemy import update

    from searchcrawl.store.models import crawl_nodes

    crawler = crawler_of(SEARCHCRAWL_SHARED_CRAWL=True, SEARCHCRAWL_LEASE_SECONDS=30)
    runs, run, _frontier = attached(crawler)
    with stores_of(crawler).database.engine.begin() as connection:  # its last heartbeat, a lease ago
        connection.execute(update(crawl_nodes).values(heartbeat=now() - timedelta(seconds=60)))
    assert runs.nodes(run.id, 30) == []
    end = run_end(crawler)
    seen: list[list[str]] = []
    end.end = lambda run, frontier, reason: seen.append(runs.nodes(run.id, 30))  # type: ignore[method-assign]
    asyncio.run(end.closed("finished"))
    assert seen == [[run.owner]]


# --- regressions (the second read of issue 54's run end) -------------------------------------------


def test_a_step_that_fails_leaves_the_run_ended_all_the_same(crawler_of, caplog) -> None:
    """The Solr pipeline's close and the scheduler's close did the end apart: a last push that
    raised left the run ended by the scheduler. One RunEnd must not leave it running."""
    crawler = crawler_of()
    runs, run, frontier = attached(crawler)
    end = run_end(crawler)

    def broken(run: Run, remove: bool) -> None:
        raise OSError("the cache's disk is gone")

    end.push_at_end = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.ERROR):
        end.end(run, frontier, "finished")
    assert runs.get(run.id)["state"] == "finished"  # type: ignore[index]
    assert runs.nodes(run.id, 600) == []
    assert f"The end of run {run.id} of unit failed" in caplog.text and "the cache's disk is gone" in caplog.text


def test_the_run_counts_the_anchor_fields_set_in_place_apart_from_the_documents_indexed(crawler_of) -> None:
    """Solr counts an anchor field set in place as an add, as it does a document pushed: the run's
    counters keep them apart (tests/benchmarks/crawl.py tells Solr's updates apart with them)."""
    crawler = crawler_of()
    assert "anchors" not in run_counters(crawler.stats, None)  # none set: not said
    end = run_end(crawler)
    end.account(PushResult(indexed=2))
    end.account(PushResult(indexed=1, anchors=3))
    counters = run_counters(crawler.stats, None)
    assert (counters["indexed"], counters["anchors"]) == (3, 3)


def test_a_node_whose_last_push_fails_still_leaves_the_shared_run(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_SHARED_CRAWL=True)
    runs, run, frontier = attached(crawler, owner="other-host:1")
    end = run_end(crawler)

    def broken(run: Run, remove: bool) -> None:
        raise OSError("the cache's disk is gone")

    end.push_at_end = broken  # type: ignore[method-assign]
    end.end(run, frontier, "shutdown")  # the other node goes on
    assert runs.nodes(run.id, 600) == ["other-host:1"]  # this one left: the ending node does not wait for it


def test_the_crawl_migrates_solr_ids_once_for_its_pushes_and_its_last(crawler_of, monkeypatch) -> None:
    """The Solr pipeline's pushes and the run's last push are one pusher's: the migration of the
    ids before the first push is asked of Solr once a crawl, not again at its end."""
    from searchcrawl.crawl.pipelines.solr_push import SolrPipeline
    from searchcrawl.index import push

    asked: list[str] = []
    monkeypatch.setattr(push, "migrate_ids", lambda index, source, **kwargs: asked.append(source) or 0)
    crawler = crawler_of()
    _runs, run, frontier = attached(crawler)

    async def crawl() -> None:
        async with engine_of(crawler):  # the engine's item pipelines: the Solr pipeline the run's end finds
            pipeline = crawler.get_item_pipeline(SolrPipeline)
            assert pipeline is not None
            assert pipeline.push_once().error is None  # a push during the crawl (nothing cached: nothing sent)
            run_end(crawler).end(run, frontier, "finished")

    asyncio.run(crawl())
    assert asked == ["unit"]
    assert crawler.stats.get_value("searchcrawl/pending") == 0


def test_the_run_end_pushes_with_a_pusher_of_its_own_on_a_crawler_without_an_engine(crawler_of, caplog) -> None:
    """Regression: RunEnd found the Solr pipeline's pusher with ``get_item_pipeline``, which raises
    before the crawler has an engine (RunEnd built alone, as here): the end logged a failure and
    skipped its last push. It makes a pusher of its own then, as when the pipeline is not enabled."""
    crawler = crawler_of()
    runs, run, frontier = attached(crawler)
    with caplog.at_level(logging.ERROR):
        run_end(crawler).end(run, frontier, "finished")
    assert "failed" not in caplog.text
    assert crawler.stats.get_value("searchcrawl/pending") == 0  # the last push ran (nothing cached: nothing sent)
    assert runs.get(run.id)["state"] == "finished"  # type: ignore[index]
