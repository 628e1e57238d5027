"""`scrapy list`: Scrapy's own, the usable sources, with a sources folder that cannot be read said
in one line (``SEARCHCRAWL_SOURCES_DIR: ... is not a directory``) and exit status 1, not a
traceback."""

from __future__ import annotations

import argparse
import sys

from scrapy.commands.list import Command as ScrapyList

from searchcrawl.config.source import SourceError


class Command(ScrapyList):
    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        try:
            super().run(args, opts)
        except SourceError as exc:
            print(f"searchcrawl: {exc}", file=sys.stderr)
            self.exitcode = 1
