"""Every core of one machine (issue 74, point 2): one crawl of a site by ``processes = P`` local
crawler processes, for P = 1, 2, 4, 8, ... in one run, each from an empty data folder, with the
speed-up over one process and the CPU per page against one process's.

    .venv/bin/python -m tests.benchmarks.cores --site synthetic --pages 20000 --processes 1,2,4,8 --out bench-cores
    .venv/bin/python -m tests.benchmarks.cores --site nutch-releases --processes 1,2 --rounds 2
    .venv/bin/python -m tests.benchmarks.cores ... --set SEARCHCRAWL_OUTCOME_BATCH=1   # one transaction a page, as before
    .venv/bin/python -m tests.benchmarks.cores --site nutch-releases --solr stand-in --waits \
        --processes "1@SEARCHCRAWL_SQLITE_WRITER_LOCK=false,SEARCHCRAWL_SQLITE_CHECKPOINT_INTERVAL=0,1,2@...,2"

An entry of ``--processes`` may carry settings of its own crawl, after ``@`` (``2@NAME=VALUE,NAME=VALUE``;
entries are split at the commas before a digit): before and after, alternated in one run. ``--waits``
records where each crawl's processes waited (``SEARCHCRAWL_WAIT_PROFILE``, tests/benchmarks/waits.py:
statements by kind, the writer lock, the event loop's idle time, per page; issue 94).

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
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from searchcrawl.dev.solr_runner import DevSolr, free_port
from tests.benchmarks.crawl import Bench
from tests.benchmarks.measure import markdown_table, write_results
from tests.benchmarks.real_sites import SITES, build_site
from tests.benchmarks.standins import solr_stand_in, static_site
from tests.benchmarks.synthetic import Nginx, nginx
from tests.benchmarks.waits import markdown as markdown_waits
from tests.benchmarks.waits import summarise

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


def entries(text: str) -> list[tuple[int, tuple[str, ...]]]:
    """``--processes``' entries: (P, that crawl's settings) from ``1,2@NAME=VALUE,NAME=VALUE,4``."""
    found = []
    for entry in re.split(r",(?=\d)", text):
        count, _at, settings = entry.partition("@")
        found.append((int(count), tuple(setting for setting in settings.split(",") if setting)))
    return found


def label(count: int, settings: tuple[str, ...]) -> str:
    return f"{count}@{','.join(settings)}" if settings else str(count)


def summary(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each entry's means over its runs, with the speed-ups and CPU ratios over one process's
    (of the same settings, when one ran)."""
    by_count: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_count.setdefault(run["entry"], []).append(run)

    def mean(count: str, key: str) -> float:
        return statistics.mean(run[key] for run in by_count[count] if run.get(key) is not None)

    def fetch_rate(run: dict[str, Any]) -> float | None:
        return run["requests"] / run["fetch_s"] if run.get("fetch_s") else None

    for run in runs:
        run["fetch_pages_per_s"] = fetch_rate(run)

    def one_of(entry: str) -> str:
        settings = entry.partition("@")[2]
        alone = label(1, tuple(setting for setting in settings.split(",") if setting))
        return alone if alone in by_count else ("1" if "1" in by_count else min(by_count))

    rows = []
    for count in sorted(by_count, key=lambda entry: (entry.partition("@")[2], int(entry.partition("@")[0]))):
        one = one_of(count)
        processes = int(count.partition("@")[0])
        row: dict[str, Any] = {
            "entry": count,
            "processes": processes,
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
        waits = [run["waits"] for run in by_count[count] if run.get("waits")]
        if waits:
            row["lock_wait_ms_per_page"] = round(statistics.mean(w["lock_wait_ms_per_page"] for w in waits), 3)
            row["statements_ms_per_page"] = round(statistics.mean(w["statements_ms_per_page"] for w in waits), 3)
            row["loop_idle_ms_per_page"] = round(statistics.mean(w["loop_idle_ms_per_page"] for w in waits), 3)
            for key in ("user_ms_per_page", "system_ms_per_page", "gc_ms_per_page"):  # the crawl's, inside it
                if all(key in w for w in waits):
                    row[key] = round(statistics.mean(w[key] for w in waits), 3)
        target = TARGETS.get(processes)
        if target is not None:
            speedup, cpu = target
            row["target"] = f">= {speedup}x" + (f", CPU <= {cpu}x" if cpu else "")
            row["met"] = row["speedup"] >= speedup and (cpu is None or row["cpu_per_page_vs_1"] <= cpu)
        rows.append(row)
    return rows


def markdown(report: dict[str, Any]) -> str:
    keys = ["requests", "seconds", "pages_per_s", "speedup", "fetch_pages_per_s", "fetch_speedup", "cpu_ms_per_page"]
    keys += ["cpu_per_page_vs_1", "cores_busy", "target", "met", "statements_ms_per_page", "lock_wait_ms_per_page"]
    return markdown_table(
        f"{report['site']} ({report['pages']:,} pages), {report['machine']['cpus']} CPUs, Python "
        f"{report['machine']['python']}, Solr: {report['solr']}, server: {report['server']}, "
        f"database: {report['database']}, settings: {report['settings'] or 'defaults'}",
        ["P", "runs", "requests", "seconds", "pages/s", "speed-up", "pages/s fetching", "speed-up fetching"]
        + ["CPU ms / page", "CPU / page vs 1", "cores busy", "target", "met", "statements ms / page"]
        + ["writer lock ms / page", "loop idle ms / page", "user ms / page", "system ms / page", "GC ms / page"],
        [
            [row["entry"], row["runs"], *(row.get(key, "") for key in keys)]
            + [row.get(key, "") for key in ("loop_idle_ms_per_page", "user_ms_per_page", "system_ms_per_page", "gc_ms_per_page")]
            for row in report["summary"]
        ],
        right=2,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", default="synthetic", choices=["synthetic", *SITES])
    parser.add_argument("--pages", type=int, default=20000, help="the synthetic site's N")
    parser.add_argument(
        "--processes", default="1,2,4,8", help="the counts compared, e.g. 1,2,4,8,12 (an entry's own settings: 2@NAME=VALUE)"
    )
    parser.add_argument("--waits", action="store_true", help="record where the processes waited (SEARCHCRAWL_WAIT_PROFILE)")
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
    counts = entries(args.processes)
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
        for number, (count, own) in enumerate(order):
            waits = work / f"run{number}" / "waits"
            settings = (*args.set, *own, *((f"SEARCHCRAWL_WAIT_PROFILE={waits}",) if args.waits else ()))
            bench = Bench(f"cores{number}", work / f"run{number}", solr_url, server, site, solr_pid, settings)
            if postgres is not None:
                bench.env["SEARCHCRAWL_DB_URL"] = fresh_database(postgres, f"cores{number}")
            run = bench.processes(count)
            run["entry"] = label(count, own)
            if args.waits:
                run["waits"] = summarise(waits)
                print(markdown_waits(run["waits"]), file=sys.stderr, flush=True)
            print(
                f"P={run['entry']}: {run['requests']} requests in {run['seconds']}s, {run['pages_per_s']} pages/s, "
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
