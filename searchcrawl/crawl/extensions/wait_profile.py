"""Extension: where this crawler process waited (issue 94), for benchmarks: with
``SEARCHCRAWL_WAIT_PROFILE`` set to a folder, each process writes ``<pid>.json`` there when its
engine stops: its statements' and commits' times by kind (store/statement_times.py), the time
it waited for the document table's writer lock by kind of transaction, the event loop's idle time
(in the selector: nothing to run), and its CPU, pages and wall time. Off by default: the timing
is a cost a crawl does not pay otherwise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from searchcrawl.crawl.stores import stores_of
from searchcrawl.store.statement_times import StatementTimes

logger = logging.getLogger(__name__)


class LoopIdle:
    """The time an asyncio loop spent in its selector: idle, with nothing ready to run."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.seconds = 0.0
        selector = getattr(loop, "_selector", None)
        if selector is None:
            raise NotConfigured("the event loop has no selector to time")
        select = selector.select

        def timed(timeout: float | None = None) -> Any:
            started = time.perf_counter()
            try:
                return select(timeout)
            finally:
                self.seconds += time.perf_counter() - started

        selector.select = timed


class WaitProfile:
    def __init__(self, crawler: Crawler, folder: Path) -> None:
        self.crawler = crawler
        self.folder = folder
        self.times = StatementTimes()
        self.idle: LoopIdle | None = None
        self.started = time.monotonic()
        self.cpu = time.process_time()
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WaitProfile:
        folder = crawler.settings.get("SEARCHCRAWL_WAIT_PROFILE")
        if not folder:
            raise NotConfigured  # off unless asked for: no argument, so Scrapy logs no warning
        return cls(crawler, Path(folder))

    def engine_started(self) -> None:
        database = stores_of(self.crawler).database
        for engine in {id(database.engine): database.engine, id(database.single): database.single}.values():
            self.times.attach(engine)
        if database.writer_lock is not None:
            database.writer_lock.waited = self.times.add
        self.started = time.monotonic()
        self.cpu = time.process_time()
        self.idle = LoopIdle(asyncio.get_event_loop())

    def engine_stopped(self) -> None:
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        report = {
            "pid": os.getpid(),
            "wall_s": round(time.monotonic() - self.started, 3),
            "cpu_s": round(time.process_time() - self.cpu, 3),
            "loop_idle_s": round(self.idle.seconds, 3) if self.idle else None,
            "responses": stats.get("response_received_count", 0),
            "statements": self.times.report(),
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{os.getpid()}.json").write_text(json.dumps(report, indent=1))
        logger.info("Wait profile written to %s", self.folder / f"{os.getpid()}.json")
