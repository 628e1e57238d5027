"""What the relevance rules cost a search: the web search page's Solr requests without rules,
with boosts, with best bets, and with both (issue 59).

`.venv/bin/python -m tests.benchmarks.relevance [--documents 100000] [--queries 300]`

A dev Solr of its own on a free port, ``--documents`` synthetic public documents pushed with
pysolr (fixed seed; a title of 5 and a content of 200 words from 5,000 made-up words, ten URL
folders, two types, dates over 17 years). The rules: three boosts (a URL prefix, a type, newer
first) and 1,000 best bets (one for every fifth word, one document each). Each search is
``run_search`` as the web search page runs it (collapse, highlighting, facets, trimming); half the
queries are one word a best bet matches (the pinned document is a second request), half two
random words, each kind its own (no answer from Solr's query result cache); the four kinds take
turns, after 30 warm-up rounds. Prints and
writes (``--out``) the client's wait (median, 95th percentile) and Solr's CPU a search (its JVM's
user + system time over the run, divided by the searches).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pysolr

from searchcrawl.access.decision import Principals
from searchcrawl.access.tokens import Access
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.ranking_rules import BestBet, Boost, Rules
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import run_search
from searchcrawl.search.trimmed_index import TrimmedIndex

WORDS = [f"w{number}" for number in range(5000)]
BATCH = 5000


def documents(rng: random.Random, start: int, count: int) -> list[dict[str, Any]]:
    public = Access.public("benchmark").fields()
    docs = []
    for number in range(start, start + count):
        url = f"http://bench.test/{number % 10}/{number}"
        docs.append(
            {
                "id": f"bench!{url}",
                "url": url,
                "display_url": url,
                "source": "bench",
                "title": " ".join(rng.choices(WORDS, k=5)),
                "content": " ".join(rng.choices(WORDS, k=200)),
                "mimetype": rng.choice(["text/html", "application/pdf"]),
                "last_modified": f"20{rng.randint(10, 26)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T00:00:00Z",
                **public,
            }
        )
    return docs


def solr_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("relevance-bench.json"))
    options = parser.parse_args()
    rng = random.Random(59)
    boosts = (Boost("url", "http://bench.test/3/", 2.0), Boost("type", "application/pdf", 0.5), Boost("age", "365", 2.0))
    bets = tuple(BestBet((f"w{n}",), (f"http://bench.test/{n % 10}/{n}",)) for n in range(0, 5000, 5))
    kinds = {"no rules": Rules(), "3 boosts": Rules(boosts=boosts), "1,000 best bets": Rules(bets=bets)}
    kinds["both"] = Rules(bets=bets, boosts=boosts)
    # each kind its own queries (from one distribution), so no search finds another's answer in
    # Solr's query result cache
    queries = {
        kind: [
            f"w{5 * rng.randrange(1000)}" if number % 2 else f"w{rng.randrange(5000)} w{rng.randrange(5000)}"
            for number in range(options.queries + 30)
        ]
        for kind in kinds
    }
    with tempfile.TemporaryDirectory(prefix="searchcrawl-relevance-bench-") as folder:
        solr = DevSolr(Path(folder) / "solr", free_port())
        solr.start(timeout=600)
        try:
            client = pysolr.Solr(solr.url, timeout=120)
            for start in range(0, options.documents, BATCH):
                client.add(documents(rng, start, min(BATCH, options.documents - start)), commit=False)
            client.commit()
            index = SolrIndex(solr.url)
            pid = int(solr.pid_path.read_text())
            waits: dict[str, list[float]] = {kind: [] for kind in kinds}
            cpu: dict[str, float] = dict.fromkeys(kinds, 0.0)
            for number in range(options.queries + 30):
                for kind, rules in kinds.items():
                    query = queries[kind][number]
                    before, started = solr_cpu_ms(pid), time.perf_counter()
                    run_search(TrimmedIndex(index, Principals.anonymous()), SearchRequest(q=query), rules=rules)
                    if number >= 30:  # after the warm-up
                        waits[kind].append((time.perf_counter() - started) * 1000)
                        cpu[kind] += solr_cpu_ms(pid) - before
        finally:
            solr.stop()
    results = {
        kind: {
            "searches": len(times),
            "median_ms": round(statistics.median(times), 1),
            "p95_ms": round(sorted(times)[int(len(times) * 0.95)], 1),
            "solr_cpu_ms_per_search": round(cpu[kind] / len(times), 1),
        }
        for kind, times in waits.items()
    }
    options.out.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
