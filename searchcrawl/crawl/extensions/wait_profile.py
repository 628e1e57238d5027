"""Extension: where this crawler process waited (issue 94), for benchmarks: with
``SEARCHCRAWL_WAIT_PROFILE`` set to a folder, each process writes ``<pid>.json`` there when its
engine stops: its statements' and commits' times by kind (store/statement_times.py), the time
it waited for the document table's writer lock by kind of transaction, the event loop's idle time
(in the selector: nothing to run), its CPU (user and system apart, with its page faults and context
switches: the kernel's share of a page, which a profiler of Python's stacks does not show), the
garbage collector's time by generation, and its pages and wall time. Off by default: the timing is
a cost a crawl does not pay otherwise.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import resource
import time
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from searchcrawl.crawl.signals import solr_pushed
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


class CollectorTime:
    """The CPU time Python's garbage collector spent, by generation (``gc.callbacks``; a
    collection runs on the thread whose allocation started it: that thread's CPU clock)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.collections = [0, 0, 0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.thread_time()
            return
        generation = info.get("generation", 2)
        self.seconds[generation] += time.thread_time() - self._started
        self.collections[generation] += 1

    def start(self) -> None:
        gc.callbacks.append(self)

    def stop(self) -> None:
        if self in gc.callbacks:
            gc.callbacks.remove(self)


USAGE = ("ru_utime", "ru_stime", "ru_minflt", "ru_majflt", "ru_nvcsw", "ru_nivcsw")


def usage() -> dict[str, float]:
    """This process's user and system CPU seconds, page faults and context switches so far."""
    found = resource.getrusage(resource.RUSAGE_SELF)
    return {name: getattr(found, name) for name in USAGE}


class WaitProfile:
    def __init__(self, crawler: Crawler, folder: Path) -> None:
        self.crawler = crawler
        self.folder = folder
        self.times = StatementTimes()
        self.idle: LoopIdle | None = None
        self.started = time.monotonic()
        self.cpu = time.process_time()
        self.usage = usage()
        self.collector = CollectorTime()
        self.pushes = 0  # Solr pushes this process made (its turns: another's push is not counted)
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.pushed, signal=solr_pushed)
        crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WaitProfile:
        folder = crawler.settings.get("SEARCHCRAWL_WAIT_PROFILE")
        if not folder:
            raise NotConfigured  # off unless asked for: no argument, so Scrapy logs no warning
        return cls(crawler, Path(folder))

    def pushed(self) -> None:
        self.pushes += 1

    def engine_started(self) -> None:
        database = stores_of(self.crawler).database
        for engine in {id(database.engine): database.engine, id(database.single): database.single}.values():
            self.times.attach(engine)
        if database.writer_lock is not None:
            database.writer_lock.waited = self.times.add
        self.started = time.monotonic()
        self.cpu = time.process_time()
        self.usage = usage()
        self.collector.start()
        self.idle = LoopIdle(asyncio.get_event_loop())

    def engine_stopped(self) -> None:
        self.collector.stop()
        now = usage()
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        report = {
            "pid": os.getpid(),
            "wall_s": round(time.monotonic() - self.started, 3),
            "cpu_s": round(time.process_time() - self.cpu, 3),
            "loop_idle_s": round(self.idle.seconds, 3) if self.idle else None,
            "usage": {name.removeprefix("ru_"): round(now[name] - self.usage[name], 3) for name in USAGE},
            "gc_s": [round(seconds, 3) for seconds in self.collector.seconds],
            "gc_collections": self.collector.collections,
            "responses": stats.get("response_received_count", 0),
            "pushes": self.pushes,
            "statements": self.times.report(),
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / f"{os.getpid()}.json").write_text(json.dumps(report, indent=1))
        logger.info("Wait profile written to %s", self.folder / f"{os.getpid()}.json")
