"""Semantic search on by default (issue 100): what the default model costs a crawl, and how fast
each model embeds.

1. A real site (the Nutch Javadoc by default: 1,290 pages) crawled into a development Solr, words
   only (SEARCHCRAWL_EMBEDDINGS empty) and with the default model, alternated, ``--rounds`` times
   each, every crawl a source of its own (a first crawl of the whole site). The crawl's passes
   run every ``--interval`` seconds (5: the passes overlap the whole crawl, the worst case; the
   setting's default is 30) and the last pass, after the crawl's last push, is left out
   (SEARCHCRAWL_EMBED_FINAL_SECONDS=0): what is measured is the crawl. Its pages a second are
   Scrapy's own figures (responses received over ``elapsed_time_seconds``, the engine's time);
   the process's wall time and CPU seconds beside them, apart: the crawl's process's own, and its
   passes' process's (semantic/pass_process.py, as it says at its end: the crawl's whole CPU,
   from rusage, less that). With ``--old COMMIT`` each round crawls with the default model at
   that commit too (its tree exported with ``git archive``, the same interpreter), the code
   whose passes ran on a thread of the crawl's process. The load average is written with each
   crawl.
2. Passages a second of each model (``--model``, repeated) on the same machine: the first
   ``--passages`` passages of ~120 words of the site's text, embedded as a crawl's pass embeds
   them (ONNX Runtime on one thread, passage_sync.py) and as `scrapy embed` does (every core).

    .venv/bin/python -m tests.benchmarks.default_model --out DIR
    .venv/bin/python -m tests.benchmarks.default_model --out DIR --skip-crawls --model wordllama --model minilm
    .venv/bin/python -m tests.benchmarks.default_model --out DIR --skip-models --rounds 3 --old main
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path
from statistics import median
from typing import Any

from searchcrawl.semantic.embedders import DEFAULT_MODEL, embedder_from
from tests.benchmarks.judged import workspace
from tests.benchmarks.measure import compile_searchcrawl, python_path
from tests.benchmarks.page_costs import commit_of, export
from tests.benchmarks.real_sites import RealSite
from tests.benchmarks.synthetic import nginx
from tests.conftest import ROOT

MODELS = ("wordllama", "minilm", "bge-small", "e5-small")
STATS = re.compile(r"Dumping Scrapy stats:\s*(\{.*?\})\n", re.DOTALL)
PASSES_CPU = re.compile(r"The passes' process used ([0-9.]+) s of CPU")
TAGS = re.compile(r"<script.*?</script>|<style.*?</style>|<[^>]+>", re.DOTALL | re.IGNORECASE)
PASSAGE_WORDS = 120


def crawl_once(
    site: RealSite, base: str, work: Path, solr: str, source: str, model: str, interval: float, root: Path = ROOT
) -> dict[str, Any]:
    """One first crawl of ``site`` as ``source``, semantic search ``model`` ("": off), with the
    code at ``root``: Scrapy's stats, wall seconds, CPU seconds of the crawl's process and of its
    passes' process, the load average."""
    sources = work / "sources"
    sources.mkdir(parents=True, exist_ok=True)
    (sources / f"{source}.toml").write_text(f'seeds = ["{base}{site.seed}"]\nmax_depth = 20\n', encoding="utf-8")
    env = dict(
        os.environ,
        SEARCHCRAWL_SOURCES_DIR=str(sources),
        SEARCHCRAWL_DATA_DIR=str(work / "data"),
        SOLR_URL=solr,
        SEARCHCRAWL_DB_URL="",
        SEARCHCRAWL_EMBEDDINGS=model,
        SEARCHCRAWL_EMBED_INTERVAL=str(interval),
        SEARCHCRAWL_EMBED_FINAL_SECONDS="0",
        PYTHONPATH=python_path(root),
    )
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", source, "-s", "LOG_LEVEL=INFO"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"the crawl {source} failed:\n{done.stderr[-4000:]}")
    found = STATS.search(done.stderr)
    stats = ast.literal_eval(re.sub(r"datetime\.datetime\([^)]*\)", "None", found.group(1))) if found else {}
    pages = int(stats.get("response_received_count", 0))
    elapsed = float(stats.get("elapsed_time_seconds", 0) or 0)
    passes = re.findall(r"Passages of (\d+) documents up to date: (\d+) embedded", done.stderr)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    passes_cpu = PASSES_CPU.search(done.stderr)
    return {
        "source": source,
        "code": "this checkout" if root == ROOT else root.name,
        "model": model or "words only",
        "pages": pages,
        "elapsed_seconds": round(elapsed, 1),
        "pages_per_second": round(pages / elapsed, 2) if elapsed else None,
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "crawl_process_cpu_seconds": round(cpu - (float(passes_cpu.group(1)) if passes_cpu else 0.0), 1),
        "passes_process_cpu_seconds": float(passes_cpu.group(1)) if passes_cpu else None,
        "passages_embedded_during_the_crawl": sum(int(embedded) for _, embedded in passes),
        "load_before": round(load, 1),
        "load_after": round(os.getloadavg()[0], 1),
    }


