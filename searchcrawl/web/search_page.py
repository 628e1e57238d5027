"""The search page's logic, without HTTP: a query string's parameters in, a page of results out.

The page's state lives in its URL (``q``, ``page``, ``sort``, ``rows``, ``from``, ``to`` and the
facets' parameters, each repeatable), so every result page can be bookmarked and shared. Solr is
asked through searchcrawl/search/ (query.py's parameters, sent by searcher.py's ``TrimmedIndex``,
which trims every request to the searcher), as `scrapy search` asks it: one hit per URL, the /select
handler's edismax semantics. Filters from facet links are exact-term filters (nothing a visitor
types becomes filter syntax): several values of one facet are OR'ed, facets AND'ed, and each
facet's own filter is tagged and left out of its own counts (Solr's multi-select faceting), so
a searcher who chose "PDF" still sees how many Word documents they could add. Sorts, page sizes
and last-modified ranges are fixed lists; a date range is two validated days. Junk in any
parameter is ignored, never an error. Highlighting markers are two private-use characters, so
the snippet can be escaped whole and only Solr's markers become ``<mark>``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from markupsafe import Markup, escape

from searchcrawl.content.clean_text import HIGHLIGHT_MARKS
from searchcrawl.index.solr_client import IndexingError
from searchcrawl.rules.ranking_rules import URL_SCHEMES, Rules
from searchcrawl.search.evaluation import JudgedQuery
from searchcrawl.search.hybrid import SemanticSearch, fuse
from searchcrawl.search.labels import TYPE_LABELS, facet_label, language_label, type_label
from searchcrawl.search.query import (
    MAX_QUERY_CHARS,
    ONE_URL_TAG,
    RANKINGS,
    Ranking,
    marked_snippets,
    search_params,
    snippet_of,
    term_filter,
    unique_hits,
)
from searchcrawl.search.relevance_params import boost_params, pinned_filter
from searchcrawl.search.searcher import TrimmedIndex, log_failed_search
from searchcrawl.search.spelling import spelling
from searchcrawl.system import translations
from searchcrawl.system.translations import N_, ngettext
from searchcrawl.system.translations import gettext as _

logger = logging.getLogger(__name__)

MARK_OPEN, MARK_CLOSE = HIGHLIGHT_MARKS  # removed from every text indexed: only Solr makes them
# URL parameter -> Solr field, in the order the facets are shown
FACETS = {"source": "source", "host": "host", "type": "mimetype", "lang": "language"}
# the facets' titles (in English: the JSON API's; the page shows them in its language, _())
FACET_TITLES = {
    "source": N_("Source"),
    "host": N_("Host"),
    "type": N_("Type"),
    "lang": N_("Language"),
    "modified": N_("Last modified"),
    "range": N_("Date range"),
}
# the last-modified ranges: URL value -> (label, Solr range)
MODIFIED = {
    "day": (N_("past day"), "[NOW-1DAY TO *]"),
    "week": (N_("past week"), "[NOW-7DAYS TO *]"),
    "month": (N_("past month"), "[NOW-1MONTH TO *]"),
    "year": (N_("past year"), "[NOW-1YEAR TO *]"),
    "older": (N_("over a year ago"), "[* TO NOW-1YEAR]"),
}
# the sorts: URL value -> (label, Solr sort; None: by relevance, Solr's own). Ties go by relevance.
SORTS = {
    "relevance": (N_("Relevance"), None),
    "date": (N_("Date (newest first)"), "last_modified desc,score desc"),
    "title": (N_("Title (A-Z)"), "title_sort asc,score desc"),
}
ROWS = (10, 20, 50)  # hits a page a searcher may choose (besides the application's default)
MAX_PAGE = 100  # deeper pages cost Solr more than they serve anyone
MAX_FACET_VALUES = 20  # values of one facet chosen at once
MAX_VALUE_CHARS = 500
MAX_CHOSEN_CHARS = 2000  # the values chosen of all facets together: each facet link repeats them all
# the longest search URL a sign-in leads back to: the query and the values chosen, each character
# percent-encoded in up to 12 (four bytes of UTF-8), and the other parameters
MAX_BACK_CHARS = 12 * (MAX_QUERY_CHARS + MAX_CHOSEN_CHARS) + 1000
MAX_SPELLINGS = 3  # spelling suggestions shown (search/spelling.py)
FACET_LIMIT = 10
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# the parameters of a search page's URL, in the order its URLs name them
PARAMETERS = ("q", *FACETS, "modified", "from", "to", "sort", "rows", "page")
HitDay = date  # a calendar day (where a field named ``date`` hides the type: Hit's)


def tag(name: str) -> str:
    """The Solr tag of facet ``name``'s filter, which its own facet counts leave out."""
    return f"f_{name}"


