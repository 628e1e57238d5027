"""RunMonitor: the crawl's progress line, its run counters, and control from outside.

Every ``SEARCHCRAWL_PROGRESS_INTERVAL`` seconds it logs one INFO line (pages/min, queue, cache
fill, documents waiting for Solr), saves the run's counters in the runs table (what `scrapy
status` shows) and a sample of them for the run page's chart (store/samples.py), and looks for
a control request (`scrapy control <source> suspend|stop`), which it honours by closing the spider: a suspended run is resumed by the next `scrapy crawl`, a
stopped one is not. Then, and when it finds Scrapy's graceful shutdown under way (Ctrl-C,
SIGTERM), the requests not yet sent go back to the queue (extensions/give_back.py).

Counting the run's frontier by state reads each of its rows, so the count is taken again only
once ``interval`` has passed for every ``ROWS_PER_INTERVAL`` rows the last count found (issue 58):
a run of 100,000 URLs is counted every interval, one of a million every tenth, and the rows read
for the line per page crawled stay the same whatever the source's size (about 20 at 160 pages a
second, where a count every 30 s read 206 at a million). Pages, cache, Solr and the control
request are read at every tick; a line whose count is older says how old.
"""

from __future__ import annotations

import asyncio
import logging
import time

from scrapy.crawler import Crawler

from searchcrawl.crawl.extensions.give_back import GiveBack
from searchcrawl.crawl.extensions.run_ticker import OccasionalWarning, RunTicker
from searchcrawl.crawl.run import Run, run_counters
from searchcrawl.crawl.stores import Stores, stores_of
from searchcrawl.store.frontier import Frontier
from searchcrawl.store.models import FrontierState
from searchcrawl.store.samples import RunSamples

logger = logging.getLogger(__name__)

CLOSE_REASONS = {"suspend": "suspended", "stop": "stopped"}

ROWS_PER_INTERVAL = 100_000  # rows of the run's frontier a count may read per interval


def count_due(counted_at: float | None, rows: int, interval: float, now: float) -> bool:
    """Whether the frontier is to be counted again: never counted, or ``interval`` has passed
    for every ROWS_PER_INTERVAL of the ``rows`` the last count found (at least one interval)."""
    if counted_at is None:
        return True
    return now - counted_at >= interval * max(1.0, rows / ROWS_PER_INTERVAL)


class RunMonitor(RunTicker):
    """The progress line and the run's control (see the module's docstring), from the stores
    (the runs table, the document table's pending documents, the cache's fill) and the run
    (``run_started``; none: nothing to monitor)."""

    def __init__(self, crawler: Crawler, interval: float, stores: Stores | None = None) -> None:
        super().__init__(crawler, interval)
        self.stores = stores  # built with the other extensions: found when the run starts
        self.last_pages = 0
        self.last_time = time.monotonic()
        self.counts: dict[FrontierState, int] = {}  # the run's frontier by state, as last counted
        self.counted_at: float | None = None
        self.engine_ran = False  # the engine was seen running: its stop since is a shutdown
        self.sample_failed = OccasionalWarning(self.logger)  # a chart's sample not saved

    def run_started(self, run: Run, frontier: Frontier) -> None:
        super().run_started(run, frontier)
        if self.stores is None:
            self.stores = stores_of(self.crawler)

    def tick(self) -> None:
        run, stores = self.run, self.stores
        if run is None or stores is None:
            return
        self._give_back_on_shutdown()
        now = time.monotonic()
        counted = self.frontier is not None and count_due(self.counted_at, sum(self.counts.values()), self.interval, now)
        if counted and self.frontier is not None:
            self.counts = self.frontier.counts()
            self.counted_at = now
        # the frontier's counts are saved only as they are counted (Runs.update keeps the saved
        # ones): another node's newer count is not put back by this one's older
        counters = run_counters(self.crawler.stats, self.counts if counted else None)
        rate = (counters["pages"] - self.last_pages) * 60 / max(now - self.last_time, 1e-6)
        self.last_pages, self.last_time = counters["pages"], now
        threshold = self.crawler.settings.getint("SEARCHCRAWL_CACHE_MAX_BYTES")
        pending = stores.documents.pending_count(run.source)
        age = now - self.counted_at if self.counted_at is not None else 0.0
        logger.info(
            "Progress of %s: %d pages (%.0f pages/min), queue %d (+%d in flight), %d done%s; "
            "cache %.1f of %.1f MB, %d documents waiting for Solr, %d indexed",
            run.source,
            counters["pages"],
            rate,
            self.counts.get(FrontierState.QUEUED, 0),
            self.counts.get(FrontierState.LEASED, 0),
            self.counts.get(FrontierState.DONE, 0),
            f" (counted {age:.0f} s ago)" if age >= 1 else "",
            stores.cache.size_bytes / 1e6,
            threshold / 1e6,
            pending,
            counters["indexed"],
        )
        control = stores.runs.update(run.id, counters)
        if control in CLOSE_REASONS and self.crawler.engine is not None:
            logger.info("Run %d of %s: %s requested", run.id, run.source, control)
            self._give_back()
            asyncio.ensure_future(self.crawler.engine.close_spider_async(reason=CLOSE_REASONS[control]))
        # the run page's progress chart (store/samples.py): the frontier as last counted
        frontier = {state.value: number for state, number in self.counts.items()}
        self._sample(run, {**counters, **frontier, "pending": pending})

    def _sample(self, run: Run, values: dict[str, int]) -> None:
        """A chart's sample is optional: a failure to save it (SQLite's "database is locked", a
        PostgreSQL blip) is warned of (at most every WARN_SECONDS) and skipped; the tick goes on
        (its counters saved, its control honoured)."""
        assert self.stores is not None
        try:
            RunSamples(self.stores.database).add(run.id, values)
        except Exception as error:  # noqa: BLE001 - any failure: the sample is skipped
            self.sample_failed("Run %d of %s: a progress sample was not saved: %s", run.id, run.source, type(error).__name__)

    def _give_back(self) -> None:
        """The crawl closes: what waits to be sent goes back to the queue, not out at the site's delay."""
        give_back = self.crawler.get_extension(GiveBack)
        if give_back is not None and not give_back.closing:
            give_back.give_back()

    def _give_back_on_shutdown(self) -> None:
        """Ctrl-C or SIGTERM: Scrapy's graceful shutdown has stopped the engine (its public
        ``running``), and waits for every request it handed to the downloader; those not yet sent
        go back to the queue, as on a suspend asked through the runs table."""
        engine = self.crawler.engine
        if engine is None or engine.spider is None:
            return
        if engine.running:
            self.engine_ran = True  # (not yet running as the spider opens: that is no shutdown)
        elif self.engine_ran:
            self._give_back()