def site_passages(site: RealSite, count: int) -> list[str]:
    """The first ``count`` passages of ~PASSAGE_WORDS words of the site's pages' text."""
    passages: list[str] = []
    for page in site.html_pages():
        words = TAGS.sub(" ", (site.root / page).read_text(encoding="utf-8", errors="replace")).split()
        for start in range(0, len(words) - PASSAGE_WORDS // 2, PASSAGE_WORDS):
            passages.append(" ".join(words[start : start + PASSAGE_WORDS]))
            if len(passages) >= count:
                return passages
    return passages


def model_speed(spec: str, passages: list[str], threads: int) -> dict[str, Any]:
    """Passages a second (wall, and per CPU second of this process) of model ``spec`` on
    ``threads`` ONNX Runtime threads (0: every core)."""
    embedder = embedder_from(spec, threads=threads)
    assert embedder is not None, f"{spec}: not installed"
    embedder.embed(passages[:8])  # warm
    cpu, started = time.process_time(), time.monotonic()
    embedder.embed(passages)
    wall, cpu = time.monotonic() - started, time.process_time() - cpu
    return {
        "model": spec,
        "threads": threads or "all",
        "passages": len(passages),
        "per_second": round(len(passages) / wall, 1),
        "per_cpu_second": round(len(passages) / cpu, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="")
    parser.add_argument("--site", default="nutch", help="a real site of tests/benchmarks/real_sites.py")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--passages", type=int, default=160)
    parser.add_argument("--model", action="append", default=[], metavar="SPEC", help=f"default: {', '.join(MODELS)}")
    parser.add_argument("--skip-crawls", action="store_true")
    parser.add_argument("--skip-models", action="store_true")
    parser.add_argument("--old", default="", metavar="COMMIT", help="also crawl with the default model at this commit")
    args = parser.parse_args()
    work, out, solr = workspace("searchcrawl-default-model-", args.out)
    site = RealSite.unpack(args.site, work / "site")
    arms: list[tuple[str, Path]] = [("", ROOT), (DEFAULT_MODEL, ROOT)]
    if args.old:
        old = export(args.old, work / f"old-{commit_of(args.old)}")
        compile_searchcrawl(dict(os.environ, PYTHONPATH=python_path(old)), old)
        arms.append((DEFAULT_MODEL, old))
    report: dict[str, Any] = {"crawls": [], "models": []}
    if not args.skip_crawls:
        core = solr.start(timeout=600)
        try:
            with nginx(site.root, work / "nginx") as server:
                for number in range(args.rounds):
                    for model, root in arms if number % 2 == 0 else arms[::-1]:
                        label = "words" if not model else model.replace("-", "")
                        source = f"{label}{'' if root == ROOT else 'old'}{number}"
                        crawl = crawl_once(site, server.url, work, core, source, model, args.interval, root)
                        crawl["round"] = number
                        report["crawls"].append(crawl)
                        print(json.dumps(crawl), flush=True)
        finally:
            solr.stop()
        for number in range(args.rounds):  # paired in a round: a machine's load moves both
            rates = {(c["model"], c["code"]): c["pages_per_second"] for c in report["crawls"] if c["round"] == number}
            words = rates.get(("words only", "this checkout"))
            report.setdefault("pages/s ratios to words-only, by round", []).append(
                {
                    f"{model} ({code})": round(rate / words, 2)
                    for (model, code), rate in rates.items()
                    if words and rate and model != "words only"
                }
            )
        for model, root in arms:
            label = model or "words only"
            arm = [c for c in report["crawls"] if c["model"] == label and (c["code"] == "this checkout") == (root == ROOT)]
            name = label if root == ROOT else f"{label} at {args.old}"
            for figure in ("pages_per_second", "crawl_process_cpu_seconds", "passes_process_cpu_seconds"):
                values = [c[figure] for c in arm if c[figure] is not None]
                report[f"median {figure}, {name}"] = median(values) if values else None
    passages = site_passages(site, args.passages)
    for spec in [] if args.skip_models else args.model or MODELS:
        for threads in (1, 0):
            report["models"].append(model_speed(spec, passages, threads))
            print(json.dumps(report["models"][-1]), flush=True)
    (out / "results.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(json.dumps({key: value for key, value in report.items() if key.startswith(("median", "pages/s ratios"))}))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
