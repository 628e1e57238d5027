"""The search: one ``run_search`` for the search page, the JSON API, the agents' endpoint (MCP),
`scrapy search`, `scrapy relevance` (``judged_run``) and `searchcrawl demo`, a request.py's
``SearchRequest`` in, a page of results out, without HTTP.

Solr is asked through query.py's parameters, sent by trimmed_index.py's ``TrimmedIndex``, which trims
every request to the searcher: one hit per URL, the /select handler's edismax semantics; fused with
the passages found by meaning where semantic search is on (hybrid.py), the administrator's best bets
and boosts applied (rules/ranking_rules.py), spelling asked when nothing matches (spelling.py).
Highlighting markers are two private-use characters, so the snippet can be escaped whole and only
Solr's markers become ``<mark>``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from urllib.parse import urlsplit

import pysolr
from markupsafe import Markup, escape

from searchcrawl.content.clean_text import HIGHLIGHT_MARKS
from searchcrawl.index.solr_client import IndexingError
from searchcrawl.rules.ranking_rules import URL_SCHEMES, Rules
from searchcrawl.search.evaluation import JudgedQuery
from searchcrawl.search.hybrid import Fused, SemanticSearch, fuse, nearest_or_none
from searchcrawl.search.query import (
    COORDINATION,
    MAX_QUERY_CHARS,
    ONE_URL_TAG,
    RANKINGS,
    Coordination,
    Ranking,
    coordination_filter,
    marked_snippets,
    search_params,
    snippet_of,
    unanswered,
    unique_hits,
    words_text,
)
from searchcrawl.search.relevance_params import boost_params, pinned_filter
from searchcrawl.search.request import FACETS, MAX_PAGE, MODIFIED, SORTS, SearchRequest, day, shown_label, shown_type, tag
from searchcrawl.search.spelling import spelling
from searchcrawl.search.trimmed_index import TrimmedIndex, log_failed_search
from searchcrawl.system import translations
from searchcrawl.system.translations import gettext as _
from searchcrawl.system.translations import ngettext

logger = logging.getLogger(__name__)

MARK_OPEN, MARK_CLOSE = HIGHLIGHT_MARKS  # removed from every text indexed: only Solr makes them
MAX_SPELLINGS = 3  # spelling suggestions shown (search/spelling.py)
FACET_LIMIT = 10
MARKS = re.compile(r"(</?mark>)")  # highlighted's marks of Solr's matches
HitDay = date  # a calendar day (where a field named ``date`` hides the type: Hit's)


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
    location: str = ""  # the display URL as indexed, whatever its scheme (`scrapy search` prints it)

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


def snippet_parts(snippet: Markup) -> list[dict[str, Any]]:
    """The page's snippet (escaped text, Solr's matches as ``<mark>``) as plain-text pieces. The
    page escapes everything but the markers, so ``<mark>`` there can only be one of them."""
    parts: list[dict[str, Any]] = []
    inside = False
    for piece in MARKS.split(str(snippet)):
        if piece == "<mark>":
            inside = True
        elif piece == "</mark>":
            inside = False
        elif piece:
            parts.append({"text": Markup(piece).unescape(), "match": inside})
    return parts


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
        location=str(doc.get("display_url") or doc.get("url") or doc.get("id") or ""),
    )


def best_bets(index: TrimmedIndex, urls: list[str]) -> list[Hit]:
    """The documents pinned at ``urls`` that the searcher of ``index`` may read, in ``urls``'
    order: asked of Solr with the searcher's trimming like every search (trimmed_index.py), so one
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
    coordination: Coordination = COORDINATION,
) -> SearchPage:
    """Ask Solr for ``request``'s page of hits with its facets, of what the searcher of ``index``
    may read; when nothing matches, for spelling suggestions (Solr's spellcheck component, if the
    configset has it, search/spelling.py) that find something they may read. ``rows`` is the
    application's page size, unless the request chose one. ``rules`` (rules/ranking_rules.py): boosts
    applied to the hits, and on the first page the best bets of the query, above them.
    ``ranking``: Solr parameters over the /select handler's ranking defaults (search/query.py
    ``RANKINGS``: the judged sets' baseline, `scrapy relevance --ranking`). ``semantic``: the
    installation's semantic search, whose kNN query of passages is fused with the words query's
    hits on a page sorted by relevance within the fused window (search/hybrid.py).
    ``coordination``: the nonsense rule's requirements (SEARCHCRAWL_SEARCH_COORDINATION and _HYBRID,
    ``answered``): a query the model finds nothing about and no document speaks of enough has no hit."""
    rules = rules or Rules()
    rows = request.rows or rows
    page = SearchPage(request, rows=rows)
    if not request.q:
        return page
    query = words_query(request, rows, ranking, semantic)
    results = index.search(words_text(request.q), query.params, boost_params(rules.boosts))
    found = ordered(index, query, request.q, results)
    if request.page == 1:
        page.bets = best_bets(index, rules.pinned(request.q))
    if answered(index, query, request.q, results, found, semantic, coordination):
        page.total = results.hits + found.meaning_only
        list_hits(page, found)
        page.facets = facets(request, results.facets or {})
    else:
        page.facets = facets(request, {})
    if not page.total and spellcheck:  # asked only then: the component costs every query time
        corrected = spelling(index, request.q, query.params["fq"], query.filter_params)
        page.suggestions = [(text, request.url(q=text)) for text in corrected[:MAX_SPELLINGS]]
    return page


