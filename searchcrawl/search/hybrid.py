"""Hybrid retrieval: the words query and a kNN query of passages, fused by rank (issue 76).

Both are asked through the searcher's ``TrimmedIndex`` (trimmed_index.py): the words query as every
search is; the kNN query as its own main query (``TrimmedIndex.nearest``), so that the trimming
and the search's own filters (facets, dates: each passage holds a copy of its document's fields)
pre-filter it, and its top k are passages the searcher may read, however little of the index that
is. A passage less similar than the model's floor (``SemanticModel.floor``: calibrated per model
on the judged sets, semantic/embedders.py ``calibrated_floor``, or the setting's ``?floor=``) is no
hit: the k nearest passages of a query that nothing answers are still the k nearest, and without a
floor every query matched (issue 91); a model with neither floor finds nothing by meaning until
its setting gives one. The passages are collapsed to their documents (a document
ranks by its best passage), and the two lists fused by reciprocal rank fusion (semantic/fusion.py:
k = 60, or the model's calibrated one, ``rank_constant``: 20 for bge-small; each list read to
``WINDOW`` = 100 documents) in the application, the kNN list weighed by the query's shape (a name,
an error message, a question, keywords: ``knn_weight``, calibrated per model, issue 93). The fused order covers the first ``WINDOW`` hits
(10 pages of 10); a page beyond it, and a search sorted by date or title, is the words query's
own. A document found by meaning alone is fetched like a best bet: trimmed, with the search's
filters, one hit per URL. Its snippet is its best passage (the words query's highlight where the
words found it too), shown only while the passage was made from the document's current text.

A model that fails or a Solr that refuses the kNN query leaves the words query's hits as they are
(logged at most once a minute): a search never fails for its semantic half.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from searchcrawl.index.solr_client import IndexingError, SolrIndex
from searchcrawl.search.query import COLLAPSE, HIT_FIELDS, unique_hits
from searchcrawl.search.trimmed_index import OncePer, TrimmedIndex
from searchcrawl.semantic.embedders import (
    NO_FLOOR,
    Embedder,
    EmbeddingFailed,
    ModelSpec,
    checked,
    embedder_from,
    field_name,
    model_floor,
    model_key,
    numpy,
)
from searchcrawl.semantic.fusion import WINDOW, best_per_parent, knn_weight, query_shape, rank_constant, reciprocal_rank_fusion
from searchcrawl.semantic.passage_index import TEXT_DIGEST, complete, has_passages

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger(__name__)

SEMANTIC_FAILED_LOG = OncePer(60)
PASSAGES_A_DOCUMENT = 3  # the kNN query's k: this many passages a document of the window
SNIPPET_CHARS = 300


@dataclass(frozen=True)
class SemanticModel:
    """A model a search embeds its query with, the field of its passages' vectors, and the
    floor of Solr's kNN score (for cosine, (1 + cosine) / 2) below which a passage is no hit:
    ``similarity_floor`` given, else the model's calibrated one (``model_floor``); with neither,
    None: no passage is a hit."""

    embedder: Embedder
    similarity_floor: float | None = None

    @property
    def floor(self) -> float | None:
        return model_floor(self.similarity_floor, self.embedder.model_id)

    @property
    def model_id(self) -> str:
        return self.embedder.model_id

    @property
    def field(self) -> str:
        return field_name(self.embedder.model_id, self.embedder.dimension)


@dataclass
class SemanticSearch:
    """The installation's semantic search: its model (SEARCHCRAWL_EMBEDDINGS) and, while that
    model's passages are being filled in, the previous one (SEARCHCRAWL_EMBEDDINGS_PREVIOUS),
    which searches use until the new one is complete (``complete``: semantic/passage_index.py,
    asked at most every ``recheck`` seconds), or the previous one has no passages left."""

    current: SemanticModel
    previous: SemanticModel | None = None
    complete: Callable[[str], bool] = lambda _model: True
    has_passages: Callable[[str], bool] = lambda _model: True
    k: int | None = None  # reciprocal rank fusion's constant; None: the model's (fusion.py ``rank_constant``)
    window: int = WINDOW
    recheck: float = 60.0
    _switched: bool = field(default=False, init=False)
    _checked: float = field(default=-1e18, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def active(self) -> SemanticModel:
        """The model searches use now; once switched to the current one, for good."""
        if self.previous is None or self._switched:
            return self.current
        with self._lock:
            if time.monotonic() - self._checked >= self.recheck:
                self._checked = time.monotonic()
                try:
                    if self.complete(self.current.model_id) or not self.has_passages(self.previous.model_id):
                        self._switched = True
                        logger.info("Semantic search switched to %s: its passages are complete", self.current.model_id)
                except IndexingError as exc:
                    logger.debug("Whether %s is complete is not known (%s)", self.current.model_id, exc.reason)
        return self.current if self._switched else self.previous

    def for_request(self) -> SemanticSearch:
        """This search for one request (the search page's): the model ``active`` now, whose
        embeddings are remembered for the request alone (``RememberingEmbedder``), so that its
        kNN query and its extractive answer embed the query once, not twice."""
        model = self.active()
        return SemanticSearch(replace(model, embedder=RememberingEmbedder(model.embedder)), k=self.k, window=self.window)


class RememberingEmbedder:
    """An embedder that embeds each text once: made for one request (``SemanticSearch.for_request``)
    and dropped with it, never shared between requests or searchers (a vector tells of the query)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.model_id = embedder.model_id
        self.dimension = embedder.dimension
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embedder.embed(texts)  # passages: a request embeds none, nothing to remember

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return self.embedder.embed_queries(texts)
        missing = [text for text in dict.fromkeys(texts) if text not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, self.embedder.embed_queries(missing), strict=True))
        return numpy().stack([self.vectors[text] for text in texts])


