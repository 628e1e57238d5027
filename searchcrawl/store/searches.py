"""The query analytics store (issue 59): the web application's searches and the hits opened from
them (``searches`` and ``search_clicks`` in models.py), and the reports of the analytics pages.

Written by one thread, the web application's analytics writer (searchcrawl/web/analytics.py), in
batches; read by the administration's analytics pages and by the suggestions (``completions``).
A report covers a period (``Period``: from a moment to another, the searches made between them)
and counts each search page asked for as one search (page 2 of a query is a search of its own,
as it is a request the searcher made); queries are grouped by their normalized form
(``normalize``: case-folded, runs of white space as one space), so "Harbour  Master" and
"harbour master" are one line. A click is counted on its search's row as it is written
(``searches.clicks``: a search "with a click" needs no join), and in the period it was made in
(click-through by position: the clicks of the period, by ``ix_search_clicks_at``).

Every query here is bounded: the reports by ``limit`` rows, the completions by their prefix's
length and their count; the period's searches are found by ``ix_searches_at``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, bindparam, case, delete, func, insert, literal_column, select, update

from searchcrawl.rules.ranking_rules import normal_query, printable
from searchcrawl.store.database import Database, as_utc, now
from searchcrawl.store.models import search_clicks, searches

MAX_NORMALIZED_CHARS = 200
MAX_QUERY_CHARS = 1000
MAX_FILTER_CHARS = 2000
MAX_SHOWN_CHARS = 16 * 1024  # the hits a search showed (shown_json)
MAX_SHOWN = 50  # of them (a page shows 10, 20 or 50)
MAX_IMPRESSIONS = 200_000  # searches read for click judgments at most (the newest)
MAX_URL_CHARS = 8192
MAX_PREFIX_CHARS = 100  # a completion's prefix
MAX_COMPLETIONS = 20
PURGE_CHUNK = 10_000  # rows deleted a transaction
POSITIONS = 10  # click-through by position: 1..10, then "11+"


def normalize(query: str) -> str:
    """The form a query is grouped by: as best bets match it (relevance.normal_query: case-folded,
    white space and control characters collapsed), cut to MAX_NORMALIZED_CHARS."""
    return normal_query(query)[:MAX_NORMALIZED_CHARS]


def filters_json(filters: Iterable[tuple[str, str]]) -> str:
    """The filters chosen as JSON pairs, the whole cut to MAX_FILTER_CHARS (whole pairs only);
    control characters as spaces."""
    kept: list[list[str]] = []
    size = 2
    for name, value in filters:
        pair = [printable(str(name)[:50]), printable(str(value)[:500])]
        size += len(json.dumps(pair)) + 1
        if size > MAX_FILTER_CHARS:
            break
        kept.append(pair)
    return json.dumps(kept)


def shown_json(first: int, urls: Iterable[str]) -> str:
    """The hits a page showed from rank ``first`` on, as JSON, the whole cut to MAX_SHOWN_CHARS
    (whole URLs only, each cut to MAX_URL_CHARS): what its clicks skipped (search/click_judgments.py)."""
    kept: list[str] = []
    size = 30
    for url in urls:
        if len(kept) >= MAX_SHOWN:
            break
        url = printable(str(url)[:MAX_URL_CHARS])
        size += len(json.dumps(url)) + 1
        if size > MAX_SHOWN_CHARS:
            break
        kept.append(url)
    return json.dumps({"first": max(int(first), 1), "urls": kept})


def _utc(moment: datetime) -> datetime:
    found = as_utc(moment)
    assert found is not None  # a NOT NULL column
    return found


@dataclass(frozen=True)
class Impression:
    """A search with its clicks, as click judgments read it: the query, the hits shown (``first``:
    the rank of ``shown[0]``; none known for searches logged before they were kept), and each
    click's (rank, URL, moment), in the order they were made."""

    normalized: str
    query: str
    at: datetime
    user: str | None
    first: int
    shown: list[str]
    clicks: list[tuple[int, str, datetime]]


@dataclass(frozen=True)
class Period:
    """The searches made from ``since`` (included) until ``until`` (excluded)."""

    since: datetime
    until: datetime

    @classmethod
    def last(cls, days: int, moment: datetime | None = None) -> Period:
        end = moment or now()
        return cls(end - timedelta(days=days), end)


