"""The cached copy of a hit: the text searchcrawl indexed for one document, as one searcher may read it.

A searcher opens it from a hit (the search page's "Cached" link, the JSON API's ``cached`` URL)
when the original is slow, gone or changed since the crawl. What is shown is the document's
indexed text (Solr's stored ``content``: what the crawl extracted, never the page's HTML, so
nothing a hostile page wrote can run or be styled), with the words of the searcher's query
marked by Solr's own highlighter, so a word is marked exactly when the search matched it
(stemming, synonyms, split names). It is asked through the searcher's ``TrimmedIndex``, like a
hit: a document the searcher may not read is not found, exactly as one that does not exist.

At most ``CACHED_CHARS`` characters are shown (a converted book can hold millions): the page says
how many of how many. The query goes to Solr as a parameter dereferenced by an edismax query
with the search's user fields (``UF``), so nothing in it is local parameters or a nested query.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchcrawl.content.clean_text import HIGHLIGHT_MARKS
from searchcrawl.search.query import MAX_QUERY_CHARS, TIME_ALLOWED_MS, UF, term_filter
from searchcrawl.search.trimmed_index import TrimmedIndex

CACHED_CHARS = 200_000  # characters of a document's text that its cached copy shows
FIELDS = "id,url,display_url,title,source,mimetype,last_modified,crawled_at,content"
MARK_OPEN, MARK_CLOSE = HIGHLIGHT_MARKS  # removed from every text indexed: only Solr makes them


@dataclass(frozen=True)
class CachedCopy:
    """One document's indexed text: ``text`` its first ``CACHED_CHARS`` characters with the query's
    words between MARK_OPEN and MARK_CLOSE; ``length`` the characters the whole text has."""

    id: str
    url: str  # the stored URL; the page links the display URL (results.display_url)
    doc: dict[str, Any]  # the stored fields but the content (title, display_url, dates, ...)
    text: str
    length: int

    @property
    def shown(self) -> int:
        """Characters of the text shown (the marks not counted)."""
        return len(self.text.replace(MARK_OPEN, "").replace(MARK_CLOSE, ""))


def by_id(doc_id: str) -> str:
    """The filter of the document ``doc_id`` (a hit's: the search page's cached link)."""
    return term_filter("id", doc_id)


def by_url(url: str) -> str:
    """The filter of the document at ``url`` (the agents' fetch_document: hits name URLs)."""
    return term_filter("url", url)


def cached_params(document: str, query: str, max_chars: int = CACHED_CHARS) -> dict[str, Any]:
    """The request for the document of filter ``document`` (``by_id``, ``by_url``) with the words of ``query`` marked in its first
    ``max_chars`` characters (Solr's unified highlighter over the whole field: one passage, the
    text itself where no word matched)."""
    params: dict[str, Any] = {
        "fq": [document],
        "fl": FIELDS,
        "rows": 1,
        "facet": "false",
        "spellcheck": "false",
        "timeAllowed": TIME_ALLOWED_MS,
    }
    query = query.strip()[:MAX_QUERY_CHARS]
    if not query:
        return {**params, "hl": "false"}
    return {
        **params,
        "hl": "true",
        "hl.method": "unified",
        "hl.fl": "content",
        "hl.q": "{!edismax uf=$cached.uf v=$cached.q}",
        "hl.qparser": "lucene",  # for the local parameters of hl.q (ours); the searcher's text is edismax's
        "cached.q": query,
        "cached.uf": UF,
        "hl.bs.type": "WHOLE",
        "hl.fragsize": 0,
        "hl.snippets": 1,
        "hl.maxAnalyzedChars": max_chars,
        "hl.defaultSummary": "true",
        "hl.tag.pre": MARK_OPEN,
        "hl.tag.post": MARK_CLOSE,
    }


def cached_copy(index: TrimmedIndex, document: str, query: str = "", max_chars: int = CACHED_CHARS) -> CachedCopy | None:
    """The document of filter ``document`` (``by_id``, ``by_url``) as the searcher of ``index`` may read it (None: absent or withheld,
    alike), with the words of ``query`` marked in its first ``max_chars`` characters. The marked
    text is used only when it is the stored text with marks and nothing else added or lost;
    otherwise the text is shown unmarked."""
    results = index.search("*:*", cached_params(document, query, max_chars))
    if not results.docs:
        return None
    doc = dict(results.docs[0])
    content = doc.pop("content", "")
    content = " ".join(content) if isinstance(content, list) else str(content or "")
    text = content[:max_chars]
    marked = ((results.highlighting or {}).get(str(doc.get("id")), {}).get("content") or [""])[0]
    if marked and marked.replace(MARK_OPEN, "").replace(MARK_CLOSE, "") == text:
        text = marked
    return CachedCopy(id=str(doc.get("id") or ""), url=str(doc.get("url") or ""), doc=doc, text=text, length=len(content))
