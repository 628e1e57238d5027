"""`scrapy scheduler [--once] [--list]`: start scheduled sources when they are due.

Runs until SIGTERM or Ctrl-C, checking every SEARCHCRAWL_SCHEDULER_TICK seconds (a systemd
unit is in deploy/). Starts crawls through scrapyd when SEARCHCRAWL_SCRAPYD_URL is set, else as
local `scrapy crawl` processes. Source files are read again on every tick, so a new or edited
source needs no restart. The decisions are in searchcrawl/ops/dispatcher.py.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from datetime import datetime

from scrapy.commands import ScrapyCommand

from searchcrawl.commands import open_database
from searchcrawl.config.source import SourceError
from searchcrawl.crawl.spiderloader import SourceSpiderLoader
from searchcrawl.ops.dispatcher import Dispatcher
from searchcrawl.ops.launchers import launcher_for
from searchcrawl.rules.schedules import Schedule

logger = logging.getLogger(__name__)


class Command(ScrapyCommand):
    requires_project = True

    def syntax(self) -> str:
        return "[--once] [--list]"

    def short_desc(self) -> str:
        return "Start sources when their refresh_interval or cron schedule says (scrapyd or local)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--once", action="store_true", help="check once, start what is due, and exit")
        parser.add_argument("--list", action="store_true", help="print each scheduled source's next due time and exit")

    def loader(self) -> SourceSpiderLoader:
        assert self.crawler_process is not None
        loader = self.crawler_process.spider_loader
        assert isinstance(loader, SourceSpiderLoader)  # SPIDER_LOADER_CLASS (searchcrawl/settings.py)
        return loader

    def schedules(self) -> dict[str, Schedule]:
        loader = self.loader()
        found = {}
        for name in loader.list():  # broken sources are logged (ERROR) and left out
            try:
                schedule = loader.load(name).source.settings.crawl_schedule
            except SourceError:
                continue
            if schedule is not None:
                found[name] = schedule
        return found

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None and self.crawler_process is not None
        # --list only reads: the database is not migrated (and not made when nothing ran yet)
        with open_database(self.settings, migrate=not opts.list) as database:
            launcher = launcher_for(self.settings)
            dispatcher = Dispatcher(database, launcher, self.settings.getfloat("SEARCHCRAWL_LEASE_SECONDS"))
            if opts.list:
                print("\n".join(dispatcher.describe(self.schedules(), datetime.now().astimezone())) or "no scheduled sources")
                return
            stop = threading.Event()
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: stop.set())
            tick = self.settings.getfloat("SEARCHCRAWL_SCHEDULER_TICK")
            logger.info("Scheduler started (%s, checking every %.0f s)", type(launcher).__name__, tick)
            while True:
                self.loader().reload()  # edited source files apply
                schedules = self.schedules()
                dispatcher.tick(schedules, datetime.now().astimezone())
                if opts.once or stop.wait(tick):
                    break
            logger.info("Scheduler stopped")
