"""The extract's page, chosen again over kept lists (issue 100, point 5), without Solr: each judged
query's kNN documents with their best passage (tests.benchmarks.fusion_lists), gathered as
answers.py ``select_sources`` gathers them (at or above ``AnswerConfig.threshold``, at most
``passages`` of them and ``budget_chars`` characters, each cut to ``passage_chars``), and the
extract chosen of them by each rule of search/extractive.py ``CHOICES``. For each set: the share
of its natural questions (kind ``question``) whose extract comes from a page judged 2, the
nonsense queries given an extract (the target: none), and, with each question's pages judged 2
taken out of its lists (as the trimming takes out a page its searcher may not read), how many are
answered from another page (never from a withheld one: it is not among the sources).

    .venv/bin/python -m tests.benchmarks.extract_choice bench-lists [--floor 0.8]

The kept lists have the best passage of each document (the extract's source is one of them) and no
passage's heading or text digest: every passage is taken as made from its page's current text.
``--floor``: the model's similarity floor (the kNN query's; none: every passage).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from searchcrawl.search.answers import AnswerConfig, AnswerSource
from searchcrawl.search.evaluation import grade_of
from searchcrawl.search.extractive import CHOICES, best_extract
from tests.benchmarks.fusion import KeptSet

GATHERED = 20  # documents the answer's kNN query reads (answers.py ``answer``'s window)


def sources(kept: KeptSet, model: str, qid: str, floor: float, withheld: set[str]) -> list[AnswerSource]:
    """The passages an answer would send for query ``qid`` (``select_sources``), the documents of
    ``withheld`` not among them."""
    config = AnswerConfig(url="", model="")
    found: list[AnswerSource] = []
    spent = 0
    nearest = [row for row in kept.kept["lists"][model][qid].get("nearest", []) if row[1] >= floor and row[0] not in withheld]
    for parent, score, passage in nearest[:GATHERED]:
        text = " ".join(passage.split())[: config.passage_chars]
        if score < config.threshold or len(found) >= config.passages or spent + len(text) > config.budget_chars:
            continue
        url = kept.kept["urls"].get(parent, parent)
        found.append(AnswerSource(len(found) + 1, parent, url, kept.kept["titles"].get(parent, url), "", text, score))
        spent += len(text)
    return found


def answering(kept: KeptSet, qid: str) -> set[str]:
    """The ids of the pages judged 2 for ``qid``."""
    return {item for item, url in kept.kept["urls"].items() if grade_of(url, kept.judgments.get(qid, {})) == 2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lists", help="the folder of tests.benchmarks.fusion_lists")
    parser.add_argument("--on", default="", help="the sets (default: every set in the folder)")
    parser.add_argument("--floor", type=float, default=0.0)
    args = parser.parse_args()
    folder = Path(args.lists)
    names: Sequence[str] = args.on.split(",") if args.on else sorted(path.stem for path in folder.glob("*.json"))
    print(
        f"{'set':<16}{'choice':<12}{'questions: grade 2':>20}{'grade 1':>9}{'none':>6}{'nonsense shown':>16}{'withheld: answered':>20}"
    )
    for name in names:
        kept = KeptSet(folder, name)
        for model in kept.models:
            questions = [query for query in kept.judged if query.kind == "question"]
            nonsense = [query for query in kept.queries if query.kind == "nonsense"]
            for choice in CHOICES:
                grades = []
                for query in questions:
                    extract = best_extract(query.text, sources(kept, model, query.qid, args.floor, set()), choice=choice)
                    grades.append(None if extract is None else grade_of(extract.source.url, kept.judgments[query.qid]) or 0)
                shown = sum(
                    best_extract(q.text, sources(kept, model, q.qid, args.floor, set()), choice=choice) is not None
                    for q in nonsense
                )
                other = 0
                for query in questions:
                    withheld = answering(kept, query.qid)
                    extract = best_extract(query.text, sources(kept, model, query.qid, args.floor, withheld), choice=choice)
                    assert extract is None or extract.source.document not in withheld
                    other += extract is not None
                top = sum(grade == 2 for grade in grades)
                print(
                    f"{name:<16}{choice:<12}{top:>9}/{len(questions)} = {top / max(len(questions), 1):.2f}"
                    f"{sum(grade == 1 for grade in grades):>9}{sum(grade is None for grade in grades):>6}"
                    f"{shown:>10}/{len(nonsense)}{other:>14}/{len(questions)}"
                )


if __name__ == "__main__":
    main()
