"""Fusions of the kept lists scored on the judged sets (issue 93), without Solr: the lists that
``tests.benchmarks.fusion_lists`` kept (the words query's hits, the plain content query's, the
kNN query's documents with their scores) fused as search/hybrid.py fuses them, under the
calibrated weights by the query's shape (semantic/fusion.py ``knn_weight``), and, with ``--tune``,
under every weight of a grid, chosen per model and shape on some sets and scored on the others.

    .venv/bin/python -m tests.benchmarks.fusion bench-lists                       # the weights of today
    .venv/bin/python -m tests.benchmarks.fusion bench-lists --tune scipy-lectures --on nutch
    .venv/bin/python -m tests.benchmarks.fusion bench-lists --tune scipy-lectures,nutch --on scrapy-docs
    .venv/bin/python -m tests.benchmarks.fusion bench-lists --tune scipy-lectures,nutch,scrapy-docs --on python-docs

A set only ever held out (judged.py ``HELD_OUT``: python-docs) is refused to ``--tune``. A set with
nonsense queries has a column more, ``silent``: the share of them that found nothing. The kNN
list is read above the model's similarity floor: the one it ran with, else the one calibrated now
(``--floor`` gives another).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from searchcrawl.search.evaluation import JudgedQuery, by_kind, means, read_qrels, read_queries, score_run, silence
from searchcrawl.semantic.embedders import calibrated_floor, model_key
from searchcrawl.semantic.fusion import (
    KEYWORDS,
    MESSAGE,
    NAME,
    QUESTION,
    WINDOW,
    K,
    knn_weight,
    query_shape,
    reciprocal_rank_fusion,
)
from tests.benchmarks.judged import HELD_OUT, JUDGED

GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
SHAPES = (NAME, MESSAGE, QUESTION, KEYWORDS)
DEPTH = 50  # the hits a judged query reads (search/search_run.py judged_hits)


class KeptSet:
    """One judged set's kept lists (``<set>.json``), its queries and judgments."""

    def __init__(self, folder: Path, name: str, floor: float | None = None) -> None:
        self.name, self.given_floor = name, floor
        self.kept: dict[str, Any] = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        self.queries = read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"))
        self.judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"))
        self.judged = [query for query in self.queries if self.judgments.get(query.qid)]  # the ones scored

    @property
    def models(self) -> list[str]:
        return list(self.kept["lists"])

    def floor(self, model: str) -> float:
        """The model's similarity floor: ``given`` (``--floor``), else the one it ran with, else the
        one calibrated now (embedders.py ``CALIBRATED_FLOORS``, by its id), else 0 (every kNN hit)."""
        if self.given_floor is not None:
            return self.given_floor
        floor = self.kept["floors"][model]
        if floor is None and "model_ids" in self.kept:
            floor = calibrated_floor(self.kept["model_ids"][model])
        return 0.0 if floor is None else floor

    def fused(self, model: str, weight: Callable[[JudgedQuery], float]) -> dict[str, list[str]]:
        """qid -> hit URLs: the words and the kNN list above the model's floor, fused with the kNN
        list weighed ``weight(query)``."""
        floor, lists, urls = self.floor(model), self.kept["lists"][model], self.kept["urls"]
        ranked = {}
        for query in self.queries:
            kept = lists[query.qid]
            words = kept.get("words", [])
            nearest = [parent for parent, score, _text in kept.get("nearest", []) if score >= floor][:WINDOW]
            order = [item for item, _ in reciprocal_rank_fusion([words, nearest], K, WINDOW, (1.0, weight(query)))]
            ranked[query.qid] = [urls.get(item, f"urn:searchcrawl:gone:{item}") for item in order[:DEPTH]]
        return ranked

    def figures(self, ranked: Mapping[str, Sequence[str]], queries: Sequence[JudgedQuery] = ()) -> dict[str, float]:
        """nDCG@10 of each kind ("all" first) over ``queries`` (all when none), then success@3 of all,
        and ``silent`` for a set with nonsense queries (evaluation.py ``silence``)."""
        scores = score_run(list(queries) or self.queries, self.judgments, ranked)
        silent = None if queries else silence(self.queries, ranked)
        return {
            **{kind: means(group)["ndcg@10"] for kind, group in by_kind(scores).items()},
            "success@3": means(scores)["success@3"],
            **({} if silent is None else {"silent": silent}),
        }


