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

``--leave-one-out`` (issue 100, point 7) scores every way of combining the lists (``CANDIDATES``:
equal weights, the weights of today, weights by shape, the question's weight alone, the best
passage's words as a third list, the question's words query in another form) set by set: each
chosen on the other sets and scored on the one left out, every fold; the sets of ``HELD_OUT`` are
never chosen on, so they are left out of every fold (their figures are always held out) and their
own fold chooses on all the others. A rule holds when, held out, it loses to equal weights on no
set; one that does not is not shipped. ``--words DIR`` reads the words lists of another run kept
under each form of a question's words query (fusion_lists.py ``--question-forms``, words only),
each form compared with the question as typed of the same run (two crawls order the words
query's ties each their own way: up to 0.01 nDCG@10 apart):

    .venv/bin/python -m tests.benchmarks.fusion bench-lists --leave-one-out --words bench-words
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from searchcrawl.search.answers import content_words
from searchcrawl.search.evaluation import JudgedQuery, by_kind, means, page_key, read_qrels, read_queries, score_run, silence
from searchcrawl.search.extractive import said_of
from searchcrawl.search.query import FORMS, SCAFFOLDING
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
    rank_constant,
    reciprocal_rank_fusion,
)
from tests.benchmarks.judged import HELD_OUT, JUDGED

GRID = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0)
SHAPES = (NAME, MESSAGE, QUESTION, KEYWORDS)
CONSTANTS = (5, 10, 20, 30, 60, 100)  # reciprocal rank fusion's k, tried
DEPTH = 50  # the hits a judged query reads (search/results.py judged_hits)


class KeptSet:
    """One judged set's kept lists (``<set>.json``), its queries and judgments."""

    def __init__(self, folder: Path, name: str, floor: float | None = None) -> None:
        self.name, self.given_floor = name, floor
        self.kept: dict[str, Any] = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
        self.queries = read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"))
        self.judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"))
        self.judged = [query for query in self.queries if self.judgments.get(query.qid)]  # the ones scored
        self.forms: dict[str, dict[str, list[str]]] = {}  # form -> qid -> words list (ids), ``read_forms``

    def read_forms(self, folder: Path) -> None:
        """The words lists of another run (``folder``/<set>.json, fusion_lists.py ``--question-forms``)
        in this run's ids, matched by the URL's path (the other run served the site on another port);
        a page this run never indexed keeps its URL as its id."""
        other = json.loads((folder / f"{self.name}.json").read_text(encoding="utf-8"))
        ids = {path_of(url): item for item, url in self.kept["urls"].items()}
        self.forms = {
            form: {qid: [ids.get(path_of(url), url) for url in urls] for qid, urls in lists.items()}
            for form, lists in other.get("question_forms", {}).items()
        }

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

    def fused(
        self, model: str, weight: Callable[[JudgedQuery], float], form: str = "", evidence: float = 0.0, k: int = K
    ) -> dict[str, list[str]]:
        """qid -> hit URLs: the words and the kNN list above the model's floor, fused with the kNN
        list weighed ``weight(query)``; ``form``: a question's words list of that form
        (``read_forms``) instead of the kept one; ``evidence``: the weight of a third list, the kNN
        documents by how many of the query's words their best passage says (``passage_words``);
        ``k``: reciprocal rank fusion's constant."""
        floor, lists, urls = self.floor(model), self.kept["lists"][model], self.kept["urls"]
        ranked = {}
        for query in self.queries:
            kept = lists[query.qid]
            words = self.forms[form][query.qid] if form else kept.get("words", [])
            above = [(parent, text) for parent, score, text in kept.get("nearest", []) if score >= floor][:WINDOW]
            nearest = [parent for parent, _text in above]
            fused = [words, nearest, passage_words(query.text, above)] if evidence else [words, nearest]
            order = [item for item, _ in reciprocal_rank_fusion(fused, k, WINDOW, (1.0, weight(query), evidence))]
            ranked[query.qid] = [
                urls.get(item, item if "://" in item else f"urn:searchcrawl:gone:{item}") for item in order[:DEPTH]
            ]
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


def path_of(url: str) -> str:
    """A URL as two runs of one site on two ports share it: its path (evaluation.py ``page_key``)."""
    key = page_key(url)
    return key[key.find("/") :] if "/" in key else "/"


def passage_words(text: str, nearest: Sequence[tuple[str, str]]) -> list[str]:
    """The documents of ``nearest`` ((id, best passage), best first) whose passage says a content
    word of the query (its scaffolding aside), by how many it says, the kNN order on a tie:
    passage-level evidence of the words, read from the passages the kNN query found."""
    asked = content_words(" ".join(word for word in text.split() if word.casefold() not in SCAFFOLDING))
    said = [(said_of(passage, asked), at, parent) for at, (parent, passage) in enumerate(nearest)]
    return [parent for count, _at, parent in sorted(said, key=lambda item: (-item[0], item[1])) if count]


