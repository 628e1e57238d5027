"""`scrapy control <source> suspend|resume|stop|start`: suspend a running crawl (resumable),
resume a suspended one, stop one for good (the next crawl starts a new run), or start one (as
the scheduler would; a suspended run is resumed by it).

suspend and stop go through the runs table, so they reach the crawl wherever it runs (a
terminal, a scrapyd job); the crawl closes within SEARCHCRAWL_PROGRESS_INTERVAL seconds and its
scrapyd job finishes. resume starts a crawl the way the scheduler does: a scrapyd job when
SEARCHCRAWL_SCRAPYD_URL is set, else a local process; the crawl picks up the suspended run.
The actions are searchcrawl/ops/run_control.py's, which the web application's buttons call too.
"""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import open_database
from searchcrawl.ops.launchers import launcher_for
from searchcrawl.ops.run_control import ACTIONS, control


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<source> suspend|resume|stop|start"

    def short_desc(self) -> str:
        return "Suspend (resumable), resume, stop (for good) or start the crawl of a source"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2 or args[1] not in ACTIONS:
            raise UsageError(f"expected a source name and one of {', '.join(ACTIONS)}")
        assert self.settings is not None
        source, action = args
        with open_database(self.settings, migrate=True) as database:
            outcome = control(
                database, launcher_for(self.settings), source, action, self.settings.getfloat("SEARCHCRAWL_LEASE_SECONDS")
            )
        print(outcome.message)
        if not outcome.ok:
            self.exitcode = 1
