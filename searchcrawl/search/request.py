"""What a search asks for, as a search page's URL holds it: its parameters in, Solr's filters out.

The page's state lives in its URL (``q``, ``page``, ``sort``, ``rows``, ``from``, ``to`` and the
facets' parameters, each repeatable), so every result page can be bookmarked and shared. Filters
from facet links are exact-term filters (nothing a visitor types becomes filter syntax): several
values of one facet are OR'ed, facets AND'ed, and each facet's own filter is tagged and left out
of its own counts (Solr's multi-select faceting), so a searcher who chose "PDF" still sees how
many Word documents they could add. Sorts, page sizes and last-modified ranges are fixed lists; a
date range is two validated days. Junk in any parameter is ignored, never an error. The search
itself (one for the page, the API, MCP and the commands) is results.py's ``run_search``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode

from searchcrawl.search.labels import TYPE_LABELS, facet_label, language_label, type_label
from searchcrawl.search.query import MAX_QUERY_CHARS, term_filter
from searchcrawl.system import translations
from searchcrawl.system.translations import N_
from searchcrawl.system.translations import gettext as _

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
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# the parameters of a search page's URL, in the order its URLs name them
PARAMETERS = ("q", *FACETS, "modified", "from", "to", "sort", "rows", "page")


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
