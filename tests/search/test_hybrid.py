"""Hybrid retrieval (search/hybrid.py), without Solr: the similarity floor, the fusion by the query's shape."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from searchcrawl.search.hybrid import SemanticModel, SemanticSearch, fuse, nearest_documents, spec_floor


class Model:
    model_id, dimension = "test/model/0123456789ab", 3

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(3)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)


class Index:
    """A TrimmedIndex whose kNN query finds ``scores`` (parent -> its passage's score, best
    first) and whose documents are all readable."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def nearest(self, field: str, vector: list[float], top_k: int, params: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(docs=[{"id": f"{p}#0", "parent_id": p, "score": s} for p, s in self.scores.items()])

    def search(self, query: str, params: dict[str, Any]) -> SimpleNamespace:
        return SimpleNamespace(docs=[{"id": parent} for parent in self.scores])


def test_a_passage_below_the_model_s_floor_is_no_hit() -> None:
    """Issue 91: the k nearest passages of a query nothing answers ("qwxzzy blorft") are still
    the k nearest; below the floor they are no hit, so the query finds nothing by meaning."""
    index = Index({"related": 0.81, "also": 0.70, "unrelated": 0.62, "nothing": 0.55})
    found = nearest_documents(index, SemanticModel(Model(), 0.70), "q", [], {}, 10)  # type: ignore[arg-type]
    assert [parent for parent, _ in found] == ["related", "also"]
    assert not nearest_documents(Index({"unrelated": 0.62}), SemanticModel(Model(), 0.7), "qwxzzy blorft", [], {}, 10)  # type: ignore[arg-type]
    assert SemanticModel(Model()).floor is None  # not calibrated, none given
    assert SemanticModel(Model(), 0.7).floor == 0.7 and spec_floor("wordllama?floor=0.7") == 0.7 and spec_floor("") is None


def test_a_model_with_no_floor_finds_nothing_by_meaning() -> None:
    """Issue 91 review: a model with no calibrated floor and no ``?floor=`` (any ``openai:`` one,
    another ONNX file) had floor 0, so every query matched again; now it has no kNN hit at all (the
    search is its words alone) until the setting gives a floor, 0 included."""

    class Unembeddable(Model):
        def embed(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("a model with no floor need not embed the query")

    index = Index({"related": 0.81, "unrelated": 0.55})
    assert not nearest_documents(index, SemanticModel(Unembeddable()), "qwxzzy blorft", [], {}, 10)  # type: ignore[arg-type]
    assert len(nearest_documents(index, SemanticModel(Model(), 0.0), "q", [], {}, 10)) == 2  # type: ignore[arg-type]


class Pages(Index):
    """An index whose kNN query finds ``nearest`` (best first) and whose every document is readable."""

    def __init__(self, nearest: list[str]) -> None:
        super().__init__({parent: 0.9 for parent in nearest})

    def search(self, query: str, params: dict[str, Any]) -> SimpleNamespace:
        ids = next(f for f in params["fq"] if f.startswith("{!terms f=id")).split("}", 1)[1].split()
        return SimpleNamespace(docs=[{"id": item, "url": f"http://127.0.0.1/{item}"} for item in ids], highlighting={})


def fused_order(query: str, words: list[str], nearest: list[str]) -> list[str]:
    semantic = SemanticSearch(SemanticModel(Model(), 0.5))
    hits = [{"id": item, "url": f"http://127.0.0.1/{item}"} for item in words]
    return [str(doc["id"]) for doc in fuse(Pages(nearest), semantic, query, hits, [], {}, 0, 10).docs]  # type: ignore[arg-type]


def test_an_exact_name_keeps_the_words_order_above_what_meaning_alone_found() -> None:
    """Issue 93: a class or exception name is found by its words; equal weights put each page the
    model found nearest (by shared vocabulary) level with the words' first hit, above the words'
    second: the Nutch error queries fell under the plain content query. A name's kNN list now
    weighs less, so what meaning alone found comes after the words' hits."""
    words = ["ParseException", "ParseUtil", "ParserFactory", "ParseStatus", "ParseResult"]
    order = fused_order("org.apache.nutch.parse.ParseException", words, ["HtmlParser", "TikaParser"])
    assert order[:5] == words and order[5:] == ["HtmlParser", "TikaParser"]


def test_a_question_keeps_the_plain_reciprocal_rank_fusion() -> None:
    """A question in a user's words is where meaning helps: an uncalibrated model's list weighs as
    the words' (the fusion of issue 76)."""
    order = fused_order("how do I keep the crawler on my own domain", ["a", "b", "c"], ["k1", "b"])
    assert order == ["b", "a", "k1", "c"]


def test_bge_small_fuses_with_its_own_constant() -> None:
    """Issue 100, point 7: bge-small's reciprocal rank fusion constant (20, chosen leave-one-set-out)
    trusts each list's first hits more than the paper's 60: a page first by its words alone comes
    above one that both lists rank 30th; with 60 it came below."""

    class BgeSmall(Model):
        model_id = "onnx/bge-small-en-v1.5-q/42d39a448051"

    words = ["first", *[f"w{n}" for n in range(28)], "both"]
    nearest = [*[f"k{n}" for n in range(29)], "both"]
    hits = [{"id": item, "url": f"http://127.0.0.1/{item}"} for item in words]
    orders = {}
    for model in (BgeSmall(), Model()):
        semantic = SemanticSearch(SemanticModel(model, 0.5))
        found = fuse(Pages(nearest), semantic, "numpy", hits, [], {}, 0, 100).docs  # type: ignore[arg-type]
        order = [str(doc["id"]) for doc in found]
        orders[model.model_id] = order.index("first") < order.index("both")
    assert orders == {BgeSmall.model_id: True, Model.model_id: False}


def test_a_request_embeds_each_text_once_and_never_shares_its_vectors() -> None:
    """Review of issue 93: the search page's kNN query and its extractive answer each embedded the
    query. ``SemanticSearch.for_request`` remembers a request's vectors, for that request alone."""
    asked: list[list[str]] = []

    class Counted(Model):
        def embed(self, texts: list[str]) -> np.ndarray:
            asked.append(list(texts))
            return np.arange(len(texts) * 3, dtype=np.float32).reshape(len(texts), 3) + len(asked)

    installation = SemanticSearch(SemanticModel(Counted(), 0.5), window=40)
    request = installation.for_request()
    model = request.active()
    first = model.embedder.embed_queries(["parking?"])
    assert (model.embedder.embed_queries(["parking?"]) == first).all() and asked == [["parking?"]]
    both = model.embedder.embed_queries(["leave?", "parking?", "leave?"])
    assert asked == [["parking?"], ["leave?"]] and (both[1] == first[0]).all() and (both[0] == both[2]).all()
    assert (request.window, model.field, model.floor) == (40, installation.active().field, 0.5)
    installation.for_request().active().embedder.embed_queries(["parking?"])  # another request: its own
    assert asked[-1] == ["parking?"] and len(asked) == 3
