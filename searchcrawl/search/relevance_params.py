"""The relevance rules' query side: the administrator's boosts and demotions as edismax ``boost``
functions, and a best bet's pinned URLs as a filter (the rules themselves, validated, are
searchcrawl/rules/ranking_rules.py's; trimmed_index.py asks Solr with them, under the searcher's trimming).
Nothing typed on the relevance page becomes query syntax: each value is a request parameter of its
own after ``{!prefix f=url}`` or ``{!term f=...}`` (taken literally), or a URL pattern's every
character but letters, digits and the wildcards escaped (``wildcard_term``); every number is
formatted here."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from searchcrawl.rules.ranking_rules import Boost
from searchcrawl.search.query import term_filter

DAY_MS = 86_400_000


# --- Solr parameters --------------------------------------------------------------------------------


def _number(value: float) -> str:
    return repr(float(value))


def wildcard_term(glob: str) -> str:
    """``glob`` as one term of Lucene's query syntax: ``*`` and ``?`` its wildcards, every other
    character but letters and digits escaped with a backslash (so none is an operator, a space
    or the end of the term: Lucene's parser takes any escaped character literally)."""
    return "".join(char if char.isascii() and (char.isalnum() or char in "*?") else "\\" + char for char in glob)


def boost_params(boosts: Iterable[Boost]) -> dict[str, Any]:
    """edismax's ``boost`` functions of ``boosts`` (multiplied together by Solr) and the query
    parameters they read: every value the administrator typed is a parameter of its own after
    ``{!prefix f=url}`` or ``{!term f=...}`` (taken literally), every number is formatted here."""
    functions: list[str] = []
    params: dict[str, Any] = {}
    for number, boost in enumerate(boosts):
        factor = _number(boost.factor)
        if boost.kind == "age":
            half_life_ms = int(boost.value) * DAY_MS
            # 1/(1 + age/half-life): 1 today (or a date to come), 1/2 at the half-life; NOW/HOUR
            # lets Solr cache it
            fade = f"recip(max(ms(NOW/HOUR,last_modified),0),{_number(1 / half_life_ms)},1,1)"
            functions.append(f"if(exists(last_modified),sum(1,product({_number(boost.factor - 1)},{fade})),1)")
            continue
        name = f"relevance_{number}"
        if boost.kind == "url":
            params[name] = "{!prefix f=url}" + boost.value
        elif boost.kind == "glob":
            params[name] = "{!lucene}url:" + wildcard_term(boost.value)
        else:
            params[name] = term_filter("source" if boost.kind == "source" else "mimetype", boost.value)
        functions.append(f"if(exists(query(${name})),{factor},1)")
    if functions:
        params["boost"] = functions
    return params


def pinned_filter(urls: list[str]) -> tuple[str, dict[str, str]]:
    """The filter of the documents pinned at ``urls`` (their ``url`` or ``display_url``), and
    its parameters: term queries, each URL taken literally."""
    clauses: list[str] = []
    params: dict[str, str] = {}
    for number, url in enumerate(urls):
        for field_name in ("url", "display_url"):
            name = f"pinned_{field_name}_{number}"
            params[name] = term_filter(field_name, url)
            clauses.append(f"should=${name}")
    return "{!bool " + " ".join(clauses) + "}", params
