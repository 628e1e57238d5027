"""How a searcher's query is asked of Solr: shared by `scrapy search` and the web search page.

Two sources that crawl one URL hold two Solr documents (ids ``<source>!<url>``, one ``url``); a
searcher sees one hit per URL: the query collapses on ``url`` (the best-scoring document of each
URL, ``nullPolicy=expand``: a document without one is kept as it is). On SolrCloud collapsing
works within a shard, and documents are routed by source, so a URL of two sources may sit on two
shards: ``unique_hits`` also drops a URL already shown. The query text itself goes to Solr as
typed: the /select handler's edismax defaults (solrconfig.xml) are the index's semantics
(phrases, stopword gaps, ``field:value``), the same for every client.

Every search is trimmed to its searcher: the parameters built here are sent by trimmed_index.py's
``TrimmedIndex``, which adds Solr's filters of what they may read (access/decision.py
``solr_trimming``) to each request, so they drop what the searcher may not read before hits are
counted, faceted, paged or spell-checked, and a count or a suggestion shows nothing of it.
A text shown to a searcher that someone or something else wrote (a spelling correction, a past
search) is checked word by word as well (``every_word_query``): finding a readable document is
not enough when the text holds a word that document need not hold (``word -secret``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from searchcrawl.semantic.fusion import QUESTION, query_shape
from searchcrawl.system.translations import N_, ngettext

# one hit per URL; tagged, so that a count by source can leave it out (a URL that two sources
# hold is a hit of each: the search page's source facet)
ONE_URL_TAG = "one_url"
COLLAPSE = "{!collapse tag=" + ONE_URL_TAG + " field=url nullPolicy=expand}"
HIT_FIELDS = "id,url,source,title,display_url,description,mimetype,last_modified,language,host,has_prose"
# what a hit's snippet is highlighted from: its prose (its text less its link lists, stored where it
# differs, content/regions.py) where it has one, else its content (``snippet_field``)
SNIPPET_FIELDS = "content,prose"


def term_filter(field: str, value: str) -> str:
    """A filter on one exact value of a string field: the term parser takes ``value`` literally
    (no query syntax, nothing to escape), so a facet value from the index is safe to send back."""
    return "{!term f=" + field + "}" + value


@dataclass(frozen=True)
class Ranking:
    """A way of ordering the hits, for measuring one against another (`scrapy relevance`):
    Solr parameters over the /select handler's defaults, and whether the relevance page's rules
    (boosts, best bets) apply."""

    params: dict[str, str]
    rules: bool
    description: str
    semantic: bool = False  # fused with the kNN query of passages where semantic search is on


#: ``page``: the search page's own ranking (hybrid where semantic search is on: search/hybrid.py).
#: ``words``: the page's words query alone, the baseline of semantic search. ``plain``: one field,
#: the content, with no field weights, phrase or other boosts, and no rules: the baseline that the
#: page's design must beat on every kind of query (each empty parameter clears the handler's default)
RANKINGS = {
    "page": Ranking({}, True, N_("the search page's ranking: the /select handler's defaults and the relevance rules"), True),
    "words": Ranking({}, True, N_("the search page's words query alone (no semantic search)")),
    "plain": Ranking(
        {"qf": "content", "pf": "", "pf2": "", "pf3": "", "bq": "", "bf": "", "boost": "", "tie": "0"},
        False,
        N_("the content field alone, no field weights, no boosts, no rules"),
    ),
}

UF = "* -_query_ -_val_"  # edismax's user fields: see search_params
TIME_ALLOWED_MS = 5000  # a search's bound in Solr (not /select's default: cursorMark refuses it)
MAX_QUERY_CHARS = 1000  # of a searcher's query (a longer one is cut)


def search_params(
    rows: int = 10,
    start: int = 0,
    source: str | None = None,
    filters: Iterable[str] = (),
    highlight: tuple[str, str] = ("*", "*"),
    sort: str | None = None,
) -> dict[str, Any]:
    """The parameters of a search (besides ``q`` and the searcher's trimming, which
    ``TrimmedIndex`` adds): one hit per URL, the hit fields, a highlighted snippet from ``content``
    between ``highlight``'s two markers (``snippet_field``), and at most ``TIME_ALLOWED_MS`` of Solr's time (a
    visitor's ``content:/.*a.*b.*/`` or ``*e*`` gets what was found by then). ``sort`` is Solr's
    (None: by relevance); the copy of a URL that stands for it is its best-scoring one whatever
    the sort."""
    fq = [COLLAPSE]
    if source:
        fq.append(term_filter("source", source))
    fq.extend(filters)
    sorting = {"sort": sort} if sort else {}
    return {
        **sorting,
        "rows": rows,
        "start": start,
        "fl": HIT_FIELDS,
        "hl": "true",
        "hl.fl": SNIPPET_FIELDS,
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


# A question's scaffolding (issue 100, point 4): the words that make a request a question or a
# user's own ("how do I", "why does", "what is the best way to", "my", "me"), which name nothing a
# page is about. The words query never requires them (edismax's mm is 0) and weighs them as any
# other word; the kNN query reads the question whole. Dropped from the words query, or weighed
# 0.1, they gain on one judged set (scipy-lectures) and lose on the three others, python-docs held
# out by 0.014 nDCG@10 (tests/benchmarks/fusion.py --leave-one-out; docs/semantic-search.md,
# "Chosen on the other sets"): so the words query of a question is the question as typed, and the
# other forms are kept for measuring.
SCAFFOLDING = frozenset(
    "how what why where when which who whom whose do does did done can could should would will shall may might must "
    "i i'm me my mine myself you your yours we our us there way ways best possible somebody someone something "
    "want wanted need".split()
)
# the small words a request in a user's words has, and a list of keywords has not
FUNCTION_WORDS = frozenset(
    "a an the my our your to from of in on into onto at by for with without through under over like that "
    "i me we it its this these those there than then so how what why which where when "
    "ein eine einen der die das den dem mein meine zu von mit für im auf aus nach über "
    "un une le la les des du mon ma mes avec pour dans sur".split()
)
UNASKED = SCAFFOLDING | FUNCTION_WORDS
PUNCTUATION = "?,.!¿¡"  # around a word of a question, not part of it


def asked_text(text: str) -> str:
    """The words of ``text`` that ask for something: its scaffolding (``SCAFFOLDING``: "how do I",
    "best") and function words ("from", "with") left out, each without the punctuation around it.
    A page that says "what", "best" or "from" says nothing of "what is the best way to get from
    Leeds to York"."""
    words = (word.strip(PUNCTUATION) for word in text.split())
    return " ".join(word for word in words if word and word.casefold() not in UNASKED)


# query syntax a searcher may have typed (a phrase, a field, a group, a boost, a wildcard, an
# operator): such a query goes to Solr as typed, word for word
QUERY_SYNTAX = re.compile(r"""["():^*~\[\]{}\\/]|(?:^|\s)[-+!]|\b(?:AND|OR|NOT)\b|&&|\|\|""")
FORMS = ("typed", "dropped", "lowered")  # the words query of a question: as typed, scaffolding out, or weighed 0.1
QUESTION_FORM = "typed"  # measured, held out: the others did not hold


def words_text(text: str, form: str = QUESTION_FORM) -> str:
    """The text of the words query for the searcher's ``text``: a question's scaffolding
    (``SCAFFOLDING``) left out (``form`` "dropped") or weighed 0.1 ("lowered"), where the query
    is question-shaped (semantic/fusion.py ``query_shape``), holds no query syntax and keeps a word
    of its own; else, and with ``form`` "typed", ``text`` as it is."""
    if form == "typed" or QUERY_SYNTAX.search(text) or query_shape(text) != QUESTION:
        return text
    words = text.split()
    kept = [word for word in words if word.casefold().rstrip("?,.!") not in SCAFFOLDING]
    if not kept or len(kept) == len(words):
        return text
    if form == "dropped":
        return " ".join(kept)
    return " ".join(word if word in kept else f"{word.rstrip('?,.!')}^0.1" for word in words)


# Nonsense (issue 100): edismax's mm is 0, so any one word of a query makes a hit, and "what do
# ball pythons eat" finds Python's manual by "python". A coordination requirement keeps the
# documents holding a share of the query's asked words (``asked_text``), an edismax ``mm`` over
# them (``coordination_filter``); where it applies: search/results.py.
ASKED_PARAM, ASKED_MM_PARAM = "asked_q", "asked_mm"  # the request parameters the filter reads


@dataclass(frozen=True)
class Coordination:
    """The nonsense rule's requirements, each an edismax ``mm`` over a query's asked words ("":
    none): ``words`` where the model gives no verdict (semantic search off, a model without a
    floor, or failing: SEARCHCRAWL_SEARCH_COORDINATION), ``hybrid`` where it found nothing about the
    query above its floor (SEARCHCRAWL_SEARCH_COORDINATION_HYBRID). Where it found something, none.
    Each chosen leave-one-set-out on the judged sets (tests/benchmarks/nonsense.py)."""

    words: str = ""  # settings.py: opt-in where the model gives no verdict
    hybrid: str = "2<-1 4<60%"

    @classmethod
    def from_settings(cls, get: Callable[[str], Any]) -> Coordination:
        """The installation's, from its settings' ``get`` (an unset one empty: no requirement)."""
        return cls(get("SEARCHCRAWL_SEARCH_COORDINATION") or "", get("SEARCHCRAWL_SEARCH_COORDINATION_HYBRID") or "")


COORDINATION = Coordination()  # settings.py's defaults


def coordination_filter(text: str, spec: str) -> tuple[str, dict[str, str]] | None:
    """The filter query (and the request parameters it reads) that keeps the documents holding
    ``spec`` of ``text``'s asked words (``asked_text``), as edismax's ``mm`` counts them (``2<-1
    4<60%``: one or two words all, three or four all but one, more 60%, rounded down), each
    word a clause of its own (``sow``) in the fields a search reads (qf); the text in a parameter
    of its own, never spliced into query syntax, and not cached (a query's filter is its own).
    None, no filter: ``spec`` empty, a query with query syntax (asked as typed: search_params),
    or one with no asked word, or a single word and nothing else (every hit holds it)."""
    if not spec.strip() or QUERY_SYNTAX.search(text):
        return None
    asked = asked_text(text)
    if not asked or asked == text.strip(PUNCTUATION + " \t\n") and len(asked.split()) == 1:
        return None
    local = f"{{!edismax cache=false sow=true uf=-* mm=${ASKED_MM_PARAM} v=${ASKED_PARAM}}}"
    return local, {ASKED_PARAM: asked, ASKED_MM_PARAM: spec.strip()}


def unanswered(
    words_hits: int, nearest: Callable[[], int | None], coordinated: Callable[[str], bool], coordination: Coordination
) -> bool:
    """Whether a search shows no hit by the nonsense rule (issue 100): its words query found some
    (``words_hits``; none: nothing to silence), the model found nothing about it above its floor
    (``nearest``: how many documents it found; None, no verdict), and no document holds the
    share of its asked words required then (``coordinated``, asked with the requirement: the
    ``coordination`` without a verdict, else its hybrid one; "": none, the hits stand). Each
    asked only when the ones before leave it open."""
    if words_hits <= 0:
        return False
    verdict = nearest()
    if verdict:
        return False
    required = coordination.words if verdict is None else coordination.hybrid
    return bool(required.strip()) and not coordinated(required)


ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")
SPELL_FIELD = "spell"  # the spellcheck's dictionary (schema.xml): the words of title and content as written


def every_word(text: str) -> str:
    """``text`` as a query of every word in it as Solr's analysis finds them (for
    ``every_word_query``): each run of characters between ASCII white space (which every
    tokenizer breaks at; another space may not be a break, and stays inside) one quoted phrase, its
    ``"`` and ``\\`` escaped, so nothing of ``text`` is query syntax. The words under a
    negation (``-w``, ``!w``, ``NOT w``), in a group, after a field name (``title:w``, one
    word or two as the tokenizer reads it), before ``*`` or ``~`` are required like any other,
    and a piece the analysis makes several words of (``wi-fi``, ``中文``) needs them all, in
    order. A piece with no word in it (``&&``, a stopword of the fields) asks nothing."""
    pieces = (piece for piece in ASCII_SPACE.split(text) if piece)
    return " ".join('"' + piece.replace("\\", "\\\\").replace('"', '\\"') + '"' for piece in pieces)


def every_word_query(param: str, fields: str | None = None, local: str = "") -> str:
    """The query that matches a document holding every word of request parameter ``param`` (a
    text made by ``every_word``) in ``fields`` (edismax's qf; None: /select's own, the fields a
    search reads), ``local`` (local parameters such as ``key=``) added. Under the searcher's
    trimming, a text it finds a document for spells no word of a document they may not read:
    how a spelling suggestion and a past search are checked before they are shown. A text with
    no word at all finds nothing."""
    parts = [local] if local else []
    parts += [f"qf='{fields}'"] if fields else []
    return "{!edismax " + " ".join([*parts, "mm=100%", "uf=-*", "v=$" + param]) + "}"


def every_word_counts(texts: Sequence[str], name: str, fields: str | None = None, local: str = "") -> dict[str, Any]:
    """The request parameters that count, for each of ``texts``, the documents holding every
    word of it (``every_word_query`` in ``fields``, ``local`` added): a facet query keyed
    ``<name><number>`` each, reading the text from the parameter of that name, never spliced
    into query syntax. ``counted`` reads the answer."""
    params: dict[str, Any] = {"facet": "true", "facet.query": []}
    for number, text in enumerate(texts):
        key = f"{name}{number}"
        params[key] = every_word(text)
        params["facet.query"].append(every_word_query(key, fields, f"key={key} {local}".strip()))
    return params


def counted(facets: dict[str, Any] | None, key: str) -> bool:
    """Whether Solr's facet query ``key`` counted a document (not when its count is missing:
    a check that did not run passes nothing)."""
    try:
        return int((facets or {}).get("facet_queries", {}).get(key)) > 0
    except (TypeError, ValueError):
        return False


def matching(total: int, shown: str | None = None) -> str:
    """How many documents match, in words: "1 document matches", "0 documents match"; in the page's
    language on a page (English outside one: the command line's), with the number as ``shown``
    (the page's, written by its language: ``number(total)``), else as it is."""
    return ngettext("%(count)s document matches", "%(count)s documents match", total, count=total if shown is None else shown)


def unique_hits(docs: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The documents in order, each URL once (see the module docstring: SolrCloud shards)."""
    shown: set[str] = set()
    for doc in docs:
        url = doc.get("url") or doc["id"]
        if url in shown:
            continue
        shown.add(url)
        yield doc


def snippet_field(doc: dict[str, Any]) -> str:
    """The field ``doc``'s snippet is highlighted from: ``prose`` where it has one (its text less
    its link lists: navigation is no sentence, issue 91), else ``content``."""
    return "prose" if doc.get("has_prose") is True else "content"


def marked_snippets(doc: dict[str, Any], highlighting: dict[str, Any] | None) -> list[str]:
    """``doc``'s highlighted snippets, from its ``snippet_field``. Highlighting is keyed by the
    uniqueKey: the document's Solr id, solr_id(source, url)."""
    return list((highlighting or {}).get(doc["id"], {}).get(snippet_field(doc)) or [])


def snippet_of(doc: dict[str, Any], highlighting: dict[str, Any] | None) -> str:
    """The hit's highlighted snippet (whitespace folded), else its description."""
    snippets = marked_snippets(doc, highlighting)
    if snippets:
        return " ".join(snippets[0].split())
    return str(doc.get("description") or "")
