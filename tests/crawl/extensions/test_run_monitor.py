"""RunMonitor alone: not configured without a progress interval; each ``tick`` logs the progress
line, saves the run's counters in the runs table and honours a control request read from it.

What is not run here: ``opened`` (the spider_opened receiver). It starts a
``twisted.internet.task.LoopingCall``, which needs a Twisted reactor, while ``get_crawler`` builds
the crawler reactorless when none is installed (as in this test process); calling it would install
Twisted's default reactor for the whole test session. So these tests start the run as the
frontier scheduler does (``start_run``: the monitor receives ``run_started``), and a spider the
engine is crawling is a stand-in that records ``close_spider_async`` (the crawler's ``engine``
only exists in a crawl)."""

from __future__ import annotations

import asyncio
import json
import logging
from types import SimpleNamespace

import pytest
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler
from sqlalchemy import update

from searchcrawl.crawl.extensions import run_monitor
from searchcrawl.crawl.extensions.give_back import GiveBack
from searchcrawl.crawl.extensions.run_monitor import RunMonitor, count_due
from searchcrawl.store.frontier import Entry, Frontier
from searchcrawl.store.models import runs as runs_table
from searchcrawl.store.runs import Runs
from searchcrawl.store.samples import FIELDS, RunSamples
from tests.components import start_run, stores_of

LOGGER = "searchcrawl.crawl.extensions.run_monitor"


class Engine:
    """Stands in for the crawl's ExecutionEngine: records the close requests (its downloader's
    slots are where GiveBack looks for requests waiting to be sent: none)."""

    def __init__(self) -> None:
        self.closed: list[str] = []
        self.downloader = SimpleNamespace(slots={})
        self.running, self.spider = True, None

    async def close_spider_async(self, *, reason: str = "cancelled") -> None:
        self.closed.append(reason)


def with_run(crawler: Crawler) -> tuple[RunMonitor, Frontier, Runs]:
    """A monitor of a crawl whose run has started (as FrontierScheduler starts it: ``run_started``
    gives the monitor the run and its frontier, and it finds the stores)."""
    monitor = build_from_crawler(RunMonitor, crawler)
    _run, frontier = start_run(crawler)
    assert monitor.stores is stores_of(crawler)
    return monitor, frontier, stores_of(crawler).runs


@pytest.mark.parametrize("interval", [0, -1])
def test_no_progress_interval_no_monitor(crawler_of, interval: float) -> None:
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=interval)
    assert crawler.get_extension(RunMonitor) is None  # the extension manager left it out
    with pytest.raises(NotConfigured):
        build_from_crawler(RunMonitor, crawler)


def test_it_is_built_with_the_interval(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=2.5)
    assert crawler.get_extension(RunMonitor).interval == 2.5
    monitor = build_from_crawler(RunMonitor, crawler)
    assert (monitor.interval, monitor.run, monitor.frontier, monitor.loop) == (2.5, None, None, None)
    monitor.closed()  # a crawl that never opened: nothing to stop


def test_a_tick_before_the_run_has_started_does_nothing(crawler_of, caplog: pytest.LogCaptureFixture) -> None:
    crawler = crawler_of()
    monitor = build_from_crawler(RunMonitor, crawler)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        monitor.tick()  # no run, no stores
        monitor.stores = stores_of(crawler)
        monitor.tick()  # the stores, but no run started (the scheduler starts it: run_started)
    assert [record for record in caplog.records if record.name == LOGGER] == []


def test_a_tick_logs_progress_and_saves_the_runs_counters(crawler_of, caplog: pytest.LogCaptureFixture) -> None:
    crawler = crawler_of(SEARCHCRAWL_CACHE_MAX_BYTES=2_000_000)
    crawler.engine = Engine()  # type: ignore[assignment]  # a tick runs in a crawl, whose engine is set
    monitor, frontier, runs = with_run(crawler)
    frontier.add([Entry("http://h.test/a.html", 1), Entry("http://h.test/b.html", 1)])
    crawler.stats.set_value("response_received_count", 7)
    crawler.stats.set_value("searchcrawl/indexed", 3)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        monitor.tick()
    (line,) = [record.getMessage() for record in caplog.records if record.name == LOGGER]
    assert line.startswith("Progress of unit: 7 pages (")
    assert "queue 2 (+0 in flight), 0 done; cache 0.0 of 2.0 MB, 0 documents waiting for Solr, 3 indexed" in line
    counters = json.loads(runs.latest("unit")["counters"])  # what `scrapy status` shows
    assert counters == {"pages": 7, "cached": 0, "indexed": 3, "removed": 0, "excluded": 0, "queued": 2, "leased": 0, "done": 0}
    assert monitor.last_pages == 7
    (sample,) = RunSamples(monitor.stores.database).of(monitor.run.id)  # the run page's chart (issue 60)
    assert {key: sample[key] for key in FIELDS} == {"pages": 7, "done": 0, "queued": 2, "leased": 0, "pending": 0, "indexed": 3}
    crawler.stats.set_value("downloader/response_status_count/404", 2)
    monitor.tick()
    assert json.loads(runs.latest("unit")["counters"])["failures"] == {"4xx": 2}
    assert [row["pages"] for row in RunSamples(monitor.stores.database).of(monitor.run.id)] == [7, 7]


