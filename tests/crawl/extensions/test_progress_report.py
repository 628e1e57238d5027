"""ProgressReport alone (crawl/extensions/progress_report.py): the run's start saves a report, a
request in the downloader and a site's Retry-After pause are waits by host name (never a URL,
never its credentials), a response counted moves ``fetched_at``. As in test_run_monitor.py, ``opened`` (its
looping call, which needs a reactor) is not run: ``tick`` is called as the loop would.

And the Solr pipeline's ``solr_pushed`` signal, which the crawl's metrics observe."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.extensions import progress_report
from searchcrawl.crawl.extensions.progress_report import ProgressReport, current_waits, longest_delay
from searchcrawl.crawl.middlewares.site_pause import SitePauseMiddleware
from searchcrawl.crawl.pipelines.solr_push import SolrPipeline
from searchcrawl.crawl.signals import solr_pushed
from searchcrawl.index.push import PushResult
from searchcrawl.store.progress import RunProgress
from tests.components import start_run, stores_of


class Engine:
    """Stands in for the crawl's engine: its downloader's requests and middlewares (the site
    pause middleware), as a running crawl has them."""

    def __init__(self, crawler, active: list[Request]) -> None:
        self.pause = SitePauseMiddleware(crawler, 120)
        self.downloader = SimpleNamespace(
            active=set(active),
            get_slot_key=lambda request: urlparse_cached(request).hostname,
            middleware=SimpleNamespace(middlewares=[self.pause]),
        )


def test_a_run_reports_its_waits_by_host_and_its_answers(crawler_of) -> None:
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=1)
    report = build_from_crawler(ProgressReport, crawler)
    run, _frontier = start_run(crawler)
    store = RunProgress(stores_of(crawler).documents.database)
    [first] = store.of_runs([run.id])[run.id]
    assert first.owner == run.owner and first.pages == 0 and first.waits == ()
    hanging = Request("https://user:s3cret-pass@hangs.example/private/page?session=abc")
    crawler.engine = engine = Engine(crawler, [hanging])
    engine.pause.pauses.pause("busy.example", time.monotonic() + 30)  # a 503 asked for 30 s
    crawler.stats.inc_value("response_received_count")
    report.tick()
    [saved] = store.of_runs([run.id])[run.id]
    assert saved.pages == 1 and saved.fetched_at >= first.fetched_at
    kinds = {(wait.kind, wait.site, wait.count) for wait in saved.waits}
    assert kinds == {("in-flight", "hangs.example", 1), ("retry-after", "busy.example", 0)}
    with stores_of(crawler).documents.database.engine.connect() as connection:
        text = str(connection.exec_driver_sql("SELECT waits FROM run_progress").all())
    assert "s3cret" not in text and "private" not in text and "session" not in text
    # no answer since: fetched_at stays; the request still waits, since the report that first saw it
    report.tick()
    [again] = store.of_runs([run.id])[run.id]
    # (a wait's since is the wall clock less the monotonic clock's age of the request: read again
    # at each report, the two clocks' difference moves by microseconds)
    assert again.fetched_at == saved.fetched_at and abs(again.waits[0].since - saved.waits[0].since) < timedelta(milliseconds=1)
    engine.downloader.active = set()
    report.tick()
    assert [wait.kind for wait in store.of_runs([run.id])[run.id][0].waits] == ["retry-after"] and report.in_flight == {}


def test_waits_are_grouped_by_site_oldest_first_and_bounded() -> None:
    wall = datetime(2026, 11, 26, 12, tzinfo=UTC)
    in_flight = {number: (f"site{number % 7}.example", 100.0 + number) for number in range(70)}
    waits = current_waits(in_flight, {"gone.example": 199.0}, wall, 200.0)  # a pause over
    assert len(waits) == 5 and [wait.site for wait in waits] == [f"site{number}.example" for number in range(5)]
    assert waits[0].count == 10 and waits[0].since == wall - timedelta(seconds=100)


def test_the_solr_pipeline_signals_each_push_it_made(crawler_of) -> None:
    crawler = crawler_of()
    pipeline = SolrPipeline.from_crawler(crawler)
    heard: list[tuple[float, PushResult]] = []
    crawler.signals.connect(lambda seconds, result: heard.append((seconds, result)), signal=solr_pushed, weak=False)
    pipeline._account(PushResult(indexed=3), 0.25)
    pipeline._account(PushResult(skipped=True), 0.5)  # another process pushed: nothing to observe
    assert [(seconds, result.indexed) for seconds, result in heard] == [(0.25, 3)]


def test_a_new_request_does_not_inherit_a_finished_ones_since(crawler_of, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-flight requests were keyed by id(request): CPython gives a new object the id of one
    just freed, so a request sent now was reported waiting since an old one was first seen."""
    clock = iter(range(100, 100_000, 100))  # each report's monotonic time: 100 s apart
    monkeypatch.setattr(progress_report, "time", SimpleNamespace(monotonic=lambda: float(next(clock))))
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=1)
    report = build_from_crawler(ProgressReport, crawler)
    start_run(crawler)
    old = Request("https://slow.example/a")
    crawler.engine = engine = Engine(crawler, [old])
    report.tick()
    old_id = id(old)
    [(_site, first_seen)] = list(report.in_flight.values())
    engine.downloader.active = set()
    del old
    kept = []  # bounded: CPython reuses the freed block at once, almost always the first try
    for _ in range(1000):
        new = Request("https://slow.example/b")
        if id(new) == old_id:
            break
        kept.append(new)
    else:
        pytest.skip("the interpreter did not reuse the freed request's id")
    engine.downloader.active = {new}
    report.tick()
    [(_site, seen)] = list(report.in_flight.values())
    assert seen == first_seen + 100  # first seen by this report, not at the old one's time


def test_the_longest_download_delay_is_reported(crawler_of) -> None:
    """Stall detection waits longer for a source whose politeness delay is long."""
    crawler = crawler_of(SEARCHCRAWL_PROGRESS_INTERVAL=1, DOWNLOAD_TIMEOUT=45)
    report = build_from_crawler(ProgressReport, crawler)
    run, _frontier = start_run(crawler)
    crawler.engine = engine = Engine(crawler, [])
    engine.downloader.slots = {"fast.example": SimpleNamespace(delay=1.0), "slow.example": SimpleNamespace(delay=1200.0)}
    report.tick()
    [saved] = RunProgress(stores_of(crawler).documents.database).of_runs([run.id])[run.id]
    assert [(w.kind, w.site, w.seconds, w.timeout) for w in saved.waits] == [("delay", "slow.example", 1200.0, 45.0)]
    assert longest_delay({"a": SimpleNamespace(delay=0.0)}) is None and longest_delay({}) is None
