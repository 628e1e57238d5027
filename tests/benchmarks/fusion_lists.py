"""The lists the hybrid order is made of, kept for every judged query (issue 93): each judged set's
site crawled into a development Solr and its passages embedded (as tests/benchmarks/judged.py
does), then every query searched as the search page searches it, and kept: the words query's hits
(to the fusion's window), the plain content query's, and the kNN query's documents with their
best passage's score, read without a floor, and each document's title. ``tests.benchmarks.fusion``
and ``tests.benchmarks.reranking`` then score fusions of them (weights, floors, a re-ranker) without asking Solr again: nDCG is deterministic, so a change
of the fusion is measured on exactly the same lists.

    .venv/bin/python -m tests.benchmarks.fusion_lists --out bench-lists --embeddings wordllama
    apt-get download python-scrapy-doc   # the third corpus, tuned on by nobody: Scrapy 2.8's documentation
    apt-get download python3.11-doc      # the fourth, held out: Python 3.11's documentation
    .venv/bin/python -m tests.benchmarks.fusion_lists --out bench-lists --sets scrapy-docs,python-docs \
        --deb python-scrapy-doc_2.8.0-2_all.deb --deb python3.11-doc_3.11.2-6+deb12u9_all.deb --embeddings wordllama

``--question-forms typed,dropped,lowered`` keeps, besides, the words query's hits (to the fusion's
window) under each form of a question's words query (search/query.py ``words_text``), words
only: ``tests.benchmarks.fusion --words FORM`` fuses them with another run's kNN lists (issue 100,
point 4). A words-only run of all four sets takes minutes, not the embedding's hour.

``--coordination SPEC`` (repeated) keeps, besides, the words query's hits (ids, to the fusion's
window) with each coordination requirement applied (search/query.py ``coordination_filter``: a
share of the query's asked words, an edismax ``mm``), and under ``""`` without one, from the same
crawl: ``tests.benchmarks.nonsense`` scores the rules of issue 100's nonsense queries with them.
Every list is kept with the nonsense rule (SEARCHCRAWL_SEARCH_COORDINATION) off: the raw lists.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import pysolr

from searchcrawl.access.decision import Principals
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.ranking_rules import Rules
from searchcrawl.search import hybrid, results
from searchcrawl.search.evaluation import JudgedQuery, means, read_qrels, read_queries, score_run, silence
from searchcrawl.search.hybrid import SemanticModel, SemanticSearch
from searchcrawl.search.query import FORMS, Coordination, coordination_filter
from searchcrawl.search.results import judged_hits, judged_run
from searchcrawl.search.trimmed_index import TrimmedIndex
from tests.benchmarks.judged import JUDGED, SETS, add_deb_option, crawl, embedded_passages, judged_site, workspace

RAW = Coordination("", "")  # the lists as the queries find them: the nonsense rule off (nonsense.py applies it)


def summary(queries: list[JudgedQuery], judgments: dict[str, dict[str, int]], ranked: dict[str, list[str]]) -> str:
    """A run's nDCG@10 and, for a set with nonsense queries, the share of them that found nothing."""
    silent = silence(queries, ranked)
    return f"{means(score_run(queries, judgments, ranked))['ndcg@10']:.4f}" + ("" if silent is None else f", silent {silent:.3f}")


def kept_lists(index: TrimmedIndex, queries: list[Any], source: str, model: SemanticModel) -> dict[str, dict[str, Any]]:
    """qid -> {"words": [id...], "nearest": [[id, score, passage text]...]}: what ``fuse`` was given."""
    kept: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] = {}
    original_nearest, original_fuse = hybrid.nearest_documents, hybrid.fuse

    def nearest(*args: Any, **kwargs: Any) -> list[tuple[str, dict[str, Any]]]:
        found = original_nearest(*args, **kwargs)
        current["nearest"] = [
            [parent, float(doc.get("score") or 0.0), str(doc.get("passage_text") or "")] for parent, doc in found
        ]
        return found

    def fuse(index: Any, semantic: Any, query: str, words: Any, *args: Any, **kwargs: Any) -> Any:
        current["words"] = [str(doc["id"]) for doc in words]
        return original_fuse(index, semantic, query, words, *args, **kwargs)

    hybrid.nearest_documents, hybrid.fuse = nearest, fuse  # type: ignore[assignment]
    try:
        import searchcrawl.search.results as page

        page_fuse, page.fuse = page.fuse, fuse  # type: ignore[attr-defined]
        try:
            for query in queries:
                current.clear()
                judged_run(index, [query], source, Rules(), "page", SemanticSearch(model), RAW)
                kept[query.qid] = dict(current)
        finally:
            page.fuse = page_fuse  # type: ignore[attr-defined]
    finally:
        hybrid.nearest_documents, hybrid.fuse = original_nearest, original_fuse  # type: ignore[assignment]
    return kept


