"""The similarity floor of a model, calibrated on the judged sets (issue 91, point 6).

Each judged set's site crawled into a development Solr (tests/benchmarks/judged.py's crawl), its
passages embedded with each model, then for every judged query the kNN query's passages, untrimmed
by any floor, collapsed to their documents: the score (Solr's, (1 + cosine) / 2) of the best
passage of the best-judged document found (grade 2, else 1), and for queries that nothing in
either corpus answers (``UNRELATED``: nonsense, seeded random letters, and everyday intranet
questions) the best score of all. The floor is the multiple of 0.005 that tells the two best
apart: the highest with the largest share of judged queries whose answering document it keeps plus
share of unrelated queries it leaves without a kNN hit (Youden's J over the two sets). Beside it,
for comparison: the floor above every unrelated query's best score, and the floor that would keep
95% (``--share``) of the judged queries' answers. Then the hybrid page's nDCG@10 on each judged
set without a floor and with it.

    .venv/bin/python -m tests.benchmarks.similarity_floor --embeddings wordllama --embeddings onnx:<minilm jar> --out DIR
    .venv/bin/python -m tests.benchmarks.similarity_floor --embeddings bge-small --out DIR \
        --sets scipy-lectures,nutch,scrapy-docs --deb python-scrapy-doc_2.8.0-2_all.deb
"""

from __future__ import annotations

import argparse
import json
import math
import random
import string
from typing import Any

import pysolr

from searchcrawl.access.decision import Principals
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.ranking_rules import Rules
from searchcrawl.search.evaluation import grade_of, means, read_qrels, read_queries, score_run
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.results import judged_run
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import embedder_from
from searchcrawl.semantic.fusion import best_per_parent
from searchcrawl.semantic.passage_index import PassageIndex
from tests.benchmarks.judged import HELD_OUT, JUDGED, SETS, add_deb_option, crawl, judged_site, workspace

# queries nothing in the Scipy lectures or the Nutch Javadoc answers: nonsense, and an intranet's
# everyday questions (the demo site's, the issue's)
UNRELATED = (
    "qwxzzy blorft",
    "zzkqv plimbot",
    "asdfgh jkl",
    "xyloph quendrix vortag",
    "blarg fnord wibble",
    "qqq www eee",
    "mmmpf grtz",
    "opening hours of the Tromsø depot",
    "opening hours of the Bodø depot",
    "how do I book a train for a business trip",
    "claim travel expenses with receipts",
    "holiday pay for part-time staff",
    "parental leave policy",
    "report a phishing mail to the security desk",
    "lock your laptop when you leave your desk",
    "canteen menu this week",
    "who is the works council representative",
    "parking permit for the car park",
    "recipe for leek and potato soup",
    "when does the summer party start",
    "bicycle repair near the office",
    "how many days of annual leave do I get",
    "replace a broken office chair",
    "pension scheme contributions",
    "christmas bonus payment date",
)
# and random words, seeded: the nonsense a visitor types is no list of ours
UNRELATED += tuple(
    " ".join("".join(random.Random(f"{n}/{w}").choices(string.ascii_lowercase, k=4 + (n + w) % 6)) for w in range(1 + n % 3))
    for n in range(20)
)
TOP_K = 300


def best_scores(index: TrimmedIndex, model: SemanticModel, text: str, source: str) -> list[tuple[str, float]]:
    """(document id, its best passage's score) of the kNN query's top k, no floor, best first."""
    vector = model.embedder.embed_queries([text])[0]
    found = index.nearest(
        model.field,
        [float(value) for value in vector],
        TOP_K,
        {
            "fq": ["{!term f=passage_model}" + model.model_id, "{!term f=source}" + source],
            "fl": "parent_id,score",
            "rows": TOP_K,
        },
    )
    return [(parent, float(doc["score"])) for parent, doc in best_per_parent([(str(d["parent_id"]), d) for d in found.docs])]


def youden(floor: float, judged: list[float], unrelated: list[float]) -> float:
    """The share of judged queries whose answer ``floor`` keeps plus the share of unrelated ones it
    leaves without a hit."""
    return sum(1 for score in judged if score >= floor) / len(judged) + sum(1 for score in unrelated if score < floor) / len(
        unrelated
    )


def quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.floor(share * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="")
    parser.add_argument("--embeddings", action="append", default=[], metavar="SPEC")
    parser.add_argument("--share", type=float, default=0.05, help="the comparison floor: judged queries it may cost their answer")
    parser.add_argument("--sets", default=",".join(SETS))
    add_deb_option(parser)
    parser.add_argument(
        "--link-lists",
        action="store_true",
        help="also crawl each site with link_lists = false and compare the words' nDCG@10 (the same text searched)",
    )
    args = parser.parse_args()
    refused = HELD_OUT.intersection(args.sets.split(","))
    if refused:  # a floor is chosen on these sets: a held-out set is scored with it, never calibrated on
        parser.error(f"{', '.join(sorted(refused))}: held out, never calibrated on (tests/search/judged/README.md)")
    work, out, solr = workspace("searchcrawl-floor-", args.out)
    core = solr.start(timeout=600)
    models = {spec.split(":")[0]: SemanticModel(embedder_from(spec)) for spec in args.embeddings}  # type: ignore[arg-type]
    index = TrimmedIndex(SolrIndex(core, timeout=60), Principals.anonymous())
    raw: dict[str, dict[str, Any]] = {kind: {"judged": {}, "unrelated": {}} for kind in models}
    judged_sets: dict[str, tuple[str, list[Any], dict[str, dict[str, int]]]] = {}
    try:
        for name in args.sets.split(","):
            source, site = judged_site(name, args.debs, work / f"site-{name}")
            print(name, crawl(site, source, work, core, "\n"), flush=True)
            pysolr.Solr(core, timeout=120).commit()
            urls = {
                str(doc["id"]): str(doc["url"])
                for doc in pysolr.Solr(core, timeout=120).search(
                    f'source:"{source}"', fq="-doc_type:passage", fl="id,url", rows=100_000
                )
            }
            queries = read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"))
            judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"))
            judged_sets[name] = (source, queries, judgments)
            if args.link_lists:  # issue 91 point 19: the lists that are only links out of the prose, or in it
                kept = f"{source}-lists"
                print(name, crawl(site, kept, work, core, "[regions]\nlink_lists = false\n"), flush=True)
                pysolr.Solr(core, timeout=120).commit()
                for label, crawled in (("link lists out of the prose", source), ("link lists in the prose", kept)):
                    ranked, _ = judged_run(index, queries, crawled, Rules(), "page", None)
                    found = means(score_run(queries, judgments, ranked))
                    print(f"{name}: words, {label}: nDCG@10 {found['ndcg@10']:.4f}, MRR@10 {found['mrr@10']:.4f}", flush=True)
            for kind, model in models.items():
                result = PassageIndex(SolrIndex(core, timeout=120), model.embedder, page=100).sync(source)
                assert not result.error, result.error
                print(f"{name}: {kind}: {result.embedded} passages in {result.seconds:.1f} s", flush=True)
                for query in queries:
                    judged = judgments.get(query.qid, {})
                    graded = [
                        (grade_of(urls.get(parent, ""), judged) or 0, score)
                        for parent, score in best_scores(index, model, query.text, source)
                    ]
                    best = max((grade for grade, _ in graded), default=0)
                    if best:
                        raw[kind]["judged"][f"{name}/{query.qid}"] = max(score for grade, score in graded if grade == best)
                for text in UNRELATED:
                    found = best_scores(index, model, text, source)
                    previous = raw[kind]["unrelated"].get(text, 0.0)
                    raw[kind]["unrelated"][text] = max(previous, found[0][1] if found else 0.0)
        report: dict[str, Any] = {}
        for kind, model in models.items():
            judged_scores = list(raw[kind]["judged"].values())
            unrelated = raw[kind]["unrelated"]
            candidates = [step / 200 for step in range(100, 200)]

            floor = max(candidates, key=lambda value: (youden(value, judged_scores, list(unrelated.values())), value))
            strict = math.floor(max(unrelated.values()) * 200 + 1) / 200
            lenient = math.floor(quantile(judged_scores, args.share) * 200) / 200
            entry: dict[str, Any] = {
                "model": model.model_id,
                "floor": floor,
                "floor above every unrelated query": strict,
                f"floor keeping {1 - args.share:.0%} of the judged queries' answers": lenient,
                "judged_queries_with_an_answer_found": len(judged_scores),
                "judged_best_answer_score": {
                    "min": min(judged_scores),
                    "p05": quantile(judged_scores, 0.05),
                    "median": quantile(judged_scores, 0.5),
                    "max": max(judged_scores),
                },
                "judged_kept_by_floor": sum(1 for value in judged_scores if value >= floor),
                "unrelated_queries": len(unrelated),
                "unrelated_best_score": {"min": min(unrelated.values()), "max": max(unrelated.values())},
                "unrelated_without_a_knn_hit": sum(1 for value in unrelated.values() if value < floor),
                "unrelated_with_a_knn_hit": {text: score for text, score in unrelated.items() if score >= floor},
                "unrelated": unrelated,
                "ndcg@10": {},
            }
            for name, (source, queries, judgments) in judged_sets.items():
                for label, chosen in (
                    ("no floor", SemanticModel(model.embedder, 0.0)),
                    ("floor", SemanticModel(model.embedder, floor)),
                ):
                    ranked, _ = judged_run(index, queries, source, Rules(), "page", SemanticSearch(chosen))
                    entry["ndcg@10"][f"{name}, {label}"] = round(means(score_run(queries, judgments, ranked))["ndcg@10"], 4)
                ranked, _ = judged_run(index, queries, source, Rules(), "words", None)
                entry["ndcg@10"][f"{name}, words"] = round(means(score_run(queries, judgments, ranked))["ndcg@10"], 4)
            report[kind] = entry
            print(json.dumps({k: v for k, v in entry.items() if k != "unrelated"}, indent=1, ensure_ascii=False), flush=True)
        (out / "floors.json").write_text(json.dumps({"raw": raw, "report": report}, indent=1), encoding="utf-8")
    finally:
        solr.stop()
    print(f"results in {out}")


if __name__ == "__main__":
    main()
