"""The scale benchmark (issue 58): does a page cost the same at 1,000,000 URLs as at 10,000?

    .venv/bin/python -m tests.benchmarks.scale --pages 10000,100000,1000000 --out bench-scale [--solr-url URL]

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
       exactly those must be re-indexed (the run's delta report, `scrapy report <source> --json`)

Reported per phase besides crawl.py's figures: CPU ms per URL of the site, the document table's
size on disk (SQLite file, WAL and shared memory), the delta report's counts, and the seconds
from the process's start to the first request and from the last response to its exit, with
milestones from the crawler's log between (the run started, the spider closed): in phase c the
last response is the last sitemap's, so its "end" holds the sparing of every page.

Results go to --out as results.json and results.md; runs of other sizes already there are kept,
so each size can be measured in a command of its own (and on a shared machine, when it is free).
--stop-file: when that file appears, the running crawl is stopped gracefully (SIGINT: its run is
suspended) and what was measured is written, marked interrupted. The targets (issue 58): CPU per
page at the largest N within 1.15 times that at 10,000; peak RSS under 500 MB; start and end of
the maintenance crawl under 10 s; maintenance under 5% of the first crawl's wall time with zero
Solr updates; 1% changed, exactly those re-indexed. tests/e2e/test_benchmark.py runs it with a
tiny N.
"""

from __future__ import annotations

import argparse
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

from searchcrawl.dev.solr_runner import DevSolr, free_port
from tests.benchmarks.crawl import Bench
from tests.benchmarks.synthetic import WORDS, nginx, page_path
from tests.conftest import ROOT

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


