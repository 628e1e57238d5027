"""`scrapy crawl <source>`: Scrapy's crawl command, with a clear error for a broken source, a
clean refusal while the source is being crawled, and an exit code that says how the crawl ended
(``ExitCode``; Scrapy's own exits 0 whenever the spider could be opened)."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
from enum import IntEnum

from scrapy import signals
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.crawler import Crawler
from scrapy.spiderloader import get_spider_loader
from scrapy.spiders import Spider

from searchcrawl.commands import is_setup_error, on_failure
from searchcrawl.config.source import SourceError
from searchcrawl.crawl.extensions.passage_sync import MODEL_REFUSED
from searchcrawl.crawl.run import REQUESTED_ENDS, Run
from searchcrawl.crawl.signals import run_started
from searchcrawl.ops.local_fleet import (
    PARENT_SETTING,
    RUN_SETTING,
    LocalProcesses,
    joins_live_runs,
    leave_forked_process,
    processes_of,
    read_run,
    started_by_a_crawl,
)
from searchcrawl.store import Database
from searchcrawl.store.runs import ALREADY_RUNNING, Runs
from searchcrawl.system import paths
from searchcrawl.system.processes import die_with_parent

logger = logging.getLogger(__name__)


class ExitCode(IntEnum):
    FINISHED = 0  # the crawl ended as it should: finished, or suspended or stopped when asked
    FAILED = 1  # it could not start, or ended for another reason (start error, ...): the run is unfinished
    BROKEN_SOURCE = 2  # no such source, or its file is broken: nothing crawled
    ALREADY_RUNNING = 3  # another live process crawls the source: nothing crawled
    NOT_INDEXED = 4  # crawled, but documents are left cached and pending (Solr was down or refused them)


# Close reasons every process of a crawl learns by itself (a control request read from the run):
# the first process does not pass them on, so that the run ends as asked (stopped, not suspended).
LEARNED_BY_EACH = frozenset({"finished", "suspended", "stopped"})


def exit_code(*, started: bool, finish_reason: str | None, not_indexed: int, model_refused: bool = False) -> ExitCode:
    """What a crawl's process exits with: refused or failed first, since then nothing (or not
    everything) was crawled; then whether Solr has every document the crawl cached. A crawl whose
    passes' process refused its model (``model_refused``: crawl/extensions/passage_sync.py) failed,
    even when that came after its last page: its setting is wrong."""
    if finish_reason == ALREADY_RUNNING:  # two crawls started at the same moment; the other won
        return ExitCode.ALREADY_RUNNING
    if not started or finish_reason not in REQUESTED_ENDS or model_refused:
        return ExitCode.FAILED
    if not_indexed:
        return ExitCode.NOT_INDEXED
    return ExitCode.FINISHED


def report_start_failure(source: str, error: BaseException) -> None:
    """The error a crawl's task ended with, logged: one line for a source's setup error (a secret
    not set, ...: ``is_setup_error``), with the traceback for anything else."""
    if is_setup_error(error):
        logger.error("Source %s cannot be crawled: %s; nothing crawled", source, error)
    else:
        logger.error("The crawl of %s failed as it started", source, exc_info=error)


def worst_exit_code(codes: list[int]) -> ExitCode:
    """The exit code of a crawl of several processes (the first one's code first): a failure
    first, then documents not indexed. A process killed by a signal (a negative code) counts for
    nothing: the others took its URLs back and went on."""
    ended = [code for code in codes if code >= 0]
    if any(code not in (ExitCode.FINISHED, ExitCode.NOT_INDEXED) for code in ended):
        return ExitCode.FAILED
    return ExitCode.NOT_INDEXED if ExitCode.NOT_INDEXED in ended else ExitCode.FINISHED


def start_up_done() -> None:
    """The crawler is built and its spider open: what start-up made is collected once (its
    garbage cycles, all in the youngest generation since collection went off), what lives on is
    frozen, and collection is on again."""
    if not gc.isenabled():
        gc.collect(0)
        gc.freeze()
        gc.enable()


class Command(ScrapyCrawlCommand):
    finish_reason: str | None = None
    others: LocalProcesses | None = None  # the crawl's other processes (source key ``processes``)
    run_pipe: int | None = None  # in one of those: where the first process writes the run to join
    gave_run = False  # the first process handed them a run (so their exit codes count)

    def short_desc(self) -> str:
        return "Crawl one source into the index"

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        # Start-up makes some 130,000 objects that live as long as the process (modules, classes,
        # the pydantic and SQLAlchemy models, the crawler's components), and the garbage collector
        # would walk them again and again while they are made, then in every full collection of
        # the crawl and while the interpreter exits. So collection is off from here until the
        # spider has opened (the crawler built, the run started, what an earlier run left pending
        # pushed to Solr), then one collection of the youngest generation (everything made since)
        # frees start-up's garbage cycles, gc.freeze() keeps what lives on out of every later
        # collection, and collection is on again (`start_up_done`; also when the spider never
        # opens). Measured on a one-page crawl: 0.2 s of 1.4 s of CPU for the freeze, 0.07-0.1 s
        # more for collection off during the start (tests/benchmarks/README.md, the startup
        # benchmark).
        gc.disable()
        super().process_options(args, opts)
        if len(args) == 1:
            # Imported here, on a shallow stack, before the downloader imports it from deep inside
            # the engine's construction: Scrapy's TLS context factory module calls inspect.stack()
            # as it is imported (three create_deprecated_class), whose cost is the frames on the
            # stack times the modules loaded (each of importlib's frames makes inspect.getmodule
            # scan sys.modules: CPython issue 92041). From the downloader: 123 frames, 0.2 s of CPU
            # in a one-page crawl of about 1 s; from the crawl's start: 57 frames, 0.1 s
            # (tests/benchmarks/README.md, the startup benchmark). Any crawl of an http(s) source
            # imports it anyway, and before the fork (processes = N) the others need not.
            import scrapy.core.downloader.contextfactory  # noqa: F401, PLC0415

            self.fork_others(args[0])

    def fork_others(self, source: str) -> None:
        """``processes = N``: the other N - 1 processes are forked here, before Scrapy builds its
        crawler process (searchcrawl/ops/local_fleet.py says why here)."""
        assert self.settings is not None
        if started_by_a_crawl(self.settings):
            return
        try:
            spidercls = get_spider_loader(self.settings).load(source)
        except (KeyError, SourceError):  # run() says what is wrong
            return
        merged = self.settings.copy()
        spidercls.update_settings(merged)  # the source's own ``processes``, unless -s says otherwise
        count = processes_of(merged)
        if count <= 1:
            return
        others = LocalProcesses(count - 1)
        parent = os.getpid()
        # Ctrl-C reaches every process of the terminal's group: a forked one ignores it until it
        # has its run (then Scrapy's handler stops it; the first process passes SIGINT on), so that
        # it never ends by KeyboardInterrupt outside run(), where os._exit would not be reached
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            pipe = others.fork()
        finally:
            if os.getpid() == parent:
                signal.signal(signal.SIGINT, previous)
        if pipe is None:
            self.others = others
            return
        if not die_with_parent(parent):
            logger.error("The crawl that started this process has ended; nothing crawled")
            leave_forked_process(ExitCode.FAILED)
        self.settings.set(PARENT_SETTING, parent, priority="cmdline")
        self.run_pipe = pipe

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if self.run_pipe is not None:  # forked by the crawl's first process: it ends here
            try:
                self.crawl_source(args, opts)
            except BaseException:  # noqa: BLE001 - whatever it was, logged; the process must not return
                logger.exception("Crawler process %d failed", os.getpid())
                self.exitcode = ExitCode.FAILED
            finally:
                leave_forked_process(self.exitcode)
        try:
            self.crawl_source(args, opts)
        finally:
            if self.others is not None:
                self.exitcode = self.with_others(self.exitcode)

    def crawl_source(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            super().run(args, opts)  # Scrapy's usage errors
            return
        assert self.crawler_process is not None
        if self.others is not None:
            logger.info("Started %d more crawler processes for this source: %s", self.others.count, self.others.pids)
        loader = self.crawler_process.spider_loader
        try:
            loader.load(args[0])
        except SourceError as exc:
            print(f"searchcrawl: broken source, nothing crawled: {exc}", file=sys.stderr)
            self.exitcode = ExitCode.BROKEN_SOURCE
            return
        except KeyError:
            known = ", ".join(sorted(loader.list())) or "none"
            print(f"searchcrawl: no source named {args[0]!r} (sources: {known})", file=sys.stderr)
            self.exitcode = ExitCode.BROKEN_SOURCE
            return
        crawler = self.crawler_process.create_crawler(args[0])
        settings = crawler.settings
        if self.run_pipe is not None:
            run = read_run(self.run_pipe)  # waits until the first process has opened the run
            signal.signal(signal.SIGINT, signal.default_int_handler)  # Scrapy's replaces it as it starts
            if run is None:
                logger.info("The crawl that started this process opened no run; nothing crawled")
                return
            settings.set(RUN_SETTING, run, priority="cmdline")
        refusal = self.conflict(crawler, args[0])
        if refusal is not None:
            logger.error("%s", refusal)
            self.exitcode = ExitCode.ALREADY_RUNNING
            return
        if self.others is not None:
            crawler.signals.connect(self.run_started, signal=run_started)
            crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(start_up_done, signal=signals.spider_opened)
        on_failure(self.crawler_process.crawl(crawler, **opts.spargs), lambda error: report_start_failure(args[0], error))
        try:
            self.crawler_process.start()
        finally:
            start_up_done()  # also when the spider never opened
        started = not self.crawler_process.bootstrap_failed
        self.exitcode = exit_code(
            started=started,
            finish_reason=self.finish_reason,
            not_indexed=crawler.stats.get_value("searchcrawl/not_indexed", 0) if started else 0,
            model_refused=bool(crawler.stats.get_value(MODEL_REFUSED)),
        )

    def with_others(self, code: int) -> int:
        """This process's exit code and its other processes' (waited for): the worst of them, or
        this one's alone when it handed them no run (refused or failed: they left without
        crawling, and its code says why)."""
        assert self.others is not None
        others = self.others.wait()
        for pid, other in zip(self.others.pids, others, strict=True):
            if other < 0:
                logger.warning("Crawler process %d was killed by signal %d; the others took its URLs back", pid, -other)
        return worst_exit_code([code, *others]) if self.gave_run else code

    @staticmethod
    def conflict(crawler: Crawler, source: str) -> str | None:
        """Runs.conflict with the crawler's settings (the source's own ``shared`` included)."""
        settings = crawler.settings
        database = Database(paths.db_url(settings))  # the crawl migrates it anyway
        try:
            return Runs(database).conflict(
                source,
                allow_shared=joins_live_runs(settings),
                stale_after=settings.getfloat("SEARCHCRAWL_LEASE_SECONDS"),
            )
        finally:
            database.close()

    def run_started(self, run: Run) -> None:
        self.run_id: int | None = run.id

    def opened(self, spider: Spider) -> None:
        """This process has started or resumed the run: the others join it."""
        assert self.others is not None
        run = getattr(self, "run_id", None)  # None: refused (a race) or failed as it opened
        self.others.join(run)
        self.gave_run = run is not None

    def closed(self, reason: str) -> None:
        self.finish_reason = reason
        if self.others is not None and reason not in LEARNED_BY_EACH:
            # told to stop (SIGINT or SIGTERM: Ctrl-C, a scrapyd cancel), or failed: so do the others
            logger.info("Stopping the crawl's other processes (%s)", reason)
            self.others.signal(signal.SIGINT)
