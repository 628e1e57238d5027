"""`scrapy explain-access USER URL`: why USER may (or may not) read URL in a search.

Prints USER's principals with where each came from (the directory, through its service account:
SEARCHCRAWL_LDAP_*), then for every source whose document of URL is in the index, its access
tokens with where each came from (the document table's record of the crawl's findings, else the
index's fields), and the decision with the token that decided it (access/explanation.py: the
administration page shows the same). An operator's command: it reads the index untrimmed.
"""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory_setting import directory_of
from searchcrawl.access.explanation import URL_WANTED, access_lines, explainable_url
from searchcrawl.commands import open_database
from searchcrawl.commands.search import principals_of
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.ops.terminal import printable
from searchcrawl.store import DocumentTable, SchemaOutdated
from searchcrawl.system import paths


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "USER URL  (USER '-': a visitor who is not signed in)"

    def short_desc(self) -> str:
        return "Why a directory user may or may not read a URL: principals, access tokens, decision"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 2:
            raise UsageError("a user and a URL are needed")
        assert self.settings is not None
        user, url = args
        if not explainable_url(url):  # the URLs the administration page takes
            raise UsageError(f"expected {URL_WANTED}, got {url[:200]!r}")
        directory = None
        if user == "-":
            principals = Principals.anonymous()
        else:
            principals, directory = principals_of(self.settings, user), directory_of(self.settings)
        solr_url = paths.solr_url(self.settings)
        index = SolrIndex(solr_url, timeout=30, auth=paths.solr_auth(self.settings))
        try:
            try:
                with open_database(self.settings) as database:
                    lines = access_lines(principals, directory, index, DocumentTable(database), url)
            except SchemaOutdated:  # no crawl has made the document table here: the index alone
                lines = access_lines(principals, directory, index, None, url)
        except IndexingError as exc:
            print(f"searchcrawl: Solr at {solr_url} did not answer: {exc.reason}", file=sys.stderr)
            self.exitcode = 1
            return
        for line in lines:
            print(printable(line))  # tokens and origins come from the sources
