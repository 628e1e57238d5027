"""`scrapy control <source> suspend|stop`: suspend a running crawl (the next `scrapy crawl
<source>` resumes it) or stop it for good (the next crawl starts a new run)."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from .. import paths
from ..db import DocumentTable
from ..db.runs import CONTROLS, Runs


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<source> suspend|stop"

    def short_desc(self) -> str:
        return "Suspend (resumable) or stop (for good) the running crawl of a source"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2 or args[1] not in CONTROLS:
            raise UsageError("expected a source name and suspend or stop")
        assert self.settings is not None
        table = DocumentTable(paths.db_url(self.settings))
        try:
            run = Runs(table).control(args[0], args[1])
        finally:
            table.close()
        if run is None:
            print(f"{args[0]}: no running or suspended crawl")
            self.exitcode = 1
        elif run["control"]:
            print(f"{args[0]}: run {run['id']} asked to {args[1]}; the crawl will close within "
                  f"SEARCHCRAWL_PROGRESS_INTERVAL seconds")
        else:
            print(f"{args[0]}: run {run['id']} is {run['state']}")
