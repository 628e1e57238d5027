"""`scrapy control <source> suspend|resume|stop`: suspend a running crawl (resumable), resume a
suspended one, or stop one for good (the next crawl starts a new run).

suspend and stop go through the runs table, so they reach the crawl wherever it runs (a
terminal, a scrapyd job); the crawl closes within SEARCHCRAWL_PROGRESS_INTERVAL seconds and its
scrapyd job finishes. resume starts a crawl the way the scheduler does: a scrapyd job when
SEARCHCRAWL_SCRAPYD_URL is set, else a local process; the crawl picks up the suspended run.
"""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import open_database
from searchcrawl.ops.launchers import LaunchError, launcher_for
from searchcrawl.store.runs import CONTROLS, RESUMABLE, Runs

ACTIONS = (*CONTROLS, "resume")


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<source> suspend|resume|stop"

    def short_desc(self) -> str:
        return "Suspend (resumable), resume, or stop (for good) the crawl of a source"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2 or args[1] not in ACTIONS:
            raise UsageError(f"expected a source name and one of {', '.join(ACTIONS)}")
        assert self.settings is not None
        source, action = args
        with open_database(self.settings, migrate=True) as database:
            if action == "resume":
                self.resume(Runs(database), source)
                return
            run = Runs(database).control(source, action)
        if run is None:
            print(f"{source}: no running or suspended crawl")
            self.exitcode = 1
        elif run["control"]:
            print(
                f"{source}: run {run['id']} asked to {action}; the crawl will close within SEARCHCRAWL_PROGRESS_INTERVAL seconds"
            )
        else:
            print(f"{source}: run {run['id']} is {run['state']}")

    def resume(self, runs: Runs, source: str) -> None:
        assert self.settings is not None
        run = runs.latest(source)
        if run is None or run["state"] not in RESUMABLE:
            print(f"{source}: no suspended crawl to resume")
            self.exitcode = 1
            return
        if runs.live(source, self.settings.getfloat("SEARCHCRAWL_LEASE_SECONDS")):
            print(f"{source}: run {run['id']} is running already")
            self.exitcode = 1
            return
        try:
            job = launcher_for(self.settings).start(source)
        except LaunchError as exc:
            print(f"searchcrawl: {exc}")
            self.exitcode = 1
            return
        print(f"{source}: resuming run {run['id']} as job {job}")
