"""The first stage of the hybrid search, the words query, under other forms for questions and
other queries (issue 93): each judged set's site crawled into a development Solr (as
tests.benchmarks.solr_rerank does), every judged query's words query asked as the search page
asks it (``judged_hits``, to the fusion's window) under each variant of ``VARIANTS`` (Solr
parameters over the /select handler's, and a rewriting of the query's text, applied to the
queries of some shapes only), and its list fused with the kNN list ``fusion_lists`` kept for it
(today's weights): nDCG@10 per kind and success@3, words alone and fused, per model.

    .venv/bin/python -m tests.benchmarks.first_stage bench-lists --deb python-scrapy-doc_2.8.0-2_all.deb \\
        --deb python3.11-doc_3.11.2-6+deb12u9_all.deb --embeddings wordllama --embeddings onnx:<minilm jar>

A set only ever held out (judged.py ``HELD_OUT``: python-docs) is scored, never chosen on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from searchcrawl.access.decision import Principals
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.ranking_rules import Rules
from searchcrawl.search.evaluation import randomization_p, score_run
from searchcrawl.search.hybrid import SemanticModel, nearest_documents
from searchcrawl.search.query import RANKINGS, Ranking, counted, every_word_counts, term_filter
from searchcrawl.search.results import judged_hits
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import model_key
from searchcrawl.semantic.fusion import QUESTION, QUESTION_WORDS, WINDOW, K, knn_weight, query_shape, reciprocal_rank_fusion
from tests.benchmarks.fusion import DEPTH, KeptSet
from tests.benchmarks.judged import ROOT, embedded_passages, training, workspace
from tests.benchmarks.reranking import print_rows
from tests.benchmarks.solr_rerank import arguments, crawled, path_key

# the words a question opens with and the searcher's pronouns: what the question asks, not of what
OPENING = QUESTION_WORDS | frozenset("i me my we our you your to".split())
LEADING = re.compile(r"^\s*(?:(?:" + "|".join(sorted(OPENING, key=len, reverse=True)) + r")(?:\s+|$))+", re.IGNORECASE)


def without_opening(text: str) -> str:
    """``text`` less its opening question words ("how do I save" -> "save"), or as it is when
    nothing would be left."""
    rest = LEADING.sub("", text)
    return rest if rest.strip() else text


def without_question_words(text: str) -> str:
    """``text`` less every question word and pronoun of ``OPENING``, wherever it stands."""
    kept = [word for word in text.split() if word.lower() not in OPENING]
    return " ".join(kept) if kept else text


@dataclass(frozen=True)
class Variant:
    """A form of the words query: ``params`` over the handler's, ``text`` rewriting the query,
    for the queries whose shape (semantic/fusion.py ``query_shape``) is in ``shapes`` (empty:
    every query)."""

    params: Mapping[str, str] = field(default_factory=dict)
    text: Callable[[str], str] = lambda text: text
    shapes: frozenset[str] = frozenset()

    def applies(self, query: str) -> bool:
        return not self.shapes or query_shape(query) in self.shapes


QUESTIONS = frozenset({QUESTION})
QF = "title content description subject url_words^0.6"  # the /select handler's (solrconfig.xml)


def weighed(title: float = 1.0, content: float = 1.0, url: float = 0.6) -> str:
    """The handler's ``qf`` with other weights of the title, the content and the URL's words."""
    return f"title^{title} content^{content} description subject url_words^{url}"


# Every form measured (tests/benchmarks/README.md, "The first stage"), the questions' alone or
# every query's; ``held_out`` chooses among them on two sets and scores the third.
VARIANTS: dict[str, Variant] = {
    "today": Variant(),
    "q: opening words dropped": Variant(text=without_opening, shapes=QUESTIONS),
    "q: question words dropped": Variant(text=without_question_words, shapes=QUESTIONS),
    "q: mm 3<60%": Variant({"mm": "3<60%"}, shapes=QUESTIONS),
    "q: mm 3<-1": Variant({"mm": "3<-1"}, shapes=QUESTIONS),
    "q: no pf": Variant({"pf": ""}, shapes=QUESTIONS),
    "q: pf content^2": Variant({"pf": "title content^2 url_words^2"}, shapes=QUESTIONS),
    "q: pf2 title content ps2=1": Variant({"pf2": "title content", "ps2": "1"}, shapes=QUESTIONS),
    "all: pf2 title content ps2=1": Variant({"pf2": "title content", "ps2": "1"}),
    "q: pf2 title content ps2=3": Variant({"pf2": "title content", "ps2": "3"}, shapes=QUESTIONS),
    "q: pf2 content ps2=1": Variant({"pf2": "content", "ps2": "1"}, shapes=QUESTIONS),
    "q: pf3 title content ps3=1": Variant({"pf3": "title content", "ps3": "1"}, shapes=QUESTIONS),
    "q: pf3 title content ps3=3": Variant({"pf3": "title content", "ps3": "3"}, shapes=QUESTIONS),
    "q: content^2": Variant({"qf": weighed(content=2)}, shapes=QUESTIONS),
    "q: content^1.5": Variant({"qf": weighed(content=1.5)}, shapes=QUESTIONS),
    "q: title^0.5": Variant({"qf": weighed(title=0.5)}, shapes=QUESTIONS),
    "q: title^0.7": Variant({"qf": weighed(title=0.7)}, shapes=QUESTIONS),
    "q: title^0.8": Variant({"qf": weighed(title=0.8)}, shapes=QUESTIONS),
    "q: title^0.9": Variant({"qf": weighed(title=0.9)}, shapes=QUESTIONS),
    "q: url_words^1.2": Variant({"qf": weighed(url=1.2)}, shapes=QUESTIONS),
    "q: tie 0": Variant({"tie": "0"}, shapes=QUESTIONS),
    "q: tie 0.1": Variant({"tie": "0.1"}, shapes=QUESTIONS),
    "all: tie 0.1": Variant({"tie": "0.1"}),
    "q: tie 0.25": Variant({"tie": "0.25"}, shapes=QUESTIONS),
    "q: tie 0.3": Variant({"tie": "0.3"}, shapes=QUESTIONS),
    "q: tie 0.35": Variant({"tie": "0.35"}, shapes=QUESTIONS),
    "q: tie 0.5": Variant({"tie": "0.5"}, shapes=QUESTIONS),
    "q: url_words^1.2, tie 0.5": Variant({"qf": weighed(url=1.2), "tie": "0.5"}, shapes=QUESTIONS),
    "q: title^0.8, tie 0.3": Variant({"qf": weighed(title=0.8), "tie": "0.3"}, shapes=QUESTIONS),
    "q: pf2 content ps2=1, tie 0.35": Variant({"pf2": "content", "ps2": "1", "tie": "0.35"}, shapes=QUESTIONS),
    "q: pf2 content ps2=1, title^0.8": Variant({"pf2": "content", "ps2": "1", "qf": weighed(title=0.8)}, shapes=QUESTIONS),
}


class WordsSet:
    """One judged set crawled anew, its kept lists, and each variant's words lists (cached)."""

    def __init__(self, kept: KeptSet, index: TrimmedIndex, source: str) -> None:
        self.kept, self.index, self.source = kept, index, source
        self.kept_id = {path_key(doc_id): doc_id for doc_id in kept.kept["urls"]}
        self.words: dict[str, dict[str, list[str]]] = {}

    def words_lists(self, name: str, variant: Variant) -> dict[str, list[str]]:
        """qid -> the words query's ids (as the kept lists name them) under ``variant``."""
        if name not in self.words:
            found = {}
            for query in self.kept.queries:
                chosen = variant if variant.applies(query.text) else Variant()
                ranking = Ranking({**RANKINGS["words"].params, **chosen.params}, True, "")
                hits = judged_hits(self.index, chosen.text(query.text), self.source, Rules(), ranking, depth=WINDOW)
                found[query.qid] = [
                    self.kept_id.get(path_key(f"{self.source}!{hit.url}"), f"{self.source}!{hit.url}") for hit in hits
                ]
            self.words[name] = found
        return self.words[name]

    def ranked(self, name: str, variant: Variant, model: str | None) -> dict[str, list[str]]:
        """qid -> hit URLs: the words lists alone (``model`` None) or fused with the kept kNN list."""
        urls, words = self.kept.kept["urls"], self.words_lists(name, variant)
        ranked = {}
        for query in self.kept.queries:
            if model is None:
                order = words[query.qid]
            else:
                floor, lists = self.kept.kept["floors"][model], self.kept.kept["lists"][model]
                nearest = [parent for parent, score, _text in lists[query.qid].get("nearest", []) if score >= floor][:WINDOW]
                weight = knn_weight(model_key(self.kept.kept["model_ids"][model]), query_shape(query.text))
                order = [item for item, _ in reciprocal_rank_fusion([words[query.qid], nearest], K, WINDOW, (1.0, weight))]
            ranked[query.qid] = [urls.get(item, f"urn:searchcrawl:gone:{item}") for item in order[:DEPTH]]
        return ranked

    def row(self, name: str, variant: Variant, model: str | None) -> dict[str, float]:
        """nDCG@10 per kind, success@3, and p against today's form (paired randomization test)."""
        before = score_run(self.kept.queries, self.kept.judgments, self.ranked("today", VARIANTS["today"], model))
        ranked = self.ranked(name, variant, model)
        after = score_run(self.kept.queries, self.kept.judgments, ranked)
        p = randomization_p([b.figures["ndcg@10"] - a.figures["ndcg@10"] for a, b in zip(before, after, strict=True)])
        return {**self.kept.figures(ranked), "p": p}


