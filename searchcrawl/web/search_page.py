"""The search page's logic, without HTTP: a query string's parameters in, a page of results out.

The page's state lives in its URL (``q``, ``page`` and one parameter per facet), so every result
page can be bookmarked and shared. Solr is asked through searchcrawl/index/query.py, as `scrapy
search` asks it: one hit per URL, the /select handler's edismax semantics. Filters from facet
links are exact-term filters (nothing a visitor types becomes filter syntax); the last-modified
ranges are a fixed list. Highlighting markers are two private-use characters, so the snippet can
be escaped whole and only Solr's markers become ``<mark>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from markupsafe import Markup, escape

from searchcrawl.access.decision import Principals, solr_trimming
from searchcrawl.content.clean_text import HIGHLIGHT_MARKS
from searchcrawl.index.indexer import SolrIndex
from searchcrawl.index.query import search_params, snippet_of, term_filter, unique_hits

MARK_OPEN, MARK_CLOSE = HIGHLIGHT_MARKS  # removed from every text indexed: only Solr makes them
# URL parameter -> Solr field, in the order the facets are shown
FACETS = {"source": "source", "host": "host", "type": "mimetype", "lang": "language"}
FACET_TITLES = {"source": "Source", "host": "Host", "type": "Type", "lang": "Language", "modified": "Last modified"}
# the last-modified ranges: URL value -> (label, Solr range)
MODIFIED = {
    "day": ("past day", "[NOW-1DAY TO *]"),
    "week": ("past week", "[NOW-7DAYS TO *]"),
    "month": ("past month", "[NOW-1MONTH TO *]"),
    "year": ("past year", "[NOW-1YEAR TO *]"),
    "older": ("over a year ago", "[* TO NOW-1YEAR]"),
}
MAX_QUERY_CHARS = 1000
MAX_PAGE = 100  # deeper pages cost Solr more than they serve anyone
FACET_LIMIT = 10


@dataclass(frozen=True)
class SearchRequest:
    """What a search page's URL asks for."""

    q: str = ""
    page: int = 1
    filters: tuple[tuple[str, str], ...] = ()  # (parameter, value), parameters of FACETS or "modified"

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> SearchRequest:
        """From a query string (its first value per name); junk is ignored, never an error."""
        try:
            page = min(max(int(params.get("page", "1")), 1), MAX_PAGE)
        except ValueError:
            page = 1
        filters = tuple(
            (name, params[name][:500])
            for name in (*FACETS, "modified")
            if params.get(name) and (name != "modified" or params[name] in MODIFIED)
        )
        return cls(params.get("q", "").strip()[:MAX_QUERY_CHARS], page, filters)

    def url(self, **changes: Any) -> str:
        """The query string of this search with ``changes`` (a value of None drops a filter); a
        changed query or filter goes back to page 1."""
        values: dict[str, Any] = {"q": self.q, **dict(self.filters), "page": self.page}
        if set(changes) - {"page"}:
            values["page"] = 1
        values.update(changes)
        kept = {
            key: value for key, value in values.items() if key == "q" or (value not in (None, "") and (key, value) != ("page", 1))
        }
        return "?" + urlencode(kept)

    def solr_filters(self) -> list[str]:
        return [
            f"last_modified:{MODIFIED[value][1]}" if name == "modified" else term_filter(FACETS[name], value)
            for name, value in self.filters
        ]


def search_back(text: str | None) -> str:
    """The search a searcher signs in from (``?q=...``, carried by the sign-in form), rebuilt
    from the parameters a search page knows: "" for anything else, so a sign-in can only lead
    back to a search page of this application, never elsewhere."""
    if not text or len(text) > 4 * MAX_QUERY_CHARS:
        return ""
    request = SearchRequest.from_params(dict(parse_qsl(text.removeprefix("?"))))
    return request.url() if request.q else ""


@dataclass
class Hit:
    title: str
    url: str  # what the user opens: the display URL
    snippet: Markup
    source: str
    mimetype: str
    date: str  # the last-modified day, YYYY-MM-DD ("" when unknown)
    host: str


@dataclass
class FacetValue:
    value: str
    label: str
    count: int
    url: str
    selected: bool


