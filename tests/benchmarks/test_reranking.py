"""The re-ranking benchmarks' own logic (tests/benchmarks/reranking.py, solr_rerank.py): the
features, the model's order, Solr's rerank parameters, on hand-written documents."""

from __future__ import annotations

import pytest

from tests.benchmarks.reranking import Candidate, LinearModel, features
from tests.benchmarks.solr_rerank import FEATURES, RERANKED, path_key, rerank_params

FLOOR = 0.6


def test_features_of_a_document_found_by_both_lists() -> None:
    candidate = Candidate(
        "nutch!http://127.0.0.1:1/api/org/apache/nutch/net/URLFilterException.html",
        words_rank=1,
        knn_score=0.8,
        passage="Thrown when a URL filter fails: URLFilterException.",
        title="URLFilterException (apache-nutch 1.20 API)",
    )
    found = features("URLFilterException", candidate, 3, FLOOR)
    assert found["fused"] == pytest.approx(0.5)  # 1 / log2(1 + 3)
    assert found["words"] == pytest.approx(1.0)
    assert found["knn"] == pytest.approx(0.5)  # (0.8 - 0.6) / (1 - 0.6)
    assert found["title_words"] == found["url_words"] == pytest.approx(1.0)  # names split at their capitals
    assert found["passage_words"] == pytest.approx(2 / 3)  # "urlfi", "filte": the passage's words as written
    assert found["phrase"] == 0.0  # one word is no phrase
    assert found["depth"] == pytest.approx(0.6)


def test_features_of_a_document_found_by_meaning_alone() -> None:
    candidate = Candidate("scipy!http://127.0.0.1:1/intro/io.html", None, 0.55, "save an array to a file with numpy.save")
    found = features("save an array to a file", candidate, 1, FLOOR)
    assert found["words"] == 0.0
    assert found["knn"] == 0.0  # under the floor counts nothing
    assert found["phrase"] == 1.0
    assert found["title_words"] == 0.0 and found["url_words"] == 0.0


def test_the_default_model_keeps_the_fused_order_and_a_weight_moves_a_document() -> None:
    rows = [
        features("fetch schedule", Candidate("s!http://h/a.html", 1, None), 1, FLOOR),
        features("fetch schedule", Candidate("s!http://h/b.html", None, 0.9, "the fetch schedule"), 2, FLOOR),
    ]
    by = LinearModel().score
    assert by(rows[0]) > by(rows[1])
    by = LinearModel({"fused": 1.0, "knn": 1.0}).score
    assert by(rows[1]) > by(rows[0])


def test_solr_rerank_parameters() -> None:
    assert rerank_params((0.0,) * len(FEATURES)) == {}
    params = rerank_params((0.3, 0.0, 1.0))
    assert params["rq"] == f"{{!rerank reRankQuery=$rrq reRankDocs={RERANKED} reRankWeight=1}}"
    assert params["rrq"] == "{!func}sum(product(0.3,query($rr_title,0)),product(1.0,query($rr_url,0)),0)"
    assert params["rr_title"] == "{!field f=title v=$q}"


def test_the_same_page_in_two_crawls() -> None:
    assert path_key("scipy!http://127.0.0.1:1234/intro/a.html") == path_key("scipy!http://127.0.0.1:99/intro/a.html")
    assert path_key("scipy!http://127.0.0.1:1/a.html") != path_key("nutch!http://127.0.0.1:1/a.html")
