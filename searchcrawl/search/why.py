"""The "why is this hit here" administration page's logic, without HTTP: a query and a document
(its Solr id or its URL) in, the hit's rank, score and Solr's explanation in words out.

Solr is asked the search page's own search (query.py ``search_params``: the /select
handler's edismax fields and boosts, one hit per URL) under the viewer's trimming (trimmed_index.py
adds it to every request), and the
document's explanation comes from the ``[explain style=nl]`` transformer on that same query,
restricted to the document by a term filter (the term parser: the id or URL is taken literally).
A document the viewer may not read and one not in the index get one answer, so the page never
tells that a hidden document exists. The explanation tree comes from text someone typed: it is
read to a bounded depth and number of lines, and a node not understood is shown as Solr
describes it (the template escapes everything).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from searchcrawl.rules import ranking_rules
from searchcrawl.rules.ranking_rules import Boost
from searchcrawl.search.query import MAX_QUERY_CHARS, TIME_ALLOWED_MS, UF, search_params, term_filter, unique_hits
from searchcrawl.search.relevance_params import boost_params
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.system import translations
from searchcrawl.system.translations import N_, ngettext
from searchcrawl.system.translations import gettext as _

RANK_LIMIT = 500  # hits looked through for the document's rank
MAX_DEPTH = 10  # explanation levels read
MAX_LINES = 200  # lines shown
MAX_TARGET_CHARS = 8192
NOT_SHOWN = N_("This document is not among the hits this search can show.")
URL_SCHEMES = tuple(f"{scheme}:" for scheme in ranking_rules.URL_SCHEMES)  # a target that is a URL
# "weight(title:harbour in 12) [SchemaSimilarity], result of:"; a phrase: weight(content:"a b" in 3)
WEIGHT = re.compile(r"weight\((?P<field>[^:()\s]+):(?P<term>.*) in \d+\)(?: \[[^\]]*\])?, result of:", re.DOTALL)
MAX_PLUS = re.compile(r"max plus (?P<tie>[0-9.eE+-]+) times others of:")


@dataclass(frozen=True)
class Line:
    depth: int
    text: str


@dataclass
class WhyPage:
    query: str = ""
    target: str = ""  # what the viewer gave: an id or a URL
    found: bool = False  # the document matches the query, and the viewer may read it
    message: str = ""
    doc_id: str = ""
    url: str = ""
    title: str = ""
    score: float | None = None
    rank: int | None = None  # its URL's position among the collapsed hits (1-based)
    shown_by: str = ""  # another source's copy of the URL that stands for it among the hits
    partial: bool = False  # Solr's time ran out before the hits were all ranked
    lines: list[Line] = field(default_factory=list)
    truncated: bool = False


def figure(value: float, digits: int | None = None) -> str:
    """A figure of Solr's explanation as the page's language writes numbers (``digits`` after the
    decimal sign, else up to three); one beyond what reads as a number (NaN, 1e30) as Python writes it."""
    if not math.isfinite(value) or abs(value) >= 1e15:
        return f"{value:g}"
    return translations.number(value, digits)


def number(value: Any) -> str:
    """A score or weight, short: three significant digits, as the page's language writes numbers
    (English: 4.42, 6, 0.1; German: 4,42). A value that is not a number is shown as it is."""
    try:
        short = float(f"{float(value):.3g}")
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(short):
        return f"{short:g}"
    return figure(short, len(format(Decimal(f"{short:.3g}"), "f").partition(".")[2].rstrip("0")))


def plural(value: float) -> int:
    """The number that chooses a message's singular or plural: ``value`` when whole, else 2 (the
    plural: "1.5 times")."""
    return int(value) if math.isfinite(value) and value.is_integer() and abs(value) < 1e15 else 2


def whole(value: float) -> float:
    """``value`` rounded as ``figure(value, 0)`` shows it (for its plural)."""
    return float(f"{value:.0f}")


def _details(node: Any) -> list[Any]:
    details = node.get("details") if isinstance(node, dict) else None
    return [item for item in details if isinstance(item, dict)] if isinstance(details, list) else []


def _values(node: dict[str, Any]) -> dict[str, float]:
    """Every leaf below ``node`` by the first word of its description ("n", "N", "freq", "dl",
    "avgdl", "boost", ...), the first of each."""
    found: dict[str, float] = {}
    stack = list(reversed(_details(node)))
    seen = 0
    while stack and seen < 100:
        item = stack.pop()
        seen += 1
        children = _details(item)
        if children and not str(item.get("description", "")).startswith("boost"):
            stack.extend(reversed(children))
            continue
        key = re.split(r"[ ,]", str(item.get("description", "")), maxsplit=1)[0]
        try:
            found.setdefault(key, float(item.get("value")))
        except (TypeError, ValueError):
            continue
    return found


def rarity(n: float, total: float) -> str:
    """How rare a term is in a field (a message, in English: ``term_line`` translates it), "" unknown."""
    if total <= 0:
        return ""
    share = n / total
    if share <= 0.01:
        return N_("very rare")
    if share <= 0.1:
        return N_("rare")
    if share <= 0.5:
        return N_("common")
    return N_("very common")


def length(dl: float, avgdl: float) -> str:
    """How long a field is against its average (a message, in English: ``term_line`` translates it), "" unknown."""
    if avgdl <= 0:
        return ""
    if dl < 0.75 * avgdl:
        return N_("short")
    if dl > 1.5 * avgdl:
        return N_("long")
    return N_("of average length")


def _rarity_reason(term: str, solr_field: str, values: dict[str, float]) -> str | None:
    """How rare the term (or phrase) is in the field, from Solr's ``n`` and ``N``; None unknown."""
    if "n" not in values or "N" not in values or not (rare := rarity(values["n"], values["N"])):
        return None
    n, total = values["n"], values["N"]
    variables = {"rarity": _(rare), "field": solr_field, "n": figure(n, 0), "total": figure(total, 0)}
    if " " in term:
        return ngettext(
            "the phrase is %(rarity)s in %(field)s (%(n)s of %(total)s document)",
            "the phrase is %(rarity)s in %(field)s (%(n)s of %(total)s documents)",
            plural(whole(total)),
            **variables,
        )
    return ngettext(
        "the word is %(rarity)s in %(field)s (%(n)s of %(total)s document)",
        "the word is %(rarity)s in %(field)s (%(n)s of %(total)s documents)",
        plural(whole(total)),
        **variables,
    )