@dataclass
class TopQuery:
    query: str  # normalized
    searches: int
    average_hits: float
    clicked: int  # searches of it with at least one click

    @property
    def click_through(self) -> float:
        return self.clicked / self.searches if self.searches else 0.0


@dataclass
class NoHitQuery:
    query: str
    searches: int
    last: datetime


@dataclass
class SearcherSearches:
    user: str
    searches: int
    no_hits: int
    clicked: int  # searches of theirs with a hit opened
    last: datetime


@dataclass
class PositionClicks:
    position: str  # "1".."10" or "11+"
    clicks: int
    share: float  # of all clicks in the period


@dataclass
class Totals:
    searches: int
    clicked: int  # searches with at least one click
    clicks: int
    median_ms: float | None
    no_hits: int

    @property
    def click_through(self) -> float:
        return self.clicked / self.searches if self.searches else 0.0


class Searches:
    """The analytics tables of one database."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.engine = database.engine

    # --- writing (the analytics writer's thread) ------------------------------------------------

    def write(self, rows: list[dict[str, Any]], clicks: list[dict[str, Any]]) -> None:
        """One batch, in one transaction: search rows (the columns of ``searches``) and clicks
        (``search_id``, ``position``, ``url``, ``at``), each counted on its search's row (the
        searches first: a click comes after its search in the writer's queue)."""
        with self.engine.begin() as connection:
            if rows:
                connection.execute(insert(searches), [{"clicks": 0, "shown": None, **row} for row in rows])
            if clicks:
                connection.execute(insert(search_clicks), clicks)
                opened: dict[str, int] = {}
                for click in clicks:
                    opened[click["search_id"]] = opened.get(click["search_id"], 0) + 1
                connection.execute(
                    update(searches)
                    .where(searches.c.id == bindparam("search"))
                    .values(clicks=searches.c.clicks + bindparam("more")),
                    [{"search": search_id, "more": more} for search_id, more in opened.items()],
                )

    def purge(self, before: datetime, chunk: int = PURGE_CHUNK) -> int:
        """Deletes the searches and clicks older than ``before``; returns the searches deleted.
        ``chunk`` rows a transaction: a retention lowered may leave millions to delete, and one
        transaction would hold SQLite's write lock (the crawls' too) for all of them."""
        deleted = 0
        for table in (search_clicks, searches):
            while True:
                oldest = select(table.c.id).where(table.c.at < before).limit(max(chunk, 1))
                with self.engine.begin() as connection:
                    count = connection.execute(delete(table).where(table.c.id.in_(oldest.scalar_subquery()))).rowcount or 0
                if table is searches:
                    deleted += count
                if count < chunk:
                    break
        return deleted

    # --- reports --------------------------------------------------------------------------------

    @staticmethod
    def _in(period: Period) -> Any:
        return and_(searches.c.at >= period.since, searches.c.at < period.until)

    def impressions(self, period: Period, limit: int = MAX_IMPRESSIONS) -> list[Impression]:
        """The period's searches on the first page of results, each with its clicks (the newest
        ``limit``), and with the user's every search of the period when users are logged (their
        next search ends a click's dwell): for click judgments. Later pages are left out as
        queries: a searcher who turned a page was not satisfied by the first, which its skips say."""
        chosen = (
            select(
                searches.c.id,
                searches.c.normalized,
                searches.c.query,
                searches.c.at,
                searches.c.user_name,
                case((searches.c.clicks > 0, searches.c.shown), else_=None).label("shown"),
                searches.c.clicks,
            )
            .where(self._in(period), searches.c.page == 1)
            .order_by(searches.c.at.desc())
            .limit(limit)
        )
        with self.engine.connect() as connection:
            rows = connection.execute(chosen).all()
            ids = [row.id for row in rows if row.clicks]
            opened: dict[str, list[tuple[int, str, datetime]]] = {}
            for start in range(0, len(ids), 500):
                found = connection.execute(
                    select(search_clicks.c.search_id, search_clicks.c.position, search_clicks.c.url, search_clicks.c.at)
                    .where(search_clicks.c.search_id.in_(ids[start : start + 500]))
                    .order_by(search_clicks.c.at, search_clicks.c.id)
                )
                for click in found:
                    opened.setdefault(click.search_id, []).append((click.position, click.url, _utc(click.at)))
        impressions = []
        for row in reversed(rows):  # oldest first
            first, shown = 1, []
            try:
                kept = json.loads(row.shown) if row.shown else {}
                first, shown = int(kept.get("first", 1)), [str(url) for url in kept.get("urls", [])]
            except (ValueError, TypeError, AttributeError):
                pass  # a row written by hand: its clicks still count
            impressions.append(
                Impression(row.normalized, row.query, _utc(row.at), row.user_name, first, shown, opened.get(row.id, []))
            )
        return impressions

    def top_queries(self, period: Period, limit: int = 100) -> list[TopQuery]:
        """The queries searched most often in ``period``: how often, their average hit count,
        and how many of those searches had a hit opened; most searched first, then by query."""
        count = func.count().label("searches")
        statement = (
            select(searches.c.normalized, count, func.avg(searches.c.hits), func.sum(case((searches.c.clicks > 0, 1), else_=0)))
            .where(self._in(period))
            .group_by(searches.c.normalized)
            .order_by(count.desc(), searches.c.normalized)
            .limit(max(1, min(limit, 10_000)))
        )
        with self.engine.connect() as connection:
            rows: list[Any] = list(connection.execute(statement).all())
        return [TopQuery(query, int(total), float(average or 0), int(opened or 0)) for query, total, average, opened in rows]

    def abandoned(self, period: Period, limit: int = 100) -> list[NoHitQuery]:
        """The queries that found documents in ``period`` but whose hits nobody opened (SharePoint's
        "abandoned queries": the hits shown were not what was looked for): how often, and when
        last; most often first."""
        count = func.count().label("searches")
        statement = (
            select(searches.c.normalized, count, func.max(searches.c.at))
            .where(self._in(period), searches.c.hits > 0)
            .group_by(searches.c.normalized)
            .having(func.max(searches.c.clicks) == 0)
            .order_by(count.desc(), searches.c.normalized)
            .limit(max(1, min(limit, 10_000)))
        )
        with self.engine.connect() as connection:
            rows: list[Any] = list(connection.execute(statement).all())
        return [NoHitQuery(query, int(total), as_utc(last) or period.until) for query, total, last in rows]

    def no_hits(self, period: Period, limit: int = 100) -> list[NoHitQuery]:
        """The queries that found nothing in ``period``: how often, and when last; most often first."""
        count = func.count().label("searches")
        statement = (
            select(searches.c.normalized, count, func.max(searches.c.at))
            .where(self._in(period), searches.c.hits == 0)
            .group_by(searches.c.normalized)
            .order_by(count.desc(), searches.c.normalized)
            .limit(max(1, min(limit, 10_000)))
        )
        with self.engine.connect() as connection:
            rows: list[Any] = list(connection.execute(statement).all())
        return [NoHitQuery(query, int(total), as_utc(last) or period.until) for query, total, last in rows]

    def searchers(self, period: Period, limit: int = 100) -> list[SearcherSearches]:
        """The signed-in searchers whose names were logged in ``period`` (only with
        SEARCHCRAWL_WEB_LOG_USERS): their searches, those that found nothing, those with a hit
        opened, and when last; most searches first, then by name. Searches without a name (a
        visitor, or logged while names were not) are not among them."""
        count = func.count().label("searches")
        statement = (
            select(
                searches.c.user_name,
                count,
                func.sum(case((searches.c.hits == 0, 1), else_=0)),
                func.sum(case((searches.c.clicks > 0, 1), else_=0)),
                func.max(searches.c.at),
            )
            .where(self._in(period), searches.c.user_name.is_not(None))
            .group_by(searches.c.user_name)
            .order_by(count.desc(), searches.c.user_name)
            .limit(max(1, min(limit, 10_000)))
        )
        with self.engine.connect() as connection:
            rows: list[Any] = list(connection.execute(statement).all())
        return [
            SearcherSearches(user, int(total), int(empty or 0), int(opened or 0), as_utc(last) or period.until)
            for user, total, empty, opened, last in rows
        ]

    def positions(self, period: Period) -> list[PositionClicks]:
        """The clicks made in ``period`` by the rank of the hit opened: 1 to POSITIONS, then the
        ranks beyond together; each with its share of all the period's clicks."""
        bucket = case((search_clicks.c.position > POSITIONS, POSITIONS + 1), else_=search_clicks.c.position).label("bucket")
        statement = (
            select(bucket, func.count())
            .where(search_clicks.c.at >= period.since, search_clicks.c.at < period.until)
            .group_by(literal_column("bucket"))
        )
        with self.engine.connect() as connection:
            found: list[Any] = list(connection.execute(statement).all())
            counts = {int(position): int(clicks) for position, clicks in found}
        total = sum(counts.values())
        return [
            PositionClicks(
                str(position) if position <= POSITIONS else f"{POSITIONS + 1}+",
                counts.get(position, 0),
                counts.get(position, 0) / total if total else 0.0,
            )
            for position in range(1, POSITIONS + 2)
        ]

    def totals(self, period: Period) -> Totals:
        """The period's searches, those with a click, the clicks made in it, the searches that
        found nothing, and the median time taken (the middle one, or the mean of the two)."""
        in_period = self._in(period)
        with self.engine.connect() as connection:
            row: Any = connection.execute(
                select(
                    func.count(),
                    func.coalesce(func.sum(case((searches.c.clicks > 0, 1), else_=0)), 0),
                    func.coalesce(func.sum(case((searches.c.hits == 0, 1), else_=0)), 0),
                ).where(in_period)
            ).one()
            total, opened, empty = int(row[0]), int(row[1]), int(row[2])
            clicks = connection.execute(
                select(func.count()).where(search_clicks.c.at >= period.since, search_clicks.c.at < period.until)
            ).scalar_one()
            median = None
            if total:
                # the middle one, or the two middle ones: one sort of the period's times
                middle = select(searches.c.took_ms).where(in_period).order_by(searches.c.took_ms)
                values: list[int] = list(connection.execute(middle.offset((total - 1) // 2).limit(2 - total % 2)).scalars())
                median = sum(values) / len(values)
        return Totals(int(total), int(opened), int(clicks), median, int(empty))

    # --- suggestions ----------------------------------------------------------------------------

    def frequent_queries(self, since: datetime, limit: int = 10_000) -> list[tuple[str, int]]:
        """The ``limit`` queries (normalized) searched most often since ``since`` that found
        documents: (query, searches), most searched first. The analytics writer keeps them in
        memory for the completions (web/analytics.py: ``Analytics.completions``)."""
        count = func.count().label("searches")
        statement = (
            select(searches.c.normalized, count)
            .where(searches.c.at >= since, searches.c.hits > 0)
            .group_by(searches.c.normalized)
            .order_by(count.desc(), searches.c.normalized)
            .limit(max(1, min(limit, 100_000)))
        )
        with self.engine.connect() as connection:
            found: list[Any] = list(connection.execute(statement).all())
        return [(str(query), int(total)) for query, total in found]

    def completions(self, prefix: str, limit: int = 10, days: int = 90) -> list[tuple[str, int]]:
        """The past queries (normalized) that found documents, starting with ``prefix``, most
        searched first, of the last ``days``: (query, searches). The prefix is normalized and
        cut to MAX_PREFIX_CHARS, ``limit`` to MAX_COMPLETIONS. These are anyone's queries, and a
        query that found something for one searcher may name what another may not read: check
        each against the searcher's own trimming before showing it."""
        prefix = normalize(prefix)[:MAX_PREFIX_CHARS]
        limit = max(0, min(limit, MAX_COMPLETIONS))
        if not prefix or not limit:
            return []
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        count = func.count().label("searches")
        statement = (
            select(searches.c.normalized, count)
            .where(
                searches.c.normalized.like(pattern, escape="\\"),
                searches.c.at >= now() - timedelta(days=max(days, 0)),
                searches.c.hits > 0,
            )
            .group_by(searches.c.normalized)
            .order_by(count.desc(), searches.c.normalized)
            .limit(limit)
        )
        with self.engine.connect() as connection:
            found: list[Any] = list(connection.execute(statement).all())
        return [(str(query), int(total)) for query, total in found]
