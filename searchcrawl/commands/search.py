"""`scrapy search "<query>"`: query the index from the shell (title, URL and a snippet a hit).

The search page's search: search/results.py's ``run_search``, the one search of the page, the
JSON API and the agents' endpoint, asked with the request the page makes of ``?q=<query>&source=
<name>`` (request.py), so the same hits in the same order: one hit per URL, the /select
handler's edismax semantics, the administrator's best bets (printed above the hits, not repeated
among them), boosts and demotions (the relevance page, searchcrawl/rules/ranking_rules.py, read
from the project's database), the passages found by meaning fused with the words where semantic
search is on (SEARCHCRAWL_EMBEDDINGS, search/hybrid.py), and "Did you mean" when nothing matches
(spelling.py). Solr is reached as a crawl reaches it (``SolrIndex``: SOLR_URL may list a SolrCloud
collection on several nodes, comma-separated; a node that is down is passed over).

Trimmed as every search is: to the public documents, or with ``--as USER`` to what USER may read,
their principals looked up in the directory (SEARCHCRAWL_LDAP_*, through its service account: no
password of theirs is asked). A directory that does not answer leaves the public documents only,
and says so on stderr. A database that cannot be read leaves the order Solr's own, said on
stderr. Semantic search that cannot be had (a wrong SEARCHCRAWL_EMBEDDINGS, the model's package or
file missing, a model that does not answer its probe within SEARCHCRAWL_EMBED_TIMEOUT, asked once)
leaves the words alone, said on stderr ("semantic search off: <reason>"): the operator's diagnostic
search works when semantic search does not. A query cut to the page's length, and hybrid search
left off because --rows reaches past the fused window, are said on stderr too."""

from __future__ import annotations

import argparse
import sys

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import BaseSettings

from searchcrawl.access.decision import Principals
from searchcrawl.access.directory_setting import directory_of
from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.ops.terminal import printable
from searchcrawl.rules.ranking_rules import Rules
from searchcrawl.search.hybrid import SemanticSearch, semantic_search
from searchcrawl.search.query import COORDINATION, MAX_QUERY_CHARS, Coordination, matching
from searchcrawl.search.request import MAX_VALUE_CHARS, SearchRequest
from searchcrawl.search.results import Hit, SearchPage, fuses, run_search, snippet_parts
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import EmbeddingFailed
from searchcrawl.store import Database
from searchcrawl.store.relevance_rules import RelevanceStore
from searchcrawl.system import paths
from searchcrawl.system.secrets import SecretError

# what leaves a command's search without its semantic half: a wrong setting (DimensionMismatch is a
# ValueError), a model file or package missing, a key file unreadable, a model that does not answer
SEMANTIC_OFF = (ValueError, OSError, ImportError, SecretError, EmbeddingFailed)
REASON_CHARS = 300  # of a failure's message on stderr


def format_hits(page: SearchPage) -> list[str]:
    """One block of lines per hit: rank and title, URL (the display URL as indexed, whatever its
    scheme), snippet (the words matched between asterisks)."""
    lines = []
    for rank, hit in enumerate(page.hits, 1):
        snippet = "".join(f"*{part['text']}*" if part["match"] else part["text"] for part in snippet_parts(hit.snippet))
        lines.append(f"{rank}. {hit.title}")
        lines.append(f"   {hit.location}")
        if snippet:
            lines.append(f"   {snippet}")
    return lines


def search(
    index: TrimmedIndex,
    query: str,
    rows: int = 10,
    source: str | None = None,
    rules: Rules | None = None,
    semantic: SemanticSearch | None = None,
    coordination: Coordination = COORDINATION,
) -> SearchPage:
    """The search page's first page for ``query`` (of ``source`` only if given), ``rows`` hits,
    of what the searcher of ``index`` may read (``run_search``, facets not asked: not printed;
    ``coordination``: SEARCHCRAWL_SEARCH_COORDINATION and _HYBRID); IndexingError when no node of Solr answers."""
    request = request_of(query, source)
    return run_search(
        index, request, rows=rows, rules=rules, ranking={"facet": "false"}, semantic=semantic, coordination=coordination
    )


