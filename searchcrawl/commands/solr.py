"""`scrapy solr start|stop|status [--port N]`: the development Solr (see solr/ and devsolr.py)."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from .. import paths
from ..devsolr import DevSolr, DevSolrError

ACTIONS = ("start", "stop", "status")


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "start|stop|status [--port N]"

    def short_desc(self) -> str:
        return "Start, stop or inspect the development Solr (data in the data directory)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--port", type=int, default=8983, help="port on 127.0.0.1 (default 8983)")
        parser.add_argument("--timeout", type=float, default=300, help="seconds to wait for Solr to answer")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1 or args[0] not in ACTIONS:
            raise UsageError(f"expected one of {', '.join(ACTIONS)}")
        assert self.settings is not None
        solr = DevSolr(paths.data_dir(self.settings), opts.port)
        try:
            if args[0] == "start":
                url = solr.start(timeout=opts.timeout)
                print(f"Solr is up at {url} (started in {solr.start_seconds:.1f}s; log: {solr.log_path})")
            elif args[0] == "stop":
                print("Solr stopped" if solr.stop() else "Solr was not running")
            else:
                state = solr.status()
                if not state["running"]:
                    print(f"Solr is not running on port {opts.port}")
                    self.exitcode = 3
                else:
                    print(f"Solr is running: {state['url']} (pid {state['pid']}, {state['num_docs']} documents, log: {state['log']})")
        except DevSolrError as exc:
            print(f"searchcrawl: {exc}")
            self.exitcode = 1
