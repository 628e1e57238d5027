"""Reciprocal rank fusion: one order from the words query's and the kNN query's.

Each list's scores are of different kinds (BM25, cosine) and not comparable, so only ranks count:
a document's fused score is the sum over the lists it is in of ``1 / (k + rank)`` (Cormack,
Clarke and Büttcher, SIGIR 2009; Fess, Elastic and OpenSearch fuse the same way). ``K`` = 60, the
paper's; each list is read to ``WINDOW`` documents. Ties keep the words order first, then the
kNN order: the fused order never depends on a dictionary's.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

K = 60
WINDOW = 100  # documents each list contributes: the hybrid order covers the first 10 pages of 10

T = TypeVar("T", bound=Hashable)


def reciprocal_rank_fusion(lists: Sequence[Sequence[T]], k: int = K, window: int = WINDOW) -> list[tuple[T, float]]:
    """The items of ``lists`` (each best first, an item once a list) by fused score, best first."""
    scores: dict[T, float] = {}
    first_seen: dict[T, tuple[int, int]] = {}
    for number, items in enumerate(lists):
        for rank, item in enumerate(items[:window], 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            first_seen.setdefault(item, (number, rank))
    return sorted(scores.items(), key=lambda pair: (-pair[1], first_seen[pair[0]]))


def best_per_parent(passages: Sequence[tuple[str, T]]) -> list[tuple[str, T]]:
    """(parent, passage) of each parent's first passage in ``passages`` (best first): a document
    ranks by its best passage, which is its snippet."""
    seen: set[str] = set()
    best: list[tuple[str, T]] = []
    for parent, passage in passages:
        if parent not in seen:
            seen.add(parent)
            best.append((parent, passage))
    return best
