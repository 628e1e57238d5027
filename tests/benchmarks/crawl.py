"""The crawl benchmark: one command, one run, on a synthetic site or a real one served by nginx.

    .venv/bin/python -m tests.benchmarks.crawl --pages 10000 [--out DIR] [--solr-url URL]
    .venv/bin/python -m tests.benchmarks.crawl --pages 1000,10000,100000 --phases a,b   # scaling curve
    .venv/bin/python -m tests.benchmarks.crawl --site sphinx --phases abacd --profile  # a real site

--site synthetic (the default) builds N pages (--pages); sphinx, nutch and nutch-releases (the
Nutch Javadoc in seven release folders, 9,031 pages) are the built sites of the shared corpora
(tests/benchmarks/real_sites.py): the site is what it is, and a run counts what was fetched.

Phases, each a separate process measured from outside (wall time, CPU seconds of the process and
its children, peak RSS) and from the server (requests per second in nginx's access log):

    a  bare Scrapy fetching the site and following its links (the baseline); a second "a" in
       --phases (the default runs it before and after b) is reported as a2, and b/a uses the mean
       rate of both, so that a machine whose load changed during b shows in the two baselines
    b  the full searchcrawl pipeline into the dev Solr (SQLite document table)
    e  the Solr batch push alone: documents/s of the indexer pushing cached documents into a warm
       Solr (warm-up passes first, then the median of three measured passes)
    c  a maintenance crawl of the unchanged site
    d  a maintenance crawl after 5% of the pages changed
    p  with --profile, last: phase b again (a data folder of its own, the same Solr documents
       replaced) under py-spy (--profile-rate samples per second, default 250; py-spy's own CPU
       grows with it), whose stacks give the CPU milliseconds per page by stage
       (tests/benchmarks/stages.py); its time and CPU include py-spy's and are not compared
    n  the full pipeline again (a data folder of its own) as one crawl of --processes N local
       processes (default 2; source key ``processes``), over the SQLite document table
    w  a warm-up: the full pipeline once (a data folder of its own), reported, never compared,
       so that the Solr has compiled its hot code before the phases that are: a Solr the
       benchmark has just started spends 2-4 times its usual CPU on the first crawl into it (its
       JIT compilers), and the first searchcrawl phase after it paid for that (the long Nutch
       site: Solr 28-39 s against 8-15 s; tests/benchmarks/README.md). "--phases wabn" measures
       b and n alike

Every phase runs from compiled modules (searchcrawl's compiled first, in its __pycache__ folders),
as an installed searchcrawl does: under PYTHONDONTWRITEBYTECODE each crawler process would compile
searchcrawl again, which bare Scrapy, compiled in site-packages, never does.

Each phase also reports the CPU seconds nginx (master and workers) and Solr's JVM spent meanwhile
(Solr's when its pid is known: the benchmark started it, or --solr-pid with --solr-url) and the
cores busy on average (the crawler's, nginx's and Solr's CPU over the phase's seconds): phase n can
go no faster than the cores left to it, and a phase reported near 2.0 on 2 cores is the machine's.

Writes results.json, results.md and pages_per_second.png to --out. The targets (issues 10 and
27): b/a >= 1.0; n/b >= 1.6 on 2 cores; c/b (wall time) <= 0.35 with 0 Solr updates; Solr push >= 2,000 documents/s; peak
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
from collections import Counter
from pathlib import Path
from typing import Any

import lxml.html
from scrapy.linkextractors import IGNORED_EXTENSIONS

from searchcrawl import settings as defaults
from searchcrawl.content.extract import html_attributes, solr_document
from searchcrawl.crawl.spider import DOCUMENT_EXTENSIONS
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.push import push_pending
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.ledger import Ledger
from tests.benchmarks.measure import (
    apart_from_anchors,
    as_installed,
    compile_searchcrawl,
    forget_source,
    jvm_cpu,
    last_run_counters,
    process_tree_cpu,
    python_path,
    run_measured,
    solr_updates,
)
from tests.benchmarks.real_sites import SITES, RealSite, build_site, site_seed
from tests.benchmarks.stages import profile_file, scaled_to
from tests.benchmarks.synthetic import Nginx, SyntheticSite, nginx, page_path
from tests.conftest import ROOT, not_found_probe

PHASES = {
    "w": "warm-up, full pipeline (not compared)",
    "a": "bare Scrapy (baseline)",
    "b": "searchcrawl, full pipeline",
    "a2": "bare Scrapy, after b",
    "e": "Solr batch push alone",
    "c": "maintenance, unchanged",
    "d": "maintenance, 5% changed",
    "p": "full pipeline under py-spy",
    "n": "full pipeline, several processes",
}
PROCESSES = 2  # phase n: processes = N (--processes)
PROFILE_RATE = 250  # py-spy samples per second (--profile-rate)
# The bare spider follows what the crawler follows by default: links of a, area, frame and iframe,
# not to Scrapy's ignored extensions other than the documents the crawler converts.
BARE_DENY_EXTENSIONS = ",".join(sorted(ext for ext in IGNORED_EXTENSIONS if ext not in DOCUMENT_EXTENSIONS))
PUSH_DOCUMENTS = 10_000  # documents pushed in phase e (at most N)
PUSH_WARMUP_PASSES = 5  # phase e first pushes this many sets of new documents into Solr (its JIT warm-up)...
PUSH_MEASURED_PASSES = 3  # ...then this many more, whose median rate counts
PUSH_SETTLE_SECONDS = 10  # pause before each pass, after a hard commit (1 s per 1,000 pages, at most)
TARGETS = {"b/a": (">=", 1.0), "n/b": (">=", 1.6), "c/b": ("<=", 0.35), "push_docs_per_s": (">=", 2000.0)}  # issues 10 and 27
RSS_TARGET_MB, RSS_TARGET_PAGES = 400.0, 100_000
HEADERS = {"content-type": "text/html; charset=utf-8", "last-modified": "Sat, 21 Nov 2026 10:00:00 GMT"}


class Bench:
    phases = PHASES  # what each phase label stands for
    stop_file: Path | None = None  # when it appears, the running phase stops (run_measured) and no other starts
    profile_rate = PROFILE_RATE  # py-spy's samples per second in phase p

    def __init__(
        self,
        label: str,
        work: Path,
        solr_url: str,
        server: Nginx,
        site: SyntheticSite | RealSite,
        solr_pid: int | None = None,
        settings: tuple[str, ...] = (),
        root: Path = ROOT,
    ) -> None:
        self.root = root  # the checkout whose crawler runs (page_costs.py: an older commit's too)
        self.label, self.work, self.solr_url, self.server, self.site = label, work, solr_url, server, site
        self.pages = site.pages
        self.solr_pid = solr_pid  # known when the benchmark started the Solr itself
        self.source = f"bench{label}"
        # `scrapy crawl` of the source, with --set's settings: every phase of the crawler's
        self.crawl_command = [sys.executable, "-m", "scrapy", "crawl", self.source, "-s", "LOG_LEVEL=WARNING"]
        for setting in settings:
            self.crawl_command += ["-s", setting]
        self.seed = f"{server.url}{site_seed(site)}"
        self.sources = work / "sources"
        self.sources.mkdir(parents=True, exist_ok=True)
        (self.sources / f"{self.source}.toml").write_text(f'seeds = ["{self.seed}"]\nmax_depth = 10\n', encoding="utf-8")
        env = dict(
            os.environ,
            SEARCHCRAWL_SOURCES_DIR=str(self.sources),
            SEARCHCRAWL_DATA_DIR=str(work / "data"),
            SOLR_URL=solr_url,
            PYTHONPATH=python_path(root),
            SEARCHCRAWL_DB_URL="",
            # The crawl words-only: semantic search's default model embeds in a process of its own
            # (crawl/extensions/passage_sync.py), whose CPU the measured process's children's rusage
            # would count; its cost is measured apart (default_model.py, issue 102 point 3). A
            # benchmark's --set SEARCHCRAWL_EMBEDDINGS=... (Scrapy's -s, over this) turns it on.
            SEARCHCRAWL_EMBEDDINGS="",
        )
        self.env = as_installed(env)  # every phase from compiled modules
        compile_searchcrawl(self.env, root)

    def measure(self, label: str, args: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
        since, before = time.time(), solr_updates(self.solr_url)
        servers_before = self.servers_cpu()
        measured = run_measured(args, cwd, env, self.stop_file)
        servers = {name: round(after - servers_before[name], 2) for name, after in self.servers_cpu().items()}
        entries = self.server.arrivals(since)
        arrivals = [moment for moment, _status in entries]
        fetched = len(arrivals)
        timeline = [0] * (int(measured.seconds) + 1)
        for moment in arrivals:
            timeline[min(len(timeline) - 1, max(0, int(moment - since)))] += 1
        return {
            "phase": label,
            "what": self.phases[label],
            **({"interrupted": True} if measured.interrupted else {}),
            "requests": fetched,
            # distinct: what the two spiders must agree on (the crawler's not-found probes are no page)
            "urls": len({path for path in self.server.paths(since) if not not_found_probe(path)}),
            "statuses": dict(sorted(Counter(str(status) for _moment, status in entries).items())),
            "seconds": round(measured.seconds, 2),
            "pages_per_s": round(fetched / measured.seconds, 1),
            "cpu_s": round(measured.cpu_seconds, 2),
            "cpu_s_per_1000_pages": round(measured.cpu_seconds * 1000 / max(fetched, 1), 2),
            "peak_rss_mb": round(measured.peak_rss_bytes / 2**20, 1),
            "solr_updates": solr_updates(self.solr_url) - before,
            # the machine's other work meanwhile (Solr's CPU when its pid is known), and the cores
            # busy on average: two crawler processes can go no faster than the cores left to them
            "server_cpu_s": servers,
            "cores_busy": round((measured.cpu_seconds + sum(servers.values())) / measured.seconds, 2),
            "timeline": timeline,
            **crawl_split(measured.seconds, [moment - since for moment in arrivals]),
        }

    def servers_cpu(self) -> dict[str, float]:
        """CPU seconds so far of nginx (master and workers) and, when its pid is known, Solr's JVM."""
        found = {"nginx": process_tree_cpu(self.server.process.pid)}
        if self.solr_pid:
            found["solr"] = jvm_cpu(self.solr_pid).seconds
        return found

    def bare(self, label: str = "a") -> dict[str, Any]:
        env = {key: value for key, value in self.env.items() if key != "SCRAPY_SETTINGS_MODULE"}
        outside = self.work / "bare"  # no scrapy.cfg above it: Scrapy's own defaults
        outside.mkdir(exist_ok=True)
        spider = Path(__file__).with_name("bare_spider.py")
        return self.measure(
            label,
            [
                sys.executable,
                "-m",
                "scrapy",
                "runspider",
                str(spider),
                "-a",
                f"start_url={self.seed}",
                "-a",
                f"deny_extensions={BARE_DENY_EXTENSIONS}",
                "-s",
                "LOG_LEVEL=WARNING",
                "-s",
                "DEPTH_PRIORITY=1",
                "-s",
                "ROBOTSTXT_OBEY=True",  # as the crawler: the same requests (robots.txt too)
                "-s",
                "METAREFRESH_ENABLED=False",  # as the crawler (the Sphinx site's index.html refreshes to its live site)
            ],
            outside,
            env,
        )

    def crawl(self, label: str) -> dict[str, Any]:
        return apart_from_anchors(self.crawled(label), self.anchors(self.env))

    def anchors(self, env: dict[str, str]) -> int:
        """The anchor fields the last crawl (one process) set in place: its run's counter."""
        return int(last_run_counters(env, self.source).get("anchors", 0))

    def crawled(self, label: str) -> dict[str, Any]:
        """A crawl phase as measured, its ``solr_updates`` Solr's, anchor fields set in place among them."""
        if label == "b":  # a first crawl: Solr holds nothing of the source either
            forget_source(self.solr_url, self.source)
        return self.measure(label, self.crawl_command, self.root, self.env)

    def warm_up(self) -> dict[str, Any]:
        """Phase w: the full pipeline once, from a data folder of its own, its documents gone from
        Solr after it (each measured phase starts as it would have without it)."""
        env = dict(self.env, SEARCHCRAWL_DATA_DIR=str(self.work / "warm-up-data"))
        forget_source(self.solr_url, self.source)
        result = self.measure("w", self.crawl_command, self.root, env)
        forget_source(self.solr_url, self.source)
        return result

    def processes(self, count: int) -> dict[str, Any]:
        """Phase n: the full pipeline again, from an empty data folder, as one crawl of ``count``
        local processes (source key ``processes``; the SQLite document table shared)."""
        env = dict(self.env, SEARCHCRAWL_DATA_DIR=str(self.work / "processes-data"))
        forget_source(self.solr_url, self.source)
        result = self.measure("n", [*self.crawl_command, "-s", f"SEARCHCRAWL_PROCESSES={count}"], self.root, env)
        # Solr's count as it is, anchor fields set in place among them: a run's counters are its
        # ending process's (store/runs.py Runs.end), which did not set the other one's
        result["processes"] = count
        return result

    def profile(self, data: Path | None = None, stacks: Path | None = None) -> dict[str, Any]:
        """Phase p: the full pipeline again, from an empty data folder (``data``, default
        profile-data), under py-spy, whose stacks are written to ``stacks`` (default stacks.txt)."""
        stacks = stacks or self.work / "stacks.txt"
        spy = Path(sys.executable).with_name("py-spy")
        if not spy.exists():
            raise SystemExit(f"{spy} is missing: pip install py-spy (the bench extra)")
        env = dict(self.env, SEARCHCRAWL_DATA_DIR=str(data or self.work / "profile-data"))
        forget_source(self.solr_url, self.source)
        spied = [str(spy), "record", "--format", "raw", "--rate", str(self.profile_rate), "--subprocesses", "--nonblocking"]
        result = self.measure("p", [*spied, "-o", str(stacks), "--", *self.crawl_command], self.root, env)
        result = apart_from_anchors(result, self.anchors(env))
        # py-spy does not wait for the crawl (it watches it end): the runner's rusage holds py-spy alone
        result["cpu_s_per_1000_pages"] = result["peak_rss_mb"] = result["cores_busy"] = None
        result["stages"] = profile_file(stacks, self.profile_rate, result["requests"])
        result["stacks"] = str(stacks)
        return result

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
        paths = site_pages(self.site, count)
        table = DocumentTable(Database(f"sqlite:///{self.work / 'push.sqlite3'}"))
        cache = DocumentCache(self.work / "push-cache")
        source = f"{self.source}-push"
        pages = [html_attributes(lxml.html.fromstring((self.site.root / path).read_bytes()), {}) for path in paths]
        index = SolrIndex(self.solr_url, timeout=120)
        before = solr_updates(self.solr_url)
        passes = []
        for number in range(PUSH_WARMUP_PASSES + PUSH_MEASURED_PASSES):
            for page, attributes in enumerate(pages):
                url = f"{self.server.url}push{number}/{paths[page]}"
                document = solr_document(source, url, attributes, HEADERS)
                # each pass's copy of a page is a content of its own: as copies of the last pass's,
                # they would be settled as duplicates before the push (DocumentTable.settle_pending)
                checksum = document["checksum"] = hashlib.sha256(f"{number}:{document['content']}".encode()).hexdigest()
                cache.put(document)
                Ledger(table, source).record(
                    url, Outcome(Event.CACHED, 200, columns={"checksum": checksum, "cached_by": cache.id})
                )
            index.client.commit(waitSearcher=True)
            time.sleep(min(PUSH_SETTLE_SECONDS, self.pages / 1000))
            solr_before = jvm_cpu(self.solr_pid) if self.solr_pid else None
            started = time.monotonic()
            result = push_pending(
                Ledger(table, source),
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

    def run(self, phases: str, processes: int = PROCESSES) -> dict[str, Any]:
        results: dict[str, Any] = {"site": site_name(self.site), "pages": self.pages, "documents": self.site.documents}
        for label in phases:
            if label == "a":
                key = "a2" if "a" in results else "a"
                results[key] = self.bare(key)
            elif label == "p":
                results["p"] = self.profile()
                if "b" in results:  # b's CPU per page (rusage, no profiler) split by the profile's shares
                    stages = results["p"]["stages"]
                    stages["cpu_ms_per_page"] = scaled_to(stages["samples"], results["b"]["cpu_s_per_1000_pages"])
            elif label == "e":
                results["e"] = self.push()
            elif label == "n":
                results["n"] = self.processes(processes)
            elif label == "w":
                results["w"] = self.warm_up()
            elif label == "d":
                results["changed_pages"] = self.site.change()
                results["d"] = self.crawl("d")
            else:
                results[label] = self.crawl(label)
        return results


def site_name(site: SyntheticSite | RealSite) -> str:
    return site.name if isinstance(site, RealSite) else "synthetic"


def run_label(run: dict[str, Any]) -> str:
    """How a run is named in tables: N for the synthetic site, else the site's name."""
    return f"{run['pages']:,}" if run.get("site", "synthetic") == "synthetic" else f"{run['site']} ({run['pages']:,} HTML)"


def site_pages(site: SyntheticSite | RealSite, count: int) -> list[str]:
    """The paths of ``count`` of the site's HTML pages."""
    return site.html_pages()[:count] if isinstance(site, RealSite) else [page_path(number) for number in range(count)]


def bare_rate(results: dict[str, Any]) -> float:
    """Bare Scrapy's pages/s: the mean of its runs before and after b."""
    return statistics.mean(results[key]["pages_per_s"] for key in ("a", "a2") if key in results)


def crawl_split(seconds: float, arrivals: list[float]) -> dict[str, float]:
    """A phase's seconds before its first request (start: the interpreter, imports, the crawl's
    set-up), between its first and last (fetching) and after its last (end: the last documents,
    the last push, the exit), from nginx's arrival times (seconds since the command started)."""
    if not arrivals:
        return {}
    first, last = min(arrivals), max(arrivals)
    return {"start_s": round(first, 2), "fetch_s": round(last - first, 2), "end_s": round(seconds - last, 2)}


def fetch_bound(results: dict[str, Any]) -> dict[str, float] | None:
    """What phase n's processes gave while they fetched: the fetch rate of n over b's, and n/b had
    n started and ended as quickly as b. Each process of n has a start and an end of its own (a
    crawl's start is one core's: the interpreter, Scrapy's import, the crawl's set-up), so only
    the fetching between can go faster with more processes: this n/b is the most that more
    processes could make of their fetch rate on this site, on this machine."""
    b, n = results.get("b"), results.get("n")
    if not b or not n or "fetch_s" not in b or "fetch_s" not in n or not n["fetch_s"]:
        return None
    b_fetch_rate, n_fetch_rate = b["requests"] / b["fetch_s"], n["requests"] / n["fetch_s"]
    with_b_ends = b["start_s"] + b["end_s"] + b["requests"] / n_fetch_rate
    return {
        "fetch_rate_n/b": round(n_fetch_rate / b_fetch_rate, 3),
        "n/b_with_b_start_and_end": round(b["seconds"] / with_b_ends, 3),
        "b_start_and_end_share": round((b["start_s"] + b["end_s"]) / b["seconds"], 3),
    }


def ratios(results: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if "a" in results and "b" in results:
        found["b/a"] = round(results["b"]["pages_per_s"] / bare_rate(results), 3)
    if "b" in results and "n" in results:
        found["n/b"] = round(results["n"]["pages_per_s"] / results["b"]["pages_per_s"], 3)
    if "b" in results and "c" in results:
        found["c/b"] = round(results["c"]["seconds"] / results["b"]["seconds"], 3)
        # an unchanged site: no document pushed, and no anchor field set in place either
        found["c_solr_updates"] = results["c"]["solr_updates"] + results["c"].get("anchor_updates", 0)
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
        "| N | phase | requests | seconds | pages/s | CPU ms / page (= CPU s / 1,000 pages) | peak RSS MB | Solr updates "
        "| cores busy (crawler, nginx and Solr CPU s / seconds) | Solr CPU s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
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
                    f"| {run_label(run)} | e: {phase['what']} | {phase['documents']:,} docs | {phase['seconds']} | "
                    f"{phase['docs_per_s']:,} docs/s (median of {warm}; warm-up passes before: {warming}) "
                    f"| | | {phase['solr_updates']:,} | | |"
                )
            else:
                lines.append(
                    f"| {run_label(run)} | {label}: {phase['what']} | {phase['requests']:,} | {phase['seconds']} | "
                    f"{phase['pages_per_s']} | {phase['cpu_s_per_1000_pages'] or 'n/a'} | {phase['peak_rss_mb'] or 'n/a'} | "
                    f"{phase['solr_updates']:,} | {phase.get('cores_busy') or 'n/a'} | {phase.get('server_cpu_s', {}).get('solr', 'n/a')} |"
                )
    lines.append("")
    for run in runs:
        for key, verdict in run.get("targets", {}).items():
            lines.append(
                f"- N = {run_label(run)}: {key} = {verdict['value']} (target {verdict['target']}): "
                f"{'met' if verdict['met'] else 'NOT met'}"
            )
    for run in runs:
        if "a" in run and "a2" in run and "b" in run:
            lines.append(
                f"- N = {run_label(run)}: b/a against a before b = "
                f"{run['b']['pages_per_s'] / run['a']['pages_per_s']:.3f}, after b = "
                f"{run['b']['pages_per_s'] / run['a2']['pages_per_s']:.3f} (b/a above: their mean rate)"
            )
    for run in runs:
        split = fetch_bound(run)
        if split is not None:
            b, n = run["b"], run["n"]
            lines.append(
                f"- N = {run_label(run)}: start, fetching, end (s, nginx's arrival times): b {b['start_s']}, "
                f"{b['fetch_s']}, {b['end_s']}; n {n['start_s']}, {n['fetch_s']}, {n['end_s']}. n fetched at "
                f"{split['fetch_rate_n/b']} times b's rate; with b's start and end (a {split['b_start_and_end_share']:.0%} "
                f"share of b that more processes do not shorten) n/b would be {split['n/b_with_b_start_and_end']}"
            )
    lines += stage_table(runs)
    return "\n".join(lines) + "\n"


def stage_table(runs: list[dict[str, Any]]) -> list[str]:
    """CPU ms per page fetched by stage, from the profiled full pipeline (phase p) of each run."""
    profiled = [run for run in runs if "p" in run]
    if not profiled:
        return []
    key = "cpu_ms_per_page" if all("cpu_ms_per_page" in run["p"]["stages"] for run in profiled) else "sampled_ms_per_page"
    stages = list(dict.fromkeys(stage for run in profiled for stage in run["p"]["stages"]["sampled_ms_per_page"]))
    stages.sort(key=lambda stage: stage.startswith("total"))
    how = (
        "phase b's CPU ms per page (rusage) split in the shares of py-spy's samples of phase p"
        if key == "cpu_ms_per_page"
        else "py-spy's samples / rate / pages (no phase b to scale to)"
    )
    rates = ", ".join(str(rate) for rate in sorted({run["p"]["stages"]["rate"] for run in profiled}))
    lines = [
        "",
        f"CPU ms per page fetched by stage: {how} ({rates} samples/s, busy threads only; "
        "in brackets: samples / rate / pages, which counts threads waiting for a core or the GIL too):",
        "",
        "| stage | " + " | ".join(run_label(run) for run in profiled) + " |",
        "|---|" + "---:|" * len(profiled),
    ]
    for stage in stages:
        cells = [
            f"{run['p']['stages'][key].get(stage, 0.0):.2f} ({run['p']['stages']['sampled_ms_per_page'].get(stage, 0.0):.2f})"
            for run in profiled
        ]
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    lines.append("| pages fetched | " + " | ".join(f"{run['p']['requests']:,}" for run in profiled) + " |")
    return lines


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(runs), 1, figsize=(9, 3.2 * len(runs)), squeeze=False)
    for axis, run in zip(axes[:, 0], runs, strict=False):
        for label in ("a", "b", "a2", "c", "d"):
            if label in run:
                axis.plot(run[label]["timeline"], label=f"{label}: {PHASES[label]}")
        axis.set_title(f"N = {run_label(run)} pages")
        axis.set_xlabel("seconds since the phase started")
        axis.set_ylabel("requests/s at the server")
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def benchmark_solr(solr_url: str, solr_pid: int | None, work: Path) -> tuple[DevSolr | None, str, int | None]:
    """The Solr a benchmark crawls into: the one given (``solr_url``, its JVM's ``solr_pid`` for
    its CPU), else a dev Solr of its own started in ``work`` (returned, to stop at the end)."""
    if solr_url:
        return None, solr_url, solr_pid or None
    solr = DevSolr(work / "solr", free_port(), heap="2g")
    solr_url = solr.start(timeout=600)
    return solr, solr_url, solr.status()["pid"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", default="10000", help="N, or several: 1000,10000,100000")
    parser.add_argument("--site", default="synthetic", choices=["synthetic", *SITES], help="the site crawled (default synthetic)")
    parser.add_argument("--phases", default="abaecd", help="which phases, in order (default abaecd: a before and after b)")
    parser.add_argument("--processes", type=int, default=PROCESSES, help=f"phase n's processes (default {PROCESSES})")
    parser.add_argument("--profile", action="store_true", help="then run phase b under py-spy: CPU ms per page by stage")
    parser.add_argument(
        "--profile-rate",
        type=int,
        default=PROFILE_RATE,
        help=f"py-spy's samples per second in phase p (default {PROFILE_RATE}); its own CPU grows with the rate",
    )
    parser.add_argument("--out", default="", help="folder for results.json, results.md, pages_per_second.png")
    parser.add_argument(
        "--capacity-seconds", type=int, default=3, help="seconds of wrk's run measuring nginx's capacity (default 3)"
    )
    parser.add_argument("--solr-url", default="", help="a Solr core to use (default: a dev Solr of its own)")
    parser.add_argument(
        "--solr-pid", type=int, default=0, help="with --solr-url on this machine: its JVM, whose CPU each phase reports"
    )
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting of every crawl of the crawler's (repeatable)"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-bench-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    solr, solr_url, solr_pid = benchmark_solr(args.solr_url, args.solr_pid, work)
    runs: list[dict[str, Any]] = []
    capacity = None
    try:
        phases = args.phases.replace(",", "")
        if args.profile and "p" not in phases:  # "--phases bp --profile" profiles once, not twice
            phases += "p"
        sizes = [int(n) for n in args.pages.split(",")] if args.site == "synthetic" else [0]
        for pages in sizes:
            started = time.monotonic()
            label = str(pages) if args.site == "synthetic" else args.site
            site = build_site(args.site, work / (f"site{pages}" if args.site == "synthetic" else "site"), pages)
            print(f"built the {label} site ({site.pages:,} pages) in {time.monotonic() - started:.0f}s", file=sys.stderr)
            with nginx(site.root, work / f"nginx{label}") as server:
                capacity = capacity or server.capacity(site_pages(site, 2)[-1], args.capacity_seconds)
                bench = Bench(label, work / f"run{label}", solr_url, server, site, solr_pid, tuple(args.set))
                bench.profile_rate = args.profile_rate
                run = bench.run(phases, args.processes)
            run["targets"] = ratios(run)
            run["fetch_bound"] = fetch_bound(run)
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