@dataclass
class SearchPage:
    request: SearchRequest
    hits: list[Hit] = field(default_factory=list)
    total: int = 0
    rows: int = 10
    facets: dict[str, list[FacetValue]] = field(default_factory=dict)
    suggestions: list[tuple[str, str]] = field(default_factory=list)  # (text, url)
    error: str = ""

    @property
    def pages(self) -> int:
        return min((self.total + self.rows - 1) // self.rows, MAX_PAGE)

    def page_links(self) -> list[tuple[int, str]]:
        """Numbered links around the current page."""
        first = max(1, self.request.page - 4)
        return [(number, self.request.url(page=number)) for number in range(first, min(self.pages, first + 9) + 1)]

    @property
    def first(self) -> int:
        return (self.request.page - 1) * self.rows + 1


def highlighted(snippet: str) -> Markup:
    """The snippet escaped, with Solr's markers (and only them) as balanced ``<mark>`` elements."""
    parts: list[str] = []
    inside = False
    for piece in re.split(f"([{MARK_OPEN}{MARK_CLOSE}])", snippet):
        if piece == MARK_OPEN and not inside:
            parts.append("<mark>")
            inside = True
        elif piece == MARK_CLOSE and inside:
            parts.append("</mark>")
            inside = False
        elif piece not in (MARK_OPEN, MARK_CLOSE):
            parts.append(str(escape(piece)))
    if inside:
        parts.append("</mark>")
    return Markup("".join(parts))


def display_url(doc: dict[str, Any]) -> str:
    """The link users open; only http(s) and file URLs become links (never javascript:)."""
    url = str(doc.get("display_url") or doc.get("url") or "")
    return url if urlsplit(url).scheme.lower() in ("http", "https", "file", "ftp") else ""


# the facets of every search page: FACETS' fields and the MODIFIED ranges
FACET_PARAMS: dict[str, Any] = {
    "facet": "true",
    "facet.field": list(FACETS.values()),
    "facet.limit": FACET_LIMIT,
    "facet.mincount": 1,
    "facet.query": [f"last_modified:{solr_range}" for _label, solr_range in MODIFIED.values()],
}


def run_search(
    client: SolrIndex, request: SearchRequest, principals: Principals, rows: int = 10, spellcheck: bool = True
) -> SearchPage:
    """Ask Solr for ``request``'s page of hits with its facets, of what ``principals`` may read;
    when nothing matches, for spelling suggestions (Solr's spellcheck component, if the configset
    has it) that find something they may read."""
    page = SearchPage(request, rows=rows)
    if not request.q:
        return page
    params = search_params(
        principals, rows, (request.page - 1) * rows, filters=request.solr_filters(), highlight=(MARK_OPEN, MARK_CLOSE)
    )
    params.update(FACET_PARAMS)
    results = client.search(request.q, **params)
    page.total = results.hits
    for doc in unique_hits(results.docs):
        modified = str(doc.get("last_modified") or "")
        page.hits.append(
            Hit(
                title=str(doc.get("title") or "") or "(no title)",
                url=display_url(doc),
                snippet=highlighted(snippet_of(doc, results.highlighting)),
                source=str(doc.get("source") or ""),
                mimetype=str(doc.get("mimetype") or ""),
                date=modified[:10],
                host=str(doc.get("host") or ""),
            )
        )
    page.facets = facets(request, results.facets or {})
    if not page.total and spellcheck:  # asked only then: the component costs every query time
        # collations are tried against the index with the filters, the searcher's trimming among
        # them: a suggestion is one that finds something they may read
        _filters, trimming = solr_trimming(principals)  # every parameter the trimming needs (macros off too)
        checked = client.search(
            request.q,
            rows=0,
            fq=params["fq"],
            spellcheck="true",
            **trimming,
            **{"spellcheck.collate": "true", "spellcheck.count": 10, "spellcheck.maxCollationTries": 10},
        )
        page.suggestions = suggestions(request, checked.spellcheck or {})
    return page


def facets(request: SearchRequest, solr_facets: dict[str, Any]) -> dict[str, list[FacetValue]]:
    chosen = dict(request.filters)
    shown: dict[str, list[FacetValue]] = {}
    fields = solr_facets.get("facet_fields", {})
    for name, solr_field in FACETS.items():
        flat = fields.get(solr_field, [])
        values = [(str(flat[i]), int(flat[i + 1])) for i in range(0, len(flat) - 1, 2)]
        shown[name] = [
            FacetValue(
                value,
                value,
                count,
                request.url(**{name: None if chosen.get(name) == value else value}),
                chosen.get(name) == value,
            )
            for value, count in values
        ]
    queries = solr_facets.get("facet_queries", {})
    shown["modified"] = [
        FacetValue(
            key,
            label,
            int(queries.get(f"last_modified:{solr_range}", 0)),
            request.url(modified=None if chosen.get("modified") == key else key),
            chosen.get("modified") == key,
        )
        for key, (label, solr_range) in MODIFIED.items()
        if queries.get(f"last_modified:{solr_range}", 0) or chosen.get("modified") == key
    ]
    return {name: values for name, values in shown.items() if values}


def suggestions(request: SearchRequest, spellcheck: dict[str, Any]) -> list[tuple[str, str]]:
    """The collations (whole corrected queries), each tried by Solr with the search's filters
    (maxCollationTries) and kept only if it finds something. Never a word's own suggestions: they
    come from every document's words, those the searcher may not read too, unchecked."""
    found: list[str] = []
    collations = spellcheck.get("collations", [])
    for i in range(0, len(collations) - 1, 2):  # ["collation", value, ...]; value a string or a dict
        value = collations[i + 1]
        text = value.get("collationQuery") if isinstance(value, dict) else value
        if isinstance(text, str) and text and text not in found:
            found.append(text)
    return [(text, SearchRequest(text, 1, request.filters).url()) for text in found[:3]]