def day(text: str | None) -> date | None:
    """A YYYY-MM-DD day, or None for anything else (and for the last day there is: the range
    ends the day after)."""
    if not text or not DAY.fullmatch(text):
        return None
    try:
        parsed = date.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed < date.max else None


def _pairs(params: Mapping[str, str] | Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Every (name, value) of a query string: Starlette's QueryParams (all values of a repeated
    name), a plain mapping (one value a name) or pairs (parse_qsl's)."""
    multi_items = getattr(params, "multi_items", None)
    if multi_items is not None:
        return list(multi_items())
    if isinstance(params, Mapping):
        return list(params.items())
    return list(params)


@dataclass(frozen=True)
class SearchRequest:
    """What a search page's URL asks for."""

    q: str = ""
    page: int = 1
    # (parameter, value): a parameter of FACETS, once per value chosen, or "modified" (once)
    filters: tuple[tuple[str, str], ...] = ()
    sort: str = "relevance"  # a key of SORTS
    rows: int | None = None  # hits a page, one of ROWS; None: the application's default
    date_from: str = ""  # YYYY-MM-DD: last modified on this day or later (UTC)
    date_to: str = ""  # YYYY-MM-DD: last modified on this day or earlier (UTC)

    @classmethod
    def from_params(cls, params: Mapping[str, str] | Iterable[tuple[str, str]]) -> SearchRequest:
        """From a query string: a facet's every value (up to MAX_FACET_VALUES, each cut to
        MAX_VALUE_CHARS, MAX_CHOSEN_CHARS of all facets' values together: a page's every facet
        link repeats them), the first value of any other parameter; junk is ignored, never an error."""
        first: dict[str, str] = {}
        chosen: dict[str, list[str]] = {name: [] for name in FACETS}
        room = MAX_CHOSEN_CHARS
        for name, value in _pairs(params):
            if name in FACETS:
                value = value[:MAX_VALUE_CHARS]
                if value and value not in chosen[name] and len(chosen[name]) < MAX_FACET_VALUES and len(value) <= room:
                    chosen[name].append(value)
                    room -= len(value)
            else:
                first.setdefault(name, value)
        try:
            page = min(max(int(first.get("page", "1")), 1), MAX_PAGE)
        except ValueError:
            page = 1
        filters = [(name, value) for name, values in chosen.items() for value in values]
        if first.get("modified") in MODIFIED:
            filters.append(("modified", first["modified"]))
        sort = first.get("sort", "")
        rows = first.get("rows", "")
        start, end = day(first.get("from")), day(first.get("to"))
        if start and end and start > end:  # given the wrong way round: the days between them
            start, end = end, start
        return cls(
            q=first.get("q", "").strip()[:MAX_QUERY_CHARS],
            page=page,
            filters=tuple(filters),
            sort=sort if sort in SORTS else "relevance",
            rows=int(rows) if rows in {str(n) for n in ROWS} else None,
            date_from=start.isoformat() if start else "",
            date_to=end.isoformat() if end else "",
        )

    def values(self, name: str) -> list[str]:
        """The values chosen of facet ``name`` (or "modified"), in order."""
        return [value for chosen, value in self.filters if chosen == name]

    def params(self) -> list[tuple[str, str]]:
        """The query string's (name, value) pairs, in PARAMETERS' order, defaults left out
        (``q`` always there)."""
        pairs: list[tuple[str, str]] = [("q", self.q)]
        for name in (*FACETS, "modified"):
            pairs.extend((name, value) for value in self.values(name))
        pairs += [("from", self.date_from), ("to", self.date_to)]
        pairs.append(("sort", "" if self.sort == "relevance" else self.sort))
        pairs.append(("rows", str(self.rows) if self.rows else ""))
        pairs.append(("page", "" if self.page == 1 else str(self.page)))
        return [(name, value) for name, value in pairs if value or name == "q"]

    def changed(self, **changes: Any) -> SearchRequest:
        """This search with ``changes``: a parameter of PARAMETERS to a value, a list of values
        (a facet's), or None (dropped). A change of anything but ``page`` goes back to page 1."""
        unknown = set(changes) - set(PARAMETERS)
        if unknown:
            raise ValueError(f"not a search parameter: {sorted(unknown)}")
        pairs = [(name, value) for name, value in self.params() if name not in changes]
        for name, value in changes.items():
            if isinstance(value, list | tuple):
                pairs.extend((name, str(item)) for item in value)
            elif value is not None:
                pairs.append((name, str(value)))
        if set(changes) - {"page"}:
            pairs = [(name, value) for name, value in pairs if name != "page"]
        return SearchRequest.from_params(pairs)

    def url(self, **changes: Any) -> str:
        """The query string of this search with ``changes`` (see ``changed``)."""
        request = self.changed(**changes) if changes else self
        return "?" + urlencode(request.params())

    def toggle_url(self, name: str, value: str) -> str:
        """The URL that chooses ``value`` of facet ``name`` too, or drops it if chosen, keeping
        the facet's other values; a last-modified range replaces the one chosen."""
        chosen = self.values(name)
        if name == "modified":
            return self.url(modified=None if value in chosen else value)
        if value in chosen:
            return self.url(**{name: [other for other in chosen if other != value]})
        return self.url(**{name: [*chosen, value]})

    def hidden(self, *left_out: str) -> list[tuple[str, str]]:
        """The (name, value) pairs a form carries as hidden inputs to keep this search's state,
        but for the parameters ``left_out`` (those the form sets)."""
        return [(name, value) for name, value in self.params() if name not in left_out]

    def chosen(self) -> list[tuple[str, str, str]]:
        """Every filter chosen as (facet title, value's label, URL without it), in the page's language."""
        shown = [
            (
                _(FACET_TITLES[name]),
                _(MODIFIED[value][0]) if name == "modified" else shown_label(name, value),
                self.toggle_url(name, value),
            )
            for name, value in self.filters
        ]
        if self.date_from or self.date_to:
            shown.append(
                (_(FACET_TITLES["range"]), date_range_label(self.date_from, self.date_to), self.url(to=None, **{"from": None}))
            )
        return shown

    def sort_links(self) -> list[tuple[str, str, bool]]:
        """(label, URL, chosen) of each sort, its label in the page's language."""
        return [(_(label), self.url(sort=key), key == self.sort) for key, (label, _solr) in SORTS.items()]

    def rows_links(self, default: int) -> list[tuple[int, str, bool]]:
        """(hits a page, URL, chosen) of each page size: ROWS and the application's default."""
        current = self.rows or default
        return [(rows, self.url(rows=None if rows == default else rows), rows == current) for rows in sorted({*ROWS, default})]

    def solr_filters(self) -> tuple[list[str], dict[str, str]]:
        """The filter queries of this search and the request parameters they read. A facet's
        values are one filter, tagged with the facet (``tag``), that matches any of them: a
        boolean query of ``should`` clauses, each a parameter holding one term query, so every
        value is taken literally by Solr's term parser, whatever it holds (nothing to escape, no
        separator to avoid)."""
        filters: list[str] = []
        params: dict[str, str] = {}
        for name, solr_field in FACETS.items():
            clauses = []
            for number, value in enumerate(self.values(name)):
                params[f"filter_{name}_{number}"] = term_filter(solr_field, value)
                clauses.append(f"should=$filter_{name}_{number}")
            if clauses:
                filters.append("{!bool tag=" + tag(name) + " " + " ".join(clauses) + "}")
        for value in self.values("modified"):
            filters.append("{!tag=" + tag("modified") + "}last_modified:" + MODIFIED[value][1])
        if self.date_from or self.date_to:
            filters.append(date_range_filter(self.date_from, self.date_to))
        return filters, params


def date_range_filter(start: str, end: str) -> str:
    """The filter of a date range: last modified from ``start``'s first moment to ``end``'s last
    (UTC days, both included; "" or a day that is not one leaves that side open)."""
    first, last = day(start), day(end)  # validated again: nothing but a day reaches the query
    lower = f"{first}T00:00:00Z" if first else "*"
    upper = f"{last + timedelta(days=1)}T00:00:00Z" if last else "*"
    return f"last_modified:[{lower} TO {upper}" + ("}" if upper != "*" else "]")


def date_range_label(start: str, end: str) -> str:
    """A date range chosen (two YYYY-MM-DD days, "" for an open side) in words, its days written as
    the page's language writes them."""
    first, last = translations.day(day(start)) or start, translations.day(day(end)) or end
    if start and end:
        return first if start == end else _("%(start)s to %(end)s", start=first, end=last)
    return _("from %(start)s", start=first) if start else _("until %(end)s", end=last)


def shown_type(mimetype: str) -> str:
    """A document type by name in the page's language (labels.py's label translated); a type the
    table does not name, as indexed (never through the catalogue: it may hold any character)."""
    label = type_label(mimetype)
    return translations.translated(label) if mimetype.lower() in TYPE_LABELS else label


def language_name(code: str) -> str:
    """A language by name in the page's language: in English labels.py's; in another language CLDR's
    name (Babel's) of a code labels.py names, else labels.py's; a code it does not name, as indexed."""
    label = language_label(code)
    shown = translations.current()
    if shown.code == translations.ENGLISH or label == code:
        return label
    locale = translations.known_locale(code)  # a code CLDR lacks never reaches Babel's parser
    name = locale.get_display_name(shown.locale) if locale is not None else None
    return name or label


def shown_label(name: str, value: str) -> str:
    """How the search page shows ``value`` of facet ``name`` (labels.py's facet_label) in its language."""
    if name == "type":
        return shown_type(value)
    if name == "lang":
        return language_name(value)
    return facet_label(name, value)


def search_back(text: str | None) -> str:
    """The search a searcher signs in from (``?q=...``, carried by the sign-in form), rebuilt
    from the parameters a search page knows: "" for anything else, so a sign-in can only lead
    back to a search page of this application, never elsewhere."""
    if not text or len(text) > MAX_BACK_CHARS:
        return ""
    request = SearchRequest.from_params(parse_qsl(text.removeprefix("?")))
    return request.url() if request.q else ""


@dataclass
class Hit:
    title: str
    url: str  # what the user opens: the display URL
    snippet: Markup
    source: str
    mimetype: str
    type_label: str  # the type by name ("PDF"), labels.py, in the page's language (shown_type)
    date: str  # the last-modified day, YYYY-MM-DD ("" when unknown): the JSON API's, the page's datetime
    host: str
    language: str = ""  # the language detected (the JSON API's)
    id: str = ""  # its Solr document's: the cached copy's (search/cached_copy.py)

    @property
    def day(self) -> HitDay | None:
        """The last-modified day as a date (the page writes it in its language), None when unknown."""
        return day(self.date)


@dataclass
class FacetValue:
    value: str
    label: str
    count: int | None  # None: a value chosen that Solr's top values do not hold
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
    bets: list[Hit] = field(default_factory=list)  # best bets above the hits (rules/ranking_rules.py)
    repeated: int = 0  # hits of this page left out of the list: best bets, shown above

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

    def showing(self) -> Markup:
        """What the page shows of the matches, after "N documents match; ": the range of this
        page's matches, counting those shown above as best bets (a bet is not repeated in the
        list, so "showing 1-3" of 4 matches read as a document lost), and the best bets that
        are not among them; in the page's language, its numbers too."""
        last = self.first + len(self.hits) + self.repeated - 1
        shown = _(
            "showing %(first)s&ndash;%(last)s",
            first=escape(translations.number(self.first)),
            last=escape(translations.number(last)),
        )
        others = len(self.bets) - self.repeated
        among = more = ""
        if self.repeated:
            among = ngettext(
                "the best bet above among them",
                "the %(count)s best bets above among them",
                self.repeated,
                count=escape(translations.number(self.repeated)),
            )
        if others and self.repeated:
            more = ngettext(
                "and %(count)s more best bet above",
                "and %(count)s more best bets above",
                others,
                count=escape(translations.number(others)),
            )
        elif others:
            more = ngettext(
                "and %(count)s best bet above", "and %(count)s best bets above", others, count=escape(translations.number(others))
            )
        # the clauses joined as the language joins them (a translator may order them otherwise)
        if among and more:
            shown = _("%(showing)s, %(among)s, %(more)s", showing=shown, among=among, more=more)
        elif among:
            shown = _("%(showing)s, %(among)s", showing=shown, among=among)
        elif more:
            shown = _("%(showing)s, %(more)s", showing=shown, more=more)
        return Markup(shown)  # noqa: S704 - the catalogue's words and escaped numbers


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
    """The link users open; only URL_SCHEMES' URLs become links (never javascript:)."""
    url = str(doc.get("display_url") or doc.get("url") or "")
    return url if urlsplit(url).scheme.lower() in URL_SCHEMES else ""


# the facets of every search page: FACETS' fields and the MODIFIED ranges, each counted without
# its own filter (``ex``: multi-select faceting) and keyed by its field or range (``key``). The
# searcher's trimming is never tagged: every count is of what they may read.
FACET_PARAMS: dict[str, Any] = {
    "facet": "true",
    # the source facet also leaves out the collapse on url: a URL that two sources hold counts in
    # both, so a source's count is the hits that source alone gives (within one source a URL is
    # one document); the other facets count hits, one a URL
    "facet.field": [
        f"{{!ex={tag(name)}{',' + ONE_URL_TAG if name == 'source' else ''} key={solr_field}}}{solr_field}"
        for name, solr_field in FACETS.items()
    ],
    "facet.limit": FACET_LIMIT,
    "facet.mincount": 1,
    "facet.query": [
        f"{{!ex={tag('modified')} key=modified_{key}}}last_modified:{solr_range}"
        for key, (_label, solr_range) in MODIFIED.items()
    ],
}


def hit_of(doc: dict[str, Any], highlighting: dict[str, Any] | None, passage: str = "") -> Hit:
    """A hit as the page shows it; its snippet the words' highlight, else ``passage`` (its best
    passage, where semantic search found it), else its description."""
    modified = str(doc.get("last_modified") or "")
    marked = marked_snippets(doc, highlighting)
    return Hit(
        title=str(doc.get("title") or "") or _("(no title)"),
        url=display_url(doc),
        snippet=highlighted(snippet_of(doc, highlighting) if marked or not passage else passage),
        source=str(doc.get("source") or ""),
        mimetype=str(doc.get("mimetype") or ""),
        type_label=shown_type(str(doc.get("mimetype") or "")),
        date=modified[:10],
        host=str(doc.get("host") or ""),
        language=str(doc.get("language") or ""),
        id=str(doc.get("id") or ""),
    )


def best_bets(index: TrimmedIndex, urls: list[str]) -> list[Hit]:
    """The documents pinned at ``urls`` that the searcher of ``index`` may read, in ``urls``'
    order: asked of Solr with the searcher's trimming like every search (searcher.py), so one
    they may not read is neither shown nor hinted at (rules/ranking_rules.py)."""
    if not urls:
        return []
    wanted, params = pinned_filter(urls)
    asked = {**search_params(2 * len(urls), 0, filters=[wanted]), **params, "hl": "false"}  # no words to mark
    try:
        found = index.search("*:*", asked)
    except IndexingError as exc:  # the hits are there: the page goes on without its best bets
        log_failed_search("Best bets (not shown)", None, exc)
        return []
    hits: dict[str, dict[str, Any]] = {}
    for doc in unique_hits(found.docs):
        for key in (doc.get("url"), doc.get("display_url")):
            if key:
                hits.setdefault(str(key), doc)
    ordered: list[Hit] = []
    for url in urls:
        pinned = hits.get(url)
        if pinned is not None:
            hit = hit_of(pinned, None)
            if hit.url and hit.url not in {other.url for other in ordered}:
                ordered.append(hit)
    return ordered


def run_search(
    index: TrimmedIndex,
    request: SearchRequest,
    rows: int = 10,
    spellcheck: bool = True,
    rules: Rules | None = None,
    ranking: Mapping[str, Any] | None = None,
    semantic: SemanticSearch | None = None,
) -> SearchPage:
    """Ask Solr for ``request``'s page of hits with its facets, of what the searcher of ``index``
    may read; when nothing matches, for spelling suggestions (Solr's spellcheck component, if the
    configset has it, search/spelling.py) that find something they may read. ``rows`` is the
    application's page size, unless the request chose one. ``rules`` (rules/ranking_rules.py): boosts
    applied to the hits, and on the first page the best bets of the query, above them.
    ``ranking``: Solr parameters over the /select handler's ranking defaults (search/query.py
    ``RANKINGS``: the judged sets' baseline, `scrapy relevance --ranking`). ``semantic``: the
    installation's semantic search, whose kNN query of passages is fused with the words query's
    hits on a page sorted by relevance within the fused window (search/hybrid.py)."""
    rules = rules or Rules()
    rows = request.rows or rows
    page = SearchPage(request, rows=rows)
    if not request.q:
        return page
    filters, filter_params = request.solr_filters()
    params = search_params(
        rows,
        (request.page - 1) * rows,
        filters=filters,
        highlight=(MARK_OPEN, MARK_CLOSE),
        sort=SORTS.get(request.sort, SORTS["relevance"])[1],
    )
    params.update(filter_params)
    params.update(FACET_PARAMS)
    params.update(ranking or {})
    start = (request.page - 1) * rows
    if semantic is not None and (request.sort not in ("", "relevance") or start + rows > semantic.window):
        semantic = None  # sorted otherwise, or beyond the fused window: the words query's order
    highlight = {name: params.pop(name) for name in list(params) if name == "hl" or name.startswith("hl.")}
    if semantic is None:
        params.update(highlight)
    else:  # the words query's ids read to the window, fused with the kNN query's (search/hybrid.py)
        params.update({"rows": semantic.window, "start": 0, "fl": "id,url", "hl": "false"})
    results = index.search(request.q, params, boost_params(rules.boosts))
    page.total = results.hits
    docs, passages, highlighting = list(results.docs), {}, results.highlighting
    if semantic is not None:
        fused = fuse(index, semantic, request.q, docs, params["fq"], filter_params, start, rows, highlight)
        docs, passages, highlighting = fused.docs, fused.snippets, fused.highlighting
        page.total += fused.meaning_only
    if request.page == 1:
        page.bets = best_bets(index, rules.pinned(request.q))
    shown = {hit.url for hit in page.bets}
    for doc in unique_hits(docs):
        hit = hit_of(doc, highlighting, passages.get(str(doc["id"]), ""))
        if hit.url not in shown or not hit.url:  # a best bet is not repeated below
            page.hits.append(hit)
        else:
            page.repeated += 1
    page.facets = facets(request, results.facets or {})
    if not page.total and spellcheck:  # asked only then: the component costs every query time
        corrected = spelling(index, request.q, params["fq"], filter_params)
        page.suggestions = [(text, request.url(q=text)) for text in corrected[:MAX_SPELLINGS]]
    return page


def judged_hits(
    index: TrimmedIndex,
    text: str,
    source: str | None,
    rules: Rules | None,
    ranking: str | Ranking = "page",
    depth: int = 50,
    semantic: SemanticSearch | None = None,
) -> list[Hit]:
    """The hits a searcher sees for ``text`` on the search page, best bets first, ``depth`` of
    them, of ``source`` only if given: what a judged query measures (search/evaluation.py), asked
    exactly as the page asks (``run_search``, trimmed) under the ranking ``ranking`` (a name of
    search/query.py's ``RANKINGS``, or one of a benchmark's own; its rules applied only where the
    ranking says so)."""
    chosen = RANKINGS[ranking] if isinstance(ranking, str) else ranking
    request = SearchRequest(q=text[:MAX_QUERY_CHARS], filters=(("source", source),) if source else ())
    unread = {"facet": "false", "hl": "false"}  # what the order never depends on: not computed
    page = run_search(
        index,
        request,
        rows=depth,
        spellcheck=False,
        rules=rules if chosen.rules else None,
        ranking={**chosen.params, **unread},
        semantic=semantic if chosen.semantic else None,
    )
    return [*page.bets, *page.hits]


def judged_run(
    index: TrimmedIndex,
    queries: Sequence[JudgedQuery],
    source: str | None,
    rules: Rules | None,
    ranking: str | Ranking = "page",
    semantic: SemanticSearch | None = None,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(qid -> hit URLs, qid -> each hit's source) of every judged query (``judged_hits``): a
    run of `scrapy relevance` and of the relevance page's measure."""
    ranked: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    for query in queries:
        hits = judged_hits(index, query.text, source, rules, ranking, semantic=semantic)
        # a hit without a URL (display_url's refusal of a scheme) holds its rank and matches nothing
        ranked[query.qid] = [hit.url or f"urn:searchcrawl:no-url:{rank}" for rank, hit in enumerate(hits, 1)]
        sources[query.qid] = [hit.source for hit in hits]
    return ranked, sources


def facets(request: SearchRequest, solr_facets: dict[str, Any]) -> dict[str, list[FacetValue]]:
    """Each facet's values by count, labelled (labels.py), each a link that chooses it too or
    drops it; a chosen value beyond Solr's top values is still shown (without a count), so it can
    be dropped. Last-modified ranges no document falls in are not offered."""
    shown: dict[str, list[FacetValue]] = {}
    fields = solr_facets.get("facet_fields", {})
    for name, solr_field in FACETS.items():
        flat = fields.get(solr_field, [])
        counts: dict[str, int | None] = {str(flat[i]): int(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}
        chosen = request.values(name)
        for value in chosen:
            counts.setdefault(value, None)
        shown[name] = [
            FacetValue(value, shown_label(name, value), count, request.toggle_url(name, value), value in chosen)
            for value, count in counts.items()
        ]
    queries = solr_facets.get("facet_queries", {})
    chosen = request.values("modified")
    shown["modified"] = [
        FacetValue(key, _(label), int(queries.get(f"modified_{key}", 0)), request.toggle_url("modified", key), key in chosen)
        for key, (label, _solr_range) in MODIFIED.items()
        if queries.get(f"modified_{key}", 0) or key in chosen
    ]
    return {name: values for name, values in shown.items() if values}
