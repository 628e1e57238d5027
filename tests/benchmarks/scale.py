"""The scale benchmark (issue 58): does a page cost the same at 1,000,000 URLs as at 10,000?

    .venv/bin/python -m tests.benchmarks.scale --pages 10000,100000,1000000 --out bench-scale [--solr-url URL]
    .venv/bin/python -m tests.benchmarks.scale --pages 10000 --out bench-scale --database postgresql --processes 2

For each N, a site of N small pages (about 1 KB each, five links each) built on disk by streaming
(one page at a time: memory does not grow with N), served by nginx, and a sitemap index naming
sitemaps of 50,000 URLs each (sitemaps.org's limit), which robots.txt names: the crawl is wide,
every page a seed, not deep. Phases, each a ``scrapy crawl`` of its own measured from outside as
in the crawl benchmark (crawl.py's Bench: wall time, CPU, peak RSS, nginx's arrival times, Solr's
update count):

    b  the first crawl: the full pipeline into the dev Solr, SQLite document table, default settings
    c  a maintenance crawl of the unchanged site: every page's sitemap lastmod is older than its last
       fetch, so no page is requested (status 915); Solr must receive nothing
    d  a maintenance crawl after 1% of the pages changed (new text, file time and sitemap lastmod):
       exactly those must be re-indexed (the run's delta report, as `scrapy report <source> --json`
       prints it, read in the benchmark's process)

Reported per phase besides crawl.py's figures: CPU ms per URL of the site, the document table's
size on disk (SQLite file, WAL and shared memory), the delta report's counts, and the seconds
from the process's start to the first request and from the last response to its exit, with
milestones from the crawler's log between (the run started, the spider closed): in phase c the
last response is the last sitemap's, so its "end" holds the sparing of every page.

--database postgresql: the document table on a PostgreSQL cluster the benchmark starts (Debian's
package, tests/conftest.py's postgres_cluster, pg_stat_statements preloaded), a new database for
each N; each phase then also reports, from counters reset before it and read once every crawler
connection has ended, the statements per URL (pg_stat_statements' calls summed; the top ones by
calls and by time, with rows per call) and the sequential scans of the documents and frontier
tables (pg_stat_user_tables: scans and rows read, and rows read through indexes; a query that
reads a source's rows for each page shows as rows read per URL growing with N), and PostgreSQL's CPU (postmaster, backends ended and
live). --processes N: the source's ``processes = N`` (searchcrawl/ops/local_fleet.py: the crawl
forks N - 1 more crawler processes, which it waits for, so each phase's CPU, taken from the
runner's RUSAGE_CHILDREN, counts them all; peak RSS is the largest one process's).

Results go to --out as results.json and results.md; runs of other sizes or other --database and
--processes already there are kept, so each can be measured in a command of its own (and on a
shared machine, when it is free); a run with processes = N is compared with the run of one
process on the same database and size (CPU per page within 1.1 times, issue 58 point 4).
--stop-file: when that file appears, the running crawl is stopped gracefully (SIGINT: its run is
suspended) and what was measured is written, marked interrupted. The targets (issue 58): CPU per
page at the largest N within 1.15 times that at 10,000; peak RSS under 500 MB; start and end of
the maintenance crawl under 10 s; maintenance under 5% of the first crawl's wall time with zero
Solr updates; 1% changed, exactly those re-indexed. tests/e2e/test_benchmark.py runs it with a
tiny N.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from searchcrawl.dev.solr_runner import DevSolr, free_port
from tests.benchmarks.crawl import Bench
from tests.benchmarks.measure import anchors_logged, apart_from_anchors, last_run_report, process_tree_cpu
from tests.benchmarks.synthetic import WORDS, nginx, page_path
from tests.conftest import pg_bin, postgres_cluster

PHASES = {
    "b": "first crawl, full pipeline",
    "c": "maintenance, unchanged (sitemap lastmod)",
    "d": "maintenance, 1% changed",
}
URLS_PER_SITEMAP = 50_000  # sitemaps.org's limit per file
LINKS = 5  # per page: the next two pages and three at random
CHANGED_SHARE = 0.01
BUILT = datetime(2026, 11, 1, tzinfo=UTC)  # every page's file time and sitemap lastmod, as built
BASE_PAGES = 10_000  # CPU per page at larger N is compared with this N's (else the smallest N's)
CPU_RATIO_TARGET = 1.15
RSS_TARGET_MB = 500.0
START_END_TARGET_S = 10.0
MAINTENANCE_SHARE_TARGET = 0.05
PROCESSES_CPU_TARGET = 1.1  # CPU per page with processes = N over one process's (issue 58, point 4)
# Rows of the documents and frontier tables read per URL of the site in a phase, by sequential
# scans and through indexes: a page's own statements read a few rows each, a whole pass over the
# source's rows (a plan, a batch of 500 URLs) adds 1, and a query that reads the source's rows for
# each page (a scan, or an index that does not narrow it) adds about N / 2 (issue 58, point 3)
ROWS_PER_PAGE_TARGET = 100.0
SCANNED_TABLES = ("documents", "frontier")
# the benchmark's cluster: every statement's calls, rows and time counted (utility ones too: BEGIN, COMMIT)
POSTGRES_SETTINGS = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.max": "10000"}
TOP_STATEMENTS = 10
# the benchmark's own statements (resets, reads of the counters), not the crawler's
OWN_STATEMENTS = re.compile(r"pg_stat_|pg_total_relation_size|pg_database", re.IGNORECASE)
# the crawler's log, with epoch times: its milestones between the first request and the exit
LOG_FORMAT = "%(created).3f [%(name)s] %(levelname)s: %(message)s"
MILESTONES = {
    "opened": re.compile(r"\] INFO: Spider opened"),
    "run started": re.compile(r"\] INFO: (Starting|Resuming) run \d+"),  # the maintenance plan made
    "sitemaps read": re.compile(r"\] INFO: Sitemap http"),  # the last sitemap's line
    "closing": re.compile(r"\] INFO: Closing spider \("),  # the crawl's last URL done
    "run ended": re.compile(r"\] INFO: Run \d+ of \S+ is "),
    "closed": re.compile(r"\] INFO: Spider closed \("),
}


def scale_page(number: int, total: int, rng: random.Random, revision: int = 0) -> str:
    """Page ``number`` of ``total``: about 1 KB, a title, 90 words and five links (the next two
    pages, three at random), so that its links lead to URLs the sitemap queued already."""
    links = [(number + 1) % total, (number + 2) % total, *(rng.randrange(total) for _ in range(LINKS - 2))]
    title = f"{WORDS[number % len(WORDS)].title()} note {number}"
    anchors = "".join(f'<li><a href="/{page_path(link)}">{WORDS[link % len(WORDS)]} {link}</a></li>' for link in links)
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head><body>'
        f"<h1>{title}</h1><p>Note {number}, revision {revision}: {' '.join(rng.choices(WORDS, k=90))}.</p>"
        f"<ul>{anchors}</ul></body></html>"
    )


def lastmod(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%dT%H:%M:%S+00:00")


@dataclass
class ScaleSite:
    """N pages of about 1 KB at page_path(i), a sitemap index and robots.txt naming it."""

    root: Path
    pages: int
    changed_at: float | None = None  # when change() rewrote its pages (their file time and lastmod)
    changed_share: float = CHANGED_SHARE
    site_url: str = field(default="", repr=False)

    @property
    def documents(self) -> int:
        return self.pages

    @property
    def seed(self) -> str:
        return page_path(0)

    def build(self) -> ScaleSite:
        """Write every page, one at a time (a million in a few minutes, memory flat), each with
        BUILT as its file time (nginx's Last-Modified) and sitemap lastmod."""
        rng = random.Random(self.pages)
        stamp = BUILT.timestamp()
        for number in range(self.pages):
            path = self.root / page_path(number)
            if number % 1000 == 0:
                path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(scale_page(number, self.pages, rng), encoding="utf-8")
            os.utime(path, (stamp, stamp))
        return self

    def changed(self) -> range:
        """The pages change() rewrites: every (1 / share)-th from page 1."""
        return range(1, self.pages, max(1, round(1 / self.changed_share)))

    def change(self, share: float = CHANGED_SHARE) -> int:
        """Rewrite a ``share`` of the pages with new text, their file time and sitemap lastmod a
        second past now (newer than any fetch so far); returns how many."""
        self.changed_share = share
        self.changed_at = math.ceil(time.time()) + 1.0
        rng = random.Random(-self.pages)
        for number in self.changed():
            path = self.root / page_path(number)
            path.write_text(scale_page(number, self.pages, rng, revision=1), encoding="utf-8")
            os.utime(path, (self.changed_at, self.changed_at))
        self.write_sitemaps(self.site_url)
        return len(self.changed())

    def write_sitemaps(self, site_url: str) -> int:
        """sitemap_index.xml naming sitemaps/<k>.xml of URLS_PER_SITEMAP pages each (every page's
        lastmod: BUILT, or changed_at for a changed page), and robots.txt naming the index;
        written as streams. Returns how many sitemaps."""
        self.site_url = site_url
        xmlns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        built, changed = lastmod(BUILT.timestamp()), lastmod(self.changed_at) if self.changed_at else ""
        rewritten = set(self.changed()) if self.changed_at else set()
        (self.root / "sitemaps").mkdir(exist_ok=True)
        files = math.ceil(self.pages / URLS_PER_SITEMAP)
        newest = []
        for number in range(files):
            pages = range(number * URLS_PER_SITEMAP, min(self.pages, (number + 1) * URLS_PER_SITEMAP))
            with (self.root / "sitemaps" / f"{number}.xml").open("w", encoding="utf-8") as out:
                out.write(f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {xmlns}>\n')
                for page in pages:
                    out.write(
                        f"<url><loc>{site_url}{page_path(page)}</loc>"
                        f"<lastmod>{changed if page in rewritten else built}</lastmod></url>\n"
                    )
                out.write("</urlset>\n")
            newest.append(changed if rewritten.intersection(pages) else built)
        entries = "".join(
            f"<sitemap><loc>{site_url}sitemaps/{number}.xml</loc><lastmod>{newest[number]}</lastmod></sitemap>\n"
            for number in range(files)
        )
        (self.root / "sitemap_index.xml").write_text(
            f'<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex {xmlns}>\n{entries}</sitemapindex>\n', encoding="utf-8"
        )
        (self.root / "robots.txt").write_text(
            f"User-agent: *\nAllow: /\n\nSitemap: {site_url}sitemap_index.xml\n", encoding="ascii"
        )
        return files


class PostgresStats:
    """A benchmark's database on PostgreSQL: its statements (pg_stat_statements) and its tables'
    scans (pg_stat_user_tables), reset before a phase and read after it, once every crawler's
    connection has ended (a backend's counters reach the shared statistics by its exit at last)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT")

    @classmethod
    def create(cls, server_url: str, name: str) -> PostgresStats:
        """A new, empty database ``name`` on the server (dropped first if there), with the
        pg_stat_statements view."""
        admin = create_engine(server_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        stats = cls(make_url(server_url).set(database=name).render_as_string(hide_password=False))
        with stats.engine.connect() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"))
        return stats

    def idle(self, timeout: float = 120) -> None:
        """Wait until no client but this one is connected to the database."""
        deadline = time.monotonic() + timeout
        query = text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        while True:
            with self.engine.connect() as connection:
                if connection.execute(query).scalar_one() == 0:
                    return
            if time.monotonic() > deadline:
                raise SystemExit(f"clients still connected to {self.url} after {timeout:.0f} s")
            time.sleep(0.1)

    def reset(self) -> None:
        self.idle()
        with self.engine.connect() as connection:
            connection.execute(text("SELECT pg_stat_statements_reset()"))
            connection.execute(text("SELECT pg_stat_reset()"))

    def read(self, pages: int) -> dict[str, Any]:
        """Since the reset: statements (calls summed, per URL of the site; the top ones by calls
        and by total time, with rows per call) and each table's scans."""
        self.idle()
        with self.engine.connect() as connection:
            statements = [
                row._asdict()
                for row in connection.execute(
                    text(
                        "SELECT query, calls, total_exec_time, rows, shared_blks_hit + shared_blks_read AS blocks "
                        "FROM pg_stat_statements "
                        "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
                    )
                )
                if not OWN_STATEMENTS.search(row.query)
            ]
            tables = {
                row.relname: {key: value for key, value in row._asdict().items() if key != "relname"}
                for row in connection.execute(
                    text(
                        "SELECT relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0) AS idx_scan, "
                        "coalesce(idx_tup_fetch, 0) AS idx_tup_fetch, n_tup_ins, n_tup_upd, n_tup_del "
                        "FROM pg_stat_user_tables ORDER BY relname"
                    )
                )
            }
            size = connection.execute(
                text("SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_stat_user_tables")
            ).scalar_one()
        calls = sum(each["calls"] for each in statements)

        def top(key: str) -> list[dict[str, Any]]:
            return [
                {
                    "query": " ".join(each["query"].split())[:300],
                    "calls": each["calls"],
                    "calls_per_page": round(each["calls"] / pages, 3),
                    "rows_per_call": round(each["rows"] / max(each["calls"], 1), 2),
                    "total_ms": round(each["total_exec_time"], 1),
                    "mean_ms": round(each["total_exec_time"] / max(each["calls"], 1), 3),
                    "blocks_per_call": round(each["blocks"] / max(each["calls"], 1), 1),
                }
                for each in sorted(statements, key=lambda each: each[key], reverse=True)[:TOP_STATEMENTS]
            ]

        scanned = {name: tables.get(name, {}) for name in SCANNED_TABLES}
        return {
            "statements": calls,
            "statements_per_page": round(calls / pages, 2),
            "statement_ms_per_page": round(sum(each["total_exec_time"] for each in statements) / pages, 3),
            "seq_scans": {name: table.get("seq_scan", 0) for name, table in scanned.items()},
            "seq_rows_read": {name: table.get("seq_tup_read", 0) for name, table in scanned.items()},
            "seq_rows_read_per_page": round(sum(table.get("seq_tup_read", 0) for table in scanned.values()) / pages, 3),
            "index_rows_read": {name: table.get("idx_tup_fetch", 0) for name, table in scanned.items()},
            "rows_read_per_page": round(
                sum(table.get("seq_tup_read", 0) + table.get("idx_tup_fetch", 0) for table in scanned.values()) / pages, 3
            ),
            "tables": tables,
            "top_by_calls": top("calls"),
            "top_by_time": top("total_exec_time"),
            "top_by_blocks": top("blocks"),  # the statements that read most of the tables: scans
            "size_bytes": int(size),
        }

    def dispose(self) -> None:
        self.engine.dispose()


class ScaleBench(Bench):
    """crawl.py's Bench on a ScaleSite: phases b, c and d, each with the document table's size,
    the delta report's counts and the crawler log's milestones."""

    phases = PHASES
    database: PostgresStats | None = None  # the document table on PostgreSQL (else SQLite)
    postgres_pid: int | None = None  # its postmaster: PostgreSQL's CPU meanwhile, with its backends'
    processes_count = 1
    busy_core = False  # a busy loop on another core during each phase (--busy-core)

    def use(self, database: PostgresStats | None, postgres_pid: int | None, processes: int) -> ScaleBench:
        """Crawl with the document table on ``database`` (None: SQLite in the data folder), as a
        crawl of ``processes`` local processes (the source's ``processes``)."""
        self.database, self.postgres_pid, self.processes_count = database, postgres_pid, processes
        if database is not None:
            self.env["SEARCHCRAWL_DB_URL"] = database.url
        if processes != 1:
            source = self.sources / f"{self.source}.toml"
            source.write_text(f"{source.read_text(encoding='utf-8')}processes = {processes}\n", encoding="utf-8")
        return self

    def servers_cpu(self) -> dict[str, float]:
        found = super().servers_cpu()
        if self.postgres_pid:
            found["postgresql"] = process_tree_cpu(self.postgres_pid, reaped=True)
        return found

    def crawl(self, label: str) -> dict[str, Any]:
        log = self.work / f"crawl-{label}.log"
        base = self.crawl_command
        self.crawl_command = [*base, "-s", "LOG_LEVEL=INFO", "-s", f"LOG_FILE={log}", "-s", f"LOG_FORMAT={LOG_FORMAT}"]
        if self.database is not None:
            self.database.reset()
        # a loop that ends with the benchmark, were it killed with -9
        loop = f"import os\nwhile os.getppid() == {os.getpid()}: pass"
        busy = subprocess.Popen([sys.executable, "-c", loop]) if self.busy_core else None
        try:
            since = time.time()
            result = self.crawled(label)
        finally:
            self.crawl_command = base
            if busy is not None:
                busy.kill()
                busy.wait()
        done = max(result["requests"], 1) if result.get("interrupted") else self.pages  # an interrupted crawl's: those fetched
        result["urls_per_s"] = round(done / result["seconds"], 1)
        result["cpu_ms_per_url"] = round(result["cpu_s"] * 1000 / done, 3)
        if self.database is not None:  # read before the delta report's own statements
            result["postgresql"] = self.database.read(done)
            size = result["postgresql"].pop("size_bytes")
            postgres_cpu = result["server_cpu_s"].get("postgresql")
            if postgres_cpu is not None:
                result["postgresql"]["cpu_ms_per_page"] = round(postgres_cpu * 1000 / done, 3)
        else:
            size = table_bytes(self.work / "data")
        result = apart_from_anchors(result, anchors_logged(log))  # every process's (processes = N)
        result["document_table_mb"] = round(size / 2**20, 1)
        result["milestones_s"] = milestones(log, since)
        self.last_report = self.report()
        result["delta"] = self.last_report.get("counts", {})
        return result

    def report(self) -> dict[str, Any]:
        """The last run's delta report, as `scrapy report <source> --json` prints it."""
        return last_run_report(self.env, self.source)

    def run(self, phases: str = "bcd", processes: int = 1) -> dict[str, Any]:
        site = self.site
        assert isinstance(site, ScaleSite)
        results: dict[str, Any] = {
            "site": "scale",
            "pages": self.pages,
            "documents": self.pages,
            "database": "sqlite" if self.database is None else "postgresql",
            "processes": self.processes_count,
            "busy_core": self.busy_core,
        }
        for label in phases:
            if label == "d":
                results["changed_pages"] = site.change()
            results[label] = self.crawl(label)
            if label == "d":
                expected = {f"{self.server.url}{page_path(number)}" for number in site.changed()}
                reindexed = set(self.last_report.get("urls", {}).get("changed", []))
                results["d"]["reindexed"] = {
                    "expected": len(expected),
                    "changed": len(reindexed),
                    "exactly_those": reindexed == expected,
                    "missing": sorted(expected - reindexed)[:10],
                    "others": sorted(reindexed - expected)[:10],
                }
            if results[label].get("interrupted"):
                results["interrupted"] = label
                break
        return results


def table_bytes(data: Path) -> int:
    """The SQLite document table on disk: its file, write-ahead log and shared memory."""
    return sum(path.stat().st_size for path in data.glob("documents.sqlite3*"))


def milestones(log: Path, since: float) -> dict[str, float]:
    """Seconds from ``since`` to each MILESTONES line of the crawler's log (the last such line)."""
    found: dict[str, float] = {}
    if not log.exists():
        return found
    with log.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            for name, pattern in MILESTONES.items():
                if pattern.search(line):
                    try:
                        found[name] = round(float(line.split(" ", 1)[0]) - since, 2)
                    except ValueError:
                        continue
    return found


def setup(run: dict[str, Any]) -> tuple[str, int, bool]:
    """A run's database, processes and whether a core was kept busy (runs measured before they
    were options: SQLite, one, no)."""
    return run.get("database", "sqlite"), run.get("processes", 1), run.get("busy_core", False)


def complete(run: dict[str, Any] | None) -> bool:
    return bool(run) and "b" in run and not run["b"].get("interrupted")  # type: ignore[index]


def verdicts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each of issue 58's targets that the runs measure: what, the value, the target, met or not;
    CPU per page at N against that of the same database and processes at BASE_PAGES (else the
    smallest N), and with processes = N against one process on the same database and N."""
    found: list[dict[str, Any]] = []
    current: dict[str, Any] = {}

    def verdict(pages: int, what: str, value: Any, target: str, met: bool) -> None:
        database, processes, busy = setup(current)
        found.append(
            {"pages": pages, "database": database + (", a core busy" if busy else ""), "processes": processes}
            | {"what": what, "value": value, "target": target}
            | {"met": met}
        )

    bases = {}
    for each in sorted((run for run in runs if complete(run)), key=lambda run: (run["pages"] != BASE_PAGES, run["pages"])):
        bases.setdefault(setup(each), each)
    for run in runs:
        current = run
        pages = run["pages"]
        b, c, d = run.get("b"), run.get("c"), run.get("d")
        base = bases.get(setup(run))
        if b and base and run is not base and not b.get("interrupted"):
            ratio = round(b["cpu_ms_per_url"] / base["b"]["cpu_ms_per_url"], 3)
            verdict(
                pages,
                f"CPU per page / CPU per page at {base['pages']:,}",
                ratio,
                f"<= {CPU_RATIO_TARGET}",
                ratio <= CPU_RATIO_TARGET,
            )
        one = next(
            (each for each in runs if each["pages"] == pages and setup(each) == (setup(run)[0], 1, False) and complete(each)),
            None,
        )
        if setup(run)[1] != 1 and complete(run) and one is not None:
            for label in "bcd":
                if label in run and label in one and not run[label].get("interrupted"):
                    many, single = run[label], one[label]
                    ratio = round(many["cpu_ms_per_url"] / single["cpu_ms_per_url"], 3)
                    verdict(
                        pages,
                        f"CPU per page ({label}), {setup(run)[1]} processes / 1",
                        f"{ratio} (wall time {round(many['seconds'] / single['seconds'], 3)}; "
                        f"cores busy {many['cores_busy']} / {single['cores_busy']})",
                        f"<= {PROCESSES_CPU_TARGET}",
                        ratio <= PROCESSES_CPU_TARGET,
                    )
        for label in "bcd":
            if label in run:
                rss = run[label]["peak_rss_mb"]
                verdict(pages, f"peak RSS MB ({label})", rss, f"< {RSS_TARGET_MB:.0f}", rss < RSS_TARGET_MB)
            scans = run.get(label, {}).get("postgresql")
            if scans and not run[label].get("interrupted"):
                rows = scans["rows_read_per_page"]
                verdict(
                    pages,
                    f"rows of {' and '.join(SCANNED_TABLES)} read per page, sequential scans and indexes ({label})",
                    f"{rows} ({scans['seq_rows_read_per_page']} by sequential scans)",
                    f"< {ROWS_PER_PAGE_TARGET:.0f}",
                    rows < ROWS_PER_PAGE_TARGET,
                )
        if c and not c.get("interrupted"):
            start_and_end(pages, "c", c, verdict)
            if b and not b.get("interrupted"):
                share = round(c["seconds"] / b["seconds"], 4)
                verdict(
                    pages,
                    "maintenance (c) / first crawl (b), wall time",
                    share,
                    f"< {MAINTENANCE_SHARE_TARGET}",
                    share < MAINTENANCE_SHARE_TARGET,
                )
            written = c["solr_updates"] + c.get("anchor_updates", 0)  # no document pushed, no anchor field set
            verdict(pages, "Solr updates in c", written, "== 0", written == 0)
        if d and not d.get("interrupted"):
            start_and_end(pages, "d", d, verdict)
            reindexed = d["reindexed"]
            exact = reindexed["exactly_those"] and d["solr_updates"] == reindexed["expected"]
            verdict(
                pages,
                "1% changed: re-indexed (delta changed; Solr updates) / changed",
                f"{reindexed['changed']:,}; {d['solr_updates']:,} / {reindexed['expected']:,}",
                "exactly those",
                exact,
            )
    return found


def start_and_end(pages: int, label: str, phase: dict[str, Any], verdict: Callable[..., None]) -> None:
    """A maintenance crawl's start (to its first request) and end (from its last response to its
    exit; and from its last URL done, the log's "Closing spider", to its exit: in phase c the
    last response is the last sitemap's, and every page is spared after it)."""
    ends = [
        ("start s (process start to first request)", phase.get("start_s")),
        ("end s (last response to exit)", phase.get("end_s")),
    ]
    closing = phase.get("milestones_s", {}).get("closing")
    if closing is not None:
        ends.append(("end s (last URL done to exit)", round(phase["seconds"] - closing, 2)))
    for name, value in ends:
        if value is not None:
            verdict(pages, f"maintenance ({label}) {name}", value, f"< {START_END_TARGET_S:.0f}", value < START_END_TARGET_S)


def markdown(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| N | database | processes | phase | seconds | pages/s (requests) | URLs/s | CPU s | CPU ms / URL | peak RSS MB "
        "| document table MB | start s | end s | milestones s (opened, run started, sitemaps read, closing, run ended, "
        "closed) | requests | Solr updates | cores busy | delta |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|",
    ]
    for run in runs:
        database, processes, busy = setup(run)
        database += ", a core busy" if busy else ""
        for label in PHASES:
            phase = run.get(label)
            if phase is None:
                continue
            marks = phase.get("milestones_s", {})
            delta = ", ".join(f"{kind} {count:,}" for kind, count in phase.get("delta", {}).items() if count)
            lines.append(
                f"| {run['pages']:,} | {database} | {processes} "
                f"| {label}: {phase['what']}{' (interrupted)' if phase.get('interrupted') else ''} "
                f"| {phase['seconds']} | {phase['pages_per_s']} | {phase['urls_per_s']} | {phase['cpu_s']} "
                f"| {phase['cpu_ms_per_url']} | {phase['peak_rss_mb']} | {phase['document_table_mb']} "
                f"| {phase.get('start_s', 'n/a')} | {phase.get('end_s', 'n/a')} "
                f"| {', '.join(str(marks.get(name, '-')) for name in MILESTONES)} "
                f"| {phase['requests']:,} | {phase['solr_updates']:,} | {phase.get('cores_busy', 'n/a')} | {delta} |"
            )
    postgresql = [(run, label) for run in runs for label in PHASES if run.get(label, {}).get("postgresql")]
    if postgresql:
        lines += [
            "",
            "PostgreSQL, per URL of the site (pg_stat_statements and pg_stat_user_tables, reset before each phase):",
            "",
            "| N | processes | phase | statements / URL | statement ms / URL | PostgreSQL CPU ms / URL "
            + "".join(f"| {name}: seq scans (rows read) " for name in SCANNED_TABLES)
            + "".join(f"| {name}: rows read by index " for name in SCANNED_TABLES)
            + "| seq rows read / URL | rows read / URL | most called: calls / URL, rows / call | most time: ms, calls / URL |",
            "|---:|---:|---|---:|---:|---:|" + "---:|" * 2 * len(SCANNED_TABLES) + "---:|---:|---|---|",
        ]
        for run, label in postgresql:
            stats = run[label]["postgresql"]
            called, timed = (stats[key][0] if stats[key] else None for key in ("top_by_calls", "top_by_time"))
            lines.append(
                f"| {run['pages']:,} | {setup(run)[1]} | {label} | {stats['statements_per_page']} "
                f"| {stats['statement_ms_per_page']} | {stats.get('cpu_ms_per_page', 'n/a')} "
                + "".join(f"| {stats['seq_scans'][name]:,} ({stats['seq_rows_read'][name]:,}) " for name in SCANNED_TABLES)
                + "".join(f"| {stats['index_rows_read'][name]:,} " for name in SCANNED_TABLES)
                + f"| {stats['seq_rows_read_per_page']} | {stats['rows_read_per_page']} "
                + (f"| `{called['query'][:80]}`: {called['calls_per_page']}, {called['rows_per_call']} " if called else "| ")
                + (f"| `{timed['query'][:80]}`: {timed['total_ms']}, {timed['calls_per_page']} |" if timed else "| |")
            )
    lines += [
        "",
        "| N | database | processes | target (issue 58) | value | target | met |",
        "|---:|---|---:|---|---|---|---|",
    ]
    for each in verdicts(runs):
        lines.append(
            f"| {each['pages']:,} | {each['database']} | {each['processes']} | {each['what']} | {each['value']} "
            f"| {each['target']} | {'yes' if each['met'] else '**no**'} |"
        )
    return "\n".join(lines) + "\n"


def merged(out: Path, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs in ``out``'s results.json, those of the sizes and setups (database, processes)
    in ``runs`` replaced, by size and setup."""
    known = out / "results.json"
    kept = json.loads(known.read_text(encoding="utf-8"))["runs"] if known.exists() else []
    measured = {(run["pages"], *setup(run)) for run in runs}
    return sorted(
        [run for run in kept if (run["pages"], *setup(run)) not in measured] + runs,
        key=lambda run: (run["pages"], *setup(run)),
    )


def write(out: Path, runs: list[dict[str, Any]]) -> str:
    report = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "runs": runs, "targets": verdicts(runs)}
    (out / "results.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    text = markdown(runs)
    (out / "results.md").write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", default="10000", help="N, or several: 10000,100000,1000000")
    parser.add_argument("--phases", default="bcd", help="which phases, in order (default bcd)")
    parser.add_argument("--out", default="", help="folder for results.json and results.md (runs of other N there are kept)")
    parser.add_argument("--solr-url", default="", help="a Solr core to use (default: a dev Solr of its own)")
    parser.add_argument(
        "--solr-pid", type=int, default=0, help="with --solr-url on this machine: its JVM, whose CPU each phase reports"
    )
    parser.add_argument("--work", default="", help="folder for the sites, data and logs (default: a new temporary one)")
    parser.add_argument(
        "--stop-file", default="", help="when this file appears, stop the running crawl and write what was measured"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of every crawl of the crawler's (repeatable)"
    )
    parser.add_argument(
        "--database",
        choices=("sqlite", "postgresql"),
        default="sqlite",
        help="the document table's: SQLite in the data folder (default), or a PostgreSQL cluster of its own "
        "(Debian's package, with pg_stat_statements), a new database for each N",
    )
    parser.add_argument("--processes", type=int, default=1, help="the source's processes: crawler processes of each crawl")
    parser.add_argument(
        "--busy-core",
        action="store_true",
        help="keep a core busy (a Python loop, not measured) during each phase: one process's cost on a "
        "full machine, as two processes have it",
    )
    parser.add_argument(
        "--rewrite", action="store_true", help="only write results.md (and the targets) anew from --out's results.json"
    )
    args = parser.parse_args()
    if args.rewrite:
        print(write(Path(args.out), merged(Path(args.out), [])))
        return
    if args.database == "postgresql" and not pg_bin("initdb"):
        raise SystemExit("--database postgresql: PostgreSQL's initdb is not installed (apt-get install postgresql)")
    # SIGTERM stops the benchmark as Ctrl-C does: the crawl measured, nginx and its own Solr with it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped (SIGTERM)"))
    work = Path(args.work or tempfile.mkdtemp(prefix="searchcrawl-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    stop_file = Path(args.stop_file) if args.stop_file else None
    solr_url, solr_pid = args.solr_url, args.solr_pid or None
    runs: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        cluster = None
        if args.database == "postgresql":  # its statements counted by pg_stat_statements
            cluster = stack.enter_context(postgres_cluster(POSTGRES_SETTINGS))
        if not solr_url:
            solr = DevSolr(work / "solr", free_port(), heap="2g")
            stack.callback(solr.stop)
            solr_url = solr.start(timeout=600)
            solr_pid = solr.status()["pid"]
        for pages in [int(n) for n in args.pages.split(",")]:
            if stop_file is not None and stop_file.exists():
                break
            started = time.monotonic()
            site = ScaleSite(work / f"site{pages}", pages).build()
            built = time.monotonic() - started
            print(f"built the {pages:,}-page site in {built:.0f}s", file=sys.stderr)
            database = None
            if cluster is not None:
                database = PostgresStats.create(cluster.url, f"scale{pages}")
                stack.callback(database.dispose)
            label = f"{pages}{'' if database is None else '-pg'}{'' if args.processes == 1 else f'-p{args.processes}'}"
            label += "-busy" if args.busy_core else ""
            with nginx(site.root, work / f"nginx{pages}") as server:
                site.write_sitemaps(server.url)
                bench = ScaleBench(label, work / f"run{label}", solr_url, server, site, solr_pid, tuple(args.set))
                bench.use(database, cluster.pid if cluster else None, args.processes)
                bench.stop_file = stop_file
                bench.busy_core = args.busy_core
                run = bench.run(args.phases.replace(",", ""))
            run["site_build_s"] = round(built, 1)
            runs.append(run)
            write(out, merged(out, runs))  # after each size: a later one stopped keeps this one's
            print(json.dumps(run, default=str)[:2000], file=sys.stderr)
    print(write(out, merged(out, runs)))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
