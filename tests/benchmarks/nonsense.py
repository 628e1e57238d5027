"""Issue 100's nonsense queries: which rule leaves them silent without costing the real ones,
scored on the kept lists of ``tests.benchmarks.fusion_lists --coordination SPEC`` (the words
query's hits under each coordination requirement, search/query.py ``coordination_filter``, from
one crawl), without Solr:

    .venv/bin/python -m tests.benchmarks.fusion_lists --out bench-words --coordination 1 --coordination "2<-1 4<60%" ... \\
        --deb python-scrapy-doc_2.8.0-2_all.deb --deb python3.11-doc.deb        # words only: minutes
    .venv/bin/python -m tests.benchmarks.nonsense bench-words                   # semantic search off
    .venv/bin/python -m tests.benchmarks.fusion_lists --out bench-lists --embeddings bge-small --coordination ...
    .venv/bin/python -m tests.benchmarks.nonsense bench-lists                   # hybrid, and words alone

Shipped (search/query.py ``COORDINATION``): "gate" with ``Coordination.words`` where the model
gives no verdict (words alone), "gate, no kNN hit" with ``Coordination.hybrid`` where it does.

A rule (``RULES``) says, for one query, which words list the search fuses: the words query as
today, or filtered by the requirement (a document holds that share of the query's asked words),
or none at all; "gate": the words query as today where one document meets the requirement, else
none (the best hit's coordination decides). Each applies always, or only where the kNN query
found nothing above the model's floor (the model's verdict that nothing is about the query;
hybrid lists only). Words alone (semantic search off), "when the kNN list is empty" is always.

Every rule and requirement is scored on every set: nDCG@10 of all queries and of each kind,
success@3, and the nonsense queries that found nothing. Then leave-one-set-out, for each rule:
the requirement chosen on the other sets (python-docs never: judged.py ``HELD_OUT``) is the one
that silences the most nonsense there while costing no set more than ``NOISE`` nDCG@10 against
no rule, the loosest on a tie; scored on the set left out.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from searchcrawl.search.query import COORDINATION
from searchcrawl.semantic.embedders import model_key
from searchcrawl.semantic.fusion import WINDOW, rank_constant, reciprocal_rank_fusion
from tests.benchmarks.fusion import DEPTH, KeptSet, folds

NOISE = 0.005  # two runs' difference of one ranking's nDCG@10 (docs/semantic-search.md)
KINDS = ("all", "keyword", "question", "navigational", "error")

# rule -> (where the kNN list found nothing only, what the words list is: "filter" or "gate")
RULES: dict[str, tuple[bool, str]] = {
    "filter": (False, "filter"),
    "gate": (False, "gate"),
    "filter, no kNN hit": (True, "filter"),
    "gate, no kNN hit": (True, "gate"),
}


def words_list(kept: KeptSet, spec: str, how: str, qid: str) -> list[str]:
    """The words list (ids) of query ``qid`` under requirement ``spec`` (""): as today)."""
    lists = kept.kept["coordination"]
    if not spec or how == "filter":
        return lists[spec][qid]
    return lists[""][qid] if lists[spec][qid] else []


def ranked(kept: KeptSet, model: str, spec: str, rule: str) -> dict[str, list[str]]:
    """qid -> hit URLs under ``rule`` with requirement ``spec``: the words list alone (``model``
    "") or fused with ``model``'s kNN list above its floor, as search/hybrid.py fuses them (weights
    1, the model's constant)."""
    only_without_knn, how = RULES.get(rule, (False, "filter"))
    urls = kept.kept["urls"]
    out: dict[str, list[str]] = {}
    for query in kept.queries:
        nearest: list[str] = []
        if model:
            floor = kept.floor(model)
            nearest = [
                parent for parent, score, _text in kept.kept["lists"][model][query.qid].get("nearest", []) if score >= floor
            ]
        applies = bool(spec) and not (only_without_knn and nearest)
        words = words_list(kept, spec if applies else "", how, query.qid)
        if nearest:
            k = rank_constant(model_key(kept.kept["model_ids"][model]))
            order = [item for item, _ in reciprocal_rank_fusion([words, nearest[:WINDOW]], k, WINDOW, (1.0, 1.0))]
        else:
            order = words
        out[query.qid] = [urls.get(item, f"urn:searchcrawl:gone:{item}") for item in order[:DEPTH]]
    return out


