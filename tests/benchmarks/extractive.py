"""Extractive answers on the judged sets (issue 93, point 3): how often the passage shown for a
question comes from a page judged 2 for it, and that none comes from a page withheld from the
searcher.

`.venv/bin/python -m tests.benchmarks.extractive [--sets scipy-lectures,nutch] [--out DIR]`

In one run, all its own, as tests/benchmarks/answers.py runs (no model server): a dev Solr, each
judged set's site crawled as the judged benchmark crawls it, its passages embedded with wordllama.
Then every judged query is asked as a visitor (all pages public) through
``searchcrawl.search.extractive`` (answers.py ``answer`` with no model URL, ``with_extract`` its lead): whether the query classifier calls it a question, whether an
extract is shown (asked whatever the classifier says, as the API's ``answer=1`` asks), the grade
of its page, and the time it took. Last, for each question (the ``question`` kind), its pages
judged ``--withhold-grade`` or above are made readable by a group the visitor is not in (their
access changed in place, passages brought up to date), and the question asked again: the extract
must come from none of them (no answer, or one from a page still readable).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from searchcrawl.access.decision import Principals
from searchcrawl.access.tokens import Access, Grant
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search.answers import AnswerConfig, answer
from searchcrawl.search.evaluation import grade_of
from searchcrawl.search.extractive import is_question, marked_sentences, with_extract
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.results import judged_hits
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import embedder_from
from tests.benchmarks.answers import judged_set, percentiles, set_access
from tests.benchmarks.judged import SETS


def shown_grade(result: Any, judgments: dict[str, int]) -> int | None:
    """The grade of the extract's page for the query (None: no extract shown; 0: a page not judged)."""
    if result.extract is None:
        return None
    return grade_of(result.extract.source.url.split("#", 1)[0], judgments) or 0


def candidates(result: Any, judgments: dict[str, int], page: list[str]) -> list[dict[str, Any]]:
    """Every passage gathered for the query with what a ranking of them could use: its kNN score,
    how many of the question's words its best sentence says, its page's rank on the hybrid search
    page (``page``: its hits' URLs), and its grade."""
    rows = []
    for source_ in result.sources:
        url = source_.url.split("#", 1)[0]
        _sentences, said = marked_sentences(result.question, source_.text)
        rank = page.index(url) if url in page else None
        rows.append({"url": url, "grade": grade_of(url, judgments) or 0, "knn": source_.score, "said": said, "page_rank": rank})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--withhold-grade", type=int, default=2, help="the pages withheld for a question: judged this or above")
    parser.add_argument("--out", default="")
    parser.add_argument("--embeddings", default="wordllama", help="the passages' model, as SEARCHCRAWL_EMBEDDINGS names it")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-extractive-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    solr = DevSolr(work / "solr", free_port(), heap="1g")
    core = solr.start(timeout=600)
    config = AnswerConfig(url="", model="")  # the product's defaults: threshold, passages, budget
    report: dict[str, Any] = {"threshold": config.threshold, "withhold_grade": args.withhold_grade, "embeddings": args.embeddings}
    rows = (out / "queries.jsonl").open("w", encoding="utf-8")
    try:
        index = SolrIndex(core, timeout=60)
        embedder = embedder_from(args.embeddings)
        assert embedder is not None, args.embeddings
        model = SemanticModel(embedder)
        visitor = TrimmedIndex(index, Principals.anonymous())
        hybrid = SemanticSearch(model)
        for name in args.sets.split(","):
            source, queries, judgments = judged_set(name, work, core, index, embedder)
            filters = ["{!term f=source}" + source]
            kinds: dict[str, dict[str, Any]] = {}
            seconds: list[float] = []
            for query in queries:
                began = time.monotonic()
                result = answer(visitor, model, query.text, config, filters, lead=with_extract)
                seconds.append(time.monotonic() - began)
                grade = shown_grade(result, judgments[query.qid])
                row = kinds.setdefault(
                    query.kind, {"queries": 0, "classified_question": 0, "shown": 0, "grade_2": 0, "grade_1": 0}
                )
                row["queries"] += 1
                row["classified_question"] += is_question(query.text)
                row["shown"] += grade is not None
                row["any_grade_2_gathered"] = row.get("any_grade_2_gathered", 0) + any(
                    grade_of(s.url.split("#", 1)[0], judgments[query.qid]) == 2 for s in result.sources
                )
                row["grade_2"] += grade == 2
                row["grade_1"] += grade == 1
                marked = result.extract.marked if result.extract else []
                record = {"set": name, "qid": query.qid, "kind": query.kind, "query": query.text, "grade": grade}
                record["url"] = result.extract.source.url if result.extract else None
                page = [hit.url for hit in judged_hits(visitor, query.text, source, None, "page", 20, hybrid)]
                gathered_ = candidates(result, judgments[query.qid], page)
                rows.write(json.dumps({**record, "marked": marked, "candidates": gathered_}) + "\n")
            for row in kinds.values():
                row["share_grade_2"] = round(row["grade_2"] / max(row["queries"], 1), 3)
            # each question's answering pages withheld from the visitor, one question at a time
            withheld_rounds = {"asked": 0, "no_answer": 0, "from_a_readable_page": 0, "from_a_withheld_page": 0}
            for query in [q for q in queries if q.kind == "question"]:
                chosen = {docno: 2 for docno, grade in judgments[query.qid].items() if grade >= args.withhold_grade}
                found = index.search("*:*", fq=filters + ["-doc_type:passage"], fl="id,url", rows=10000).docs
                withheld = [doc for doc in found if grade_of(str(doc["url"]), chosen) == 2]
                if not withheld:
                    continue
                set_access(index, embedder, source, withheld, Access.of([Grant.of("group:board", "benchmark")]))
                try:
                    result = answer(visitor, model, query.text, config, filters, lead=with_extract)
                    withheld_rounds["asked"] += 1
                    if result.extract is None:
                        withheld_rounds["no_answer"] += 1
                    elif grade_of(result.extract.source.url.split("#", 1)[0], chosen) == 2:
                        withheld_rounds["from_a_withheld_page"] += 1
                    else:
                        withheld_rounds["from_a_readable_page"] += 1
                    shown = result.extract.source.url if result.extract else None
                    rows.write(json.dumps({"set": name, "qid": query.qid, "round": "withheld", "url": shown}) + "\n")
                finally:
                    set_access(index, embedder, source, withheld, Access.public("benchmark"))
            report[name] = {"kinds": kinds, "latency": percentiles(seconds), "withheld": withheld_rounds}
            print(name, json.dumps(report[name]), flush=True)
    finally:
        rows.close()
        solr.stop()
    (out / "results.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