@dataclass(frozen=True)
class WordsQuery:
    """The words query of a search (``words_query``): its Solr parameters, those its facets'
    filters read (the fusion and the spelling checks send them too), the highlighting held back
    while a fused window's ids are read (hybrid.py asks it for the page's documents alone), and
    the semantic search that orders the page (None: the words query's own order)."""

    params: dict[str, Any]
    filter_params: dict[str, str]
    highlight: dict[str, Any]
    start: int
    rows: int
    semantic: SemanticSearch | None


def fuses(request: SearchRequest, rows: int, semantic: SemanticSearch | None) -> bool:
    """Whether semantic search orders ``request``'s page of ``rows`` hits: it is on, the page is
    sorted by relevance, and it ends within the fused window (``semantic.window``); beyond it, the
    words query's own order (fusing a page past the window would rank what was never fused)."""
    start = (request.page - 1) * rows
    return semantic is not None and request.sort in ("", "relevance") and start + rows <= semantic.window


def words_query(
    request: SearchRequest, rows: int, ranking: Mapping[str, Any] | None, semantic: SemanticSearch | None
) -> WordsQuery:
    """The words query of ``request``'s page of ``rows`` hits: its filters, sort, facets and
    ``ranking``'s parameters; fused with the kNN query (``semantic``) only on a page sorted by
    relevance within the fused window, whose ids it then reads without highlighting."""
    filters, filter_params = request.solr_filters()
    start = (request.page - 1) * rows
    sort = SORTS.get(request.sort, SORTS["relevance"])[1]
    params = search_params(rows, start, filters=filters, highlight=(MARK_OPEN, MARK_CLOSE), sort=sort)
    params.update(filter_params)
    params.update(FACET_PARAMS)
    params.update(ranking or {})
    if not fuses(request, rows, semantic):
        semantic = None  # sorted otherwise, or beyond the fused window: the words query's order
    highlight = {name: params.pop(name) for name in list(params) if name == "hl" or name.startswith("hl.")}
    if semantic is None:
        params.update(highlight)
    else:  # the words query's ids read to the window, fused with the kNN query's (search/hybrid.py)
        params.update({"rows": semantic.window, "start": 0, "fl": "id,url", "hl": "false"})
    return WordsQuery(params, filter_params, highlight, start, rows, semantic)


