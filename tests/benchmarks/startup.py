"""The startup benchmark (issue 27): what a crawl of a one-page source costs from start to exit.

    .venv/bin/python -m tests.benchmarks.startup [--runs 5] [--solr-url URL] [--profile DIR] [--marks]

One HTML page served by a Python http.server thread on 127.0.0.1, a source whose one seed is that
page, and `scrapy crawl <source>` run from the repository root, each run its own process measured
from outside (CPU seconds of the process and its children, wall seconds, peak RSS):

    first     a new data directory every time: the document table is created (migrations)
    repeated  the same data directory again and again: the schema is current, the page unchanged

and, for the floor, bare Scrapy (`bare_spider.py`, Scrapy's own defaults) fetching the same page.
The page is answered 200 every time, so every run parses it, detects its language and compares
its checksum. searchcrawl's modules are compiled first (as an installed searchcrawl's are:
measure.as_installed), and a first crawl, not measured, fills a user cache of its own (the
language model).
Each line is the median of --runs runs. With --profile DIR, a repeated crawl is also run under
`python -X importtime` and under cProfile; DIR gets importtime.txt (the 40 slowest imports,
cumulative) and crawl.prof with cprofile.txt (the 60 costliest calls, cumulative), and the same
of a first crawl (first-importtime.txt, ...). With --marks, --runs more of each kind run under
cpu_marks.py, which notes the process's CPU seconds at Scrapy's signals: a table of where each
kind's CPU goes (the interpreter's start, importing Scrapy, the command line to the spider open,
the page crawled, the close, the exit and the interpreter's tear-down), bare Scrapy beside
searchcrawl. A dev Solr of its own is started unless --solr-url is given. Not part of the test
suite (tests/e2e/test_benchmark.py runs it once, for its output): timings on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from searchcrawl.dev.solr_runner import DevSolr, free_port
from tests.benchmarks.measure import as_installed, compile_searchcrawl, forget_source, run_measured
from tests.conftest import ROOT

PAGE = (
    b"<html><head><title>One page</title></head><body><h1>One page</h1>"
    b"<p>The only page of a small source: what its crawl costs is the crawler's start and exit.</p>"
    b"</body></html>"
)
CRAWL = ["crawl", "onepage", "-s", "LOG_LEVEL=WARNING"]  # `scrapy`'s arguments for the crawl
CPU_MARKS = Path(__file__).with_name("cpu_marks.py")
TEAR_DOWN = "tear-down (after atexit)"


class OnePage(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        if self.path != "/":
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.send_header("Last-Modified", "Sat, 21 Nov 2026 10:00:00 GMT")
        self.end_headers()
        self.wfile.write(PAGE)


class Startup:
    def __init__(self, work: Path, solr_url: str, page_url: str) -> None:
        self.work, self.solr_url, self.page_url = work, solr_url, page_url
        self.sources = work / "sources"
        self.sources.mkdir(parents=True, exist_ok=True)
        (self.sources / "onepage.toml").write_text(f'seeds = ["{page_url}"]\n', encoding="utf-8")

    def env(self, data: Path) -> dict[str, str]:
        env = dict(
            os.environ,
            SEARCHCRAWL_SOURCES_DIR=str(self.sources),
            SEARCHCRAWL_DATA_DIR=str(data),
            SOLR_URL=self.solr_url,
            PYTHONPATH=str(ROOT),
            SEARCHCRAWL_DB_URL="",
            XDG_CACHE_HOME=str(self.work / "user-cache"),
        )
        return as_installed(env)

    def crawl_args(self, *python: str) -> list[str]:
        return [sys.executable, *python, "-m", "scrapy", *CRAWL]

    def measure(self, args: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
        measured = run_measured(args, cwd, env)
        return {
            "cpu_s": round(measured.cpu_seconds, 3),
            "wall_s": round(measured.seconds, 3),
            "peak_rss_mb": round(measured.peak_rss_bytes / 2**20, 1),
        }

    def first(self, number: int) -> dict[str, float]:
        return self.measure(self.crawl_args(), ROOT, self.env(self._new_data(f"data-first-{number}")))

    def repeated(self) -> dict[str, float]:
        return self.measure(self.crawl_args(), ROOT, self.env(self.work / "data-repeated"))

    def bare(self) -> dict[str, float]:
        scrapy_args, outside, env = self.bare_command()
        return self.measure([sys.executable, "-m", "scrapy", *scrapy_args], outside, env)

    def bare_command(self) -> tuple[list[str], Path, dict[str, str]]:
        """Bare Scrapy's ``scrapy`` arguments, the folder it runs in and its environment."""
        outside = self.work / "bare"  # no scrapy.cfg above it: Scrapy's own defaults
        outside.mkdir(exist_ok=True)
        env = {key: value for key, value in self.env(self.work / "data-bare").items() if key != "SCRAPY_SETTINGS_MODULE"}
        spider = Path(__file__).with_name("bare_spider.py")
        return ["runspider", str(spider), "-a", f"start_url={self.page_url}", "-s", "LOG_LEVEL=WARNING"], outside, env

    def marks(self, kind: str, number: int) -> dict[str, float]:
        """One crawl (``kind``: bare, first or repeated) run by cpu_marks.py: its CPU seconds from
        each mark to the next (named by the later one), the interpreter's tear-down after the last
        (the runner's count of the whole process, less the last mark) and the total."""
        noted = self.work / f"marks-{kind}-{number}.json"
        if kind == "bare":
            scrapy_args, cwd, env = self.bare_command()
        else:
            data = self._new_data(f"data-marks-{number}") if kind == "first" else self.work / "data-repeated"
            scrapy_args, cwd, env = CRAWL, ROOT, self.env(data)
        measured = run_measured([sys.executable, str(CPU_MARKS), str(noted), *scrapy_args], cwd, env)
        stretches, previous = {}, 0.0
        for name, cpu in json.loads(noted.read_text(encoding="utf-8")):
            stretches[name], previous = cpu - previous, cpu
        stretches[TEAR_DOWN] = measured.cpu_seconds - previous
        stretches["total"] = measured.cpu_seconds
        return stretches

    def profile(self, out: Path) -> None:
        """Where a crawl's time goes: imports (-X importtime) and calls (cProfile), of a repeated
        crawl (importtime.txt, crawl.prof, cprofile.txt) and of a first one (the same names,
        first- before them)."""
        out.mkdir(parents=True, exist_ok=True)
        self._profile(out, "", lambda: self.work / "data-repeated")
        self._profile(out, "first-", lambda: self._new_data("data-profiled-first"))

    def _new_data(self, name: str) -> Path:
        """An empty data folder for a first crawl, and a Solr that holds nothing of the source
        either (else the new document table takes over what it holds: a maintenance crawl)."""
        shutil.rmtree(self.work / name, ignore_errors=True)
        forget_source(self.solr_url, "onepage")
        return self.work / name

    def _profile(self, out: Path, prefix: str, data: Callable[[], Path]) -> None:
        result = subprocess.run(
            self.crawl_args("-X", "importtime"), cwd=ROOT, env=self.env(data()), capture_output=True, text=True
        )
        rows = []
        for line in result.stderr.splitlines():
            if line.startswith("import time:") and "|" in line and "cumulative" not in line:
                _self, cumulative, name = line[len("import time:") :].split("|")
                rows.append((int(cumulative), name.rstrip()))
        top = sorted(rows, reverse=True)[:40]
        (out / f"{prefix}importtime.txt").write_text("".join(f"{us / 1e6:8.3f} s {name}\n" for us, name in top), encoding="utf-8")
        prof = out / f"{prefix}crawl.prof"
        env = self.env(data())
        subprocess.run(self.crawl_args("-m", "cProfile", "-o", str(prof)), cwd=ROOT, env=env, check=True, capture_output=True)
        with open(out / f"{prefix}cprofile.txt", "w", encoding="utf-8") as handle:
            pstats.Stats(str(prof), stream=handle).sort_stats("cumulative").print_stats(60)