def mean_all(sets: Sequence[KeptSet], ranked_of: Callable[[KeptSet], Mapping[str, Sequence[str]]]) -> float:
    """The mean over ``sets`` of each set's nDCG@10 (every set counts alike, whatever its size)."""
    return sum(kept.figures(ranked_of(kept))["all"] for kept in sets) / len(sets)


# A way of combining the lists (point 7): chosen on some sets (``train``), it gives the fusion of a set.
Fusion = Callable[[KeptSet], dict[str, list[str]]]
Candidate = Callable[[Sequence[KeptSet], str], tuple[str, Fusion]]


def equal_weights(_train: Sequence[KeptSet], model: str) -> tuple[str, Fusion]:
    return "1", lambda kept: kept.fused(model, lambda _query: 1.0)


def weights_of_today(_train: Sequence[KeptSet], model: str) -> tuple[str, Fusion]:
    def fusion(kept: KeptSet) -> dict[str, list[str]]:
        key = model_key(kept.kept["model_ids"][model]) if "model_ids" in kept.kept else (model, "")
        return kept.fused(model, lambda query: knn_weight(key, query_shape(query.text)), k=rank_constant(key))

    return "calibrated", fusion


def by_shape(train: Sequence[KeptSet], model: str) -> tuple[str, Fusion]:
    weights = tuned(train, model)
    return str(weights), lambda kept: kept.fused(model, lambda query: weights[query_shape(query.text)])


def question_weight(train: Sequence[KeptSet], model: str) -> tuple[str, Fusion]:
    """The kNN list's weight for question-shaped queries alone (others 1)."""
    weight = max(GRID, key=lambda w: (round(shape_mean(train, model, QUESTION, w), 4), -abs(w - 1.0)))
    return f"question {weight}", lambda kept: kept.fused(
        model, lambda query: weight if query_shape(query.text) == QUESTION else 1.0
    )


def passage_evidence(train: Sequence[KeptSet], model: str) -> tuple[str, Fusion]:
    """A third list, the kNN documents by their best passage's words (``passage_words``), its weight
    of ``GRID`` chosen on ``train`` (0: none)."""

    def fusion_at(weight: float) -> Fusion:
        return lambda kept: kept.fused(model, lambda _query: 1.0, evidence=weight)

    weight = max(GRID, key=lambda w: (round(mean_all(train, fusion_at(w)), 4), -w))
    return f"evidence {weight}", fusion_at(weight)


def fusion_constant(train: Sequence[KeptSet], model: str) -> tuple[str, Fusion]:
    """Reciprocal rank fusion's constant (60, the paper's and the product's) of ``CONSTANTS`` best
    on ``train`` (equal weights): a small one trusts each list's first hits more."""

    def fusion_at(k: int) -> Fusion:
        return lambda kept: kept.fused(model, lambda _query: 1.0, k=k)

    k = max(CONSTANTS, key=lambda c: (round(mean_all(train, fusion_at(c)), 4), c == K))
    return f"k {k}", fusion_at(k)


def question_form(train: Sequence[KeptSet], model: str) -> tuple[str, Fusion]:
    """The question's words query in the form of ``FORMS`` best on ``train`` (equal weights)."""

    def fusion_of(form: str) -> Fusion:
        return lambda kept: kept.fused(model, lambda _query: 1.0, form=form)

    forms = [form for form in FORMS if all(form in kept.forms for kept in train)]
    form = max(forms, key=lambda f: (round(mean_all(train, fusion_of(f)), 4), f == "typed"))
    return form, fusion_of(form)


def fixed_form(form: str) -> Candidate:
    """The question's words query in ``form`` whatever the training sets say (to see each held out)."""
    return lambda _train, model: (form, lambda kept: kept.fused(model, lambda _query: 1.0, form=form))


CANDIDATES: dict[str, Candidate] = {
    "equal weights": equal_weights,
    "weights of today": weights_of_today,
    "weights by shape": by_shape,
    "question's weight": question_weight,
    "passage words": passage_evidence,
    "fusion constant": fusion_constant,
    "passage words at 1": lambda _train, model: (
        "evidence 1.0",
        lambda kept: kept.fused(model, lambda _query: 1.0, evidence=1.0),
    ),
    "question words query": question_form,
    **{f"question words {form}": fixed_form(form) for form in FORMS},
}
BASELINE = "equal weights"
# the words lists of another run differ from the kept ones in the order of the words query's ties
# (each crawl indexes in its own order): a form is compared with the question as typed of its own run
FORMS_BASELINE = "question words typed"


