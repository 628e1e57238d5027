"""Solr's own re-ranking, ``rq={!rerank}``, with features Solr computes (issue 93, point 1): the
words query's first ``RERANKED`` documents re-scored by their score plus a linear function of
Solr's scores of the query as a phrase in the title, in the content and in the URL's words
(``{!field}``: a phrase query of the analysed text). Each judged set's site crawled into a
development Solr (as tests.benchmarks.fusion_lists does), every judged query's words query asked
as the search page asks it (``judged_hits``, to the fusion's window) under each weighting, and its
list fused with the kNN list ``fusion_lists`` kept for it (today's weights; the documents matched
by their path, since the new crawl's port differs): leave-one-set-out, weights by coordinate ascent
on the training sets' mean nDCG@10, as tests.benchmarks.reranking does for the Python model.

    .venv/bin/python -m tests.benchmarks.solr_rerank bench-lists --deb python-scrapy-doc_2.8.0-2_all.deb \
        --deb python3.11-doc_3.11.2-6+deb12u9_all.deb

A set only ever held out (judged.py ``HELD_OUT``: python-docs) is scored, never trained on.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pysolr

from searchcrawl.access.decision import Principals
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.rules.ranking_rules import Rules
from searchcrawl.search.evaluation import JudgedQuery, randomization_p, score_run
from searchcrawl.search.query import RANKINGS, Ranking
from searchcrawl.search.results import judged_hits
from searchcrawl.search.trimmed_index import TrimmedIndex
from searchcrawl.semantic.embedders import model_key
from searchcrawl.semantic.fusion import WINDOW, K, knn_weight, query_shape, reciprocal_rank_fusion
from tests.benchmarks.fusion import DEPTH, KeptSet
from tests.benchmarks.judged import add_deb_option, crawl, judged_site, training, workspace
from tests.benchmarks.reranking import print_rows

RERANKED = 50
FEATURES = {  # Solr's score of the query as a phrase in a field (a single word: the word)
    "title": "{!field f=title v=$q}",
    "content": "{!field f=content v=$q}",
    "url": "{!field f=url_words v=$q}",
}
GRID = (0.0, 0.1, 0.3, 1.0, 3.0)
ROUNDS = 2
Weights = tuple[float, ...]  # one a feature, in FEATURES' order


def rerank_params(weights: Weights) -> dict[str, str]:
    """The words query's parameters that add ``weights`` x the features to the first ``RERANKED``
    documents' scores (none: no ``rq``)."""
    if not any(weights):
        return {}
    terms = ",".join(f"product({weight},query($rr_{name},0))" for name, weight in zip(FEATURES, weights, strict=True) if weight)
    return {
        "rq": f"{{!rerank reRankQuery=$rrq reRankDocs={RERANKED} reRankWeight=1}}",
        "rrq": "{!func}sum(" + terms + ",0)",
        **{f"rr_{name}": query for name, query in FEATURES.items()},
    }


def path_key(doc_id: str) -> str:
    """``<source>!<url>`` without the URL's host and port: the same page in two crawls."""
    source, _, url = doc_id.partition("!")
    return f"{source}!{urlsplit(url).path}"


class SolrSet:
    """One judged set crawled anew, its kept lists, and each weighting's words lists (cached)."""

    def __init__(self, kept: KeptSet, index: TrimmedIndex, source: str) -> None:
        self.kept, self.index, self.source = kept, index, source
        self.kept_id = {path_key(doc_id): doc_id for doc_id in kept.kept["urls"]}
        self.words: dict[Weights, dict[str, list[str]]] = {}
        self.seconds: dict[Weights, list[float]] = {}

    def words_lists(self, weights: Weights) -> dict[str, list[str]]:
        """qid -> the words query's ids (as the kept lists name them) under ``weights``."""
        if weights not in self.words:
            ranking = Ranking({**RANKINGS["words"].params, **rerank_params(weights)}, True, "")
            found, seconds = {}, []
            for query in self.kept.queries:
                started = time.perf_counter()
                hits = judged_hits(self.index, query.text, self.source, Rules(), ranking, depth=WINDOW)
                seconds.append(time.perf_counter() - started)
                ids = [f"{self.source}!{hit.url}" for hit in hits]
                found[query.qid] = [self.kept_id.get(path_key(doc_id), doc_id) for doc_id in ids]
            self.words[weights], self.seconds[weights] = found, seconds
        return self.words[weights]

    def fused(self, model: str, weights: Weights) -> dict[str, list[str]]:
        """qid -> hit URLs: the words lists under ``weights`` fused with the kept kNN list."""
        floor, lists, urls = self.kept.kept["floors"][model], self.kept.kept["lists"][model], self.kept.kept["urls"]
        key, words = model_key(self.kept.kept["model_ids"][model]), self.words_lists(weights)
        ranked = {}
        for query in self.kept.queries:
            nearest = [parent for parent, score, _text in lists[query.qid].get("nearest", []) if score >= floor][:WINDOW]
            weight = knn_weight(key, query_shape(query.text))
            order = [item for item, _ in reciprocal_rank_fusion([words[query.qid], nearest], K, WINDOW, (1.0, weight))]
            ranked[query.qid] = [urls.get(item, f"urn:searchcrawl:gone:{item}") for item in order[:DEPTH]]
        return ranked


