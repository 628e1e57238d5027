"""The start of a maintenance crawl at size (issue 58): ``DocumentTable.plan_maintenance`` over a
source of N known URLs, with the source's real rule chain deciding each URL again, on SQLite.

A document table of N indexed rows is written directly (one executemany, as a first crawl would
have left it), then the plan is timed: the seconds and the peak of Python's allocations
(tracemalloc, with --memory: a run of its own, as it slows Python) while it reads the rows in batches, decides each URL by the rule chain, and queues
them. The rule chain's share is measured apart (the same URLs through ``Admission.known``'s
decision alone).

    .venv/bin/python -m tests.benchmarks.plan --urls 10000,100000,1000000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

from searchcrawl.config.source import SourceFile, load_source
from searchcrawl.config.source_derived import rule_chain
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.database import url_hash
from searchcrawl.store.ledger import Ledger
from searchcrawl.store.models import documents
from searchcrawl.store.runs import Runs

SOURCE = """seeds = ["http://127.0.0.1:8080/index.html"]
max_depth = 20
[patterns]
exclude_glob = ["*/print/*"]
"""


def fill(database: Database, source: str, count: int) -> None:
    """N indexed pages of the source, as a first crawl leaves them."""
    stamp = datetime.now(UTC)
    with database.engine.begin() as connection:
        for start in range(0, count, 20_000):
            rows = []
            for number in range(start, min(count, start + 20_000)):
                url = f"http://127.0.0.1:8080/section{number % 100}/page{number}.html"
                rows.append(
                    {
                        "source": source,
                        "url": url,
                        "url_hash": url_hash(url),
                        "state": "indexed",
                        "status": 200,
                        "depth": 2,
                        "checksum": f"{number:064x}",
                        "first_seen": stamp,
                        "last_fetched": stamp,
                        "indexed_at": stamp,
                        "failures": 0,
                    }
                )
            connection.execute(documents.insert(), rows)


def measure(count: int, folder: Path, memory: bool = False) -> dict[str, float]:
    path = folder / f"plan{count}.toml"
    path.write_text(SOURCE)
    source = load_source(SourceFile(f"plan{count}", str(path), path))
    chain = rule_chain(source, 4096)
    database = Database(f"sqlite:///{folder / f'plan-{count}.sqlite3'}")
    table = DocumentTable(database)
    fill(database, source.name, count)
    urls = [f"http://127.0.0.1:8080/section{number % 100}/page{number}.html" for number in range(min(count, 100_000))]
    started = time.perf_counter()
    for url in urls:
        chain.refusal(url, 2)
    rules_us = (time.perf_counter() - started) / len(urls) * 1e6
    del urls
    run = Runs(database).start(source.name)
    table = table.for_run(run.id)
    if memory:  # tracemalloc slows every allocation: a run of its own
        tracemalloc.start()
    started = time.perf_counter()
    queued, excluded = Ledger(table, source.name).plan_maintenance(chain.refusal)
    seconds = time.perf_counter() - started
    _current, peak = tracemalloc.get_traced_memory() if memory else (0, 0)
    tracemalloc.stop()
    database.close()
    assert queued == count and excluded == 0, (queued, excluded)
    return {
        "urls": count,
        "plan_seconds": round(seconds, 2),
        "plan_us_per_url": round(seconds / count * 1e6, 1),
        "rule_chain_us_per_url": round(rules_us, 1),
        **({"peak_python_mb": round(peak / 1e6, 1)} if memory else {}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--urls", default="10000,100000", help="N, or several: 10000,100000,1000000")
    parser.add_argument("--memory", action="store_true", help="the peak of Python's allocations (tracemalloc: slower)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="searchcrawl-plan-") as folder:
        for count in (int(n) for n in options.urls.split(",")):
            print(json.dumps(measure(count, Path(folder), options.memory)), flush=True)


if __name__ == "__main__":
    main()