def folds(names: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(the set left out, the sets chosen on) of each fold: every set left out once, chosen on the
    others; a set of ``HELD_OUT`` is never chosen on."""
    return [(out, [name for name in names if name != out and name not in HELD_OUT]) for out in names]


def leave_one_out(folder: Path, names: Sequence[str], words: Path | None, floor: float | None = None) -> None:
    """Every candidate chosen on each fold's sets and scored on the one left out (see the module's
    docstring): nDCG@10 of all queries and of the questions, held out, and whether it holds."""
    sets = {name: KeptSet(folder, name, floor) for name in names}
    for kept in sets.values():
        if words is not None:
            kept.read_forms(words)
    models = sorted(set.intersection(*(set(kept.models) for kept in sets.values())))
    for model in models:
        print(f"\n{model}: each rule chosen on the sets named, scored on the one left out (nDCG@10 all / questions)")
        held: dict[str, dict[str, tuple[float, float]]] = {}
        for out, train in folds(names):
            kept = sets[out]
            questions = [query for query in kept.judged if query.kind == "question"]
            for name, candidate in CANDIDATES.items():
                if name.startswith("question words") and not kept.forms:
                    continue
                chosen, fusion = candidate([sets[each] for each in train], model)
                ranked = fusion(kept)
                scored = (kept.figures(ranked)["all"], kept.figures(ranked, questions)["all"] if questions else 0.0)
                held.setdefault(name, {})[out] = scored
                print(f"  {out:<15} {name:<26} {scored[0]:.3f} / {scored[1]:.3f}   chosen on {','.join(train)}: {chosen}")
            # the rule the fold itself would choose: the best mean nDCG@10 over its own sets
            means_of = {}
            for name, candidate in CANDIDATES.items():
                if name in held and out in held[name]:
                    _chosen, fusion = candidate([sets[each] for each in train], model)
                    means_of[name] = mean_all([sets[each] for each in train], fusion)
            best = max(means_of, key=lambda name: (round(means_of[name], 4), name == BASELINE))
            held.setdefault("chosen by the fold", {})[out] = held[best][out]
            print(f"  {out:<15} {'chosen by the fold':<26} {held[best][out][0]:.3f} / {held[best][out][1]:.3f}   {best}")
        print(f"\n{'rule':<26}" + "".join(f"{out:>22}" for out in names) + "   holds out")
        for name, scores in held.items():
            base = held[FORMS_BASELINE if name.startswith("question words") else BASELINE]
            worst = min(scores[out][0] - base[out][0] for out in names)
            cells = "".join(f"{scores[out][0]:>10.3f} ({scores[out][0] - base[out][0]:+.3f})" for out in names)
            print(f"{name:<26}{cells}   {'yes' if round(worst, 3) >= 0 else f'no ({worst:+.3f})'}")


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
    parser.add_argument("--leave-one-out", action="store_true", help="every rule chosen on the other sets, scored on each")
    parser.add_argument("--words", default="", help="a words-only run's folder kept with --question-forms")
    parser.add_argument("--floor", type=float, help="every model's similarity floor (default: as run, else as calibrated now)")
    args = parser.parse_args()
    folder = Path(args.lists)
    names = args.on.split(",") if args.on else sorted(path.stem for path in folder.glob("*.json"))
    if args.leave_one_out:
        leave_one_out(folder, names, Path(args.words) if args.words else None, args.floor)
        return
    refused = HELD_OUT.intersection(args.tune.split(","))
    if refused:
        parser.error(f"{', '.join(sorted(refused))}: held out, never tuned on (tests/search/judged/README.md)")
    train = [KeptSet(folder, name, args.floor) for name in args.tune.split(",") if name]
    for name in names:
        kept = KeptSet(folder, name, args.floor)
        print(f"\n{name}: similarity floor " + ", ".join(f"{model} {kept.floor(model)}" for model in kept.models))
        rows: dict[str, Mapping[str, Sequence[str]]] = {"words": kept.kept["words"], "plain": kept.kept["plain"]}
        for model in kept.models:
            key = model_key(kept.kept["model_ids"][model]) if "model_ids" in kept.kept else (model, "")
            rows[f"hybrid-{model} (as run)"] = kept.kept[f"hybrid-{model}"]
            rows[f"hybrid-{model}, equal weights"] = kept.fused(model, lambda _query: 1.0)
            rows[f"hybrid-{model}, weights of today"] = kept.fused(
                model, lambda query, key=key: knn_weight(key, query_shape(query.text)), k=rank_constant(key)
            )
            if train:
                weights = tuned(train, model)
                print(f"{model} tuned on {args.tune}: {weights}")
                rows[f"hybrid-{model}, tuned"] = kept.fused(model, lambda query, w=weights: w[query_shape(query.text)])
        print_rows(kept, rows)


if __name__ == "__main__":
    main()
