"""Query analytics' costs (issue 59): what logging adds to a search page, how fast the writer
writes, how long the analytics page's reports take over a large table, and a completion.

    .venv/bin/python -m tests.benchmarks.analytics --searches 200000 [--postgresql URL]

Measures, on a SQLite file in a temp dir (and on PostgreSQL when a URL is given):
- a search page's share: ``Analytics.record`` and ten signed click links (a page's hits), CPU
  per page, the writer not running (the request's own cost);
- the writer: searches (and a click per three) written in its batches, rows per second;
- the reports of the analytics page (totals, top queries, no hits, positions) for the last 1, 7
  and 90 days over ``--searches`` searches spread over 90 days;
- the completions: the refresh's query, then one completion from memory.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from searchcrawl.store import Database
from searchcrawl.store.database import now
from searchcrawl.store.searches import Period, Searches, filters_json, normalize
from searchcrawl.web.analytics import BATCH, Analytics, new_search_id

WORDS = "harbour master quay tugboat pilot ferry lighthouse dredger rudder anchor beacon cargo jetty mooring".split()


def per_page_cpu(pages: int = 20_000) -> float:
    """CPU µs a search page spends logging: a record and ten signed click links."""
    log = Analytics(lambda: None, days=90, queue_size=pages + 1)  # type: ignore[arg-type,return-value]
    started = time.process_time()
    for number in range(pages):
        search_id = log.record(f"harbour master {number % 50}", [("type", "text/html")], "relevance", 1, 24, 12.5)
        for position in range(1, 11):
            log.click_url(search_id, position, f"https://intranet.example/docs/{number}/{position}.html")
    return (time.process_time() - started) / pages * 1e6


def generated(count: int, seed: int = 1) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    moment = now()
    queries = [" ".join(rng.sample(WORDS, rng.randrange(1, 4))) for _ in range(5000)]
    rows, clicks = [], []
    for _ in range(count):
        query = queries[min(int(rng.expovariate(0.01)), len(queries) - 1)]
        at = moment - timedelta(seconds=rng.randrange(90 * 86400))
        hits = 0 if rng.random() < 0.2 else rng.randrange(1, 5000)
        row = {
            "id": new_search_id(),
            "at": at,
            "query": query,
            "normalized": normalize(query),
            "filters": filters_json([]),
            "sort": "relevance",
            "page": 1,
            "hits": hits,
            "took_ms": rng.randrange(5, 400),
            "client": "web",
            "user_name": None,
        }
        rows.append(row)
        if hits and rng.random() < 0.33:
            position = min(int(rng.expovariate(0.3)) + 1, 50)
            clicks.append({"search_id": row["id"], "position": position, "url": "https://h/x", "at": at + timedelta(seconds=5)})
    return rows, clicks


def timed(function: Any, repeat: int = 3) -> float:
    """The median wall ms of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        function()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def measure(url: str, count: int) -> dict[str, Any]:
    store = Searches(Database(url))
    with store.engine.begin() as connection:
        from searchcrawl.store.models import search_clicks, searches

        connection.execute(search_clicks.delete())
        connection.execute(searches.delete())
    rows, clicks = generated(count)
    started, cpu = time.perf_counter(), time.process_time()
    click_at = 0
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        ids = {row["id"] for row in batch}
        batch_clicks = []
        while click_at < len(clicks) and clicks[click_at]["search_id"] in ids:
            batch_clicks.append(clicks[click_at])
            click_at += 1
        store.write(batch, batch_clicks)
    wall = time.perf_counter() - started
    result: dict[str, Any] = {
        "searches": count,
        "clicks": len(clicks),
        "write_rows_per_s": round((count + len(clicks)) / wall),
        "write_cpu_us_per_row": round((time.process_time() - cpu) / (count + len(clicks)) * 1e6, 1),
    }
    for days in (1, 7, 90):
        period = Period.last(days)
        result[f"reports_{days}d_ms"] = {
            "totals": round(timed(lambda p=period: store.totals(p)), 1),
            "top": round(timed(lambda p=period: store.top_queries(p, 50)), 1),
            "none": round(timed(lambda p=period: store.no_hits(p, 50)), 1),
            "positions": round(timed(lambda p=period: store.positions(p)), 1),
        }
    result["frequent_queries_ms"] = round(timed(lambda: store.frequent_queries(now() - timedelta(days=90))), 1)
    result["completions_sql_ms"] = round(timed(lambda: store.completions("harbour m", 10)), 1)
    log = Analytics(lambda: store, days=90)
    log.refresh_completions()
    calls = 2000
    started = time.perf_counter()
    for number in range(calls):
        log.completions(("h", "ha", "harbour", "harbour m", "q", "pilot f")[number % 6], 10)
    result["completion_from_memory_us"] = round((time.perf_counter() - started) / calls * 1e6, 1)
    store.database.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--searches", type=int, default=200_000)
    parser.add_argument("--postgresql", default="", help="a PostgreSQL URL to measure too (its tables are emptied)")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    results: dict[str, Any] = {"per_page_cpu_us": round(per_page_cpu(), 1)}
    with tempfile.TemporaryDirectory() as folder:
        results["sqlite"] = measure(f"sqlite:///{Path(folder) / 'analytics.sqlite3'}", args.searches)
    if args.postgresql:
        results["postgresql"] = measure(args.postgresql, args.searches)
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