def question_forms(index: TrimmedIndex, queries: list[Any], source: str, forms: list[str]) -> dict[str, dict[str, list[str]]]:
    """form -> qid -> the words query's hit URLs to the fusion's window, the question's words query
    made in that form (``words_text``)."""
    kept: dict[str, dict[str, list[str]]] = {}
    original = results.words_text
    try:
        for form in forms:
            results.words_text = lambda text, form=form: original(text, form)  # type: ignore[misc]
            kept[form] = {
                query.qid: [
                    hit.url for hit in judged_hits(index, query.text, source, Rules(), "words", hybrid.WINDOW, coordination=RAW)
                ]
                for query in queries
            }
    finally:
        results.words_text = original  # type: ignore[misc]
    return kept


def coordinated(index: TrimmedIndex, queries: list[Any], source: str, specs: list[str]) -> dict[str, dict[str, list[str]]]:
    """spec -> qid -> the words query's hit ids to the fusion's window, with the coordination
    requirement ``spec`` applied to the words query (``coordination_filter``; "": none)."""
    kept: dict[str, dict[str, list[str]]] = {}
    original = results.words_query

    def with_filter(spec: str) -> Any:
        def words_query(request: Any, *args: Any) -> results.WordsQuery:
            query = original(request, *args)
            found = coordination_filter(request.q, spec)
            if found is not None:
                query.params["fq"] = [*query.params["fq"], found[0]]
                query.params.update(found[1])
            return query

        return words_query

    try:
        for spec in ["", *specs]:
            results.words_query = with_filter(spec)  # type: ignore[assignment]
            kept[spec] = {
                query.qid: [
                    hit.id for hit in judged_hits(index, query.text, source, Rules(), "words", hybrid.WINDOW, coordination=RAW)
                ]
                for query in queries
            }
    finally:
        results.words_query = original  # type: ignore[assignment]
    return kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--embeddings", action="append", default=[], metavar="SPEC")
    parser.add_argument(
        "--question-forms", default="", help=f"words lists kept under these forms of a question ({','.join(FORMS)})"
    )
    parser.add_argument(
        "--coordination",
        action="append",
        default=[],
        metavar="SPEC",
        help="words lists kept under this edismax mm of the asked words",
    )
    add_deb_option(parser)
    args = parser.parse_args()
    forms = [form for form in args.question_forms.split(",") if form]
    if set(forms) - set(FORMS):
        parser.error(f"--question-forms: of {', '.join(FORMS)}")
    work, out, solr = workspace("searchcrawl-fusion-", args.out)
    core = solr.start(timeout=600)
    try:
        index = TrimmedIndex(SolrIndex(core, timeout=60), Principals.anonymous())
        for name in args.sets.split(","):
            source, site = judged_site(name, args.debs, work / f"site-{name}")
            crawled = crawl(site, source, work, core)
            pysolr.Solr(core, timeout=120).commit()
            queries = read_queries((JUDGED / name / "queries.tsv").read_text(encoding="utf-8"))
            judgments = read_qrels((JUDGED / name / "qrels.txt").read_text(encoding="utf-8"))
            docs = pysolr.Solr(core, timeout=120).search(f'source:"{source}"', fl="id,url,title", rows=100_000).docs
            urls = {str(doc["id"]): str(doc["url"]) for doc in docs}
            titles = {str(doc["id"]): str(doc.get("title") or "") for doc in docs}  # a re-ranker's feature (reranking.py)
            entry: dict[str, Any] = {
                "crawl": {k: v for k, v in crawled.items() if k != "base"},
                "urls": urls,
                "titles": titles,
                "lists": {},
            }
            for ranking in ("words", "plain"):
                ranked, _ = judged_run(index, queries, source, Rules(), ranking, None, RAW)
                entry[ranking] = ranked
                print(name, ranking, summary(queries, judgments, ranked))
            if forms:
                entry["question_forms"] = question_forms(index, queries, source, forms)
            if args.coordination:
                entry["coordination"] = coordinated(index, queries, source, args.coordination)
                for spec, lists in entry["coordination"].items():
                    silent = silence(queries, lists)
                    print(name, f"coordination {spec!r}", "" if silent is None else f"silent {silent:.3f}")
            for spec in args.embeddings:
                kind, embedder, _result = embedded_passages(core, spec, source)
                ranked, _ = judged_run(index, queries, source, Rules(), "page", SemanticSearch(SemanticModel(embedder)), RAW)
                entry[f"hybrid-{kind}"] = ranked
                print(name, f"hybrid-{kind}", summary(queries, judgments, ranked))
                entry["lists"][kind] = kept_lists(index, queries, source, SemanticModel(embedder, 0.0))
                entry.setdefault("floors", {})[kind] = SemanticModel(embedder).floor
                entry.setdefault("model_ids", {})[kind] = embedder.model_id
            (out / f"{name}.json").write_text(json.dumps(entry), encoding="utf-8")
    finally:
        solr.stop()
    print(f"lists in {out}")


if __name__ == "__main__":
    main()