@dataclass
class Fused:
    docs: list[dict[str, Any]]  # the page's hits, in the fused order
    snippets: dict[str, str]  # document id -> its best passage (documents found by meaning)
    meaning_only: int  # documents of the window that the words query did not find
    highlighting: dict[str, Any]  # Solr's highlights of the page's documents
    # the documents the kNN query found at or above the model's floor (0: the model's verdict that
    # nothing is about the query); None: no verdict (a model without a floor, or failing)
    nearest: int | None = None


def passage_filters(model: SemanticModel, filters: Sequence[str]) -> list[str]:
    """The kNN query's filters: the model's passages, and the search's own (facets and dates,
    on the passages' copies of their document's fields; never the collapse on url, a documents'
    thing)."""
    return ["{!term f=passage_model}" + model.model_id, *(f for f in filters if f != COLLAPSE)]


def nearest_documents(
    index: TrimmedIndex, model: SemanticModel, query: str, filters: Sequence[str], params: Mapping[str, Any], window: int
) -> list[tuple[str, dict[str, Any]]]:
    """(document id, its best passage) of the ``window`` documents whose passages are nearest
    ``query``'s meaning, among those the searcher of ``index`` may read, best first; only
    passages at or above the model's floor count (none: a query nothing answers finds nothing);
    a model with no floor finds none (the search is its words alone)."""
    floor = model.floor
    if floor is None:
        logger.debug("kNN: %s has no similarity floor: no passage is a hit", model.model_id)
        return []
    vector = model.embedder.embed_queries([query])[0]
    top_k = window * PASSAGES_A_DOCUMENT
    asked = {
        **params,
        "fq": passage_filters(model, filters),
        "fl": "id,parent_id,passage_text,passage_heading,parent_text_digest,score",
        "rows": top_k,
        "timeAllowed": 5000,
    }
    found = index.nearest(model.field, [float(value) for value in vector], top_k, {**asked, "hl": "false", "facet": "false"})
    close = [doc for doc in found.docs if doc.get("parent_id") and float(doc.get("score") or 0.0) >= floor]
    logger.debug("kNN: %d of %d passages at or above %s's floor %.3f", len(close), len(found.docs), model.model_id, floor)
    nearest = best_per_parent([(str(doc["parent_id"]), doc) for doc in close])[:window]
    return confirmed(index, nearest, filters, params)


