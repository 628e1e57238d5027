"""A re-ranking stage over the fused top N measured on the judged sets without Solr (issue 93,
point 1). The lists ``tests.benchmarks.fusion_lists`` kept are fused as search/hybrid.py fuses them
(today's weights by the query's shape), then the first ``RERANKED`` documents re-ordered by a linear
model of features the hybrid search holds once it has fused (``FEATURES``: the fused rank, the
words rank, the best passage's kNN score above the model's floor, the query's content words in the
best passage, the title and the URL, the query word for word in the passage, the URL's depth).
Its weights are learnt on some sets and scored on the others (leave-one-set-out), two ways:
coordinate ascent on the mean nDCG@10 (Metzler and Croft, 2007: one weight at a time over a
grid, a few rounds) and a pairwise logistic model (RankNet's loss, linear, L2-regularised) of the
judged pairs. Both models' lists, every feature set of ``FEATURE_SETS``.

With ``--extracts``, the same question for the extractive answer: the gathered passages of each
question (tests.benchmarks.extractive's queries.jsonl) ordered by the kNN score plus weighted words
said and page rank, the weights chosen on one set, scored on the other.

    .venv/bin/python -m tests.benchmarks.reranking bench-lists
    .venv/bin/python -m tests.benchmarks.reranking bench-lists --extracts extract-run/queries.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from searchcrawl.search.answers import content_words
from searchcrawl.search.evaluation import grades_of, randomization_p, score_run
from searchcrawl.semantic.embedders import model_key
from searchcrawl.semantic.fusion import WINDOW, K, knn_weight, query_shape, reciprocal_rank_fusion
from tests.benchmarks.fusion import DEPTH, KeptSet
from tests.benchmarks.judged import training

FEATURES = ("fused", "words", "knn", "passage_words", "title_words", "url_words", "phrase", "depth")
FEATURE_SETS = {
    "all": FEATURES,
    "meaning and passage": ("fused", "knn", "passage_words"),
    "words and meaning": ("fused", "words", "knn"),
    "title": ("fused", "title_words"),
    "URL": ("fused", "url_words"),
}
GRID = (-1.0, -0.5, -0.2, -0.1, -0.05, 0.0, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
ROUNDS = 3
RERANKED = 50  # the N at most
L2 = 1e-3  # the pairwise model's regularisation
STEPS = 300
PHRASE_WORDS = 2  # a query of at least this many words is looked for word for word in the passage
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Candidate:
    """One document of the fused order, with what the two lists (and its title) said of it."""

    doc_id: str  # the Solr id, ``<source>!<url>`` (content/extract.py ``solr_id``)
    words_rank: int | None  # None: found by meaning alone
    knn_score: float | None  # Solr's kNN score of its best passage; None: found by the words alone
    passage: str = ""
    title: str = ""


def split_words(text: str) -> set[str]:
    """The content words of ``text`` (answers.py ``content_words``), names split at their capitals
    too: ``URLFilterException`` says "filter" and "exception"."""
    return content_words(text) | content_words(_CAMEL.sub(" ", text))


def features(query: str, candidate: Candidate, fused_rank: int, floor: float) -> dict[str, float]:
    """``FEATURES`` of ``candidate`` at ``fused_rank`` (1 first) for ``query``; the kNN score is
    counted above ``floor``, scaled to 0..1."""
    wanted = split_words(query)
    path = unquote(urlsplit(candidate.doc_id.partition("!")[2] or candidate.doc_id).path)
    phrase = _SPACES.sub(" ", query.strip()).casefold()

    def share(said: set[str]) -> float:
        return len(wanted & said) / len(wanted) if wanted else 0.0

    knn = 0.0
    if candidate.knn_score is not None and floor < 1.0:
        knn = max(0.0, (candidate.knn_score - floor) / (1.0 - floor))
    return {
        "fused": 1.0 / math.log2(1 + fused_rank),
        "words": 1.0 / math.log2(1 + candidate.words_rank) if candidate.words_rank else 0.0,
        "knn": knn,
        "passage_words": share(content_words(candidate.passage)),
        "title_words": share(split_words(candidate.title)),
        "url_words": share(split_words(path)),
        "phrase": float(len(phrase.split()) >= PHRASE_WORDS and phrase in _SPACES.sub(" ", candidate.passage).casefold()),
        "depth": len([part for part in path.split("/") if part]) / 10,
    }


@dataclass(frozen=True)
class LinearModel:
    """Weights of ``FEATURES`` (a missing one weighs 0)."""

    weights: Mapping[str, float] = field(default_factory=lambda: {"fused": 1.0})

    def score(self, values: Mapping[str, float]) -> float:
        return sum(weight * values.get(name, 0.0) for name, weight in self.weights.items())


class Prepared:
    """One set's queries under one embedding model: the fused order (today's weights) and the
    features of its first ``RERANKED`` documents, computed once (``seconds``: each query's time)."""

    def __init__(self, kept: KeptSet, model: str) -> None:
        self.kept = kept
        floor, lists, self.urls = kept.kept["floors"][model], kept.kept["lists"][model], kept.kept["urls"]
        titles: Mapping[str, str] = kept.kept.get("titles", {})
        key = model_key(kept.kept["model_ids"][model])
        self.rows: dict[str, tuple[list[str], list[dict[str, float]]]] = {}
        self.seconds: list[float] = []
        for query in kept.queries:
            entry = lists[query.qid]
            words = entry.get("words", [])
            nearest = [(parent, score, text) for parent, score, text in entry.get("nearest", []) if score >= floor][:WINDOW]
            weight = knn_weight(key, query_shape(query.text))
            fused = reciprocal_rank_fusion([words, [parent for parent, _score, _text in nearest]], K, WINDOW, (1.0, weight))
            order = [item for item, _ in fused]
            started = time.perf_counter()
            words_rank = {item: rank for rank, item in enumerate(words, 1)}
            knn = {parent: (score, text) for parent, score, text in nearest}
            rows = []
            for rank, item in enumerate(order[:RERANKED], 1):
                score, text = knn.get(item, (None, ""))
                candidate = Candidate(item, words_rank.get(item), score, text, titles.get(item, ""))
                rows.append(features(query.text, candidate, rank, floor))
            sorted(range(len(rows)), key=lambda at: (-LinearModel().score(rows[at]), at))  # the stage's sort, timed
            self.seconds.append(time.perf_counter() - started)
            self.rows[query.qid] = (order, rows)

    def ranked(self, model: LinearModel | None) -> dict[str, list[str]]:
        """qid -> hit URLs: the fused order, its head re-ordered by ``model`` (None: as fused)."""
        out = {}
        for qid, (order, rows) in self.rows.items():
            head = order[: len(rows)]
            if model is not None:
                head = [head[at] for at in sorted(range(len(rows)), key=lambda at: (-model.score(rows[at]), at))]
            ids = head + order[len(rows) :]
            out[qid] = [self.urls.get(item, f"urn:searchcrawl:gone:{item}") for item in ids[:DEPTH]]
        return out


def mean_ndcg(prepared: Sequence[Prepared], model: LinearModel) -> float:
    """The mean nDCG@10 of every query of ``prepared`` (each query weighs alike, whatever its set)."""
    total, count = 0.0, 0
    for item in prepared:
        total += item.kept.figures(item.ranked(model))["all"] * len(item.kept.judged)
        count += len(item.kept.judged)
    return total / count if count else 0.0


def ascended(prepared: Sequence[Prepared], names: Sequence[str]) -> LinearModel:
    """Coordinate ascent from the fused order (``fused`` weighs 1, the scale; the rest 0): each
    weight of ``GRID`` that raises the training mean, a tie kept at the weight it had."""
    weights = {name: (1.0 if name == "fused" else 0.0) for name in names}
    best = mean_ndcg(prepared, LinearModel(weights))
    for _round in range(ROUNDS):
        changed = False
        for name in (name for name in names if name != "fused"):
            for value in GRID:
                trial = {**weights, name: value}
                found = mean_ndcg(prepared, LinearModel(trial))
                if found > best + 1e-9:
                    best, weights, changed = found, trial, True
        if not changed:
            break
    return LinearModel({name: value for name, value in weights.items() if value})


def pairwise(prepared: Sequence[Prepared], names: Sequence[str]) -> LinearModel:
    """A linear model of the pairs of a query's re-ranked documents whose grades differ (the better
    one first), fitted by gradient descent on the logistic loss of their score difference."""
    differences = []
    for item in prepared:
        for query in item.kept.queries:
            order, rows = item.rows[query.qid]
            grades = grades_of([item.urls.get(doc, "") for doc in order[: len(rows)]], item.kept.judgments.get(query.qid) or {})
            vectors = [np.array([row[name] for name in names]) for row in rows]
            for better, worse in itertools.permutations(range(len(rows)), 2):
                if grades[better] > grades[worse]:
                    differences.append(vectors[better] - vectors[worse])
    pairs, weights = np.array(differences), np.zeros(len(names))
    for _step in range(STEPS):
        agreed = 1 / (1 + np.exp(-(pairs @ weights)))
        weights -= -(pairs * (1 - agreed)[:, None]).mean(axis=0) + L2 * weights
    return LinearModel(dict(zip(names, weights.tolist(), strict=True)))


def paired_p(item: Prepared, ranked: Mapping[str, Sequence[str]]) -> float:
    """The paired randomization test's p of ``ranked``'s nDCG@10 against the fused order's."""
    before = score_run(item.kept.queries, item.kept.judgments, item.ranked(None))
    after = score_run(item.kept.queries, item.kept.judgments, ranked)
    return randomization_p([b.figures["ndcg@10"] - a.figures["ndcg@10"] for a, b in zip(before, after, strict=True)])


def print_rows(name: str, rows: Mapping[str, Mapping[str, float]]) -> None:
    kinds = list(list(rows.values())[-1])
    print(f"\n{name:<44}" + "".join(f"{kind:>13}" for kind in kinds))
    for label, found in rows.items():
        print(f"{label:<44}" + "".join(f"{found[kind]:>13.3f}" if kind in found else f"{'':>13}" for kind in kinds))


def held_out(sets: Mapping[str, KeptSet]) -> None:
    """Every set scored with the weights learnt on the others, per embedding model, learner and
    feature set; then the stage's own time a query (features and sort, no Solr)."""
    for model in next(iter(sets.values())).models:
        prepared = {name: Prepared(kept, model) for name, kept in sets.items()}
        for name, item in prepared.items():
            chosen_on = training(prepared, name)
            rows = {"fused (today)": item.kept.figures(item.ranked(None))}
            for label, names in FEATURE_SETS.items():
                for learner, learn in (("ascent", ascended), ("pairwise", pairwise)):
                    chosen = learn(chosen_on, names)
                    print(
                        f"{model}, {name} held out, {label}, {learner}: { ({k: round(v, 3) for k, v in chosen.weights.items()}) }"
                    )
                    ranked = item.ranked(chosen)
                    rows[f"{label}, {learner}"] = {**item.kept.figures(ranked), "p": paired_p(item, ranked)}
            print_rows(f"{name} ({model}), held out", rows)
        seconds = sorted(second for item in prepared.values() for second in item.seconds)
        print(
            f"\nthe stage's own time a query ({model}, {len(seconds)} queries, {RERANKED} documents): median "
            f"{statistics.median(seconds) * 1000:.2f} ms, p95 {seconds[int(0.95 * (len(seconds) - 1))] * 1000:.2f} ms"
        )


def extract_order(path: Path) -> None:
    """The extract's passage order (extractive.py's ``Reranker`` hook) on an extractive run's
    gathered passages: the kNN score plus ``a`` a word said plus ``b`` / log2(2 + page rank), the
    weights chosen on one set, the questions shown from a grade-2 page counted on the other."""
    questions = [row for row in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if row.get("kind") == "question"]
    by_set: dict[str, list[dict[str, Any]]] = {}
    for row in questions:
        by_set.setdefault(row["set"], []).append(row)

    def page_prior(rank: int | None) -> float:
        return 0.0 if rank is None else 1 / math.log2(2 + rank)  # None: not on the hybrid page's hits

    def shown_grade_2(rows: Sequence[dict[str, Any]], a: float, b: float) -> int:
        count = 0
        for row in rows:
            speaking = [c for c in row["candidates"] if c["said"] >= 1]  # speaks_of's proxy: a word of the question said
            if speaking:
                first = max(
                    speaking,
                    key=lambda c: (c["knn"] + a * c["said"] + b * page_prior(c["page_rank"]), -speaking.index(c)),
                )
                count += first["grade"] == 2
        return count

    grid = list(itertools.product((0, 0.002, 0.005, 0.01, 0.02, 0.05), (0, 0.005, 0.01, 0.02, 0.05, 0.1)))
    for held, rows in by_set.items():
        chosen_on = [row for other in training(by_set, held) for row in other]
        a, b = max(grid, key=lambda ab: (shown_grade_2(chosen_on, *ab), -sum(ab)))
        print(
            f"extract, {held} held out: a = {a}, b = {b}; questions from a grade-2 page "
            f"{shown_grade_2(rows, 0, 0)} (kNN order) -> {shown_grade_2(rows, a, b)} of {len(rows)}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lists", help="the folder of tests.benchmarks.fusion_lists")
    parser.add_argument("--extracts", action="append", default=[], metavar="JSONL", help="an extractive run's queries.jsonl")
    args = parser.parse_args()
    folder = Path(args.lists)
    held_out({path.stem: KeptSet(folder, path.stem) for path in sorted(folder.glob("*.json"))})
    for extracts in args.extracts:
        extract_order(Path(extracts))


if __name__ == "__main__":
    main()
