"""`scrapy report <source> [--run N] [--json]`: the delta report of a run (the last by default):
new, changed, unchanged, not modified (304), deleted, held, refused, failed, excluded, redirected
and duplicate URLs; each URL that did not simply enter or stay in the index with its status and
reason in that run (a soft error's marker, the rule that excluded it, why it left)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.commands import open_database
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.lifecycle import Delta
from searchcrawl.store.deltas import reason_text, run_report


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
            report = run_report(database, args[0], opts.run)
        if report is None:
            print(f"{args[0]}: no such run")
            self.exitcode = 1
            return
        if opts.json:
            print(json.dumps(report, indent=2))
            return
        started = datetime.fromisoformat(report["started_at"])
        print(f"Run {report['run']} of {args[0]}: {report['state']} ({report['mode']}), started {started:%Y-%m-%d %H:%M:%S}")
        for kind in Delta:
            urls = report["urls"][kind]
            print(f"{kind:>13}: {len(urls)}")
            for url in urls:
                print(f"               {printable(url)}")
                why = report["reasons"].get(url)
                if why:
                    print(f"                 {printable(reason_text(why))}")
        if report["skipped"]:
            print(f"{'skipped':>13}: {report['skipped']} (listed, but no document: a row without a key, a key listed before)")
