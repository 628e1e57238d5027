"""Scale-out benchmark: pages/s of one shared crawl of a 2,021-page site by 1 process, then by 2
processes (a fresh source each time, same site, same Solr, same PostgreSQL, one run). Each
process keeps 16 requests in flight (CONCURRENT_REQUESTS); the site allows 32 at once, so that
its fleet-wide politeness limit is not what is measured.

    .venv/bin/python -m tests.benchmarks.scaleout [--solr-url URL] [--nodes 1,2]

Starts its own PostgreSQL (Debian's package) and, without --solr-url, its own dev Solr.
Not part of the test suite: timings on a shared machine are for ratios measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from searchcrawl.dev.solr_runner import DevSolr, free_port
from tests.benchmarks.synthetic import nginx
from tests.conftest import ROOT, postgres_server
from tests.sites import build_intranet


def shared_crawl(name: str, nodes: int, work: Path, solr_url: str, db_url: str) -> float:
    """Seconds from starting ``nodes`` processes on one source until the last has finished."""
    env = dict(
        os.environ,
        SEARCHCRAWL_SOURCES_DIR=str(work / "sources"),
        SEARCHCRAWL_DATA_DIR=str(work / "data"),
        SOLR_URL=solr_url,
        SEARCHCRAWL_DB_URL=db_url,
        PYTHONPATH=str(ROOT),
    )
    args = [sys.executable, "-m", "scrapy", "crawl", name, "-s", "LOG_LEVEL=WARNING"]
    started = time.monotonic()
    processes = [
        subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for _ in range(nodes)
    ]
    for process in processes:
        _, errors = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"crawl {name} failed:\n{errors[-3000:]}")
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--solr-url", default="")
    parser.add_argument("--nodes", default="1,2", help="process counts to compare, e.g. 1,2,3")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-bench-"))
    (work / "sources").mkdir()
    (work / "site").mkdir()
    pages = build_intranet(work / "site", sections=20, per_section=50)
    solr = None
    solr_url = args.solr_url
    if not solr_url:
        solr = DevSolr(work / "solr", free_port())
        solr_url = solr.start(timeout=600)
    results: dict[str, object] = {"pages": len(pages), "cpus": os.cpu_count()}
    try:
        with postgres_server() as db_url, nginx(work / "site", work / "nginx") as site:  # nginx: CPU for the crawlers
            for nodes in [int(n) for n in args.nodes.split(",")]:
                name = f"bench-scaleout-{nodes}"
                # the site's fleet-wide concurrency must not be what limits the fleet (the default 8 would:
                # politeness caps a single site, however many nodes there are)
                (work / "sources" / f"{name}.toml").write_text(
                    f'seeds = ["{site.url}index.html"]\nshared = true\nconcurrent_per_site = 32\n'
                )
                seconds = shared_crawl(name, nodes, work, solr_url, db_url)
                results[f"{nodes}_processes"] = {"seconds": round(seconds, 2), "pages_per_s": round(len(pages) / seconds, 1)}
        one = results.get("1_processes")
        for nodes in [int(n) for n in args.nodes.split(",")][1:]:
            if isinstance(one, dict):
                many = results[f"{nodes}_processes"]
                assert isinstance(many, dict)
                results[f"speedup_{nodes}_vs_1"] = round(many["pages_per_s"] / one["pages_per_s"], 2)
        print(json.dumps(results, indent=2))
    finally:
        if solr is not None:
            solr.stop()


if __name__ == "__main__":
    main()