def silenced(kept: KeptSet, run: Mapping[str, Sequence[str]]) -> tuple[int, int]:
    """(the nonsense queries that found nothing, the nonsense queries)."""
    nonsense = [query for query in kept.queries if query.kind == "nonsense"]
    return sum(1 for query in nonsense if not run.get(query.qid)), len(nonsense)


def row(kept: KeptSet, run: Mapping[str, Sequence[str]]) -> str:
    figures = kept.figures(run)
    quiet, count = silenced(kept, run)
    return "".join(f"{figures.get(kind, 0.0):>9.3f}" for kind in (*KINDS, "success@3")) + f"{quiet:>5}/{count}"


Choice = Callable[[KeptSet], dict[str, list[str]]]


def choose(train: Sequence[KeptSet], model: str, rule: str, specs: Sequence[str]) -> str:
    """The requirement of ``specs`` that silences the most nonsense of ``train`` while costing no
    set of it more than ``NOISE`` nDCG@10 against no rule; the first (the loosest) on a tie;
    "" where none is free."""
    best, best_quiet = "", -1
    for spec in specs if train else ():
        costs = [
            kept.figures(ranked(kept, model, spec, rule))["all"] - kept.figures(ranked(kept, model, "", rule))["all"]
            for kept in train
        ]
        quiet = sum(silenced(kept, ranked(kept, model, spec, rule))[0] for kept in train)
        if min(costs) >= -NOISE and quiet > best_quiet:
            best, best_quiet = spec, quiet
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lists", help="the folder of tests.benchmarks.fusion_lists --coordination")
    parser.add_argument("--on", default="", help="the sets scored (default: every set in the folder)")
    args = parser.parse_args()
    folder = Path(args.lists)
    names = args.on.split(",") if args.on else sorted(path.stem for path in folder.glob("*.json"))
    sets = {name: KeptSet(folder, name) for name in names}
    specs = [spec for spec in next(iter(sets.values())).kept["coordination"] if spec]
    models = [""] + sorted(set.intersection(*(set(kept.models) for kept in sets.values())))
    header = f"{'':<34}" + "".join(f"{kind[:8]:>9}" for kind in (*KINDS, "success@3")) + "  silent"
    for model in models:
        rules = list(RULES) if model else ["filter", "gate"]
        print(f"\n=== {model or 'words alone (semantic search off)'}")
        for name, kept in sets.items():
            print(f"\n{name}\n{header}")
            print(f"{'no rule':<34}" + row(kept, ranked(kept, model, "", "filter")))
            shipped = (COORDINATION.hybrid, "gate, no kNN hit") if model else (COORDINATION.words, "gate")
            print(f"{'as shipped: ' + shipped[1] + ' ' + shipped[0]:<34}" + row(kept, ranked(kept, model, *shipped)))
            for rule in rules:
                for spec in specs:
                    print(f"{rule + ' ' + spec:<34}" + row(kept, ranked(kept, model, spec, rule)))
        print(
            f"\n{model or 'words alone'}: leave-one-set-out (the requirement chosen on the others; nDCG@10 all / questions, silent)"
        )
        for rule in rules:
            for out, train in folds(names):
                kept = sets[out]
                spec = choose([sets[each] for each in train], model, rule, specs)
                base, run = kept.figures(ranked(kept, model, "", rule)), kept.figures(ranked(kept, model, spec, rule))
                quiet, count = silenced(kept, ranked(kept, model, spec, rule))
                print(
                    f"  {rule:<20} {out:<15} chosen on {','.join(train)}: {spec or '(none)':<12}"
                    f" {run['all']:.3f} ({run['all'] - base['all']:+.3f}) / {run.get('question', 0):.3f}"
                    f" ({run.get('question', 0) - base.get('question', 0):+.3f}), silent {quiet}/{count}"
                )


if __name__ == "__main__":
    main()