def ordered(index: TrimmedIndex, query: WordsQuery, text: str, results: pysolr.Results) -> Fused:
    """The page's documents in order: the words query's ``results``, or where semantic search
    orders the page, their window fused with the passages found by meaning (hybrid.py)."""
    if query.semantic is None:
        return Fused(list(results.docs), {}, 0, results.highlighting or {})
    words = list(results.docs)
    fq = query.params["fq"]
    return fuse(index, query.semantic, text, words, fq, query.filter_params, query.start, query.rows, query.highlight)


def answered(
    index: TrimmedIndex,
    query: WordsQuery,
    text: str,
    results: pysolr.Results,
    found: Fused,
    semantic: SemanticSearch | None,
    coordination: Coordination,
) -> bool:
    """Whether the search's hits stand, by the nonsense rule (issue 100; query.py ``unanswered``):
    edismax's mm is 0, so any one word of a query finds pages ("what do ball pythons eat" finds
    Python's manual by "python"). A search whose words query found something has no hit when the
    model found nothing about it above its floor and no document of it holds the share of the
    query's asked words required then (``coordination_filter``, counted by Solr under the same
    trimming and filters). The model's verdict is the fused page's (free), else, on a page
    sorted by date or beyond the fused window, asked then: the same verdict on every page."""

    def nearest() -> int | None:
        if query.semantic is not None:
            return found.nearest
        if semantic is None:
            return None
        verdict = nearest_or_none(index, semantic.active(), text, query.params["fq"], query.filter_params, semantic.window)
        return None if verdict is None else len(verdict)

    def coordinated(required: str) -> bool:
        check = coordination_filter(text, required)
        if check is None:  # query syntax, one word, no asked word: the words query's hits stand
            return True
        fq, params = check
        asked = {
            **query.params,
            **params,
            "fq": [*query.params["fq"], fq],
            "rows": 0,
            "start": 0,
            "hl": "false",
            "facet": "false",
        }
        asked.pop("sort", None)
        return bool(index.search(words_text(text), asked).hits)

    return not unanswered(results.hits, nearest, coordinated, coordination)


def list_hits(page: SearchPage, found: Fused) -> None:
    """``found``'s documents as the page's hits, each URL once, with their snippets; a best bet
    shown above is not repeated below (``repeated`` counts it)."""
    shown = {hit.url for hit in page.bets}
    for doc in unique_hits(found.docs):
        hit = hit_of(doc, found.highlighting, found.snippets.get(str(doc["id"]), ""))
        if hit.url not in shown or not hit.url:
            page.hits.append(hit)
        else:
            page.repeated += 1


def judged_hits(
    index: TrimmedIndex,
    text: str,
    source: str | None,
    rules: Rules | None,
    ranking: str | Ranking = "page",
    depth: int = 50,
    semantic: SemanticSearch | None = None,
    coordination: Coordination = COORDINATION,
) -> list[Hit]:
    """The hits a searcher sees for ``text`` on the search page, best bets first, ``depth`` of
    them, of ``source`` only if given: what a judged query measures (search/evaluation.py), asked
    exactly as the page asks (``run_search``, trimmed) under the ranking ``ranking`` (a name of
    search/query.py's ``RANKINGS``, or one of a benchmark's own; its rules applied only where the
    ranking says so) and the nonsense rule's ``coordination``."""
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
        coordination=coordination,
    )
    return [*page.bets, *page.hits]


def judged_run(
    index: TrimmedIndex,
    queries: Sequence[JudgedQuery],
    source: str | None,
    rules: Rules | None,
    ranking: str | Ranking = "page",
    semantic: SemanticSearch | None = None,
    coordination: Coordination = COORDINATION,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(qid -> hit URLs, qid -> each hit's source) of every judged query (``judged_hits``): a
    run of `scrapy relevance` and of the relevance page's measure."""
    ranked: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    for query in queries:
        hits = judged_hits(index, query.text, source, rules, ranking, semantic=semantic, coordination=coordination)
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
