"""`scrapy crawl <source>`: Scrapy's crawl command, with a clear error for a broken source."""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from ..source import SourceError


class Command(ScrapyCrawlCommand):
    def short_desc(self) -> str:
        return "Crawl one source into the index"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) == 1:
            assert self.crawler_process is not None
            loader = self.crawler_process.spider_loader
            try:
                loader.load(args[0])
            except SourceError as exc:
                print(f"searchcrawl: broken source, nothing crawled: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
            except KeyError:
                known = ", ".join(sorted(loader.list())) or "none"
                print(f"searchcrawl: no source named {args[0]!r} (sources: {known})", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)
