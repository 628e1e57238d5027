"""How a searcher's query is asked of Solr: shared by `scrapy search` and the web search page.

Two sources that crawl one URL hold two Solr documents (ids ``<source>!<url>``, one ``url``); a
searcher sees one hit per URL: the query collapses on ``url`` (the best-scoring document of each
URL, ``nullPolicy=expand``: a document without one is kept as it is). On SolrCloud collapsing
works within a shard, and documents are routed by source, so a URL of two sources may sit on two
shards: ``unique_hits`` also drops a URL already shown. The query text itself goes to Solr as
typed: the /select handler's edismax defaults (solrconfig.xml) are the index's semantics
(phrases, stopword gaps, ``field:value``), the same for every client.

Every search is trimmed to its searcher (``search_params`` takes their Principals, and has no
default): Solr's filters (access/decision.py ``solr_trimming``) drop what they may not read before
hits are counted, faceted, paged or spell-checked, so a count or a suggestion shows nothing of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from searchcrawl.access.decision import Principals, solr_trimming

# one hit per URL; tagged, so that a count by source can leave it out (a URL that two sources
# hold is a hit of each: the search page's source facet)
ONE_URL_TAG = "one_url"
COLLAPSE = "{!collapse tag=" + ONE_URL_TAG + " field=url nullPolicy=expand}"
HIT_FIELDS = "id,url,source,title,display_url,description,mimetype,last_modified,language,host"


def term_filter(field: str, value: str) -> str:
    """A filter on one exact value of a string field: the term parser takes ``value`` literally
    (no query syntax, nothing to escape), so a facet value from the index is safe to send back."""
    return "{!term f=" + field + "}" + value


UF = "* -_query_ -_val_"  # edismax's user fields: see search_params
TIME_ALLOWED_MS = 5000  # a search's bound in Solr (not /select's default: cursorMark refuses it)


def search_params(
    principals: Principals,
    rows: int = 10,
    start: int = 0,
    source: str | None = None,
    filters: Iterable[str] = (),
    highlight: tuple[str, str] = ("*", "*"),
    sort: str | None = None,
) -> dict[str, Any]:
    """The parameters of a search (besides ``q``) by ``principals``: what they may read (the
    module's docstring), one hit per URL, the hit fields, a highlighted snippet from ``content``
    between ``highlight``'s two markers, and at most ``TIME_ALLOWED_MS`` of Solr's time (a
    visitor's ``content:/.*a.*b.*/`` or ``*e*`` gets what was found by then). ``sort`` is Solr's
    (None: by relevance); the copy of a URL that stands for it is its best-scoring one whatever
    the sort."""
    trimming, trimming_params = solr_trimming(principals)
    fq = [*trimming, COLLAPSE]
    if source:
        fq.append(term_filter("source", source))
    fq.extend(filters)
    sorting = {"sort": sort} if sort else {}
    return {
        **sorting,
        **trimming_params,
        "rows": rows,
        "start": start,
        "fl": HIT_FIELDS,
        "hl": "true",
        "hl.fl": "content",
        "hl.tag.pre": highlight[0],
        "hl.tag.post": highlight[1],
        "fq": fq,
        "timeAllowed": TIME_ALLOWED_MS,
        # any field may be searched, but no query nested in the searcher's text: a function there
        # (``_query_:"{!func}docfreq(content,'merger')"``) is computed over the whole index, the
        # documents the trimming hides too, and would tell through a readable hit's score what
        # they hold (Solr's default already; said here so no configset can change it)
        "uf": UF,
    }


def matching(total: int) -> str:
    """How many documents match, in words: "1 document matches", "0 documents match"."""
    return "1 document matches" if total == 1 else f"{total} documents match"


def unique_hits(docs: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The documents in order, each URL once (see the module docstring: SolrCloud shards)."""
    shown: set[str] = set()
    for doc in docs:
        url = doc.get("url") or doc["id"]
        if url in shown:
            continue
        shown.add(url)
        yield doc


def snippet_of(doc: dict[str, Any], highlighting: dict[str, Any] | None) -> str:
    """The hit's highlighted snippet (whitespace folded), else its description. Highlighting is
    keyed by the uniqueKey: the document's Solr id, solr_id(source, url)."""
    snippets = (highlighting or {}).get(doc["id"], {}).get("content") or []
    if snippets:
        return " ".join(snippets[0].split())
    return str(doc.get("description") or "")
