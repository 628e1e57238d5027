"""The Searcher trims: the one door through which a searcher's query reaches Solr.

Every query asked on a searcher's behalf (the search page's and the JSON API's hits and facets,
`scrapy search`'s, the best bets pinned above them, the spelling checks, the suggestions while
typing, the "why is this hit here" page) is sent by ``TrimmedIndex.search``, which adds the
searcher's trimming (access/decision.py ``solr_trimming``, built once per searcher) to every
request itself: its filters before the caller's, its parameters (the principals, the deny
queries, macros off) after the caller's, so that no parameter a caller sets can replace them.
There is no parameter to leave it out. The code that builds a searcher's query (query.py,
spelling.py, suggestions.py, why.py, the search page) is handed a ``TrimmedIndex``, never the
raw Solr client, and nothing else in searchcrawl sends a searcher's query to Solr. It is built
once where the searcher is known (the web context's ``searcher``, carried by the request's
Searcher; a command's ``searcher_index`` from ``--as USER``), and views and commands are given
it alone. The rule "The Searcher trims" of tests/test_architecture.py reads it from the syntax
tree as a small type check (an alias of the raw client is the raw client), and names the
operators' untrimmed paths (Solr's health and the document count, the sources in the index,
explain-access, the id migration, the managed resources' sync) with a reason each. Datasette's
model: one permission question every view asks, its filter built once.

Semantic search's passages (issue 76) are documents of the same core: ``search`` asks for documents
only, ``nearest`` for passages only, by a kNN query that is the request's main query, so that the
trimming's filters pre-filter it: its top k is chosen among what the searcher may read (a kNN
query nested in another, or a filter applied after it, would pick the top k of the whole index,
and trim them after).

The relevance page's boosts are applied here too (``search``'s ``boosting``): a rule Solr cannot
run is dropped for the request and logged, never breaking the search.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import pysolr

from searchcrawl.access.decision import Principals, solr_trimming
from searchcrawl.index.solr_client import DOCUMENTS, PASSAGES, IndexingError, SolrIndex

logger = logging.getLogger(__name__)


class OncePer:
    """Whether to log now: True at most once every ``seconds`` (a warning repeated by every
    search would flood the log)."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds, self.clock = seconds, clock
        self._last: float | None = None
        self._lock = threading.Lock()

    def __call__(self) -> bool:
        with self._lock:
            now = self.clock()
            if self._last is not None and now - self._last < self.seconds:
                return False
            self._last = now
            return True


BOOSTS_REFUSED_LOG = OncePer(60)
# a search that Solr refused or did not answer: every search of a broken index fails alike
SEARCH_FAILED_LOG = OncePer(60)
LOGGED_QUERY_CHARS = 100  # of a searcher's query in a log line
LOGGED_REASON_CHARS = 300  # of Solr's message, which may repeat the query


def log_failed_search(where: str, query: str | None, error: IndexingError, *, reason: bool = True) -> None:
    """A searcher's request (``where``: the page's search, the API's, suggestions, a cached copy,
    an answer, best bets, spelling) that failed on Solr: every such line goes through here, at
    WARNING at most once a minute for them all, the query (None: not logged) and Solr's message
    cut short (20 refused searches logged 20 lines of 1,197 characters; ``reason`` False: its HTTP
    status alone, for a message that may quote someone else's query); the others at DEBUG."""
    level = logging.WARNING if SEARCH_FAILED_LOG() else logging.DEBUG
    said = error.reason[:LOGGED_REASON_CHARS] if reason else f"HTTP {error.status}"
    asked = "" if query is None else f" {query[:LOGGED_QUERY_CHARS]!r}"
    logger.log(level, "%s%s failed (logged once a minute): %s", where, asked, said)


VECTOR_FIELD = re.compile(r"m[0-9a-f]{10}_v[0-9]{1,4}")  # embedders.field_name's


class TrimmedIndex:
    """The index as one searcher may read it: Solr (``index``, shared by every request) and the
    searcher's ``principals``, whose trimming every query sent through ``search`` carries.

    Read-only (slots, no attribute set after ``__init__``, the trimming a tuple and a read-only
    mapping), so that neither a view nor a copy (``copy.copy`` gives the same object) can loosen
    the trimming or change the principals it reports without changing the trimming."""

    __slots__ = ("_filters", "_index", "_params", "_principals")
    _index: SolrIndex
    _principals: Principals
    _filters: tuple[str, ...]
    _params: Mapping[str, str]

    def __init__(self, index: SolrIndex, principals: Principals) -> None:
        filters, params = solr_trimming(principals)
        for name, value in (
            ("_index", index),
            ("_principals", principals),
            ("_filters", tuple(filters)),
            ("_params", MappingProxyType(dict(params))),
        ):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a TrimmedIndex is read-only: {name} cannot be set")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a TrimmedIndex is read-only: {name} cannot be deleted")

    def __copy__(self) -> TrimmedIndex:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> TrimmedIndex:
        return self

    @property
    def principals(self) -> Principals:
        """Whose index this is: the principals its trimming was built from."""
        return self._principals

    def search(self, query: str, params: Mapping[str, Any], boosting: Mapping[str, Any] | None = None) -> pysolr.Results:
        """Solr's answer to ``query`` with ``params`` (besides the trimming, which is always
        added) and the relevance page's boosts ``boosting`` (search/relevance_params.py
        ``boost_params``). When Solr answers a request that carried boosts with an error (HTTP
        4xx or 5xx: a rule Solr cannot run, such as a URL pattern too complex for Lucene's
        wildcard automaton, which Solr 9 answers with a 500, put in the database before
        patterns were bounded or by hand), it is asked again once without them and a warning
        logged (at most once a minute): a bad rule never breaks a search, it only goes
        unapplied. A Solr that does not answer (unreachable, timed out) is not asked again: the
        failure is raised as it is (IndexingError)."""
        if not boosting:
            return self._trimmed(query, params)
        try:
            return self._trimmed(query, {**params, **boosting})
        except IndexingError as exc:
            if exc.status is None:
                raise
            if BOOSTS_REFUSED_LOG():
                logger.warning(
                    "Solr refused the boosts and demotions of the relevance page (searches go on without them;"
                    " delete or correct the rule): %s",
                    exc.reason,
                )
        return self._trimmed(query, params)

    def nearest(self, field: str, vector: Sequence[float], top_k: int, params: Mapping[str, Any]) -> pysolr.Results:
        """The ``top_k`` passages nearest ``vector`` in ``field`` (a model's vector field) that
        the searcher may read, with ``params`` (the caller's filters, ``fl``, ``rows``): a kNN
        query as the main query, pre-filtered by the trimming and the caller's filters. On
        SolrCloud each shard finds its top k and the merge keeps the best ``rows``."""
        if not VECTOR_FIELD.fullmatch(field):
            raise ValueError(f"not a vector field: {field!r}")
        query = "{!knn f=" + field + f" topK={int(top_k)}}}[" + ",".join(f"{float(value):.6g}" for value in vector) + "]"
        return self._trimmed(query, {**params, "defType": "lucene"}, PASSAGES)

    def _trimmed(self, query: str, params: Mapping[str, Any], kind: str = DOCUMENTS) -> pysolr.Results:
        """The one call of Solr for a searcher: the trimming's filters first, then what is
        searched (``kind``: documents, or passages), then the caller's (``fq``: one or a list),
        and the trimming's parameters over the caller's."""
        filters = params.get("fq", [])
        filters = [filters] if isinstance(filters, str) else list(filters)
        return self._index.search(query, **{**params, **self._params, "fq": [*self._filters, kind, *filters]})