def request_of(query: str, source: str | None) -> SearchRequest:
    """The search page's request for ``?q=<query>&source=<source>`` (the query stripped and cut
    to MAX_QUERY_CHARS, as the page's)."""
    return SearchRequest.from_params([("q", query), *((("source", source),) if source else ())])


def notes(query: str, source: str | None, rows: int, semantic: SemanticSearch | None) -> list[str]:
    """What the command searches otherwise than it was asked, for stderr: the query or the source
    cut short (the page's limits), and hybrid search left off for ``rows`` past the fused window."""
    request = request_of(query, source)
    said = []
    if request.q != query.strip():
        said.append(f"searchcrawl: the query was cut to its first {MAX_QUERY_CHARS} characters")
    if source and request.values("source") != [source]:
        said.append(f"searchcrawl: --source was cut to its first {MAX_VALUE_CHARS} characters")
    if semantic is not None and not fuses(request, rows, semantic):
        said.append(
            f"searchcrawl: hybrid search off: --rows {rows} is above the fused window of {semantic.window} hits"
            " (the words' order alone)"
        )
    return said


def semantic_of(settings: BaseSettings, solr: SolrIndex) -> SemanticSearch | None:
    """The installation's semantic search for one search, or None: off, or, said on stderr, when
    it cannot be had (``SEMANTIC_OFF``). Its model is probed once, within SEARCHCRAWL_EMBED_TIMEOUT:
    one that does not answer is not asked again for the query (which would wait as long again)."""
    try:
        return semantic_search(
            settings.get("SEARCHCRAWL_EMBEDDINGS") or "",
            settings.get("SEARCHCRAWL_EMBEDDINGS_PREVIOUS") or "",
            solr,
            settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"),
            answering=True,
        )
    except SEMANTIC_OFF as exc:
        reason = printable(f"{type(exc).__name__}: {exc}"[:REASON_CHARS])
        print(f"searchcrawl: semantic search off: {reason}", file=sys.stderr)
        return None


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
    (UsageError without one; a directory that fails gives the public's, with its error: fail closed)."""
    if user is None:
        return Principals.anonymous()
    try:
        directory = directory_of(settings)
    except SecretError as exc:  # the service account's password file cannot be read
        raise UsageError(str(exc)) from None
    if directory is None:
        raise UsageError("the searchers' directory is not configured: SEARCHCRAWL_LDAP_URL is not set")
    try:
        return directory.principals(user)
    except Exception as exc:  # noqa: BLE001 - it never should; if it does, fail closed: the public's, said
        return Principals.of(user, [], error=f"the directory failed ({type(exc).__name__})")


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
        # SOLR_URL: one URL, or a collection's URLs on several nodes, comma-separated
        solr = SolrIndex(url, timeout=30, auth=paths.solr_auth(self.settings))
        index = searcher_index(self.settings, opts.user, solr)
        semantic = semantic_of(self.settings, solr)
        query = " ".join(args)
        for note in notes(query, opts.source, opts.rows, semantic):
            print(note, file=sys.stderr)
        try:
            rules = rules_of(paths.db_url(self.settings))
            coordination = Coordination.from_settings(self.settings.get)
            page = search(index, query, opts.rows, opts.source, rules, semantic, coordination)
        except IndexingError as exc:
            print(f"searchcrawl: Solr at {url} did not answer: {exc.reason}")
            self.exitcode = 1
            return
        for line in format_bets(page.bets):  # above the hits, as on the search page (trimmed alike)
            print(printable(line))
        print(printable(f"{matching(page.total)} {page.request.q!r}"))  # the query searched (stripped, cut)
        if page.suggestions:  # nothing matched: the page's "Did you mean"
            print(printable(f"Did you mean {', '.join(text for text, _url in page.suggestions)}?"))
        for line in format_hits(page):
            print(printable(line))  # titles and snippets come from the sites
