"""`scrapy search "<query>"`: query the index from the shell (title, URL and a snippet a hit).

One hit per URL, as on the web search page: both ask Solr through searchcrawl/search/ (query.py's
parameters, sent by searcher.py's ``TrimmedIndex``, which trims every request), and reach it as a
crawl does (``SolrIndex``: SOLR_URL may list a SolrCloud collection on several
nodes, comma-separated; a node that is down is passed over).

Trimmed as every search is: to the public documents, or with ``--as USER`` to what USER may read,
their principals looked up in the directory (SEARCHCRAWL_LDAP_*, through its service account: no
password of theirs is asked). A directory that does not answer leaves the public documents only,
and says so on stderr.

As on the web search page: the administrator's best bets, boosts and demotions (the relevance
page, searchcrawl/rules/ranking_rules.py) are read from the project's database, the best bets printed
above the hits (those the searcher may read: ``best_bets``, trimmed as every search), the
boosts applied (search/relevance_params.py ``boost_params``), and Solr applies the synonyms and
stopwords itself. A database that cannot be read leaves the order Solr's own, said on stderr."""

from __future__ import annotations

import argparse
import sys

import pysolr
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory import directory_of
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.ranking_rules import Boost, Rules
from searchcrawl.search.query import matching, search_params, snippet_of, unique_hits
from searchcrawl.search.relevance_params import boost_params
from searchcrawl.search.searcher import TrimmedIndex
from searchcrawl.store import Database
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.system import paths
from searchcrawl.system.secrets import SecretError
from searchcrawl.web.search_page import Hit, best_bets


def format_hits(results: pysolr.Results) -> list[str]:
    """One block of lines per hit: rank and title, URL, snippet."""
    lines = []
    for rank, doc in enumerate(unique_hits(results.docs), 1):
        snippet = snippet_of(doc, results.highlighting)
        lines.append(f"{rank}. {doc.get('title') or '(no title)'}")
        lines.append(f"   {doc.get('display_url') or doc.get('url') or doc['id']}")
        if snippet:
            lines.append(f"   {snippet}")
    return lines


def search(
    index: TrimmedIndex, query: str, rows: int = 10, source: str | None = None, boosts: tuple[Boost, ...] = ()
) -> pysolr.Results:
    """One hit per URL (``search_params``) that the searcher of ``index`` may read, ``rows`` of
    them, of ``source`` only if given, ordered with ``boosts``; IndexingError when no node of
    Solr answers."""
    return index.search(query, search_params(rows, source=source), boost_params(boosts))


def rules_of(db_url: str) -> Rules:
    """The relevance page's best bets, boosts and demotions, read without migrating the
    database; none (said on stderr) when it cannot be read."""
    try:
        database = Database(db_url, migrate=False)
        try:
            return RelevanceStore(database).rules()
        finally:
            database.close()
    except Exception as exc:  # noqa: BLE001 - relevance fails open: the search goes on
        print(f"searchcrawl: best bets, boosts and demotions not applied: {type(exc).__name__}", file=sys.stderr)
        return Rules()


def format_bets(bets: list[Hit]) -> list[str]:
    """Two lines a best bet: its title, marked, and its URL."""
    return [line for hit in bets for line in (f"Best bet: {hit.title}", f"   {hit.url}")]


def principals_of(settings: BaseSettings, user: str | None) -> Principals:
    """The searcher's principals: public only without ``user``; ``user``'s from the directory
    (UsageError without one)."""
    if user is None:
        return Principals.anonymous()
    try:
        directory = directory_of(settings)
    except SecretError as exc:  # the service account's password file cannot be read
        raise UsageError(str(exc)) from None
    if directory is None:
        raise UsageError("the searchers' directory is not configured: SEARCHCRAWL_LDAP_URL is not set")
    return directory.principals(user)


def searcher_index(settings: BaseSettings, user: str | None, solr: SolrIndex | None = None) -> TrimmedIndex:
    """The index as the command's searcher may read it, bound once where the searcher is known:
    the public's without ``user`` (``--as USER``), else ``user``'s principals from the directory
    (public documents only, said on stderr, when it cannot give them); through ``solr``, or a
    client of SOLR_URL (one URL, or a collection's URLs on several nodes, comma-separated). The
    commands that search (search, relevance, demo) get their index here, never choosing
    principals themselves."""
    principals = principals_of(settings, user)
    if principals.error:
        print(f"searchcrawl: {principals.error}: public documents only", file=sys.stderr)
    if solr is None:
        solr = SolrIndex(paths.solr_url(settings), timeout=30, auth=paths.solr_auth(settings))
    return TrimmedIndex(solr, principals)


class Command(ScrapyCommand):
    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return '"<query>" [--rows N] [--source NAME] [--as USER]'

    def short_desc(self) -> str:
        return "Search the index (SOLR_URL) and print title, URL and a snippet per hit"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--rows", type=int, default=10)
        parser.add_argument("--source", default=None, help="only documents of this source")
        parser.add_argument(
            "--as", dest="user", default=None, help="what this directory user may read (default: public documents only)"
        )

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args:
            raise UsageError("a query is needed")
        assert self.settings is not None
        url = paths.solr_url(self.settings)
        index = searcher_index(self.settings, opts.user)
        try:
            rules = rules_of(paths.db_url(self.settings))
            query = " ".join(args)
            results = search(index, query, opts.rows, opts.source, rules.boosts)
        except IndexingError as exc:
            print(f"searchcrawl: Solr at {url} did not answer: {exc.reason}")
            self.exitcode = 1
            return
        bets = best_bets(index, rules.pinned(query))
        for line in format_bets(bets):  # above the hits, as on the search page (trimmed alike)
            print(printable(line))
        print(f"{matching(results.hits)} {' '.join(args)!r}")
        for line in format_hits(results):
            print(printable(line))  # titles and snippets come from the sites
