"""`scrapy demo`: the quickstart in one command.

Starts the development Solr, serves the packaged example intranet on 127.0.0.1:8765, crawls the
`example` source into Solr with `scrapy crawl` and prints search results. Solr keeps running
afterwards, so that `scrapy search` can be tried; `scrapy solr stop` stops it.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

from scrapy.commands import ScrapyCommand

from searchcrawl.access.decision import Principals
from searchcrawl.commands.search import format_hits, search
from searchcrawl.dev.solr_runner import DevSolr, DevSolrError
from searchcrawl.index.query import matching
from searchcrawl.ops.launchers import scrapy_command
from searchcrawl.system import paths
from searchcrawl.system.resources import package_dir

SITE_PORT = 8765  # the example source's seeds point here
QUERIES = ("travel expenses", '"oracle on demand"', "solr")


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
        pass


class Command(ScrapyCommand):
    requires_project = True
    default_settings = {"LOG_ENABLED": False}

    def short_desc(self) -> str:
        return "Quickstart: start the dev Solr, crawl the example source, print search results"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--port", type=int, default=8983, help="dev Solr port (default 8983)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        with package_dir("searchcrawl.dev", "demo_site") as site:
            # The site's port first: the example source's seeds name it, so no other will do, and a
            # busy port is better told before Solr starts than after.
            handler = functools.partial(QuietHandler, directory=str(site))
            try:
                server = ThreadingHTTPServer(("127.0.0.1", SITE_PORT), handler)
            except OSError as exc:
                print(
                    f"searchcrawl: cannot serve the example intranet on 127.0.0.1:{SITE_PORT} ({exc.strerror}); "
                    "stop what uses that port and run `scrapy demo` again"
                )
                self.exitcode = 1
                return
            threading.Thread(target=server.serve_forever, daemon=True).start()
            try:
                solr_url = self._start_solr(opts.port)
                if solr_url is None:
                    return
                print(f"Serving the example intranet at http://127.0.0.1:{SITE_PORT}/ and crawling it...", flush=True)
                env = dict(os.environ, SOLR_URL=solr_url, SEARCHCRAWL_DATA_DIR=str(paths.data_dir(self.settings)))
                crawl = subprocess.run(scrapy_command("crawl", "example", "-s", "LOG_LEVEL=WARNING"), env=env)
            finally:
                server.shutdown()
                server.server_close()
        if crawl.returncode != 0:
            self.exitcode = crawl.returncode
            return
        for query in QUERIES:
            results = search(solr_url, query, Principals.anonymous(), rows=3)  # the example site is public
            print(f"\n$ scrapy search {query!r}\n{matching(results.hits)}")
            print("\n".join(format_hits(results)))
        print(f'\nSolr keeps running at {solr_url}: try `scrapy search "<query>"`; stop it with `scrapy solr stop`.')

    def _start_solr(self, port: int) -> str | None:
        assert self.settings is not None
        print("Starting the development Solr (the first start builds it with Maven)...", flush=True)
        try:
            solr_url = DevSolr(paths.data_dir(self.settings), port).start()
        except DevSolrError as exc:
            print(f"searchcrawl: {exc}")
            self.exitcode = 1
            return None
        print(f"Solr is up at {solr_url}", flush=True)
        return solr_url
