"""Reciprocal rank fusion: one order from the words query's and the kNN query's.

Each list's scores are of different kinds (BM25, cosine) and not comparable, so only ranks count:
a document's fused score is the sum over the lists it is in of ``1 / (k + rank)`` (Cormack,
Clarke and Büttcher, SIGIR 2009; Fess, Elastic and OpenSearch fuse the same way). ``K`` = 60, the
paper's; each list is read to ``WINDOW`` documents. Ties keep the words order first, then the
kNN order: the fused order never depends on a dictionary's.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

K = 60
WINDOW = 100  # documents each list contributes: the hybrid order covers the first 10 pages of 10

T = TypeVar("T", bound=Hashable)


def reciprocal_rank_fusion(
    lists: Sequence[Sequence[T]], k: int = K, window: int = WINDOW, weights: Sequence[float] = ()
) -> list[tuple[T, float]]:
    """The items of ``lists`` (each best first, an item once a list) by fused score, best first;
    ``weights``: each list's weight (its reciprocal ranks multiplied by it; none given: 1 each)."""
    scores: dict[T, float] = {}
    first_seen: dict[T, tuple[int, int]] = {}
    for number, items in enumerate(lists):
        weight = weights[number] if number < len(weights) else 1.0
        for rank, item in enumerate(items[:window], 1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
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


# The shape of a query, read from its text alone (issue 93): what the fusion weighs the kNN list by.
NAME, MESSAGE, QUESTION, KEYWORDS = "name", "message", "question", "keywords"
QUESTION_WORDS = frozenset(
    "how what why where when which who whom whose can could should would do does did is are was were will shall may "
    "might must wie was warum wo wann welche welcher kann können".split()
)
MESSAGE_WORDS = 3  # plain words beside a name: an error message ("ValueError: operands could not ..."), not a name
QUESTION_LENGTH = 5  # words: a query this long is a sentence in a user's words, as a question is
CODE_TOKEN = re.compile(  # each branch starts at a word's start and stops at its first proof: linear in a hostile query
    r"""(?<![\w$])[A-Za-z_][\w$]*\.[A-Za-z_]      # a dotted name: org.apache.nutch.X, plt.plot
    | \b[A-Za-z]*[a-z][A-Z]                      # camelCase or CamelCase inside a word: ValueError, getUrl
    | \b[A-Z]{2,}[a-z]                           # an acronym that opens a name: URLFilterException
    | \b\w+_\w                                   # snake_case, SCREAMING_CASE
    | \w[(\[]                                     # a call or an index: print(, a[
    | ["<>`{}] | (?<!\w)'|'(?!\w)                # a quoted string (not an apostrophe), a log line's <404>, markup
    """,
    re.VERBOSE,
)

MESSAGE_OPENING = re.compile(r"\b\w+(?:Error|Exception|Warning|Exit|Interrupt):")  # Python's "ValueError: ..."


def query_shape(text: str) -> str:
    """``NAME`` (a class, function or exception name, perhaps with a word or two: words that must
    match as written), ``MESSAGE`` (such a name or a log line's form in a sentence: an error
    message), ``QUESTION`` (a sentence in a user's words) or ``KEYWORDS``: the shape decides how far
    the fusion trusts meaning over the words (``FUSION_WEIGHTS``). Only the text is read: a
    searcher's kind of query is not known, and the judged sets' kinds are not used here."""
    words = text.split()
    if not words:
        return KEYWORDS
    if CODE_TOKEN.search(text):
        plain = [word for word in words if not CODE_TOKEN.search(word)]
        return MESSAGE if len(plain) >= MESSAGE_WORDS or MESSAGE_OPENING.search(text) else NAME
    if text.rstrip().endswith("?") or words[0].lower() in QUESTION_WORDS or len(words) >= QUESTION_LENGTH:
        return QUESTION
    return KEYWORDS


# The kNN list's weight in the fusion (the words list's is 1), by the query's shape, calibrated per
# model on the judged sets (issue 93; docs/semantic-search.md, "Fusion weights by the query's
# shape"; tests/benchmarks/fusion.py), keyed as the similarity floors are (embedders.py
# ``model_key``). A static word-vector model (wordllama) adds little beyond the words and moves
# exact names' pages down, so it weighs little everywhere; a sentence model (MiniLM) is trusted with
# questions. bge-small (int8, the langchain4j jar) weighs 1 everywhere: chosen leave-one-set-out on
# the four judged sets (issue 100, point 7), the plain fusion is the only rule that loses on no set
# held out (weights by shape lose up to 0.035 nDCG@10, the default 0.001). A model not calibrated
# gets ``DEFAULT_WEIGHTS``: the words first for a name or an error message, the plain reciprocal
# rank fusion otherwise.
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType({NAME: 0.3, MESSAGE: 0.3, QUESTION: 1.0, KEYWORDS: 1.0})
CALIBRATED_WEIGHTS: Mapping[tuple[str, str], Mapping[str, float]] = MappingProxyType(
    {
        ("wordllama", "64b47a2dc493"): MappingProxyType({NAME: 0.0, MESSAGE: 0.2, QUESTION: 0.2, KEYWORDS: 0.1}),
        ("onnx", "cb46e0c2120f"): MappingProxyType({NAME: 0.5, MESSAGE: 0.3, QUESTION: 2.0, KEYWORDS: 0.7}),
        ("onnx", "42d39a448051"): MappingProxyType({NAME: 1.0, MESSAGE: 1.0, QUESTION: 1.0, KEYWORDS: 1.0}),
    }
)


# Reciprocal rank fusion's constant per model, keyed as the weights are; a model not calibrated
# gets the paper's ``K``. A smaller one trusts each list's first hits more: chosen leave-one-set-out
# on the four judged sets for bge-small (issue 100, point 7; tests/benchmarks/fusion.py
# --leave-one-out), 20 on the three older sets, it raised nDCG@10 held out on three sets (python-docs
# 0.656 -> 0.662) and lost under 0.0005 on the fourth.
CALIBRATED_CONSTANTS: Mapping[tuple[str, str], int] = MappingProxyType({("onnx", "42d39a448051"): 20})


def rank_constant(key: tuple[str, str]) -> int:
    """Reciprocal rank fusion's constant under the model of calibration key ``key``."""
    return CALIBRATED_CONSTANTS.get(key, K)


def knn_weight(key: tuple[str, str], shape: str) -> float:
    """The kNN list's weight for a query of ``shape`` (``query_shape``) under the model of
    calibration key ``key``."""
    return CALIBRATED_WEIGHTS.get(key, DEFAULT_WEIGHTS)[shape]