@pytest.mark.parametrize(
    ("counted_at", "rows", "now", "due"),
    [
        (None, 0, 0.0, True),  # never counted
        (100.0, 0, 129.9, False),
        (100.0, 0, 130.0, True),  # an interval (30 s) since
        (100.0, 100_000, 130.0, True),  # up to ROWS_PER_INTERVAL rows: every interval
        (100.0, 1_000_000, 399.9, False),  # a million rows: every tenth interval
        (100.0, 1_000_000, 400.0, True),
    ],
)
def test_a_larger_frontier_is_counted_less_often(counted_at: float | None, rows: int, now: float, due: bool) -> None:
    assert count_due(counted_at, rows, 30.0, now) is due


def test_a_node_saves_the_frontiers_counts_only_as_it_counts_them(crawler_of) -> None:
    """In a shared crawl each node saves the run's counters: one whose count is older leaves the
    newer count another node saved (Runs.update keeps what it is not given)."""
    crawler = crawler_of()
    crawler.engine = Engine()  # type: ignore[assignment]
    monitor, frontier, runs = with_run(crawler)
    run_id = runs.latest("unit")["id"]
    monitor.tick()  # counted: queued 0
    runs.update(run_id, {"queued": 5, "leased": 1, "done": 7})  # another node's newer count
    monitor.tick()  # at once: not counted again
    saved = json.loads(runs.latest("unit")["counters"])
    assert (saved["queued"], saved["leased"], saved["done"]) == (5, 1, 7)


