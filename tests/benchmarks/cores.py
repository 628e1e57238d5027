"""Every core of one machine (issue 74, point 2): one crawl of a site by ``processes = P`` local
crawler processes, for P = 1, 2, 4, 8, ... in one run, each from an empty data folder, with the
speed-up over one process and the CPU per page against one process's.

    .venv/bin/python -m tests.benchmarks.cores --site synthetic --pages 20000 --processes 1,2,4,8 --out bench-cores
    .venv/bin/python -m tests.benchmarks.cores --site nutch-releases --processes 1,2 --rounds 2
    .venv/bin/python -m tests.benchmarks.cores ... --set SEARCHCRAWL_OUTCOME_BATCH=1   # one transaction a page, as before

Sites: the crawl benchmark's generated one (``--pages`` N pages of 20-60 KB) or the shared
corpora's built sites (tests/benchmarks/real_sites.py). Each crawl is the crawl benchmark's phase
n (crawl.py ``Bench.processes``): `scrapy crawl` with ``SEARCHCRAWL_PROCESSES=P`` over the SQLite
document table (``--database postgresql``: a PostgreSQL cluster the benchmark starts, a new
database for each crawl), measured from outside: wall time, CPU of the crawler processes
(RUSAGE_CHILDREN counts the forked ones), the server's arrivals. ``--rounds 2`` measures
1, 2, 4, 8, 8, 4, 2, 1: each P's figures are the means of its runs, and a machine whose load
changed shows as the difference between them.

Reported for each P: seconds, pages/s over the whole crawl and while it fetched (first to last
request: the steady state without the processes' start and end), the speed-up of each over one
process's, CPU ms per page and its ratio to one process's, and the cores busy.

Where Java or nginx are missing (the lent 16-core machine: Python 3.12, no Java, no package
installs), ``--solr stand-in`` and ``--server python`` use the stand-ins of
tests/benchmarks/standins.py: a Solr that accepts every update (so the figures are the
crawler's alone, the pipeline up to Solr's door), and a web server of forked Twisted processes.
Targets (issue 74): P = 2 at least 1.8 times one process, with CPU per page at most 1.1 times, on
the 2-core machine's long crawls; P = 8 at least 6 times on 16 cores.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from searchcrawl.dev.solr_runner import DevSolr, free_port
from tests.benchmarks.crawl import Bench
from tests.benchmarks.measure import write_results
from tests.benchmarks.real_sites import SITES, build_site
from tests.benchmarks.standins import solr_stand_in, static_site
from tests.benchmarks.synthetic import Nginx, nginx

TARGETS = {2: (1.8, 1.1), 8: (6.0, None)}  # P: (speed-up at least, CPU per page at most), issue 74


@contextlib.contextmanager
def solr_for(kind: str, url: str, work: Path) -> Iterator[tuple[str, int | None]]:
    """(core URL, pid) of the Solr the crawls push to: one given, a dev Solr, or the stand-in."""
    if url:
        yield url, None
    elif kind == "stand-in":
        with solr_stand_in() as found:
            yield found
    else:
        solr = DevSolr(work / "solr", free_port(), heap="2g")
        core = solr.start(timeout=600)
        try:
            yield core, solr.status()["pid"]
        finally:
            solr.stop()


@contextlib.contextmanager
def server_for(kind: str, root: Path, work: Path, workers: int) -> Iterator[Nginx]:
    if kind == "python":
        with static_site(root, work, workers) as site:
            yield site
    else:
        with nginx(root, work) as site:
            yield site


@contextlib.contextmanager
def database_for(kind: str) -> Iterator[str | None]:
    """The PostgreSQL server's URL (a database made for each crawl), or None: SQLite."""
    if kind != "postgresql":
        yield None
        return
    from tests.conftest import postgres_server

    with postgres_server() as url:
        yield url


def summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each P's means over its runs, with the speed-ups and CPU ratios over one process's."""
    by_count: dict[int, list[dict[str, Any]]] = {}
    for run in runs:
        by_count.setdefault(run["processes"], []).append(run)

    def mean(count: int, key: str) -> float:
        return statistics.mean(run[key] for run in by_count[count] if run.get(key) is not None)

    def fetch_rate(run: dict[str, Any]) -> float | None:
        return run["requests"] / run["fetch_s"] if run.get("fetch_s") else None

    for run in runs:
        run["fetch_pages_per_s"] = fetch_rate(run)
    one = 1 if 1 in by_count else min(by_count)
    rows = []
    for count in sorted(by_count):
        row = {
            "processes": count,
            "runs": len(by_count[count]),
            "requests": round(mean(count, "requests")),
            "seconds": round(mean(count, "seconds"), 2),
            "pages_per_s": round(mean(count, "pages_per_s"), 1),
            "fetch_pages_per_s": round(mean(count, "fetch_pages_per_s"), 1),
            "speedup": round(mean(count, "pages_per_s") / mean(one, "pages_per_s"), 2),
            "fetch_speedup": round(mean(count, "fetch_pages_per_s") / mean(one, "fetch_pages_per_s"), 2),
            "cpu_ms_per_page": round(mean(count, "cpu_s_per_1000_pages"), 3),
            "cpu_per_page_vs_1": round(mean(count, "cpu_s_per_1000_pages") / mean(one, "cpu_s_per_1000_pages"), 3),
            "cores_busy": round(mean(count, "cores_busy"), 2),
            "spread_pages_per_s": [run["pages_per_s"] for run in by_count[count]],
        }
        target = TARGETS.get(count)
        if target is not None:
            speedup, cpu = target
            row["target"] = f">= {speedup}x" + (f", CPU <= {cpu}x" if cpu else "")
            row["met"] = row["speedup"] >= speedup and (cpu is None or row["cpu_per_page_vs_1"] <= cpu)
        rows.append(row)
    return rows


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"{report['site']} ({report['pages']:,} pages), {report['machine']['cpus']} CPUs, Python "
        f"{report['machine']['python']}, Solr: {report['solr']}, server: {report['server']}, "
        f"database: {report['database']}, settings: {report['settings'] or 'defaults'}",
        "",
        "| P | runs | requests | seconds | pages/s | speed-up | pages/s fetching | speed-up fetching "
        "| CPU ms / page | CPU / page vs 1 | cores busy | target | met |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["summary"]:
        lines.append(
            f"| {row['processes']} | {row['runs']} | {row['requests']:,} | {row['seconds']} | {row['pages_per_s']} "
            f"| {row['speedup']} | {row['fetch_pages_per_s']} | {row['fetch_speedup']} | {row['cpu_ms_per_page']} "
            f"| {row['cpu_per_page_vs_1']} | {row['cores_busy']} | {row.get('target', '')} | {row.get('met', '')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default="synthetic", choices=["synthetic", *SITES])
    parser.add_argument("--pages", type=int, default=20000, help="the synthetic site's N")
    parser.add_argument("--processes", default="1,2,4,8", help="the counts compared, e.g. 1,2,4,8,12")
    parser.add_argument("--rounds", type=int, default=1, help="2: the counts up, then down again")
    parser.add_argument(
        "--solr", default="dev", choices=["dev", "stand-in"], help="without --solr-url: a dev Solr or the stand-in"
    )
    parser.add_argument("--solr-url", default="")
    parser.add_argument("--server", default="nginx", choices=["nginx", "python"], help="the web server of the site")
    parser.add_argument("--server-workers", type=int, default=4, help="--server python's processes")
    parser.add_argument("--database", default="sqlite", choices=["sqlite", "postgresql"])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of every crawl")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    counts = [int(count) for count in args.processes.split(",")]
    order = [count for round_ in range(args.rounds) for count in (counts if round_ % 2 == 0 else counts[::-1])]
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-cores-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    site = build_site(args.site, work / "site", args.pages)
    print(f"built the {args.site} site ({site.pages:,} pages) in {time.monotonic() - started:.0f}s", file=sys.stderr, flush=True)
    runs: list[dict[str, Any]] = []
    about = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "site": args.site,
        "pages": site.pages,
        "solr": "given" if args.solr_url else args.solr,
        "server": args.server,
        "database": args.database,
        "settings": args.set,
    }
    with (
        solr_for(args.solr, args.solr_url, work) as (solr_url, solr_pid),
        server_for(args.server, site.root, work / "server", args.server_workers) as server,
        database_for(args.database) as postgres,
    ):
        for number, count in enumerate(order):
            bench = Bench(f"cores{number}", work / f"run{number}", solr_url, server, site, solr_pid, tuple(args.set))
            if postgres is not None:
                bench.env["SEARCHCRAWL_DB_URL"] = fresh_database(postgres, f"cores{number}")
            run = bench.processes(count)
            print(
                f"P={count}: {run['requests']} requests in {run['seconds']}s, {run['pages_per_s']} pages/s, "
                f"{run['cpu_s_per_1000_pages']} CPU ms/page, {run['cores_busy']} cores busy",
                file=sys.stderr,
                flush=True,
            )
            runs.append(run)
            report = write_results(out, {**about, "summary": summary(runs), "runs": runs}, markdown)  # after each run
    print(markdown(report))
    print(f"results in {out}")


def fresh_database(server_url: str, name: str) -> str:
    """A new database ``name`` on the benchmark's PostgreSQL server; its URL."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    engine = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


if __name__ == "__main__":
    main()
