"""`scrapy report <source> [--run N] [--json]`: the delta report of a run (the last by default):
new, changed, unchanged, not modified (304), deleted, failed, excluded and duplicate URLs."""

from __future__ import annotations

import argparse
import json

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import open_database
from searchcrawl.crawl.frontier_scheduler import DELTA_KINDS
from searchcrawl.ops.terminal import printable
from searchcrawl.store import Deltas
from searchcrawl.store.runs import Runs


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<source> [--run N] [--json]"

    def short_desc(self) -> str:
        return "Print the delta report of a source's run: what was new, changed, deleted, ..."

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--run", type=int, default=None, help="run id (default: the last run)")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("expected a source name")
        assert self.settings is not None
        with open_database(self.settings) as database:
            runs = {run["id"]: run for run in Runs(database).recent(args[0], limit=1000)}
            run_id = opts.run or (max(runs) if runs else None)
            if run_id is None or run_id not in runs:
                print(f"{args[0]}: no such run")
                self.exitcode = 1
                return
            report = Deltas(database).report(args[0], run_id)
        run = runs[run_id]
        if opts.json:
            print(
                json.dumps(
                    {
                        "source": args[0],
                        "run": run_id,
                        "state": run["state"],
                        "mode": run["mode"],
                        "counts": {kind: len(report.get(kind, [])) for kind in DELTA_KINDS},
                        "urls": {kind: report.get(kind, []) for kind in DELTA_KINDS},
                    },
                    indent=2,
                )
            )
            return
        print(f"Run {run_id} of {args[0]}: {run['state']} ({run['mode']}), started {run['started_at']:%Y-%m-%d %H:%M:%S}")
        for kind in DELTA_KINDS:
            urls = report.get(kind, [])
            print(f"{kind:>13}: {len(urls)}")
            for url in urls:
                print(f"               {printable(url)}")
