"""Maintenance benchmark: a 1,011-page site crawled initially, then again unchanged; the wall
time ratio (maintenance / initial) and the Solr updates the maintenance crawl made (must be 0).

    .venv/bin/python -m tests.benchmarks.maintenance [--solr-url URL]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from tests.benchmarks.frontier import crawl
from tests.benchmarks.measure import solr_updates
from tests.conftest import Site
from tests.sites import build_intranet


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solr-url", default=os.environ.get("SOLR_URL", "http://127.0.0.1:8983/solr/searchcrawl"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-bench-"))
    (work / "sources").mkdir()
    (work / "site").mkdir()
    pages = build_intranet(work / "site", sections=10, per_section=50)
    site = Site(work / "site").start()
    (work / "sources" / "bench-maintenance.toml").write_text(f'seeds = ["{site.url}index.html"]\nmax_depth = 3\n')
    results: dict[str, object] = {"pages": len(pages)}
    adds = solr_updates(args.solr_url)
    for label in ("initial", "maintenance"):
        seconds, rss = crawl("bench-maintenance", work / "sources", work / "data", args.solr_url)
        now = solr_updates(args.solr_url)
        results[label] = {
            "seconds": round(seconds, 2),
            "pages_per_s": round(len(pages) / seconds, 1),
            "peak_rss_mb": round(rss / 2**20, 1),
            "solr_updates": now - adds,
        }
        adds = now
    results["maintenance_vs_initial"] = round(results["maintenance"]["seconds"] / results["initial"]["seconds"], 2)
    print(json.dumps(results, indent=2))
    site.stop()


if __name__ == "__main__":
    main()
