"""The query analytics store (searchcrawl/store/searches.py) on SQLite: its reports' SQL against
an oracle in Python over seeded, generated searches and clicks, the completions' prefix taken
literally, and the purge (the same tests on a real PostgreSQL: tests/e2e/test_searches_postgresql.py)."""

from __future__ import annotations

import json
import random
import statistics
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, func, select

from searchcrawl.store import Database
from searchcrawl.store.database import now
from searchcrawl.store.models import search_clicks, searches
from searchcrawl.store.searches import Period, Searches, filters_json, normalize

WORDS = ["harbour", "harbour master", "Harbour  Master", "quay", "tugboat", "pilot", "ferry times", "lighthouse"]
USERS = ["alice", "bob", "carol", "=cmd|' /C calc'!A0", "Ébène"]
WORDS += ["dredger", "50% off", "500 ships", "a_b", "axb", "=cmd", "rudder", "zz top", "ébène", "Ébène"]


@pytest.fixture(params=["sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    """SQLite here; tests/e2e/test_searches_postgresql.py runs the same tests on PostgreSQL."""
    return request.param


def database_of(backend: str, tmp_path, request) -> Database:
    url = f"sqlite:///{tmp_path / 'searches.sqlite3'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    database = Database(url)
    with database.engine.begin() as connection:  # PostgreSQL's database is the session's: start empty
        connection.execute(search_clicks.delete())
        connection.execute(searches.delete())
    return database


@dataclass
class Generated:
    rows: list[dict[str, Any]]
    clicks: list[dict[str, Any]]
    moment: datetime


def generate(seed: int, count: int = 600) -> Generated:
    """Searches over the last 40 days (a word of WORDS each, hits 0 for a third of them) and
    clicks on some of them, at ranks mostly near the top; a few clicks of no logged search."""
    rng = random.Random(seed)
    moment = now().replace(microsecond=0)
    rows, clicks = [], []
    for number in range(count):
        at = moment - timedelta(seconds=rng.randrange(40 * 86400))
        query = rng.choice(WORDS)
        hits = 0 if rng.random() < 0.33 else rng.randrange(1, 500)
        rows.append(
            {
                "id": f"{seed:08x}{number:024x}",
                "at": at,
                "query": query,
                "normalized": normalize(query),
                "filters": filters_json([("type", "text/html")] if number % 5 == 0 else []),
                "sort": "relevance",
                "page": 1 + (number % 7 == 0),
                "hits": hits,
                "took_ms": rng.randrange(1, 3000),
                "client": "web" if number % 4 else "api",
                "user_name": rng.choice(USERS) if number % 3 else None,  # a visitor, or names not logged
            }
        )
        if hits and rng.random() < 0.5:
            for _ in range(rng.randrange(1, 4)):
                position = min(int(rng.expovariate(0.3)) + 1, 60)
                clicks.append(
                    {
                        "search_id": rows[-1]["id"],
                        "position": position,
                        "url": f"https://h.example/{position}",
                        "at": at + timedelta(seconds=rng.randrange(1, 600)),
                    }
                )
    for number in range(5):  # its search's row lost (a database error): a click of its period all the same
        clicks.append({"search_id": "f" * 32, "position": 1, "url": "https://h.example/", "at": moment - timedelta(days=number)})
    return Generated(rows, clicks, moment)


def oracle(data: Generated, period: Period) -> dict[str, Any]:
    inside = [row for row in data.rows if period.since <= row["at"] < period.until]
    clicks_of: dict[str, list[int]] = defaultdict(list)
    for click in data.clicks:
        clicks_of[click["search_id"]].append(click["position"])
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in inside:
        groups[row["normalized"]].append(row)
    top = {
        query: (len(rows), statistics.fmean(row["hits"] for row in rows), sum(1 for row in rows if clicks_of[row["id"]]))
        for query, rows in groups.items()
    }
    none = {
        query: (sum(1 for row in rows if not row["hits"]), max(row["at"] for row in rows if not row["hits"]))
        for query, rows in groups.items()
        if any(not row["hits"] for row in rows)
    }
    positions: dict[str, int] = defaultdict(int)  # the clicks made in the period, their search's row lost or not
    for click in data.clicks:
        if period.since <= click["at"] < period.until:
            positions[str(click["position"]) if click["position"] <= 10 else "11+"] += 1
    abandoned = {
        query: (len(rows), max(row["at"] for row in rows if row["hits"]))
        for query, rows in groups.items()
        if not any(clicks_of[row["id"]] for row in rows) and any(row["hits"] for row in rows)
    }
    abandoned = {query: (sum(1 for row in groups[query] if row["hits"]), last) for query, (_total, last) in abandoned.items()}
    searchers: dict[str, tuple[int, int, int, datetime]] = {}
    for user in {row["user_name"] for row in inside} - {None}:
        theirs = [row for row in inside if row["user_name"] == user]
        searchers[user] = (
            len(theirs),
            sum(1 for row in theirs if not row["hits"]),
            sum(1 for row in theirs if clicks_of[row["id"]]),
            max(row["at"] for row in theirs),
        )
    return {
        "searchers": searchers,
        "abandoned": abandoned,
        "top": top,
        "none": none,
        "positions": positions,
        "searches": len(inside),
        "clicked": sum(1 for row in inside if clicks_of[row["id"]]),
        "clicks": sum(positions.values()),
        "no_hits": sum(1 for row in inside if not row["hits"]),
        "median": statistics.median(row["took_ms"] for row in inside) if inside else None,
    }


def ordered(counts: list[int]) -> bool:
    return all(a >= b for a, b in zip(counts, counts[1:], strict=False))


@pytest.mark.parametrize("seed", [1, 2])
def test_the_reports_agree_with_an_oracle(backend: str, tmp_path, request, seed: int) -> None:
    data = generate(seed)
    store = Searches(database_of(backend, tmp_path, request))
    for start in range(0, len(data.rows), 250):
        store.write(data.rows[start : start + 250], [])
    store.write([], data.clicks)
    periods = [
        Period.last(1, data.moment),
        Period.last(7, data.moment),
        Period(data.moment - timedelta(days=30), data.moment - timedelta(days=2)),
        Period.last(90, data.moment + timedelta(seconds=1)),
        Period(data.moment + timedelta(days=1), data.moment + timedelta(days=2)),  # nothing in it
    ]
    abandoned_seen = 0
    for period in periods:
        expected = oracle(data, period)
        abandoned_seen += len(expected["abandoned"])
        top = store.top_queries(period, limit=1000)
        assert {row.query: (row.searches, row.clicked) for row in top} == {q: (n, c) for q, (n, _a, c) in expected["top"].items()}
        assert all(row.average_hits == pytest.approx(expected["top"][row.query][1]) for row in top)
        assert ordered([row.searches for row in top])
        assert [row.query for row in store.top_queries(period, limit=3)] == [row.query for row in top[:3]]
        none = store.no_hits(period, limit=1000)
        assert {row.query: (row.searches, row.last) for row in none} == expected["none"]
        assert ordered([row.searches for row in none])
        abandoned = store.abandoned(period, limit=1000)
        assert {row.query: (row.searches, row.last) for row in abandoned} == expected["abandoned"]
        assert ordered([row.searches for row in abandoned])
        searchers = store.searchers(period, limit=1000)
        assert {row.user: (row.searches, row.no_hits, row.clicked, row.last) for row in searchers} == expected["searchers"]
        assert ordered([row.searches for row in searchers])
        positions = store.positions(period)
        assert [row.position for row in positions] == [*map(str, range(1, 11)), "11+"]
        assert {row.position: row.clicks for row in positions if row.clicks} == dict(expected["positions"])
        if expected["clicks"]:
            assert sum(row.share for row in positions) == pytest.approx(1)
        totals = store.totals(period)
        assert (totals.searches, totals.clicked, totals.clicks, totals.no_hits, totals.median_ms) == (
            expected["searches"],
            expected["clicked"],
            expected["clicks"],
            expected["no_hits"],
            expected["median"],
        )
    assert len(store.top_queries(periods[3], limit=1000)) == len({normalize(word) for word in WORDS})
    assert abandoned_seen  # the report was compared with some rows in it


def test_completions_are_frequent_queries_that_found_something_with_the_prefix_taken_literally(
    backend: str, tmp_path, request
) -> None:
    data = generate(3)
    store = Searches(database_of(backend, tmp_path, request))
    store.write(data.rows, [])

    def expected(prefix: str, days: int = 90) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for row in data.rows:
            if row["normalized"].startswith(normalize(prefix)) and row["hits"] and row["at"] >= now() - timedelta(days=days):
                counts[row["normalized"]] += 1
        return dict(counts)

    for prefix in ("har", "HARBOUR ", "50%", "a_", "é", "Éb", "z", "="):
        found = store.completions(prefix, limit=20)
        assert dict(found) == expected(prefix), prefix
        assert ordered([count for _query, count in found])
    assert {query for query, _count in store.completions("50%")} == {"50% off"}  # % is no wildcard
    assert {query for query, _count in store.completions("a_")} == {"a_b"}  # nor is _
    assert dict(store.completions("har", days=3)) == expected("har", days=3)
    frequent = store.frequent_queries(now() - timedelta(days=90))
    assert dict(frequent) == expected("") and ordered([count for _query, count in frequent])
    assert store.frequent_queries(now() - timedelta(days=90), limit=3) == frequent[:3]
    assert len(store.completions("", limit=5)) == 0 and store.completions("h", limit=0) == []
    assert len(store.completions("a", limit=1000)) <= 20
    assert store.completions("x" * 10_000) == []  # cut to a bounded prefix


def test_purge_deletes_searches_and_clicks_older_than_the_retention(backend: str, tmp_path, request) -> None:
    data = generate(4, count=200)
    store = Searches(database_of(backend, tmp_path, request))
    store.write(data.rows, data.clicks)
    cutoff = data.moment - timedelta(days=10)
    deleted = store.purge(cutoff)
    assert deleted == sum(1 for row in data.rows if row["at"] < cutoff)
    with store.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(searches).where(searches.c.at < cutoff)).scalar() == 0
        assert (
            connection.execute(select(func.count()).select_from(search_clicks).where(search_clicks.c.at < cutoff)).scalar() == 0
        )
        kept = connection.execute(select(func.count()).select_from(search_clicks)).scalar()
    assert kept == sum(1 for click in data.clicks if click["at"] >= cutoff)


def test_a_purge_of_more_than_one_chunk_deletes_them_all_a_chunk_a_transaction(backend: str, tmp_path, request) -> None:
    data = generate(5, count=120)
    store = Searches(database_of(backend, tmp_path, request))
    store.write(data.rows, data.clicks)
    cutoff = data.moment - timedelta(days=5)
    old_rows = sum(1 for row in data.rows if row["at"] < cutoff)
    old_clicks = sum(1 for click in data.clicks if click["at"] < cutoff)
    assert old_rows > 3 * 7 and old_clicks > 7
    transactions = []
    event.listen(store.engine, "commit", lambda connection: transactions.append(1))
    assert store.purge(cutoff, chunk=7) == old_rows
    assert len(transactions) >= old_rows // 7 + old_clicks // 7  # a chunk a transaction
    with store.engine.connect() as connection:
        assert connection.execute(select(func.count()).select_from(searches).where(searches.c.at < cutoff)).scalar() == 0
        assert (
            connection.execute(select(func.count()).select_from(search_clicks).where(search_clicks.c.at < cutoff)).scalar() == 0
        )
        assert connection.execute(select(func.count()).select_from(searches)).scalar() == len(data.rows) - old_rows
    assert store.purge(cutoff, chunk=7) == 0


def test_normalized_queries_and_filters() -> None:
    assert normalize("  Harbour\t\nMASTER ") == "harbour master" == normalize("harbour master")
    assert normalize("Straße") == "strasse" and len(normalize("x " * 1000)) == 200
    assert json.loads(filters_json([("type", "a"), ("from", "2026-01-01")])) == [["type", "a"], ["from", "2026-01-01"]]
    assert len(filters_json([("type", "v" * 600)] * 10)) <= 2000
