"""Reciprocal rank fusion (semantic/fusion.py)."""

from __future__ import annotations

from searchcrawl.semantic.fusion import best_per_parent, reciprocal_rank_fusion


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