def shaped(kept: KeptSet, model: str) -> Callable[[JudgedQuery], float]:
    """Today's kNN weight of a query under ``model`` (semantic/fusion.py ``knn_weight``)."""
    key = model_key(kept.kept["model_ids"][model])
    return lambda query: knn_weight(key, query_shape(query.text))


def mean_ndcg(sets: Sequence[SolrSet], model: str, weights: Weights) -> float:
    total, count = 0.0, 0
    for item in sets:
        total += item.kept.figures(item.fused(model, weights))["all"] * len(item.kept.judged)
        count += len(item.kept.judged)
    return total / count if count else 0.0


def ascended(sets: Sequence[SolrSet], model: str) -> Weights:
    """Coordinate ascent from no re-ranking: each feature's weight of ``GRID`` that raises the
    training mean, a tie kept at the weight it had."""
    weights: Weights = (0.0,) * len(FEATURES)
    best = mean_ndcg(sets, model, weights)
    for _round in range(ROUNDS):
        changed = False
        for at in range(len(FEATURES)):
            for value in GRID:
                trial = weights[:at] + (value,) + weights[at + 1 :]
                found = mean_ndcg(sets, model, trial)
                if found > best + 1e-9:
                    best, weights, changed = found, trial, True
        if not changed:
            break
    return weights


def crawled(folder: Path, debs: Sequence[str], work: Path, core: str) -> Iterator[tuple[str, str]]:
    """(set, source) of every set whose lists ``folder`` keeps, once its site is crawled into
    ``core`` and committed, as ``fusion_lists`` crawled it (``debs``: the .debs of the sets'
    documentation packages)."""
    for path in sorted(folder.glob("*.json")):
        name = path.stem
        source, site = judged_site(name, debs, work / f"site-{name}")
        crawl(site, source, work, core)
        pysolr.Solr(core, timeout=120).commit()
        yield name, source


def arguments(doc: str | None, embeddings: bool = False) -> argparse.Namespace:
    """The command line of a benchmark that crawls the sets of a ``fusion_lists`` folder again
    (``embeddings``: and embeds their passages with the models it names)."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("lists", help="the folder of tests.benchmarks.fusion_lists")
    add_deb_option(parser)
    if embeddings:
        parser.add_argument(
            "--embeddings", action="append", default=[], metavar="SPEC", help="a model (SEARCHCRAWL_EMBEDDINGS' form)"
        )
    return parser.parse_args()


def main() -> None:
    args = arguments(__doc__)
    folder = Path(args.lists)
    work, _out, solr = workspace("searchcrawl-solr-rerank-", "")
    core = solr.start(timeout=600)
    try:
        index = TrimmedIndex(SolrIndex(core, timeout=60), Principals.anonymous())
        sets: dict[str, SolrSet] = {}
        for name, source in crawled(folder, args.debs, work, core):
            sets[name] = SolrSet(KeptSet(folder, name), index, source)
        none: Weights = (0.0,) * len(FEATURES)
        for model in next(iter(sets.values())).kept.models:
            for name, item in sets.items():
                chosen = ascended(training(sets, name), model)
                print(f"{model}, {name} held out: weights {dict(zip(FEATURES, chosen, strict=True))}")
                before = score_run(item.kept.queries, item.kept.judgments, item.fused(model, none))
                after = score_run(item.kept.queries, item.kept.judgments, item.fused(model, chosen))
                p = randomization_p([b.figures["ndcg@10"] - a.figures["ndcg@10"] for a, b in zip(before, after, strict=True)])
                rows = {
                    "kept lists (fusion_lists' run)": item.kept.figures(item.kept.fused(model, shaped(item.kept, model))),
                    "words anew, no rerank": item.kept.figures(item.fused(model, none)),
                    "words anew, {!rerank}": {**item.kept.figures(item.fused(model, chosen)), "p": p},
                }
                print_rows(f"{name} ({model}), held out", rows)
        for weights in (none, (1.0,) * len(FEATURES)):  # the words query's time without and with the re-ranking
            seconds = []
            for item in sets.values():
                item.words.pop(weights, None)
                item.words_lists(weights)
                seconds += item.seconds[weights]
            seconds.sort()
            print(
                f"words query, re-rank weights {weights}: median {seconds[len(seconds) // 2] * 1000:.1f} ms, "
                f"p95 {seconds[int(0.95 * (len(seconds) - 1))] * 1000:.1f} ms ({len(seconds)} queries)"
            )
    finally:
        solr.stop()


if __name__ == "__main__":
    main()
