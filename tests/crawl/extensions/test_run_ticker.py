"""RunTicker (crawl/extensions/run_ticker.py), the one periodic mechanism of RunMonitor and
ProgressReport: a failed tick is warned of at most every WARN_SECONDS, in the subclass's own
logger, and the next tick tries again. ``opened`` (its looping call needs a reactor) is not run:
``safe_tick`` is called as the loop would."""

from __future__ import annotations

import logging

import pytest
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.extensions.progress_report import ProgressReport
from searchcrawl.crawl.extensions.run_monitor import RunMonitor
from searchcrawl.crawl.extensions.run_ticker import WARN_SECONDS, OccasionalWarning
from searchcrawl.store.progress import RunProgress
from tests.components import start_run, stores_of


def test_an_occasional_warning_is_said_once_per_period(caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    warn = OccasionalWarning(logging.getLogger("tests.ticker"), seconds=60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="tests.ticker"):
        warn("failed %d", 1)
        now[0] += 59.9
        warn("failed %d", 2)  # within the period: not said
        now[0] += 0.1
        warn("failed %d", 3)
    assert [record.getMessage() for record in caplog.records] == ["failed 1", "failed 3"]


def test_both_extensions_tick_through_the_one_mechanism(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=2)
    report, monitor = build_from_crawler(ProgressReport, crawler), build_from_crawler(RunMonitor, crawler)
    run, frontier = start_run(crawler)
    assert (report.run, report.frontier, report.interval) == (run, frontier, 2)
    assert (monitor.run, monitor.frontier, monitor.interval) == (run, frontier, 2)
    assert report.logger.name.endswith("progress_report") and monitor.logger.name.endswith("run_monitor")


def test_a_progress_report_that_fails_is_warned_once_and_tried_again(
    crawler_of, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ProgressReport warned at every tick: a database locked for an hour was 360 lines at a
    10 s interval. Now once per WARN_SECONDS, and the heartbeat is saved again once it can be."""
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=10)
    report = build_from_crawler(ProgressReport, crawler)
    run, _frontier = start_run(crawler)
    store = RunProgress(stores_of(crawler).documents.database)
    [first] = store.of_runs([run.id])[run.id]
    original = RunProgress.report
    failing = [True] * 5

    def locked(self: RunProgress, *args: object, **kwargs: object) -> None:
        if failing and failing.pop():
            raise RuntimeError("database is locked")
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RunProgress, "report", locked)
    with caplog.at_level(logging.WARNING, logger=report.logger.name):
        for _ in range(5):
            report.safe_tick()  # raises inside each time: warned once
    warned = [r.getMessage() for r in caplog.records if r.name == report.logger.name]
    assert warned == [f"Progress report of the run not saved (run {run.id} of unit), tried again at the next tick: RuntimeError"]
    assert report.tick_failed.seconds == WARN_SECONDS
    report.safe_tick()  # the database is back
    [saved] = store.of_runs([run.id])[run.id]
    assert saved.reported_at > first.reported_at
