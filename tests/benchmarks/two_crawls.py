"""Is two processes' extra CPU a page the shared crawl's, or the machine's? (issue 102)

Crawls of the long Nutch site (``nutch-releases``, tests/benchmarks/real_sites.py), alternated in
one run, each from an empty data folder, into the Solr stand-in (the crawler's CPU alone):

    1    one crawl of one process;
    1+1  two independent one-process crawls of two sources at once, each with its own data
         folder, frontier and cache: they share nothing but the machine;
    2    one crawl of ``processes = 2``.

If "2" costs about what "1+1" costs a page, the extra over "1" is the machine's (two busy
processes on its cores), not work the shared crawl does twice. Each crawl's CPU a page from its
command's rusage and, inside it, from its processes' wait profiles (``SEARCHCRAWL_WAIT_PROFILE``:
user, system, the garbage collector, faults, context switches; tests/benchmarks/waits.py).
``--machine`` runs a CPU-bound stand-in instead (lxml's parse of Javadoc pages, their links and
text, and SQLite inserts), in one process and in two at once: CPU a unit of work of each.

    .venv/bin/python -m tests.benchmarks.two_crawls --order 1,2,1+1,1+1,2,1 [--set NAME=VALUE] [--out DIR]
    .venv/bin/python -m tests.benchmarks.two_crawls --machine --rounds 4

Semantic search is off in these crawls (``SEARCHCRAWL_EMBEDDINGS=``): only the first process of
a crawl embeds passages, and its rusage would measure the model. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests.benchmarks.cores import solr_for
from tests.benchmarks.crawl import Bench
from tests.benchmarks.measure import RUNNER, forget_source
from tests.benchmarks.real_sites import build_site
from tests.benchmarks.synthetic import nginx
from tests.benchmarks.waits import summarise

MACHINE_PAGES = 400  # Javadoc pages of the stand-in's unit of work, parsed three times


def start(bench: Bench, count: int, data: Path, waits: Path) -> subprocess.Popen[str]:
    """One crawl of ``count`` processes, measured by the runner (its rusage on its last line)."""
    env = dict(bench.env, SEARCHCRAWL_DATA_DIR=str(data))
    forget_source(bench.solr_url, bench.source)
    command = [*bench.crawl_command, "-s", f"SEARCHCRAWL_PROCESSES={count}", "-s", f"SEARCHCRAWL_WAIT_PROFILE={waits}"]
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, *command],
        cwd=bench.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def crawls(out: Path, order: list[str], settings: tuple[str, ...]) -> None:
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-two-crawls-"))
    site = build_site("nutch-releases", work / "site", 0)
    results: list[dict[str, Any]] = []
    with solr_for("stand-in", "", work) as (solr_url, solr_pid), nginx(site.root, work / "server") as server:
        for number, entry in enumerate(order):
            each = [(1, "a"), (1, "b")] if entry == "1+1" else [(int(entry), "a")]
            started, load = time.monotonic(), os.getloadavg()[0]
            running = []
            for count, name in each:
                own = ("SEARCHCRAWL_EMBEDDINGS=", *settings)
                bench = Bench(f"two{number}{name}", work / f"run{number}{name}", solr_url, server, site, solr_pid, own)
                waits = out / f"run{number}-{entry}-{name}"
                running.append((waits, start(bench, count, work / f"run{number}{name}" / "data", waits)))
            report: dict[str, Any] = {"entry": entry, "load_before": load, "crawls": []}
            for waits, process in running:
                stdout, stderr = process.communicate()
                if process.returncode:
                    raise SystemExit(stderr[-3000:])
                cpu, _rss = json.loads(stdout.strip().splitlines()[-1])
                summary = summarise(waits)
                report["crawls"].append({"cpu_s": cpu, "seconds": round(time.monotonic() - started, 1), **summary})
            report["load_after"] = os.getloadavg()[0]
            results.append(report)
            line = "; ".join(
                f"{c['responses']} pages, {1000 * c['cpu_s'] / c['responses']:.2f} CPU ms a page (inside the crawl "
                f"{c['cpu_ms_per_page']}: user {c['user_ms_per_page']}, system {c['system_ms_per_page']}, collector "
                f"{c['gc_ms_per_page']}), {c['seconds']} s"
                for c in report["crawls"]
            )
            print(f"{entry}: {line}; load {load:.1f}-{report['load_after']:.1f}", flush=True)
            (out / "results.json").write_text(json.dumps(results, indent=1))


def unit_of_work(paths: list[Path]) -> float:
    """CPU ms a page of the stand-in's work, in this process."""
    import lxml.html

    bodies = [path.read_bytes() for path in paths]
    database = sqlite3.connect(":memory:")
    database.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, url TEXT UNIQUE, size INT)")
    before = resource.getrusage(resource.RUSAGE_SELF)
    done = 0
    for _ in range(3):
        for body in bodies:
            root = lxml.html.fromstring(body)
            links = root.xpath("//a/@href")
            text = " ".join(root.itertext())
            rows = [(f"{done}-{link}", len(text)) for link in links[:20]]
            database.executemany("INSERT OR IGNORE INTO t (url, size) VALUES (?, ?)", rows)
            done += 1
    after = resource.getrusage(resource.RUSAGE_SELF)
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / done * 1000


def _child(paths: list[Path], queue: Any) -> None:
    queue.put(unit_of_work(paths))


def machine(rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-two-crawls-"))
    site = build_site("nutch", work / "site", 0)
    paths = sorted(site.root.rglob("*.html"))[:MACHINE_PAGES]
    context = multiprocessing.get_context("fork")
    for number in range(rounds):
        for count in (1, 2) if number % 2 == 0 else (2, 1):
            queue = context.Queue()
            processes = [context.Process(target=_child, args=(paths, queue)) for _ in range(count)]
            for process in processes:
                process.start()
            found = [round(queue.get(), 3) for _ in processes]
            for process in processes:
                process.join()
            print(f"round {number}, {count} at once: CPU ms a page {found}, load {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--order", default="1,2,1+1,1+1,2,1", help="the crawls, in order: 1, 2 or 1+1")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of every crawl")
    parser.add_argument("--machine", action="store_true", help="the CPU-bound stand-in instead of crawls")
    parser.add_argument("--rounds", type=int, default=4, help="--machine's rounds")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    if args.machine:
        machine(args.rounds)
        return
    out = Path(args.out or tempfile.mkdtemp(prefix="searchcrawl-two-crawls-results-"))
    out.mkdir(parents=True, exist_ok=True)
    crawls(out, args.order.split(","), tuple(args.set))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
