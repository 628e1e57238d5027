"""The passages of the index kept in step with its documents: the one writer of passages.

Solr holds the state, so that any process may do the work and none holds it in memory: a document
whose passages are current for the model carries ``passages_model`` (its id); one pushed by a crawl
(new, changed, or re-pushed) carries none, nor does one whose access alone changed (the crawl's
atomic update clears it: crawl/pipelines/checksum.py ``access_update``). ``PassageIndex.sync``
reads the documents without it, a page at a time, and for each:

* cuts its text into passages (passages.py) and reads the passages it has for the model;
* a passage whose embedded text is unchanged keeps its vector (found by checksum, whatever its
  ordinal: a paragraph added at the top re-embeds that paragraph only); a passage whose copies
  of the document's fields (its access, and what a search filters on) differ is updated in place
  by an atomic update; new and changed passages are embedded, a batch for the page, and written
  whole; passages beyond the new last are deleted;
* then marks the document (``passages_model``), on the condition that it is still the version it
  read (``_version_``): a document the crawl pushed again meanwhile is left unmarked, and the next
  pass does it again.

Embedding runs here, never in the crawl's item pipeline: the crawl pushes documents searchable by
words at once, and a model that fails (``EmbeddingFailed``) leaves them unmarked for the next pass
(the crawl's own, crawl/extensions/passage_sync.py, or `scrapy embed`). A document's passages are
deleted with it (index/solr_client.py ``SolrIndex.delete``).

A change of model (SEARCHCRAWL_EMBEDDINGS) is a backfill: the new model's passages are written
beside the old one's (their own ids and vector field) while searches go on with the old one
(SEARCHCRAWL_EMBEDDINGS_PREVIOUS); when no document is left without the new model's passages,
``retire_others`` deletes the other models' passages, and searches switch (``active_model``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchcrawl.access.tokens import DENY_FIELD, LATE_DENY_FIELD, LEVEL_FIELDS, OVERRIDING_FIELD
from searchcrawl.index.solr_client import DOCUMENTS, PASSAGES, IndexingError, SolrIndex, cursor_pages, escape_query
from searchcrawl.semantic.embedders import (
    Embedder,
    EmbeddingFailed,
    EmbeddingRefused,
    as_list,
    field_name,
    model_tag,
    numpy,
    read_vector,
)
from searchcrawl.semantic.passages import Passage, split_passages

logger = logging.getLogger(__name__)

# the document's fields each passage carries a copy of: who may read it, and what a search page
# filters on (search/request.py FACETS, MODIFIED): a kNN query filtered by them picks its top k
# among the passages the searcher may read and asked for
ACCESS_FIELDS = (*LEVEL_FIELDS, DENY_FIELD, LATE_DENY_FIELD, OVERRIDING_FIELD)
COPIED_FIELDS = (*ACCESS_FIELDS, "source", "host", "mimetype", "language", "last_modified")
# what a document's passages are cut from (``_sync_parents``), as ``text_digest`` covers it: its
# prose (its text less its link lists, content/regions.py) where it has one, else its content
TEXT_FIELDS = ("title", "content", "outline", "prose")
TEXT_DIGEST = "text_digest"  # a document's field (``text_digest`` of its TEXT_FIELDS); its passages copy it as parent_text_digest
PAGE = 20  # documents read and done a batch (their whole stored text each)
EMBED_BATCH = 256  # texts the model is given at once


@dataclass
class SyncResult:
    documents: int = 0  # marked current
    embedded: int = 0  # passages embedded
    reused: int = 0  # passages that kept their vector (unchanged text, or moved)
    updated: int = 0  # passages whose copied fields were set in place (no embedding)
    deleted: int = 0
    skipped: int = 0  # passages left out: no vector (a zero one), or refused by Solr
    seconds: float = 0.0
    error: str = ""  # why the pass stopped (the model or Solr failed)
    by_source: dict[str, int] = field(default_factory=dict)


def passage_id(parent: str, model_id: str, ordinal: int) -> str:
    """``<parent id>#<model tag>#<ordinal>``: beginning with the parent's ``<source>!``, so
    SolrCloud's router places it on its parent's shard."""
    return f"{parent}#{model_tag(model_id)}#{ordinal}"


def text_digest(document: Mapping[str, Any]) -> str:
    """A digest of exactly what ``document``'s passages are cut from (its ``TEXT_FIELDS``), as it
    is pushed: the crawl stores it on the document (``text_digest``), the writer a copy of it on
    each passage (``parent_text_digest``), and a passage whose copy is not its document's was made
    from an older text (search/hybrid.py ``made_from_current``). Not the checksum: that one may be
    taken over the main text or the bytes alone (``checksum_of``), and a page whose sidebar changed
    is pushed again (its date) with the same checksum."""
    values = [document.get(name) or None for name in TEXT_FIELDS]
    if values[-1] is None:  # no prose: the digest a document had before it could have one
        values.pop()
    text = json.dumps(values, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _same(one: Any, other: Any) -> bool:
    """Two stored values equal as Solr returns them (a missing field, an empty list alike)."""
    if one in (None, []) and other in (None, []):
        return True
    if isinstance(one, list) and isinstance(other, list):
        return sorted(map(str, one)) == sorted(map(str, other))
    return one == other


@dataclass
class PassageChanges:
    """What a batch's sync of passages writes: passages written whole, set in place, deleted, and
    to embed (the passage's document, its text)."""

    writes: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    to_embed: list[tuple[dict[str, Any], str]] = field(default_factory=list)


def copies_changed(old: Mapping[str, Any], parent: Mapping[str, Any], copies: Mapping[str, Any]) -> dict[str, Any]:
    """The fields an unchanged passage (``old``) copies of its document that differ now: the
    ``copies`` (its access, its facets' fields) and its document's checksum and text digest."""
    changed = {name: value for name, value in copies.items() if not _same(old.get(name), value)}
    for name, copied in (("parent_checksum", "checksum"), ("parent_text_digest", TEXT_DIGEST)):
        if not _same(old.get(name), parent.get(copied)):
            changed[name] = parent.get(copied)
    return changed


def direction(vector: Any) -> list[float] | None:
    """``vector`` as Solr stores it, or None: refused by the model (left out, as a zero vector is),
    or with no direction (a text of nothing the model knows): Lucene refuses a zero vector for
    cosine, and one such passage would refuse its whole batch."""
    if vector is None:
        return None
    np = numpy()
    array = np.asarray(vector, dtype=np.float32)
    if not np.all(np.isfinite(array)) or float(np.linalg.norm(array)) < 1e-6:
        return None
    return as_list(array)


class PassageIndex:
    """Passages of ``index``'s documents for ``embedder``'s model (see the module's docstring)."""

    def __init__(self, index: SolrIndex, embedder: Embedder, page: int = PAGE) -> None:
        self.index, self.embedder, self.page = index, embedder, page
        self.model_id = embedder.model_id
        self.field = field_name(embedder.model_id, embedder.dimension)

    def pending_filters(self, source: str | None = None) -> list[str]:
        """The documents whose passages are not current for the model."""
        filters = [DOCUMENTS, f"-passages_model:{escape_query(self.model_id)}"]
        return [*filters, "{!term f=source}" + source] if source else filters

    def pending(self, source: str | None = None) -> int:
        return int(self.index.search("*:*", fq=self.pending_filters(source), rows=0).hits)

    def sync(
        self, source: str | None = None, should_stop: Callable[[], bool] = lambda: False, deadline: float | None = None
    ) -> SyncResult:
        """One pass over the documents pending (of ``source``, or all), until ``should_stop``
        or ``deadline`` (time.monotonic()). A failure of the model or of Solr ends the pass,
        said in ``error``: what was done stays done, the rest waits for the next pass."""
        result = SyncResult()
        started = time.monotonic()
        fields = ",".join(["id", *TEXT_FIELDS, "_version_", "checksum", TEXT_DIGEST, *COPIED_FIELDS])
        try:
            for parents in cursor_pages(self.index, self.pending_filters(source), fields, self.page):
                self._sync_parents(parents, result)
                if should_stop() or (deadline is not None and time.monotonic() >= deadline):
                    break
        except (EmbeddingFailed, IndexingError) as exc:
            result.error = str(exc)
            logger.warning("Passages: a pass stopped, the rest is left for the next one: %s", exc)
        result.seconds = time.monotonic() - started
        if result.documents:
            self.index.commit()
        return result

    def _existing(self, parents: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        """The passages the model has of ``parents`` (parent id -> passages)."""
        found: dict[str, list[dict[str, Any]]] = {parent: [] for parent in parents}
        filters = [
            PASSAGES,
            '{!terms f=parent_id separator=" "}' + " ".join(parents),
            "{!term f=passage_model}" + self.model_id,
        ]
        fields = ",".join(
            [
                "id",
                "parent_id",
                "passage_ordinal",
                "passage_checksum",
                "parent_checksum",
                "parent_text_digest",
                self.field,
                *COPIED_FIELDS,
            ]
        )
        for page in cursor_pages(self.index, filters, fields, 1000):
            for passage in page:
                found.setdefault(str(passage.get("parent_id")), []).append(passage)
        return found

    def _sync_parents(self, parents: list[dict[str, Any]], result: SyncResult) -> None:
        existing = self._existing([str(parent["id"]) for parent in parents])
        changes = PassageChanges()
        for parent in parents:
            self._plan_parent(parent, existing.get(str(parent["id"]), []), changes, result)
        if changes.updates:  # first: an access revoked reaches the passages whatever the model does
            self.index.update_existing(changes.updates)
        self._embed_into(changes, result)
        result.embedded += len(changes.to_embed)
        if changes.writes:
            self._write(changes.writes, result)
        if changes.deletes:
            self.index.delete_passages(changes.deletes)
            result.deleted += len(changes.deletes)
        marks = [
            {"id": parent["id"], "passages_model": {"set": self.model_id}, "_version_": parent["_version_"]} for parent in parents
        ]
        self.index.update_existing(marks)  # a document changed meanwhile is skipped: the next pass
        result.documents += len(parents)
        logger.debug(
            "Passages of %d documents: %d embedded, %d kept their vectors, %d updated in place, %d deleted",
            len(parents),
            len(changes.to_embed),
            result.reused,
            len(changes.updates),
            len(changes.deletes),
        )

    def _plan_parent(
        self, parent: dict[str, Any], had: list[dict[str, Any]], changes: PassageChanges, result: SyncResult
    ) -> None:
        """What ``parent``'s passages need, against those it ``had``: an unchanged passage's copied
        fields set in place where they changed, a passage whose text another ordinal had takes that
        vector, a new text is embedded, and the ordinals beyond its passages go."""
        source_text = parent.get("prose") or parent.get("content") or ""
        wanted = split_passages(str(source_text), str(parent.get("title") or ""), parent.get("outline") or ())
        vectors = {str(p.get("passage_checksum")): p.get(self.field) for p in had if read_vector(p.get(self.field)) is not None}
        by_ordinal = {int(p.get("passage_ordinal", -1)): p for p in had}
        copies = {name: parent.get(name) for name in COPIED_FIELDS}
        for passage in wanted:
            checksum = passage.checksum(self.model_id)
            old = by_ordinal.get(passage.ordinal)
            if old is not None and old.get("passage_checksum") == checksum and old.get(self.field) is not None:
                changed = copies_changed(old, parent, copies)
                if changed:
                    changes.updates.append(
                        {"id": old["id"], "_version_": 1, **{name: {"set": value} for name, value in changed.items()}}
                    )
                    result.updated += 1
                continue
            document = self._passage_document(parent, passage, checksum, copies)
            vector = vectors.get(checksum)
            if vector is not None:
                document[self.field] = vector
                changes.writes.append(document)
                result.reused += 1
            else:
                changes.to_embed.append((document, passage.embedded))
        changes.deletes.extend(str(p["id"]) for ordinal, p in by_ordinal.items() if ordinal >= len(wanted))
        source = str(parent.get("source") or "")
        result.by_source[source] = result.by_source.get(source, 0) + 1

    def _embed_into(self, changes: PassageChanges, result: SyncResult) -> None:
        """The passages to embed, embedded a batch at a time and written; one without a vector
        (``direction``) is left out, and the passage it would have replaced goes."""
        for start in range(0, len(changes.to_embed), EMBED_BATCH):
            chunk = changes.to_embed[start : start + EMBED_BATCH]
            for (document, _text), vector in self._embedded(chunk):
                stored = direction(vector)
                if stored is None:
                    result.skipped += 1
                    changes.deletes.append(str(document["id"]))
                    continue
                document[self.field] = stored
                changes.writes.append(document)

    def _embedded(self, chunk: list[tuple[dict[str, Any], str]]) -> list[tuple[tuple[dict[str, Any], str], Any]]:
        """Each (passage document, text) of ``chunk`` with its vector; None for a text the model
        refuses (``EmbeddingRefused``: the others embedded one by one). A model that fails
        otherwise raises: the pass stops, the documents wait."""
        try:
            return list(zip(chunk, self.embedder.embed([text for _document, text in chunk]), strict=True))
        except EmbeddingRefused:
            if len(chunk) == 1:
                logger.warning("The model refused passage %s; it is left out", chunk[0][0]["id"])
                return [(chunk[0], None)]
        return [pair for item in chunk for pair in self._embedded([item])]

    def _write(self, documents: list[dict[str, Any]], result: SyncResult) -> None:
        """Write ``documents``; a batch Solr refuses (HTTP 4xx: a passage it will not take) is
        written one by one, the refused ones left out and logged: a bad passage never blocks the
        others, and its document is still marked (searchable by words, without that passage)."""
        try:
            self.index.add(documents)
            return
        except IndexingError as exc:
            # Solr 9 answers a field it cannot make of a value (a vector it will not take) with
            # HTTP 500 naming the document: a refusal of that document, as a 400 is
            refused = exc.documents_refused or (exc.status == 500 and "[doc=" in exc.reason)
            if not refused:
                raise
            if len(documents) == 1:
                result.skipped += 1
                logger.warning("Solr refused passage %s: %s", documents[0]["id"], exc.reason)
                return
        for document in documents:
            self._write([document], result)

    def _passage_document(
        self, parent: dict[str, Any], passage: Passage, checksum: str, copies: dict[str, Any]
    ) -> dict[str, Any]:
        document = {
            "id": passage_id(str(parent["id"]), self.model_id, passage.ordinal),
            "doc_type": "passage",
            "parent_id": parent["id"],
            "passage_ordinal": passage.ordinal,
            "passage_text": passage.text,
            "passage_heading": passage.heading,
            "passage_checksum": checksum,
            "parent_checksum": parent.get("checksum"),
            "parent_text_digest": parent.get(TEXT_DIGEST),
            "passage_model": self.model_id,
            "passage_dimension": self.embedder.dimension,
        }
        document.update({name: value for name, value in copies.items() if value not in (None, [])})
        return document

    def models(self) -> dict[str, int]:
        """Passages a model (id -> count) in the index."""
        results = self.index.search(
            "*:*", fq=PASSAGES, rows=0, facet="true", **{"facet.field": "passage_model", "facet.limit": -1, "facet.mincount": 1}
        )
        counts = results.facets.get("facet_fields", {}).get("passage_model", [])
        return {str(name): int(count) for name, count in zip(counts[::2], counts[1::2], strict=False)}

    def retire_others(self) -> int:
        """Delete the passages of every other model once no document is left without this
        model's: the switch of a backfill. Returns how many were deleted (0: not yet, or none)."""
        if self.pending():
            return 0
        others = {name: count for name, count in self.models().items() if name != self.model_id}
        for name in others:
            self.index.delete_query(f"doc_type:passage AND passage_model:{escape_query(name)}")
        if others:
            self.index.commit()
            logger.info("Passages of %s deleted: every document has passages of %s now", ", ".join(sorted(others)), self.model_id)
        return sum(others.values())


def complete(index: SolrIndex, model_id: str) -> bool:
    """Whether every document has passages of ``model_id`` (a search may switch to it)."""
    return not int(index.search("*:*", fq=[DOCUMENTS, f"-passages_model:{escape_query(model_id)}"], rows=0).hits)


def has_passages(index: SolrIndex, model_id: str) -> bool:
    """Whether the index holds passages of ``model_id``."""
    return bool(int(index.search("*:*", fq=[PASSAGES, "{!term f=passage_model}" + model_id], rows=0).hits))