def crawled_sets(folder: Path, debs: Sequence[str], work: Path, core: str) -> dict[str, WordsSet]:
    """Every set of ``folder`` crawled into ``core``, as ``fusion_lists`` crawled it."""
    index = TrimmedIndex(SolrIndex(core, timeout=60), Principals.anonymous())
    return {name: WordsSet(KeptSet(folder, name), index, source) for name, source in crawled(folder, debs, work, core)}


def report(sets: Mapping[str, WordsSet], variants: Mapping[str, Variant]) -> None:
    for name, item in sets.items():
        for model in (None, *item.kept.models):
            rows = {label: item.row(label, variant, model) for label, variant in variants.items()}
            print_rows(f"{name}, {'words alone' if model is None else model}", rows)


def mean_ndcg(sets: Sequence[WordsSet], name: str, model: str | None) -> float:
    """The mean nDCG@10 of every query of ``sets`` under the variant ``name``."""
    total, count = 0.0, 0
    for item in sets:
        total += item.kept.figures(item.ranked(name, VARIANTS[name], model))["all"] * len(item.kept.judged)
        count += len(item.kept.judged)
    return total / count if count else 0.0


def held_out(sets: Mapping[str, WordsSet]) -> None:
    """Each set scored under the variant with the best mean nDCG@10 on the others (``training``; a
    tie: the first of ``VARIANTS``, today's form first), words alone and fused with each model."""
    for model in (None, *next(iter(sets.values())).kept.models):
        for name, item in sets.items():
            chosen_on = training(sets, name)
            chosen = max(VARIANTS, key=lambda label: (round(mean_ndcg(chosen_on, label, model), 9), -list(VARIANTS).index(label)))
            rows = {
                "today": item.row("today", VARIANTS["today"], model),
                f"chosen: {chosen}": item.row(chosen, VARIANTS[chosen], model),
            }
            print_rows(f"{name}, {'words alone' if model is None else model}, held out", rows)


