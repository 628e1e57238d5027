"""`searchcrawl demo` (`scrapy demo` in a project): the quickstart in one command.

Starts the development Solr, serves the packaged example intranet on 127.0.0.1:8765
(dev/example_site.py), crawls the `example` source into Solr (its passages embedded by the crawl
with the default model, bge-small: semantic search is on by default) and prints search results,
hybrid (words and meaning fused, as `scrapy search` and the search page search; words alone, said,
where the model is not installed), a question in other words than its page's among them. Solr
keeps running afterwards, so that searches can be tried; `solr stop` stops it. The hints it
prints name the command that works where it runs (commands.hint_program): `scrapy` in a Scrapy
project, `searchcrawl` anywhere else.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess

from scrapy.commands import ScrapyCommand

from searchcrawl.commands import hint_program
from searchcrawl.commands.search import format_hits, search, searcher_index, semantic_of
from searchcrawl.dev import example_site
from searchcrawl.dev.solr_runner import DevSolr, DevSolrError
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.ops.launchers import scrapy_command
from searchcrawl.search.hybrid import SemanticSearch
from searchcrawl.search.query import matching
from searchcrawl.system import paths

# a keyword query, a phrase, a name, and a question that shares no word with its page (the security
# guidelines: "Use a password manager, lock your laptop ..."), found by meaning
QUERIES = ("travel expenses", '"oracle on demand"', "solr", "protect my computer from hackers")


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
        program = hint_program()  # what the hints name: the command that works here
        with contextlib.ExitStack() as served:
            # The site's port first: the example source's seeds name it, so no other will do, and a
            # busy port is better told before Solr starts than after.
            try:
                site_url = served.enter_context(example_site.serving())
            except OSError as exc:
                print(
                    f"searchcrawl: cannot serve the example intranet on {example_site.HOST}:{example_site.PORT} "
                    f"({exc.strerror}); stop what uses that port and run `{program} demo` again"
                )
                self.exitcode = 1
                return
            solr_url = self._start_solr(opts.port)
            if solr_url is None:
                return
            print(f"Serving the example intranet at {site_url} and crawling it...", flush=True)
            env = dict(os.environ, SOLR_URL=solr_url, SEARCHCRAWL_DATA_DIR=str(paths.data_dir(self.settings)))
            crawl = subprocess.run(scrapy_command("crawl", "example", "-s", "LOG_LEVEL=WARNING"), env=env)
        if crawl.returncode != 0:
            self.exitcode = crawl.returncode
            return
        solr = SolrIndex(solr_url, timeout=30)
        index = searcher_index(self.settings, None, solr)  # the example site is public
        semantic = semantic_of(self.settings, solr)  # None, said on stderr, when it cannot be had
        print(f"\n{searching_how(semantic)}")
        for query in QUERIES:
            page = search(index, query, rows=3, semantic=semantic)  # `scrapy search`'s: the search page's run_search
            print(f"\n$ {program} search {query!r}\n{matching(page.total)}")
            print("\n".join(format_hits(page)))
        print(
            f'\nSolr keeps running at {solr_url}: try `{program} search "<query>"` and `{program} crawl example` '
            f"(it serves the example intranet itself); stop Solr with `{program} solr stop`."
        )

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


def searching_how(semantic: SemanticSearch | None) -> str:
    """The demo's line on how it searches: hybrid with the model that serves, or words alone and
    the command that turns meaning on."""
    if semantic is None:
        return f"Searching by words alone: semantic search is off (`{hint_program()} doctor` says why and what installs it)."
    model = semantic.active()
    return f"Searching hybrid: words and meaning ({model.model_id}, similarity floor {model.floor}), fused."