def _frequency_reason(values: dict[str, float]) -> str | None:
    """How often the document holds the term (``freq``) or the phrase (``phraseFreq``); None unknown."""
    freq = values.get("freq", values.get("phraseFreq"))
    if freq is None:
        return None
    return ngettext("it occurs %(count)s time here", "it occurs %(count)s times here", plural(freq), count=figure(freq))


def _length_reason(solr_field: str, values: dict[str, float]) -> str | None:
    """How long the field is against its average (``dl``, ``avgdl``); None unknown."""
    if "dl" not in values or "avgdl" not in values or not (long := length(values["dl"], values["avgdl"])):
        return None
    dl, avgdl = values["dl"], values["avgdl"]
    return ngettext(
        "the %(field)s is %(length)s (%(words)s word, average %(average)s)",
        "the %(field)s is %(length)s (%(words)s words, average %(average)s)",
        plural(whole(dl)),
        field=solr_field,
        length=_(long),
        words=figure(dl, 0),
        average=figure(avgdl, 0),
    )


def _boost_reason(solr_field: str, values: dict[str, float]) -> str | None:
    """The field's boost, when it is not 1; else None."""
    boost = values.get("boost")
    if boost is not None and abs(boost - 1) > 1e-6:  # (not NaN either)
        return _("%(field)s is boosted ×%(boost)s", field=solr_field, boost=figure(boost))
    return None


def term_line(node: dict[str, Any], match: re.Match[str]) -> str:
    """One BM25 term (or phrase) weight in words: its contribution, how rare it is in the field,
    how often the document holds it, how long the field is, and a field boost (in the current
    language: the page's, English outside a request)."""
    solr_field, term = match["field"], match["term"]
    term = term[1:-1] if len(term) > 1 and term.startswith('"') and term.endswith('"') else term
    values = _values(node)
    said = [
        reason
        for reason in (
            _rarity_reason(term, solr_field, values),
            _frequency_reason(values),
            _length_reason(solr_field, values),
            _boost_reason(solr_field, values),
        )
        if reason is not None
    ]
    score = number(node.get("value"))
    if not said:
        return _("‘%(term)s’ in %(field)s: %(score)s", term=term, field=solr_field, score=score)
    reasons = said[0]
    for reason in said[1:]:  # a list of the reasons, joined as the language joins clauses
        reasons = _("%(reasons)s; %(reason)s", reasons=reasons, reason=reason)
    return _("‘%(term)s’ in %(field)s: %(score)s (%(reasons)s)", term=term, field=solr_field, score=score, reasons=reasons)