STOPWORDS = frozenset((ROOT / "solr" / "configset" / "conf" / "stopwords_en.txt").read_text(encoding="utf-8").split())


def first_good(ranked: Sequence[str], good: set[str]) -> int | None:
    """The rank (from 1) of the first of ``ranked`` (URLs or ids) whose path is in ``good``."""
    return next((at + 1 for at, item in enumerate(ranked) if urlsplit(item.partition("!")[2] or item).path in good), None)


def held_words(item: WordsSet, text: str, path: str) -> tuple[int, int]:
    """(how many of the query's words the page at ``path`` holds in the fields the words query
    reads, how many words the query has, its stopwords left out)."""
    words = [word for word in re.findall(r"\w+", text.lower()) if word not in STOPWORDS]
    urls = {
        urlsplit(str(doc["url"])).path: str(doc["url"])
        for doc in item.index.search("*:*", {"fq": [term_filter("source", item.source)], "fl": "url", "rows": 5000}).docs
    }
    if path not in urls or not words:
        return 0, len(words)
    counts = every_word_counts(words, "w", QF)
    found = item.index.search("*:*", {**counts, "fq": [term_filter("url", urls[path])], "rows": 0}).facets
    return sum(counted(found, f"w{number}") for number in range(len(words))), len(words)


def diagnose(sets: Mapping[str, WordsSet]) -> None:
    """Every judged query whose first grade-2 page is not in the fused top 3 under a model: that
    page's rank in the words list (to the window), in the kNN list above the model's floor and
    under it, in the plain content query's, and the share of the query's words it holds."""
    for name, item in sets.items():
        kept, words = item.kept, item.words_lists("today", VARIANTS["today"])
        fused = {model: item.ranked("today", VARIANTS["today"], model) for model in kept.models}
        print(
            f"\n{name}: query, kind, shape, fused rank per model, words rank, kNN rank (above the floor / any) per model, plain rank, words held"
        )
        for query in kept.judged:
            good = {path for path, grade in kept.judgments[query.qid].items() if grade >= 2}
            ranks = {model: first_good(fused[model][query.qid], good) for model in kept.models}
            if all(rank is not None and rank <= 3 for rank in ranks.values()):
                continue
            knn = []
            for model in kept.models:
                nearest, floor = kept.kept["lists"][model][query.qid].get("nearest", []), kept.kept["floors"][model]
                above = [parent for parent, score, _text in nearest if score >= floor]
                knn.append(f"{first_good(above, good)}/{first_good([parent for parent, _s, _t in nearest], good)}")
            best = min(good, key=lambda path: first_good(words[query.qid], {path}) or WINDOW + 1)
            held, total = held_words(item, query.text, best)
            print(
                f"{query.qid} {query.kind} {query_shape(query.text)} fused {ranks} words {first_good(words[query.qid], good)} "
                f"kNN {' '.join(knn)} plain {first_good(kept.kept['plain'][query.qid], good)} held {held}/{total} | {query.text}"
            )


