"""Reciprocal rank fusion and the query's shape that weighs it (semantic/fusion.py)."""

from __future__ import annotations

import pytest

from searchcrawl.semantic.embedders import model_key
from searchcrawl.semantic.fusion import (
    CALIBRATED_WEIGHTS,
    DEFAULT_WEIGHTS,
    KEYWORDS,
    MESSAGE,
    NAME,
    QUESTION,
    K,
    best_per_parent,
    knn_weight,
    query_shape,
    rank_constant,
    reciprocal_rank_fusion,
)


def test_a_document_in_both_lists_beats_one_first_in_one() -> None:
    fused = [item for item, _ in reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"]])]
    assert fused[0] == "b" and set(fused) == {"a", "b", "c", "d"}


def test_ties_keep_the_words_order_then_the_knn_order() -> None:
    assert [item for item, _ in reciprocal_rank_fusion([["w1", "w2"], ["k1", "k2"]])] == ["w1", "k1", "w2", "k2"]


def test_the_score_is_the_sum_of_reciprocal_ranks_within_the_window() -> None:
    scores = dict(reciprocal_rank_fusion([["a", "b"], ["b"]], k=60, window=1))
    assert scores == {"a": 1 / 61, "b": 1 / 61}  # b's second rank in the first list is beyond the window


def test_a_document_ranks_by_its_best_passage() -> None:
    assert best_per_parent([("d1", 1), ("d2", 2), ("d1", 3)]) == [("d1", 1), ("d2", 2)]


def test_a_list_s_weight_multiplies_its_reciprocal_ranks() -> None:
    scores = dict(reciprocal_rank_fusion([["a"], ["b", "a"]], k=60, weights=(1.0, 0.5)))
    assert scores == {"a": 1 / 61 + 0.5 / 62, "b": 0.5 / 61}


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("org.apache.nutch.protocol.ProtocolNotFound", NAME),
        ("URLFilterException", NAME),
        ("CrawlDatum class", NAME),
        ("my_function", NAME),
        ("ValueError: operands could not be broadcast together", MESSAGE),
        ("LinAlgError: singular matrix", MESSAGE),
        ("Ignoring response <404>: HTTP status code is not handled", MESSAGE),
        ("TypeError: 'str' object does not support item assignment", MESSAGE),
        ("KeyError when looking up a key", MESSAGE),
        ("how do I save an array to a file", QUESTION),
        ("what is a tuple?", QUESTION),
        ("remove noise from a photo", QUESTION),
        ("my function's default argument keeps its values", QUESTION),  # an apostrophe is no quote
        ("fetch schedule", KEYWORDS),
        ("robots denied", KEYWORDS),
        ("", KEYWORDS),
    ],
)
def test_a_query_s_shape_is_read_from_its_text(text: str, shape: str) -> None:
    assert query_shape(text) == shape


def test_a_calibrated_model_has_its_own_weights_another_the_default() -> None:
    for key, weights in CALIBRATED_WEIGHTS.items():
        assert set(weights) == set(DEFAULT_WEIGHTS) and knn_weight(key, NAME) == weights[NAME]
    assert knn_weight(("openai", "768"), QUESTION) == DEFAULT_WEIGHTS[QUESTION] == 1.0
    assert knn_weight(("openai", "768"), NAME) == DEFAULT_WEIGHTS[NAME] < 1.0


def test_bge_small_fuses_both_lists_alike_whatever_the_shape() -> None:
    # issue 100, point 7: the one rule that held out on every judged set (tests/benchmarks/fusion.py --leave-one-out)
    bge_small = model_key("onnx/bge-small-en-v1.5-q/42d39a448051")
    assert [knn_weight(bge_small, shape) for shape in (NAME, MESSAGE, QUESTION, KEYWORDS)] == [1.0] * 4
    assert rank_constant(bge_small) == 20 and rank_constant(("openai", "768")) == K == 60
