"""The crawl benchmark: one command, one run, on a synthetic site served by nginx.

    .venv/bin/python -m tests.benchmarks.crawl --pages 10000 [--out DIR] [--solr-url URL]
    .venv/bin/python -m tests.benchmarks.crawl --pages 1000,10000,100000 --phases a,b   # scaling curve

Phases, each a separate process measured from outside (wall time, CPU seconds of the process and
its children, peak RSS) and from the server (requests per second in nginx's access log):

    a  bare Scrapy fetching the site and following its links (the baseline)
    b  the full searchcrawl pipeline into the dev Solr (SQLite document table)
    e  the Solr batch push alone: documents/s of the indexer pushing cached documents into a warm
       Solr (warm-up passes first, then the median of three measured passes)
    c  a maintenance crawl of the unchanged site
    d  a maintenance crawl after 5% of the pages changed

Writes results.json, results.md and pages_per_second.png to --out. The targets (issue 10):
b/a >= 0.8; c/b (wall time) <= 0.35 with 0 Solr updates; Solr push >= 2,000 documents/s; peak
RSS <= 400 MB at N = 100,000. Not part of the test suite (tests/e2e/test_benchmark.py runs a smoke
run with a tiny N): timings on a shared machine are for ratios measured in one run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import lxml.html

from searchcrawl import settings as defaults
from searchcrawl.content.extract import html_attributes, solr_document
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.indexer import SolrIndex, push_pending
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from tests.benchmarks.measure import jvm_cpu, run_measured, solr_updates
from tests.benchmarks.synthetic import Nginx, SyntheticSite, nginx, page_path
from tests.conftest import ROOT

PHASES = {
    "a": "bare Scrapy (baseline)",
    "b": "searchcrawl, full pipeline",
    "e": "Solr batch push alone",
    "c": "maintenance, unchanged",
    "d": "maintenance, 5% changed",
}
PUSH_DOCUMENTS = 10_000  # documents pushed in phase e (at most N)
PUSH_WARMUP_PASSES = 5  # phase e first pushes this many sets of new documents into Solr (its JIT warm-up)...
PUSH_MEASURED_PASSES = 3  # ...then this many more, whose median rate counts
PUSH_SETTLE_SECONDS = 10  # pause before each pass, after a hard commit (1 s per 1,000 pages, at most)
TARGETS = {"b/a": (">=", 0.8), "c/b": ("<=", 0.35), "push_docs_per_s": (">=", 2000.0)}
RSS_TARGET_MB, RSS_TARGET_PAGES = 400.0, 100_000
HEADERS = {"content-type": "text/html; charset=utf-8", "last-modified": "Sat, 21 Nov 2026 10:00:00 GMT"}


class Bench:
    def __init__(
        self, pages: int, work: Path, solr_url: str, server: Nginx, site: SyntheticSite, solr_pid: int | None = None
    ) -> None:
        self.pages, self.work, self.solr_url, self.server, self.site = pages, work, solr_url, server, site
        self.solr_pid = solr_pid  # known when the benchmark started the Solr itself
        self.source = f"bench{pages}"
        self.sources = work / "sources"
        self.sources.mkdir(parents=True, exist_ok=True)
        (self.sources / f"{self.source}.toml").write_text(
            f'seeds = ["{server.url}{page_path(0)}"]\nmax_depth = 10\n', encoding="utf-8"
        )
        self.env = dict(
            os.environ,
            SEARCHCRAWL_SOURCES_DIR=str(self.sources),
            SEARCHCRAWL_DATA_DIR=str(work / "data"),
            SOLR_URL=solr_url,
            PYTHONPATH=str(ROOT),
            SEARCHCRAWL_DB_URL="",
        )

    def measure(self, label: str, args: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
        since, before = time.time(), solr_updates(self.solr_url)
        measured = run_measured(args, cwd, env)
        arrivals = [moment for moment, _status in self.server.arrivals(since)]
        fetched = len(arrivals)
        timeline = [0] * (int(measured.seconds) + 1)
        for moment in arrivals:
            timeline[min(len(timeline) - 1, max(0, int(moment - since)))] += 1
        return {
            "phase": label,
            "what": PHASES[label],
            "requests": fetched,
            "seconds": round(measured.seconds, 2),
            "pages_per_s": round(fetched / measured.seconds, 1),
            "cpu_s_per_1000_pages": round(measured.cpu_seconds * 1000 / max(fetched, 1), 2),
            "peak_rss_mb": round(measured.peak_rss_bytes / 2**20, 1),
            "solr_updates": solr_updates(self.solr_url) - before,
            "timeline": timeline,
        }

    def bare(self) -> dict[str, Any]:
        env = {key: value for key, value in self.env.items() if key != "SCRAPY_SETTINGS_MODULE"}
        outside = self.work / "bare"  # no scrapy.cfg above it: Scrapy's own defaults
        outside.mkdir(exist_ok=True)
        spider = Path(__file__).with_name("bare_spider.py")
        return self.measure(
            "a",
            [
                sys.executable,
                "-m",
                "scrapy",
                "runspider",
                str(spider),
                "-a",
                f"start_url={self.server.url}{page_path(0)}",
                "-s",
                "LOG_LEVEL=WARNING",
                "-s",
                "DEPTH_PRIORITY=1",
            ],
            outside,
            env,
        )

    def crawl(self, label: str) -> dict[str, Any]:
        return self.measure(
            label, [sys.executable, "-m", "scrapy", "crawl", self.source, "-s", "LOG_LEVEL=WARNING"], ROOT, self.env
        )

    def push(self) -> dict[str, Any]:
        """Phase e: cache up to PUSH_DOCUMENTS documents made from the site's pages by the crawler's
        own extraction, then time push_pending with the default settings (cache spools read, batches
        of 500, SEARCHCRAWL_SOLR_PUSH_REQUESTS update requests in flight, rows marked indexed).

        Passes of new documents (ids of their own under /push<pass>/, as in a first crawl, so they
        neither replace nor, when deleted afterwards, remove what phase b indexed): PUSH_WARMUP_PASSES
        first, then PUSH_MEASURED_PASSES whose median rate counts. Why: a fresh Solr JVM's JIT
        compilers take a third of its CPU during its first 30,000-40,000 documents, and its rate
        rises 2-4x meanwhile; a production Solr is a long-running, warm JVM. Every pass is reported,
        with Solr's CPU per document and its compilers' share of it when the benchmark started the
        Solr (its pid known). Before each pass, a hard commit and a short pause let Solr flush and
        merge what came before."""
        count = min(self.pages, PUSH_DOCUMENTS)
        table = DocumentTable(Database(f"sqlite:///{self.work / 'push.sqlite3'}"))
        cache = DocumentCache(self.work / "push-cache")
        source = f"{self.source}-push"
        pages = [
            html_attributes(lxml.html.fromstring((self.site.root / page_path(number)).read_bytes()), {})
            for number in range(count)
        ]
        index = SolrIndex(self.solr_url, timeout=120)
        before = solr_updates(self.solr_url)
        passes = []
        for number in range(PUSH_WARMUP_PASSES + PUSH_MEASURED_PASSES):
            for page, attributes in enumerate(pages):
                url = f"{self.server.url}push{number}/{page_path(page)}"
                document = solr_document(source, url, attributes, HEADERS)
                checksum = document["checksum"] = hashlib.sha256(document["content"].encode()).hexdigest()
                cache.put(document)
                table.record(source, url, Outcome(Event.CACHED, 200, columns={"checksum": checksum, "cached_by": cache.id}))
            index.client.commit(waitSearcher=True)
            time.sleep(min(PUSH_SETTLE_SECONDS, self.pages / 1000))
            solr_before = jvm_cpu(self.solr_pid) if self.solr_pid else None
            started = time.monotonic()
            result = push_pending(
                source,
                table,
                cache,
                index,
                max_docs=defaults.SEARCHCRAWL_SOLR_BATCH_DOCS,
                max_bytes=defaults.SEARCHCRAWL_SOLR_BATCH_BYTES,
                requests_at_once=defaults.SEARCHCRAWL_SOLR_PUSH_REQUESTS,
            )
            seconds = time.monotonic() - started
            assert result.error is None and result.indexed == count, result
            measured = {
                "warm_up": number < PUSH_WARMUP_PASSES,
                "seconds": round(seconds, 2),
                "docs_per_s": round(count / seconds, 1),
            }
            if solr_before is not None:
                solr_after = jvm_cpu(self.solr_pid)
                solr_seconds = solr_after.seconds - solr_before.seconds
                measured["solr_cpu_ms_per_doc"] = round(solr_seconds * 1000 / count, 3)
                measured["solr_jit_share"] = round(
                    (solr_after.compiler_seconds - solr_before.compiler_seconds) / max(solr_seconds, 1e-9), 3
                )
            passes.append(measured)
        updates = solr_updates(self.solr_url) - before
        index.client.delete(q=f'source:"{source}"', commit=True)
        table.database.close()
        rate = statistics.median(each["docs_per_s"] for each in passes if not each["warm_up"])
        return {
            "phase": "e",
            "what": PHASES["e"],
            "documents": count,
            "docs_per_s": rate,
            "seconds": round(count / rate, 2),
            "passes": passes,
            "solr_updates": updates,
        }

    def run(self, phases: str) -> dict[str, Any]:
        results: dict[str, Any] = {"pages": self.pages, "documents": self.site.documents}
        for label in phases:
            if label == "a":
                results["a"] = self.bare()
            elif label == "e":
                results["e"] = self.push()
            elif label == "d":
                results["changed_pages"] = self.site.change()
                results["d"] = self.crawl("d")
            else:
                results[label] = self.crawl(label)
        return results


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if "a" in results and "b" in results:
        found["b/a"] = round(results["b"]["pages_per_s"] / results["a"]["pages_per_s"], 3)
    if "b" in results and "c" in results:
        found["c/b"] = round(results["c"]["seconds"] / results["b"]["seconds"], 3)
        found["c_solr_updates"] = results["c"]["solr_updates"]
    if "e" in results:
        found["push_docs_per_s"] = results["e"]["docs_per_s"]
    verdicts = {}
    for key, (how, target) in TARGETS.items():
        if key in found:
            value = found[key]
            verdicts[key] = {
                "value": value,
                "target": f"{how} {target}",
                "met": value >= target if how == ">=" else value <= target,
            }
    if "c_solr_updates" in found:
        verdicts["c_solr_updates"] = {"value": found["c_solr_updates"], "target": "== 0", "met": found["c_solr_updates"] == 0}
    if results["pages"] >= RSS_TARGET_PAGES and "b" in results:
        rss = results["b"]["peak_rss_mb"]
        verdicts["peak_rss_mb"] = {"value": rss, "target": f"<= {RSS_TARGET_MB}", "met": rss <= RSS_TARGET_MB}
    return verdicts


def markdown(runs: list[dict[str, Any]], capacity: float | None) -> str:
    lines = [
        f"nginx capacity (wrk, one 20-60 KB page, 2 threads, 32 connections): {capacity:.0f} requests/s"
        if capacity
        else "nginx capacity: wrk not installed",
        "",
    ]
    lines += [
        "| N | phase | requests | seconds | pages/s | CPU s / 1,000 pages | peak RSS MB | Solr updates |",
        "|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        for label in PHASES:
            phase = run.get(label)
            if phase is None:
                continue
            if label == "e":
                warm = ", ".join(f"{each['docs_per_s']:,}" for each in phase["passes"] if not each["warm_up"])
                warming = ", ".join(f"{each['docs_per_s']:,}" for each in phase["passes"] if each["warm_up"])
                lines.append(
                    f"| {run['pages']:,} | e: {phase['what']} | {phase['documents']:,} docs | {phase['seconds']} | "
                    f"{phase['docs_per_s']:,} docs/s (median of {warm}; warm-up passes before: {warming}) "
                    f"| | | {phase['solr_updates']:,} |"
                )
            else:
                lines.append(
                    f"| {run['pages']:,} | {label}: {phase['what']} | {phase['requests']:,} | {phase['seconds']} | "
                    f"{phase['pages_per_s']} | {phase['cpu_s_per_1000_pages']} | {phase['peak_rss_mb']} | "
                    f"{phase['solr_updates']:,} |"
                )
    lines.append("")
    for run in runs:
        for key, verdict in run.get("targets", {}).items():
            lines.append(
                f"- N = {run['pages']:,}: {key} = {verdict['value']} (target {verdict['target']}): "
                f"{'met' if verdict['met'] else 'NOT met'}"
            )
    return "\n".join(lines) + "\n"


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(runs), 1, figsize=(9, 3.2 * len(runs)), squeeze=False)
    for axis, run in zip(axes[:, 0], runs, strict=False):
        for label in ("a", "b", "c", "d"):
            if label in run:
                axis.plot(run[label]["timeline"], label=f"{label}: {PHASES[label]}")
        axis.set_title(f"N = {run['pages']:,} pages")
        axis.set_xlabel("seconds since the phase started")
        axis.set_ylabel("requests/s at the server")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", default="10000", help="N, or several: 1000,10000,100000")
    parser.add_argument("--phases", default="abecd", help="which phases, in order (default abecd)")
    parser.add_argument("--out", default="", help="folder for results.json, results.md, pages_per_second.png")
    parser.add_argument("--solr-url", default="", help="a Solr core to use (default: a dev Solr of its own)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-bench-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    solr = None
    solr_url, solr_pid = args.solr_url, None
    if not solr_url:
        solr = DevSolr(work / "solr", free_port(), heap="2g")
        solr_url = solr.start(timeout=600)
        solr_pid = solr.status()["pid"]
    runs: list[dict[str, Any]] = []
    capacity = None
    try:
        for pages in [int(n) for n in args.pages.split(",")]:
            started = time.monotonic()
            site = SyntheticSite(work / f"site{pages}", pages).build()
            print(f"built a site of {pages:,} pages in {time.monotonic() - started:.0f}s", file=sys.stderr)
            with nginx(site.root, work / f"nginx{pages}") as server:
                capacity = capacity or server.capacity(page_path(1))
                run = Bench(pages, work / f"run{pages}", solr_url, server, site, solr_pid).run(args.phases.replace(",", ""))
            run["targets"] = ratios(run)
            runs.append(run)
            print(json.dumps(run, default=str)[:2000], file=sys.stderr)
    finally:
        if solr is not None:
            solr.stop()
    report = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "nginx_capacity_rps": capacity, "runs": runs}
    (out / "results.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    (out / "results.md").write_text(markdown(runs, capacity), encoding="utf-8")
    plot(runs, out / "pages_per_second.png")
    print(markdown(runs, capacity))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