# The kNN query's text of a question, as typed or with its question words dropped (the words
# query's own text as typed): ``passage_queries``.
PASSAGE_TEXTS: dict[str, Callable[[str], str]] = {
    "as typed": lambda text: text,
    "opening words dropped": without_opening,
    "question words dropped": without_question_words,
}


def passage_queries(sets: Mapping[str, WordsSet], core: str, specs: Sequence[str]) -> None:
    """Each model of ``specs`` (SEARCHCRAWL_EMBEDDINGS' form) embeds the crawled sets' passages;
    every judged query's kNN query is asked again, a question's under each of ``PASSAGE_TEXTS``,
    and fused with today's words list of this crawl (the model's floor, today's weights)."""
    for spec in specs:
        for name, item in sets.items():
            kind, embedder, _result = embedded_passages(core, spec, item.source)
            model, words, urls = SemanticModel(embedder), item.words_lists("today", VARIANTS["today"]), item.kept.kept["urls"]
            rows = {}
            for label, text in PASSAGE_TEXTS.items():
                ranked = {}
                for query in item.kept.queries:
                    asked = text(query.text) if query_shape(query.text) == QUESTION else query.text
                    found = nearest_documents(item.index, model, asked, [term_filter("source", item.source)], {}, WINDOW)
                    nearest = [item.kept_id.get(path_key(parent), parent) for parent, _doc in found]
                    weight = knn_weight(model_key(embedder.model_id), query_shape(query.text))
                    order = [doc for doc, _ in reciprocal_rank_fusion([words[query.qid], nearest], K, WINDOW, (1.0, weight))]
                    ranked[query.qid] = [urls.get(doc, f"urn:searchcrawl:gone:{doc}") for doc in order[:DEPTH]]
                rows[f"kNN query {label}"] = item.kept.figures(ranked)
            print_rows(f"{name}, {kind}, the kNN query's text", rows)


def main() -> None:
    args = arguments(__doc__, embeddings=True)
    work, _out, solr = workspace("searchcrawl-first-stage-", "")
    core = solr.start(timeout=600)
    try:
        sets = crawled_sets(Path(args.lists), args.debs, work, core)
        diagnose(sets)
        report(sets, VARIANTS)
        held_out(sets)
        passage_queries(sets, core, args.embeddings)
    finally:
        solr.stop()


if __name__ == "__main__":
    main()