def explain_lines(tree: Any, max_depth: int = MAX_DEPTH, max_lines: int = MAX_LINES) -> tuple[list[Line], bool]:
    """Solr's explanation (``[explain style=nl]`` or ``debug.explain.structured``: nested
    ``{match, value, description, details}``) as lines in words, and whether it was cut short
    (deeper than ``max_depth`` or longer than ``max_lines``)."""
    lines: list[Line] = []
    truncated = False
    stack: list[tuple[int, Any]] = [(0, tree)]
    while stack:
        depth, node = stack.pop()
        if not isinstance(node, dict):
            continue
        if len(lines) >= max_lines:
            return lines, True
        description = " ".join(str(node.get("description", "")).split())
        value = number(node.get("value"))
        children = _details(node)
        follow = True
        if node.get("match") is False:  # Solr's own words (not translated) after ours
            text, follow = _("no match: %(description)s", description=description), False
        elif weight := WEIGHT.fullmatch(description):
            text, follow = term_line(node, weight), False
        elif description == "sum of:":
            text = _("%(value)s: the sum of", value=value)
        elif description == "max of:":
            text = _("%(value)s: the best-matching field alone counts, of", value=value)
        elif tie := MAX_PLUS.fullmatch(description):
            text = _(
                "%(value)s: the best-matching field, plus %(tie)s × each other field, of", value=value, tie=number(tie["tie"])
            )
        elif description == "product of:":
            text = _("%(value)s: the product of", value=value)
        elif description == "boost":
            text = _("boost ×%(value)s", value=value)
        else:  # a node not understood: Solr's description as it is
            text = f"{value}: {description}"
        lines.append(Line(depth, text))
        if follow and children:
            if depth + 1 >= max_depth:
                truncated = True
                continue
            stack.extend((depth + 1, child) for child in reversed(children))
    return lines, truncated


def _target_filter(target: str) -> str:
    """The document's filter: its URL (``url``) or else its Solr id (``id``), taken literally."""
    if target.lower().startswith(URL_SCHEMES):
        return term_filter("url", target)
    return term_filter("id", target)


def _partial(results: Any) -> bool:
    """Whether Solr stopped at ``timeAllowed`` (its answer holds what it found by then)."""
    raw = getattr(results, "raw_response", None)
    header = raw.get("responseHeader", {}) if isinstance(raw, dict) else {}
    return bool(isinstance(header, dict) and header.get("partialResults"))


def why(index: TrimmedIndex, query: str, target: str, boosts: Iterable[Boost] = ()) -> WhyPage:
    """Why the document ``target`` (a Solr id or a URL) is a hit of ``query`` for the searcher of
    ``index`` (what they may read: the same trimming as their search), or that it is not; scored
    with the relevance page's ``boosts``, as the search page scores it (rules/ranking_rules.py)."""
    boosting = boost_params(boosts)
    query, target = query.strip()[:MAX_QUERY_CHARS], target.strip()
    page = WhyPage(query=query, target=target[:MAX_TARGET_CHARS])
    if not query or not target:
        return page
    if len(target) > MAX_TARGET_CHARS:
        page.message = NOT_SHOWN
        return page
    wanted = _target_filter(target)
    # the document under the viewer's trimming, scored and explained by the search's query; of a
    # URL two sources hold, the best-scoring copy (the one the collapse would keep)
    explained = index.search(
        query,
        {
            "fq": [wanted],
            "fl": "id,url,title,score,[explain style=nl]",
            "uf": UF,  # no query nested in the viewer's text: the search's own rule (query.py)
            "rows": 1,
            "sort": "score desc,id asc",
            "timeAllowed": TIME_ALLOWED_MS,
        },
        boosting,
    )
    if not explained.docs:
        if _partial(explained):
            page.message = N_("Solr's time ran out before it found the document: try a simpler query.")
            return page
        readable = index.search("*:*", {"fq": [wanted], "rows": 0, "timeAllowed": TIME_ALLOWED_MS})
        page.message = N_("This document does not match the query: it is not a hit.") if readable.hits else NOT_SHOWN
        return page
    doc = explained.docs[0]
    page.found = True
    page.doc_id, page.url = str(doc.get("id", "")), str(doc.get("url") or "")
    page.title = str(doc.get("title") or "")
    page.score = float(doc["score"]) if isinstance(doc.get("score"), int | float) else None
    page.lines, page.truncated = explain_lines(doc.get("[explain]"))
    params = search_params(rows=RANK_LIMIT)
    params.update(fl="id,url", hl="false")
    ranked = index.search(query, params, boosting)
    page.partial = _partial(ranked)
    for position, hit in enumerate(unique_hits(ranked.docs), start=1):
        if hit.get("id") == page.doc_id or (page.url and hit.get("url") == page.url):
            page.rank = position
            page.shown_by = "" if hit.get("id") == page.doc_id else str(hit.get("id", ""))
            break
    return page