def median(runs: list[dict[str, float]]) -> dict[str, Any]:
    return {key: round(statistics.median(run[key] for run in runs), 3) for key in runs[0]} | {"runs": runs}


def median_marks(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median of each stretch over the runs that reached its mark."""
    names = list(dict.fromkeys(name for run in runs for name in run))
    return {name: round(statistics.median(run[name] for run in runs if name in run), 3) for name in names}


def marks_table(marks: dict[str, dict[str, float]], runs: int) -> str:
    """CPU seconds from each mark to the next, a column per kind of crawl (n/a: a mark its crawl
    never reached, e.g. bare Scrapy scrapes no item; its CPU counts in the next stretch)."""
    names: list[str] = []  # in the order the crawls reached them: each mark after the one before it
    for stretches in marks.values():
        at = -1
        for name in stretches:
            if name not in names:
                names.insert(at + 1, name)
            at = names.index(name)
    lines = [
        f"| CPU s until ... (median of {runs}) | {' | '.join(marks)} |",
        "|---|" + "---:|" * len(marks),
    ]
    for name in names:
        cells = [f"{stretches[name]:.3f}" if name in stretches else "n/a" for stretches in marks.values()]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs of each kind; their median counts")
    parser.add_argument("--solr-url", default="", help="a Solr core to use (default: a dev Solr of its own)")
    parser.add_argument("--profile", default="", help="a folder for importtime.txt, crawl.prof and cprofile.txt")
    parser.add_argument("--skip-bare", action="store_true", help="leave out bare Scrapy")
    parser.add_argument(
        "--marks", action="store_true", help="also --runs of each kind under cpu_marks.py: CPU seconds between Scrapy's signals"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-startup-"))
    server = ThreadingHTTPServer(("127.0.0.1", 0), OnePage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    solr = None
    solr_url = args.solr_url
    if not solr_url:
        solr = DevSolr(work / "solr", free_port())
        solr_url = solr.start(timeout=600)
    try:
        bench = Startup(work, solr_url, f"http://127.0.0.1:{server.server_address[1]}/")
        compile_searchcrawl(bench.env(work / "data-first--1"))
        bench.first(-1)  # not measured: fills the user cache (the language model)
        results: dict[str, Any] = {}
        if not args.skip_bare:
            results["bare Scrapy"] = median([bench.bare() for _ in range(args.runs)])
        results["first crawl"] = median([bench.first(number) for number in range(args.runs)])
        bench.repeated()  # the database made, the page seen: every later run is a repeated crawl
        results["repeated crawl"] = median([bench.repeated() for _ in range(args.runs)])
        if args.profile:
            bench.profile(Path(args.profile))
        marks = {}
        if args.marks:
            kinds = ["first", "repeated"] if args.skip_bare else ["bare", "first", "repeated"]
            marks = {kind: median_marks([bench.marks(kind, number) for number in range(args.runs)]) for kind in kinds}
            results["marks"] = marks
    finally:
        server.shutdown()
        if solr is not None:
            solr.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2), file=sys.stderr)
    print(f"| crawl | CPU s | wall s | peak RSS MB |  (median of {args.runs})")
    print("|---|---:|---:|---:|")
    for label, result in results.items():
        if label != "marks":
            print(f"| {label} | {result['cpu_s']} | {result['wall_s']} | {result['peak_rss_mb']} |")
    if marks:
        print(f"\n{marks_table(marks, args.runs)}")
    if args.profile:
        print(f"profiles in {args.profile}")


if __name__ == "__main__":
    main()