def shape_mean(sets: Sequence[KeptSet], model: str, shape: str, weight: float) -> float:
    """The mean nDCG@10 of the queries of ``shape`` of ``sets`` with the kNN list weighed ``weight``."""
    total, count = 0.0, 0
    for kept in sets:
        queries = [query for query in kept.judged if query_shape(query.text) == shape]
        if queries:
            total += kept.figures(kept.fused(model, lambda _query: weight), queries)["all"] * len(queries)
            count += len(queries)
    return total / count if count else 0.0


def tuned(sets: Sequence[KeptSet], model: str) -> dict[str, float]:
    """Each shape's weight of ``GRID`` with the best mean nDCG@10 over the queries of that shape of
    ``sets`` (a tie: the weight nearest 1, the plain fusion)."""
    chosen = {}
    for shape in SHAPES:
        means_of = {weight: shape_mean(sets, model, shape, weight) for weight in GRID}
        chosen[shape] = max(GRID, key=lambda weight: (round(means_of[weight], 4), -abs(weight - 1.0)))
    return chosen


def print_rows(kept: KeptSet, rows: dict[str, Mapping[str, Sequence[str]]]) -> None:
    figures = {name: kept.figures(ranked) for name, ranked in rows.items()}
    kinds = list(next(iter(figures.values())))
    print(f"\n{kept.name:<36}" + "".join(f"{kind:>13}" for kind in kinds))
    for name, found in figures.items():
        print(f"{name:<36}" + "".join(f"{found[kind]:>13.3f}" for kind in kinds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lists", help="the folder of tests.benchmarks.fusion_lists")
    parser.add_argument("--on", default="", help="the sets scored (default: every set in the folder)")
    parser.add_argument("--tune", default="", help="the sets the weights are chosen on (a grid per model and shape)")
    parser.add_argument("--floor", type=float, help="every model's similarity floor (default: as run, else as calibrated now)")
    args = parser.parse_args()
    folder = Path(args.lists)
    names = args.on.split(",") if args.on else sorted(path.stem for path in folder.glob("*.json"))
    refused = HELD_OUT.intersection(args.tune.split(","))
    if refused:
        parser.error(f"{', '.join(sorted(refused))}: held out, never tuned on (tests/search/judged/README.md)")
    train = [KeptSet(folder, name) for name in args.tune.split(",") if name]
    for name in names:
        kept = KeptSet(folder, name, args.floor)
        print(f"\n{name}: similarity floor " + ", ".join(f"{model} {kept.floor(model)}" for model in kept.models))
        rows: dict[str, Mapping[str, Sequence[str]]] = {"words": kept.kept["words"], "plain": kept.kept["plain"]}
        for model in kept.models:
            key = model_key(kept.kept["model_ids"][model]) if "model_ids" in kept.kept else (model, "")
            rows[f"hybrid-{model} (as run)"] = kept.kept[f"hybrid-{model}"]
            rows[f"hybrid-{model}, equal weights"] = kept.fused(model, lambda _query: 1.0)
            rows[f"hybrid-{model}, weights of today"] = kept.fused(
                model, lambda query, key=key: knn_weight(key, query_shape(query.text))
            )
            if train:
                weights = tuned(train, model)
                print(f"{model} tuned on {args.tune}: {weights}")
                rows[f"hybrid-{model}, tuned"] = kept.fused(model, lambda query, w=weights: w[query_shape(query.text)])
        print_rows(kept, rows)


if __name__ == "__main__":
    main()
