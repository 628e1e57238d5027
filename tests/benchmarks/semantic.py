"""Semantic search's costs (issue 76): embedding speed per model, Solr's disk and memory per 100,000
passages, and query latency at 100,000 documents, trimmed, hybrid against words alone.

`.venv/bin/python -m tests.benchmarks.semantic [--documents 100000] [--queries 200] [--out DIR]`

In one run, all its own: a dev Solr (2 GB heap) on a free port, ``--documents`` synthetic
documents of about 120 words each (tests/benchmarks/synthetic.py's vocabulary, in sentences: one
passage each), each readable by one of 100 groups, pushed as a crawl pushes them; Solr's index
size and heap read (CoreAdmin STATUS, /admin/info/system) before and after their passages are
embedded with wordllama and written (semantic/passage_index.py, 500 documents a batch, the run's
only work; deleted documents expunged before the size is read); the vectors' own files (HNSW:
.vec, .vex, .vem), which should fit the OS page cache, apart. Then ``--queries`` searches of two words each, asked as the search page asks them
(``run_search``: collapse, highlighting, facets) by a searcher of one group (1% of the index),
once hybrid and once words alone, alternately, after 20 warm-ups of each: median and 95th
percentile in milliseconds. Last, each model's raw speed (passages a second, this process's
threads): wordllama on 5,000 of the passages, all-MiniLM-L6-v2 int8 on ONNX Runtime (the Maven
Central jar, tests' ``minilm``) on 300, with 2 threads.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import requests

import tests.conftest  # noqa: F401  # its CheckoutConfigset: the dev Solr gets THIS checkout's configset
from searchcrawl.access.decision import Principal, Principals
from searchcrawl.access.tokens import Access, Grant
from searchcrawl.dev.onnx_model import minilm_jar
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.request import SearchRequest
from searchcrawl.search.results import run_search
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import OnnxEmbedder, WordLlamaEmbedder
from searchcrawl.semantic.passage_index import PassageIndex
from tests.benchmarks.synthetic import WORDS

GROUPS = 100
SOURCE = "bench"


def text(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(8, 10)):
        sentences.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 16))).capitalize() + ".")
    return " ".join(sentences)


def documents(count: int, rng: random.Random) -> list[dict[str, Any]]:
    found = []
    for n in range(count):
        access = Access.of([Grant.of(f"group:g{n % GROUPS}", "benchmark")])
        found.append(
            {
                "id": f"{SOURCE}!http://bench.test/{n}",
                "url": f"http://bench.test/{n}",
                "source": SOURCE,
                "host": "bench.test",
                "title": f"{rng.choice(WORDS).capitalize()} {rng.choice(WORDS)} {n}",
                "content": text(rng),
                "mimetype": "text/html",
                "checksum": f"c{n}",
                **access.fields(),
            }
        )
    return found


def core_status(base: str, core: str) -> dict[str, Any]:
    status = requests.get(f"{base}/admin/cores", params={"action": "STATUS", "core": core, "wt": "json"}, timeout=60).json()
    index = status["status"][core]["index"]
    system = requests.get(f"{base}/admin/info/system", params={"wt": "json"}, timeout=60).json()
    files: dict[str, int] = {}
    folder = Path(status["status"][core]["dataDir"]) / "index"
    for path in folder.glob("*"):
        files[path.suffix or path.name] = files.get(path.suffix or path.name, 0) + path.stat().st_size
    return {
        "index_bytes": int(index["sizeInBytes"]),
        "documents": int(index["numDocs"]),
        "heap_used_bytes": int(system["jvm"]["memory"]["raw"]["used"]),
        "files": files,
    }


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-semantic-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(76)
    solr = DevSolr(work / "solr", free_port(), heap="2g")
    core = solr.start(timeout=600)
    base, name = core.rsplit("/", 1)
    report: dict[str, Any] = {"documents": args.documents}
    try:
        index = SolrIndex(core, timeout=300)
        started = time.monotonic()
        docs = documents(args.documents, rng)
        for start in range(0, len(docs), 2000):
            index.add(docs[start : start + 2000])
        index.commit()
        report["words_indexing_seconds"] = round(time.monotonic() - started, 1)
        report["before"] = core_status(base, name)
        print("documents indexed:", report["before"])

        wordllama = WordLlamaEmbedder()
        result = PassageIndex(index, wordllama, page=500).sync(SOURCE)
        assert not result.error, result.error
        report["passages"] = {
            "embedded": result.embedded,
            "seconds": round(result.seconds, 1),
            "passages_a_second": round(result.embedded / result.seconds, 1),
        }
        # the documents marked done were indexed again (an atomic update): their old versions,
        # deleted, are merged away before the index is measured, as Solr's merges do in time
        requests.get(f"{core}/update", params={"commit": "true", "expungeDeletes": "true", "wt": "json"}, timeout=1800)
        report["after"] = core_status(base, name)
        added = report["after"]["index_bytes"] - report["before"]["index_bytes"]
        report["index_bytes_per_100000_passages"] = round(added * 100_000 / max(result.embedded, 1))
        vectors = sum(size for suffix, size in report["after"]["files"].items() if suffix.startswith((".vec", ".vex", ".vem")))
        report["vector_files_bytes_per_100000_passages"] = round(vectors * 100_000 / max(result.embedded, 1))
        print("passages:", report["passages"], "after:", report["after"])

        searcher = TrimmedIndex(index, Principals.of("alice", [Principal("group:g7", "benchmark")]))
        semantic = SemanticSearch(SemanticModel(wordllama))
        queries = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(args.queries + 20)]
        times: dict[str, list[float]] = {"hybrid": [], "words": []}
        hits: dict[str, list[int]] = {"hybrid": [], "words": []}
        for number, query in enumerate(queries):
            order = [("hybrid", semantic), ("words", None)]
            if number % 2:
                order.reverse()
            for label, chosen in order:
                began = time.perf_counter()
                page = run_search(searcher, SearchRequest(q=query), rows=10, spellcheck=False, semantic=chosen)
                took = time.perf_counter() - began
                if number >= 20:
                    times[label].append(took)
                    hits[label].append(page.total)
        report["latency_trimmed_1_percent"] = {label: percentiles(samples) for label, samples in times.items()}
        report["mean_hits"] = {label: round(statistics.mean(counts), 1) for label, counts in hits.items()}
        print("latency:", report["latency_trimmed_1_percent"])

        passages = [doc["content"] for doc in docs[:5000]]
        began = time.perf_counter()
        wordllama.embed(passages)
        report["raw_passages_a_second"] = {"wordllama": round(5000 / (time.perf_counter() - began), 1)}
        minilm = OnnxEmbedder(minilm_jar(), threads=2)
        began = time.perf_counter()
        for start in range(0, 300, 32):
            minilm.embed(passages[start : min(start + 32, 300)])
        report["raw_passages_a_second"]["all-minilm-l6-v2-q (onnx, 2 threads)"] = round(300 / (time.perf_counter() - began), 1)
        print("raw speed:", report["raw_passages_a_second"])
    finally:
        solr.stop()
    (out / "results.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))
    print(f"results in {out}")


if __name__ == "__main__":
    main()