def confirmed(
    index: TrimmedIndex, nearest: list[tuple[str, dict[str, Any]]], filters: Sequence[str], params: Mapping[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """``nearest`` but the documents the searcher may not read now, or that are gone: a passage's
    copy of its document's access is stale between a change and the writer's next pass, and a
    passage may outlive its document for a moment. Asked of the documents themselves, trimmed,
    with the search's filters, before anything is ranked or counted: a stale passage neither
    shows, nor counts, nor leaves a gap on a page."""
    if not nearest:
        return []
    ids = [parent for parent, _ in nearest]
    asked = {
        **params,
        "fq": [*(f for f in filters if f != COLLAPSE), '{!terms f=id separator=" "}' + " ".join(ids)],
        "fl": "id",
        "rows": len(ids),
        "hl": "false",
        "facet": "false",
    }
    readable = {str(doc["id"]) for doc in index.search("*:*", asked).docs}
    return [(parent, passage) for parent, passage in nearest if parent in readable]


def fuse(
    index: TrimmedIndex,
    semantic: SemanticSearch,
    query: str,
    words: Sequence[dict[str, Any]],
    filters: Sequence[str],
    params: Mapping[str, Any],
    start: int,
    rows: int,
    highlight: Mapping[str, Any] | None = None,
) -> Fused:
    """The page ``start``..``start + rows`` of the fused order of ``words`` (the words query's
    hits, ids and URLs, best first, read to the window) and the nearest documents of ``query``.
    The page's documents are then fetched, trimmed, with ``filters`` and ``params`` (the
    search's), and highlighted for ``query`` with ``highlight`` (Solr's hl parameters; None:
    not highlighted): a highlight of ten documents, not of the window's hundred."""
    words = list(unique_hits(words))
    model = semantic.active()
    verdict = nearest_or_none(index, model, query, filters, params, semantic.window)
    nearest = verdict or []
    order = fused_order([str(doc["id"]) for doc in words], nearest, model, query, semantic)
    found_by_words = {str(doc["id"]) for doc in words}
    meaning_only = sum(1 for item in order if item not in found_by_words)
    page = order[start : start + rows]
    if not page:
        return Fused([], {}, meaning_only, {}, None if verdict is None else len(verdict))
    docs, highlighting = page_documents(index, page, query, filters, params, highlight)
    return Fused(
        docs, passage_snippets(docs, dict(nearest)), meaning_only, highlighting, None if verdict is None else len(verdict)
    )


def nearest_or_none(
    index: TrimmedIndex, model: SemanticModel, query: str, filters: Sequence[str], params: Mapping[str, Any], window: int
) -> list[tuple[str, dict[str, Any]]] | None:
    """``nearest_documents``, or None, no verdict of the model, when it has no floor (it finds
    nothing by meaning) or it or Solr fails: the words' hits then, never an error page (the
    failure logged once a minute)."""
    if model.floor is None:
        return None
    try:
        return nearest_documents(index, model, query, filters, params, window)
    except Exception as exc:  # noqa: BLE001 - the model or Solr failing: the words' hits, never an error page
        if SEMANTIC_FAILED_LOG():
            logger.warning("Semantic search not applied (the words' hits are shown): %s: %s", type(exc).__name__, exc)
        return None


def fused_order(
    order: list[str], nearest: Sequence[tuple[str, dict[str, Any]]], model: SemanticModel, query: str, semantic: SemanticSearch
) -> list[str]:
    """The words' ``order`` of ids fused with the ``nearest`` documents' (reciprocal-rank fusion,
    the kNN list weighed for the query's shape and the model, with the model's constant); the words' alone without any."""
    if not nearest:
        return order
    shape = query_shape(query)
    key = model_key(model.model_id)
    weight, k = knn_weight(key, shape), rank_constant(key) if semantic.k is None else semantic.k
    logger.debug("Fusion: a %s query, the kNN list weighed %.2f against the words' 1 (k %d)", shape, weight, k)
    lists = [order, [parent for parent, _ in nearest]]
    return [item for item, _ in reciprocal_rank_fusion(lists, k, semantic.window, (1.0, weight))]


def page_documents(
    index: TrimmedIndex,
    page: list[str],
    query: str,
    filters: Sequence[str],
    params: Mapping[str, Any],
    highlight: Mapping[str, Any] | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The documents of a page of fused ids, in its order, one a URL, fetched trimmed with the
    search's ``filters`` and ``params``, and their highlighting for ``query`` where asked."""
    asked: dict[str, Any] = {
        **params,
        "fq": [*filters, '{!terms f=id separator=" "}' + " ".join(page)],
        "fl": f"{HIT_FIELDS},{TEXT_DIGEST}",
        "rows": len(page),
        "facet": "false",
        "hl": "false",
    }
    if highlight and str(highlight.get("hl", "false")) == "true":
        asked.update({**highlight, "hl.q": query})
    fetched = index.search("*:*", asked)
    by_id = {str(doc["id"]): doc for doc in fetched.docs}
    return list(unique_hits(by_id[item] for item in page if item in by_id)), dict(fetched.highlighting or {})


def passage_snippets(docs: Sequence[Mapping[str, Any]], passages: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """The snippet of each document found by meaning: its nearest passage, where made from its
    current text (``made_from_current``), cut to SNIPPET_CHARS."""
    snippets: dict[str, str] = {}
    for doc in docs:
        passage = passages.get(str(doc["id"]))
        if passage is not None and made_from_current(passage, doc):
            snippets[str(doc["id"])] = cut(str(passage.get("passage_text") or ""))
    return snippets


def made_from_current(passage: Mapping[str, Any], doc: Mapping[str, Any]) -> bool:
    """Whether ``passage`` was made from ``doc``'s current text, so that it may be shown as its
    snippet or sent to a model: a passage the writer has not redone since its document's text
    changed (its passes off, or not run yet) may say what the document no longer does. Compared by
    the digest of exactly the text passages are cut from (semantic/passage_index.py
    ``text_digest``), never by the checksum, which may cover less (``checksum_of``). A document or
    passage without one (indexed before it existed) cannot be compared, and is not current."""
    digest = doc.get(TEXT_DIGEST)
    return bool(digest) and passage.get("parent_text_digest") == digest


def cut(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` to ``limit`` characters, at a word's end, with an ellipsis when cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def semantic_search(
    current: str, previous: str, index: SolrIndex, timeout: float = 30, *, answering: bool = False
) -> SemanticSearch | None:
    """The installation's semantic search from SEARCHCRAWL_EMBEDDINGS (``current``) and
    SEARCHCRAWL_EMBEDDINGS_PREVIOUS (``previous``), each with its floor (``?floor=`` of its
    setting, else its calibrated one); None when it is off. A model whose
    dimension does not match is refused here, at start (``DimensionMismatch``); one that does
    not answer now is not: searches are then words alone until it does. ``answering``: it is
    (``EmbeddingFailed`` raised), for a command that searches once and would otherwise wait for
    the model a second time, on its query."""
    embedder = embedder_from(current, timeout)
    if embedder is None:
        return None
    models = [embedder]
    old = embedder_from(previous, timeout) if previous.strip() else None
    if old is not None:
        models.append(old)
    for model in models:
        try:
            checked(model)
        except EmbeddingFailed as exc:
            if answering:
                raise
            logger.warning("The embedding model %s does not answer now: %s", model.model_id, exc)
    chosen = [SemanticModel(embedder, spec_floor(current))]
    if old is not None:
        chosen.append(SemanticModel(old, spec_floor(previous)))
    for semantic in chosen:
        if semantic.floor is None:
            logger.warning("The embedding model %s %s", semantic.model_id, NO_FLOOR)
    return SemanticSearch(
        chosen[0],
        chosen[1] if len(chosen) > 1 else None,
        complete=lambda model_id: complete(index, model_id),
        has_passages=lambda model_id: has_passages(index, model_id),
    )


def spec_floor(text: str) -> float | None:
    """The ``?floor=`` of a model's setting (None: its calibrated floor)."""
    spec = ModelSpec.parse(text)
    return spec.floor if spec is not None else None
