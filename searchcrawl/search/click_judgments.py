"""Judgments from clicks: a site's own searches and the hits opened from them (the query
analytics, store/searches.py) read as a judged set in the field's format (search/evaluation.py),
so that the traffic of the people who search becomes a test set.

Each first page of results with at least one click is an *impression* of its hits:
- a hit opened and stayed on (its *dwell*, the time to the searcher's next click on that page or
  next search, at least ``SATISFIED_SECONDS``), or the last hit opened with nothing after it
  (the searcher stopped there), says 2: it answered;
- a hit opened and left sooner says 1: it looked right, and was not quite;
- a hit shown *above* a clicked one and not opened says 0: it was seen and passed over (Joachims'
  "skip above"; the hits below the last click say nothing: they may not have been seen).
A (query, page) pair's grade is the rounded mean of its impressions' labels, once it has at
least ``min_impressions``; a query (grouped by its normalized form) is kept once it has at least
``min_searches`` searches with a click. Queries get ids ``c001``, ... in the order of their
number of searches, and the kind ``clicks``.

Known biases, to read the figures by:
- **position**: people open the first hits more, whatever they hold; a page never shown on the
  first page is never judged, so a set from clicks favours the ranking that made it, and a new
  ranking that finds an answer the old one buried scores no better for it (recall cannot be
  measured from clicks: judge such queries by reading);
- **presentation**: a good title or snippet draws the click, not the page's answer;
- **dwell**: known only up to the searcher's next action on the search page (a last click's
  dwell is unknown and read as satisfied; a searcher who gave up after it was not); without
  user names logged (SEARCHCRAWL_WEB_LOG_USERS), only a next click on the same page ends it;
- **mixed intents**: everyone's searches of one query are pooled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from w3lib.url import safe_url_string

from searchcrawl.search.evaluation import JudgedQuery, page_key
from searchcrawl.store.searches import Impression

SATISFIED_SECONDS = 30  # a dwell this long says the page answered (the field's usual threshold)
SESSION_GAP = timedelta(minutes=30)  # a next search later than this does not end a dwell
KIND = "clicks"


@dataclass
class ClickSet:
    queries: list[JudgedQuery]
    judgments: dict[str, dict[str, int]]  # qid -> {URL: grade} (read_qrels keys them by page_key)
    impressions: int  # searches with a click read


def labels(impression: Impression, next_action: datetime | None) -> dict[str, tuple[str, int]]:
    """Each page's label in one impression (see the module's docstring): its key (page_key) ->
    (its URL, 0, 1 or 2); a page shown or opened twice is labelled once, its best label; a hit
    without a URL says nothing."""
    found: dict[str, tuple[str, int]] = {}
    clicks = [(position, url, at) for position, url, at in impression.clicks if url]
    if not clicks:
        return found
    lowest = max(position for position, _url, _at in clicks)
    opened = {page_key(url) for _position, url, _at in clicks}
    for offset, url in enumerate(impression.shown):
        key = page_key(url) if url else ""
        if url and impression.first + offset < lowest and key not in opened:
            found.setdefault(key, (url, 0))
    for number, (_position, url, at) in enumerate(clicks):
        ended = clicks[number + 1][2] if number + 1 < len(clicks) else next_action
        if ended is not None and ended <= at:  # a search in another tab before it: unknown
            ended = None
        label = 2 if ended is None or ended - at >= timedelta(seconds=SATISFIED_SECONDS) else 1
        key = page_key(url)
        found[key] = (found[key][0] if key in found else url, max(label, found[key][1] if key in found else 0))
    return found


def next_actions(impressions: Sequence[Impression]) -> list[datetime | None]:
    """For each impression, the moment its searcher's next search began (within SESSION_GAP;
    None when unknown: no user logged, or none came)."""
    found: list[datetime | None] = [None] * len(impressions)
    latest: dict[str, int] = {}
    for number, impression in enumerate(impressions):  # oldest first
        if impression.user is None:
            continue
        earlier = latest.get(impression.user)
        if earlier is not None and impression.at - impressions[earlier].at <= SESSION_GAP:
            found[earlier] = impression.at
        latest[impression.user] = number
    return found


def judged_from_clicks(impressions: Sequence[Impression], min_searches: int = 3, min_impressions: int = 2) -> ClickSet:
    """The judged set of ``impressions`` (oldest first; see the module's docstring)."""
    moments = next_actions(impressions)
    per_query: dict[str, dict[str, list[int]]] = {}
    searched: dict[str, int] = {}
    texts: dict[str, str] = {}
    urls: dict[str, str] = {}  # a page's key -> its URL as clicked or shown (first seen)
    read = 0
    for impression, moment in zip(impressions, moments, strict=True):
        if not impression.clicks:
            continue
        read += 1
        searched[impression.normalized] = searched.get(impression.normalized, 0) + 1
        texts.setdefault(impression.normalized, impression.query)
        found = per_query.setdefault(impression.normalized, {})
        for key, (url, label) in labels(impression, moment).items():
            urls.setdefault(key, url)
            found.setdefault(key, []).append(label)
    kept = sorted((query for query, count in searched.items() if count >= min_searches), key=lambda q: (-searched[q], q))
    queries: list[JudgedQuery] = []
    judgments: dict[str, dict[str, int]] = {}
    for number, normalized in enumerate(kept, 1):
        qid = f"c{number:03d}"
        grades = {
            urls[key]: int(sum(given) / len(given) + 0.5)
            for key, given in per_query[normalized].items()
            if len(given) >= min_impressions
        }
        if grades:
            queries.append(JudgedQuery(qid, KIND, texts[normalized]))
            judgments[qid] = grades
    return ClickSet(queries, judgments, read)


def queries_text(queries: Sequence[JudgedQuery]) -> str:
    """A query file (search/evaluation.py's format); tabs in a query become spaces."""
    return "".join(f"{query.qid}\t{query.kind}\t{' '.join(query.text.split())}\n" for query in queries)


def qrels_text(judgments: dict[str, dict[str, int]]) -> str:
    """TREC qrels of ``judgments``: each page by its URL (percent-encoded: no space in it)."""
    return "".join(
        f"{qid} 0 {safe_url_string(url)} {grade}\n" for qid, grades in judgments.items() for url, grade in sorted(grades.items())
    )
