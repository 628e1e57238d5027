"""Suggestions while typing, without HTTP: what a searcher has typed so far in, a short list of
completions out, each a document title or a past query, and each one only if it shows nothing
of a document the searcher may not read.

Titles come from the index's own ``title`` as an ordinary search: each word typed must begin a
word of the title (schema.xml's ``title_words``: the first 1-20 letters of each word, case and
accents folded), under the same access filters as every search (trimmed_index.py adds access/decision.py
``solr_trimming``, the one implementation: allow levels, deny and late deny, incomplete
principals), one suggestion per title (collapsed on ``title_key``), those whose whole title
begins with the text typed first (``title_start``), then in title order (``title_sort``). Every
title shown is a readable document's own, and nothing is counted: a title the searcher has no
access to never appears, and neither does a number that would hint at one. The order depends
on the readable titles alone (constant scores, a sort on the titles), not on relevance
statistics, which are the whole index's.

Why not a Solr suggester (SuggestComponent with AnalyzingInfix or BlendedInfix lookups): its
dictionary is a separate index of every document's title, built from the whole index (on
commit, or by a build request), with no access filters; its ``contextField``/``suggest.cfq``
filters on one field only and cannot say "deny wins" or the late deny's exception. Each of its
candidates would have to be checked under the full trimming before it is shown, and a searcher
who may read few documents would get few or none of the top candidates it returns (they are the
whole index's best), so the list would be short exactly for them. Building it is also a cost
per commit (a soft commit every second here) or a staleness. An edge n-gram field asked as an
ordinary filtered search is correct by construction, always current, and on 100,000 documents
fast enough (tests/benchmarks/README.md, "The web search page"): correctness first, then speed.

Queries that found documents are given by the caller (the query log's popular queries that begin
with the text typed, most frequent first). A query typed by someone else may hold words of
documents only they may read: a candidate is shown only if, counted under the trimming as two
facet queries of the same request (and never shown), it finds a document this searcher may read
now as the search page asks it (edismax, its fields, ``uf`` without nested queries or functions,
``mm=100%``), and every word of it, as the analysis finds them, is in one such document
(query.py ``every_word_query``). The second is what makes operators no way round: ``mm``
counts only top-level optional clauses, so ``word -secret``, ``word NOT secret`` and ``word
(secret or word)`` passed the first on ``word`` alone; the second requires ``secret`` too, and
so a past search with operators is offered only when every word under them is one the searcher
could find themselves. The candidate text is a request parameter of its own (``v=$name``),
never spliced into query syntax.

One Solr request answers both, bounded: at most ``MAX_PREFIX_CHARS`` of the text typed and
``MAX_WORDS`` words of it, ``MAX_CANDIDATES`` past queries checked, ``MAX_SUGGESTIONS`` shown,
``TIME_ALLOWED_MS`` of Solr's time.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pysolr

from searchcrawl.index.solr_client import IndexingError
from searchcrawl.search.query import UF, counted, every_word_counts
from searchcrawl.search.trimmed_index import TrimmedIndex, log_failed_search

logger = logging.getLogger(__name__)

MAX_PREFIX_CHARS = 100  # of the text typed (a longer one is cut: the beginning completes)
MAX_WORDS = 8  # words of it matched against titles
MAX_SUGGESTIONS = 8
MAX_CANDIDATES = 10  # past queries checked in one request
MAX_CANDIDATES_READ = 100  # of those given
MAX_CANDIDATE_CHARS = 200  # a longer past query is not offered
MAX_TITLE_CHARS = 150
TIME_ALLOWED_MS = 500
TITLE, QUERY = "title", "query"
TITLES_TAG, ONE_TITLE_TAG = "suggest_titles", "suggest_one_title"
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
WORD = re.compile(r"\w")


@dataclass(frozen=True)
class Suggestion:
    text: str
    kind: str  # TITLE or QUERY

    def as_json(self) -> dict[str, str]:
        return {"text": self.text, "kind": self.kind}


def clean(text: str, limit: int) -> str:
    """``text`` with control characters as spaces, runs of white space as one, the start
    stripped, cut to ``limit`` characters (a trailing space is kept: "harbour " asks for the
    next word)."""
    return re.sub(r"\s+", " ", CONTROL.sub(" ", text[: limit * 4])).lstrip()[:limit] if text else ""


def folded(text: str) -> str:
    """``text`` as title_start holds a title (schema.xml's text_start): lower case, accents off,
    white space single. Python's folding is close to Lucene's (an accent it misses only changes
    the order)."""
    decomposed = unicodedata.normalize("NFKD", text.lower())
    return re.sub(r"\s+", " ", "".join(char for char in decomposed if not unicodedata.combining(char))).lstrip()


def candidates_of(prefix: str, query_candidates: Sequence[str]) -> list[str]:
    """The past queries worth checking: each beginning with ``prefix`` (case ignored), white space
    folded, short enough, once each, the first ``MAX_CANDIDATES`` (of the first
    ``MAX_CANDIDATES_READ`` given: the list is read so far and no further)."""
    wanted = prefix.strip().casefold()
    kept: list[str] = []
    seen: set[str] = set()
    for candidate in query_candidates[:MAX_CANDIDATES_READ]:
        if not isinstance(candidate, str) or len(candidate) > MAX_CANDIDATE_CHARS * 4:
            continue
        text = " ".join(CONTROL.sub(" ", candidate).split())
        key = text.casefold()
        if not text or len(text) > MAX_CANDIDATE_CHARS or not key.startswith(wanted) or key in seen:
            continue
        seen.add(key)
        kept.append(text)
        if len(kept) == MAX_CANDIDATES:
            break
    return kept


def suggest_params(prefix: str, candidates: Sequence[str], rows: int) -> dict[str, Any]:
    """The request (besides ``q=*:*`` and the searcher's trimming, which ``TrimmedIndex`` adds)
    that finds titles for ``prefix`` and counts each candidate's readable documents. Every text
    typed is a parameter of its own."""
    params: dict[str, Any] = {
        "defType": "lucene",
        "rows": 0,
        "fl": "title",
        "fq": [],
        "hl": "false",
        "spellcheck": "false",
        "timeAllowed": TIME_ALLOWED_MS,
        "uf": UF,  # the candidates' edismax: no nested query or function (query.py)
    }
    words = [word for word in prefix.split()[:MAX_WORDS] if WORD.search(word)]
    if words:
        clauses = []
        for number, word in enumerate(words):
            params[f"suggest_w{number}"] = word
            params[f"suggest_m{number}"] = "{!field f=title_words v=$suggest_w" + str(number) + "}"
            clauses.append(f"must=$suggest_m{number}")
        params["fq"] += [
            "{!bool tag=" + TITLES_TAG + " cache=false " + " ".join(clauses) + "}",
            "{!collapse tag=" + ONE_TITLE_TAG + " field=title_key}",
        ]
        params["suggest_prefix"] = folded(prefix)
        params["suggest_start"] = "{!prefix f=title_start v=$suggest_prefix}"
        params["sort"] = "if(exists(query($suggest_start)),0,1) asc,title_sort asc"
        params["rows"] = rows
    if candidates:
        # each candidate twice: as the search page asks it (it finds a document), and as every
        # word of it, those under an operator too (each is one they may read)
        untitled = "ex=" + TITLES_TAG + "," + ONE_TITLE_TAG
        params.update(every_word_counts(candidates, "suggest_t", local=untitled))
        for number, candidate in enumerate(candidates):
            params[f"suggest_q{number}"] = candidate
            params["facet.query"].append("{!edismax " + untitled + f" key=suggest_q{number} mm=100% v=$suggest_q{number}}}")
    return params


def suggest(
    index: TrimmedIndex,
    prefix: str,
    query_candidates: Sequence[str] = (),
    limit: int = MAX_SUGGESTIONS,
) -> list[Suggestion]:
    """Up to ``limit`` completions of ``prefix`` for the searcher of ``index``: the past queries among
    ``query_candidates`` that find a document they may read (most frequent first, at most half
    the list when titles are there to fill it), then readable documents' titles. Raises
    IndexingError when Solr fails (the caller answers with none)."""
    prefix = clean(prefix, MAX_PREFIX_CHARS)
    limit = max(0, min(limit, MAX_SUGGESTIONS))
    if not prefix.strip() or not limit:
        return []
    asked = ask_once(index, prefix, candidates_of(prefix, query_candidates), limit + 4)
    if asked is None:
        return []
    results, candidates = asked
    queries = [
        candidate
        for number, candidate in enumerate(candidates)
        if counted(results.facets, f"suggest_q{number}") and counted(results.facets, f"suggest_t{number}")
    ]
    logger.debug("Suggestions: %d of %d past searches find documents the searcher may read", len(queries), len(candidates))
    return merged(queries, titles_of(results.docs), limit)


def ask_once(index: TrimmedIndex, prefix: str, candidates: list[str], rows: int) -> tuple[pysolr.Results, list[str]] | None:
    """Solr's answer to the one request of ``prefix``'s suggestions (``suggest_params``) and the
    past queries it checked; None when there is nothing to ask. A past query Solr refuses
    (whatever someone once typed) costs the titles nothing: asked again without them."""
    params = suggest_params(prefix, candidates, rows)
    if params["rows"] == 0 and not candidates:
        return None  # nothing a title could begin with (punctuation alone), no past query
    try:
        return index.search("*:*", params), candidates
    except IndexingError as exc:
        if not (candidates and exc.refused):
            raise
        # not logged: Solr's reason may quote someone's query
        log_failed_search("Suggestions: the past queries checked (titles only)", None, exc, reason=False)
    params = suggest_params(prefix, [], rows)
    if params["rows"] == 0:
        return None
    return index.search("*:*", params), []


def titles_of(docs: Iterable[dict[str, Any]]) -> list[str]:
    """The documents' titles as suggestions: control characters out, white space folded, at most
    MAX_TITLE_CHARS; a document without a title gives none."""
    titles: list[str] = []
    for doc in docs:
        title = doc.get("title")
        title = title[0] if isinstance(title, list) and title else title
        if isinstance(title, str):
            text = " ".join(CONTROL.sub(" ", title[: MAX_TITLE_CHARS * 4]).split())[:MAX_TITLE_CHARS].rstrip()
            if text:
                titles.append(text)
    return titles


def merged(queries: list[str], titles: list[str], limit: int) -> list[Suggestion]:
    """Up to ``limit`` suggestions, each text once whatever its case: the past ``queries`` first,
    at most half the list when ``titles`` are there to fill it, then the titles."""
    shown: list[Suggestion] = []
    seen: set[str] = set()
    room_for_queries = max(limit - len(titles), (limit + 1) // 2)
    for text in queries[:room_for_queries]:
        if text.casefold() not in seen:
            seen.add(text.casefold())
            shown.append(Suggestion(text, QUERY))
    for text in titles:
        if len(shown) >= limit:
            break
        if text.casefold() not in seen:
            seen.add(text.casefold())
            shown.append(Suggestion(text, TITLE))
    return shown[:limit]