def test_a_tick_counts_the_frontier_only_when_the_count_is_due(
    crawler_of, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The count reads every row of the run's frontier: a line between counts shows the last
    count and its age, the pages and the rest as they are."""
    monkeypatch.setattr(run_monitor, "ROWS_PER_INTERVAL", 1)  # 2 rows: a count every 2 intervals
    clock = [1000.0]  # the monitor's own clock: ages exact however slow the machine
    monkeypatch.setattr(run_monitor, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=30.0)
    crawler.engine = Engine()  # type: ignore[assignment]
    monitor, frontier, runs = with_run(crawler)
    frontier.add([Entry("http://h.test/a.html", 1), Entry("http://h.test/b.html", 1)])
    counted: list[int] = []
    monkeypatch.setattr(frontier, "counts", lambda counts=frontier.counts: counted.append(1) or counts())

    def tick(pages: int, earlier: float = 0.0) -> str:
        clock[0] += earlier
        crawler.stats.set_value("response_received_count", pages)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=LOGGER):
            monitor.tick()
        (line,) = [record.getMessage() for record in caplog.records if record.name == LOGGER]
        return line

    assert "5 pages" in tick(5) and "queue 2 (+0 in flight), 0 done;" in tick(5)
    assert len(counted) == 1  # the second tick came at once: the count of the first stands
    frontier.add([Entry("http://h.test/c.html", 1)])
    line = tick(9, earlier=31)  # one interval: 2 rows want two
    assert len(counted) == 1 and "9 pages" in line and "queue 2 (+0 in flight), 0 done (counted 31 s ago);" in line
    saved = json.loads(runs.latest("unit")["counters"])
    assert (saved["pages"], saved["queued"]) == (9, 2)  # the frontier's as last counted: not given again
    line = tick(9, earlier=30)
    assert len(counted) == 2 and "queue 3 (+0 in flight), 0 done;" in line
    assert json.loads(runs.latest("unit")["counters"])["queued"] == 3


@pytest.mark.parametrize(("action", "reason"), [("stop", "stopped"), ("suspend", "suspended")])
def test_a_control_request_closes_the_spider(crawler_of, caplog: pytest.LogCaptureFixture, action: str, reason: str) -> None:
    crawler = crawler_of()
    monitor, _frontier, runs = with_run(crawler)
    crawler.engine = engine = Engine()  # type: ignore[assignment]

    async def ticks() -> None:
        monitor.tick()
        await asyncio.sleep(0)
        assert engine.closed == []  # nobody asked
        runs.control("unit", action)  # `scrapy control unit <action>`, from another process
        with caplog.at_level(logging.INFO, logger=LOGGER):
            monitor.tick()
        await asyncio.sleep(0)

    asyncio.run(ticks())
    assert engine.closed == [reason]
    assert f"Run {runs.latest('unit')['id']} of unit: {action} requested" in caplog.text


def test_a_shutdown_gives_back_what_waits_to_be_sent(crawler_of) -> None:
    """Ctrl-C or SIGTERM: Scrapy's graceful shutdown stops the engine (``running`` false) and then
    waits for every request handed to the downloader; the next tick gives back those not yet
    sent. An engine not yet running as the spider opens is no shutdown."""
    crawler = crawler_of()
    engine = crawler.engine = Engine()  # type: ignore[assignment]
    engine.spider, engine.running = object(), False
    monitor, _frontier, _runs = with_run(crawler)
    give_back = crawler.get_extension(GiveBack)
    monitor.tick()
    assert not give_back.closing  # starting, not stopping
    engine.running = True
    monitor.tick()
    assert not give_back.closing
    engine.running = False  # Scrapy's ExecutionEngine.stop_async, on the signal
    monitor.tick()
    assert give_back.closing
    assert engine.closed == []  # Scrapy closes the spider itself


def test_a_resumed_runs_progress_keeps_only_the_frontiers_saved_counts(crawler_of) -> None:
    """Review of issue 58's change: the counters given keep only the frontier's saved counts
    (queued, leased, done); what an earlier session's end saved (its delta report, the entries
    skipped) goes, as before, with the first progress line of the resumed session."""
    crawler = crawler_of()
    crawler.engine = Engine()  # type: ignore[assignment]
    _monitor, _frontier, runs = with_run(crawler)
    run_id = runs.latest("unit")["id"]
    with runs.engine.begin() as connection:  # a suspended session's end, then the resume
        connection.execute(
            update(runs_table)
            .where(runs_table.c.id == run_id)
            .values(counters=json.dumps({"skipped": 3, "delta": {"new": 7}, "queued": 5, "leased": 0, "done": 2}))
        )
    assert runs.update(run_id, {"pages": 2, "cached": 0}) is None
    assert json.loads(runs.latest("unit")["counters"]) == {"queued": 5, "leased": 0, "done": 2, "pages": 2, "cached": 0}


def test_a_sample_that_fails_does_not_stop_the_monitor(
    crawler_of, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sample's save raising ("database is locked") ended the LoopingCall for the rest of the
    run: no counters saved, suspend and stop ignored. The sample is skipped, warned once."""
    crawler = crawler_of()
    monitor, _frontier, runs = with_run(crawler)
    crawler.engine = engine = Engine()  # type: ignore[assignment]
    failures = iter([True, True, False])
    original = RunSamples.add

    def add(self: RunSamples, run_id: int, values: dict[str, int]) -> None:
        if next(failures, False):
            raise RuntimeError("database is locked")
        original(self, run_id, values)

    monkeypatch.setattr(RunSamples, "add", add)

    async def ticks() -> None:
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            monitor.tick()  # raises inside: skipped
            runs.control("unit", "stop")
            monitor.tick()  # raises again: control still honoured
        await asyncio.sleep(0)
        monitor.tick()

    asyncio.run(ticks())
    assert engine.closed[0] == "stopped"
    assert [r.message for r in caplog.records].count(
        f"Run {runs.latest('unit')['id']} of unit: a progress sample was not saved: RuntimeError"
    ) == 1
    assert len(RunSamples(monitor.stores.database).of(monitor.run.id)) == 1  # type: ignore[union-attr]


def test_a_tick_that_fails_waits_for_the_next(
    crawler_of, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop calls safe_tick: the runs table locked a moment ends neither the loop nor the
    control of the run."""
    crawler = crawler_of()
    monitor, _frontier, runs = with_run(crawler)
    crawler.engine = engine = Engine()  # type: ignore[assignment]
    original = Runs.update
    failures = iter([True])

    def update(self: Runs, run_id: int, counters: dict) -> str | None:  # type: ignore[type-arg]
        if next(failures, False):
            raise RuntimeError("database is locked")
        return original(self, run_id, counters)

    monkeypatch.setattr(Runs, "update", update)

    async def ticks() -> None:
        runs.control("unit", "suspend")
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            monitor.safe_tick()  # raises inside: warned
        assert engine.closed == []
        monitor.safe_tick()
        await asyncio.sleep(0)

    asyncio.run(ticks())
    assert engine.closed == ["suspended"]
    assert (
        "Progress of the run not saved (run " in caplog.text
        and "of unit), tried again at the next tick: RuntimeError" in caplog.text
    )