class ScaleBench(Bench):
    """crawl.py's Bench on a ScaleSite: phases b, c and d, each with the document table's size,
    the delta report's counts and the crawler log's milestones."""

    phases = PHASES

    def crawl(self, label: str) -> dict[str, Any]:
        log = self.work / f"crawl-{label}.log"
        base = self.crawl_command
        self.crawl_command = [*base, "-s", "LOG_LEVEL=INFO", "-s", f"LOG_FILE={log}", "-s", f"LOG_FORMAT={LOG_FORMAT}"]
        try:
            since = time.time()
            result = super().crawl(label)
        finally:
            self.crawl_command = base
        done = max(result["requests"], 1) if result.get("interrupted") else self.pages  # an interrupted crawl's: those fetched
        result["urls_per_s"] = round(done / result["seconds"], 1)
        result["cpu_ms_per_url"] = round(result["cpu_s"] * 1000 / done, 3)
        result["document_table_mb"] = round(table_bytes(self.work / "data") / 2**20, 1)
        result["milestones_s"] = milestones(log, since)
        self.last_report = self.report()
        result["delta"] = self.last_report.get("counts", {})
        return result

    def report(self) -> dict[str, Any]:
        """The last run's delta report: `scrapy report <source> --json`."""
        done = subprocess.run(
            [sys.executable, "-m", "scrapy", "report", self.source, "--json"],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            return {"error": done.stderr[-2000:] or done.stdout[-2000:]}
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def run(self, phases: str = "bcd", processes: int = 1) -> dict[str, Any]:
        site = self.site
        assert isinstance(site, ScaleSite)
        results: dict[str, Any] = {"site": "scale", "pages": self.pages, "documents": self.pages}
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


def verdicts(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each of issue 58's targets that the runs measure: what, the value, the target, met or not."""
    found: list[dict[str, Any]] = []

    def verdict(pages: int, what: str, value: Any, target: str, met: bool) -> None:
        found.append({"pages": pages, "what": what, "value": value, "target": target, "met": met})

    complete = [run for run in runs if "b" in run and not run["b"].get("interrupted")]
    base = next(
        (run for run in complete if run["pages"] == BASE_PAGES), min(complete, key=lambda run: run["pages"], default=None)
    )
    for run in runs:
        pages = run["pages"]
        b, c, d = run.get("b"), run.get("c"), run.get("d")
        if b and base and run is not base and not b.get("interrupted"):
            ratio = round(b["cpu_ms_per_url"] / base["b"]["cpu_ms_per_url"], 3)
            verdict(
                pages,
                f"CPU per page / CPU per page at {base['pages']:,}",
                ratio,
                f"<= {CPU_RATIO_TARGET}",
                ratio <= CPU_RATIO_TARGET,
            )
        for label in "bcd":
            if label in run:
                rss = run[label]["peak_rss_mb"]
                verdict(pages, f"peak RSS MB ({label})", rss, f"< {RSS_TARGET_MB:.0f}", rss < RSS_TARGET_MB)
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
            verdict(pages, "Solr updates in c", c["solr_updates"], "== 0", c["solr_updates"] == 0)
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
        "| N | phase | seconds | pages/s (requests) | URLs/s | CPU s | CPU ms / URL | peak RSS MB | document table MB "
        "| start s | end s | milestones s (opened, run started, sitemaps read, closing, run ended, closed) | requests "
        "| Solr updates | delta |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|",
    ]
    for run in runs:
        for label in PHASES:
            phase = run.get(label)
            if phase is None:
                continue
            marks = phase.get("milestones_s", {})
            delta = ", ".join(f"{kind} {count:,}" for kind, count in phase.get("delta", {}).items() if count)
            lines.append(
                f"| {run['pages']:,} | {label}: {phase['what']}{' (interrupted)' if phase.get('interrupted') else ''} "
                f"| {phase['seconds']} | {phase['pages_per_s']} | {phase['urls_per_s']} | {phase['cpu_s']} "
                f"| {phase['cpu_ms_per_url']} | {phase['peak_rss_mb']} | {phase['document_table_mb']} "
                f"| {phase.get('start_s', 'n/a')} | {phase.get('end_s', 'n/a')} "
                f"| {', '.join(str(marks.get(name, '-')) for name in MILESTONES)} "
                f"| {phase['requests']:,} | {phase['solr_updates']:,} | {delta} |"
            )
    lines += ["", "| N | target (issue 58) | value | target | met |", "|---:|---|---|---|---|"]
    for each in verdicts(runs):
        lines.append(
            f"| {each['pages']:,} | {each['what']} | {each['value']} | {each['target']} | {'yes' if each['met'] else '**no**'} |"
        )
    return "\n".join(lines) + "\n"


def merged(out: Path, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs in ``out``'s results.json, those of the sizes in ``runs`` replaced, by size."""
    known = out / "results.json"
    kept = json.loads(known.read_text(encoding="utf-8"))["runs"] if known.exists() else []
    sizes = {run["pages"] for run in runs}
    return sorted([run for run in kept if run["pages"] not in sizes] + runs, key=lambda run: run["pages"])


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
        "--rewrite", action="store_true", help="only write results.md (and the targets) anew from --out's results.json"
    )
    args = parser.parse_args()
    if args.rewrite:
        print(write(Path(args.out), merged(Path(args.out), [])))
        return
    # SIGTERM stops the benchmark as Ctrl-C does: the crawl measured, nginx and its own Solr with it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped (SIGTERM)"))
    work = Path(args.work or tempfile.mkdtemp(prefix="searchcrawl-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    stop_file = Path(args.stop_file) if args.stop_file else None
    solr = None
    solr_url, solr_pid = args.solr_url, args.solr_pid or None
    runs: list[dict[str, Any]] = []
    try:
        if not solr_url:
            solr = DevSolr(work / "solr", free_port(), heap="2g")
            solr_url = solr.start(timeout=600)
            solr_pid = solr.status()["pid"]
        for pages in [int(n) for n in args.pages.split(",")]:
            if stop_file is not None and stop_file.exists():
                break
            started = time.monotonic()
            site = ScaleSite(work / f"site{pages}", pages).build()
            built = time.monotonic() - started
            print(f"built the {pages:,}-page site in {built:.0f}s", file=sys.stderr)
            with nginx(site.root, work / f"nginx{pages}") as server:
                site.write_sitemaps(server.url)
                bench = ScaleBench(str(pages), work / f"run{pages}", solr_url, server, site, solr_pid, tuple(args.set))
                bench.stop_file = stop_file
                run = bench.run(args.phases.replace(",", ""))
            run["site_build_s"] = round(built, 1)
            runs.append(run)
            write(out, merged(out, runs))  # after each size: a later one stopped keeps this one's
            print(json.dumps(run, default=str)[:2000], file=sys.stderr)
    finally:
        if solr is not None:
            solr.stop()
    print(write(out, merged(out, runs)))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
