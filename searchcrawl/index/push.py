"""Pushing cached documents to Solr in bounded batches (``push_pending``, with a crawl's settings:
``SolrPusher``), and recording what Solr answered through the ledger. Plain logic, no Scrapy.

Every call here blocks; the Scrapy pipeline runs it in a worker thread so the reactor never
waits on Solr. Batches are bounded by document count and by bytes (``batches``), so one request
never grows past what Solr (or a proxy in front of it) accepts.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from searchcrawl.content.anchors import ACCESS_FIELDS, ANCHOR_FIELD, access_fields, anchor_field
from searchcrawl.content.extract import solr_id
from searchcrawl.index.anchor_pacing import AnchorPacing
from searchcrawl.index.cache import CacheScan, DocumentCache
from searchcrawl.index.id_migration import migrate_ids
from searchcrawl.index.solr_client import IndexingError, SolrIndex, batches
from searchcrawl.rules.lifecycle import State
from searchcrawl.store.anchor_table import IN_SOLR, DueDocument
from searchcrawl.store.documents import DocumentTable
from searchcrawl.store.ledger import Ledger

logger = logging.getLogger(__name__)

REFUSAL_FLOOR = 10  # refused documents of one batch that may be bad documents, whatever its size
ANCHOR_CHUNK = 200  # documents whose anchors are read from the table at once, as they are pushed
LATEST_FIELDS = ",".join(("id", "_version_", ANCHOR_FIELD, *ACCESS_FIELDS))  # what ``set_anchors`` reads of Solr


@dataclass
class PushResult:
    indexed: int = 0
    pending: int = 0  # documents left waiting for Solr
    removed: int = 0
    refused: int = 0  # documents Solr refused, one by one: status 924, no longer pending
    error: str | None = None  # why documents were left pending
    request_refused: bool = False  # the error is Solr refusing the requests (4xx), not a node failing
    skipped: bool = False  # not tried: another process sharing the cache was pushing it
    anchors: int = 0  # documents whose anchor field was set in place (``set_anchors``)


def _with_id(data: bytes, document_id: str) -> bytes:
    """A cached document's JSON with ``document_id`` as its id. Documents cached by this version
    begin with it and are sent as they are; those cached by versions whose id was the URL are
    given the current one."""
    head = b'{"id":' + json.dumps(document_id, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if data.startswith(head) and data[len(head) : len(head) + 1] in (b",", b"}"):
        return data
    document = json.loads(data)
    document = {"id": document_id, **{key: value for key, value in document.items() if key != "id"}}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def push_pending(
    ledger: Ledger,
    cache: DocumentCache,
    index: SolrIndex,
    *,
    max_docs: int,
    max_bytes: int,
    preserve_cache: bool = False,
    remove: bool = True,
    should_stop: Callable[[], bool] = lambda: False,
    requests_at_once: int = 1,
    pacing: AnchorPacing | None = None,
) -> PushResult:
    """Remove what must leave the index (if ``remove``), then push every pending document of the
    ledger's source to Solr, batch by batch. Documents are addressed in Solr by ``solr_id(source, url)``.

    A batch is marked indexed only after Solr acknowledged it (Solr writes its update log before
    it answers, so an acknowledged document survives a Solr crash). A crash between the
    acknowledgement and the mark re-pushes the same document next time: Solr's uniqueKey makes
    that an overwrite, never a second copy.

    A batch Solr refuses because of a document in it (HTTP 400: a value it cannot index) is
    pushed again in halves, recursively, until each refused document is alone: the others are
    indexed, and each refused one is marked refused (status 924, with Solr's reason) and leaves
    the pending state; its cache record is spent. (Solr may have applied the documents before the
    refused one: sending them again overwrites them.) When a node fails (unreachable, 5xx), or
    Solr refuses the request itself (401, 404, ...), the push stops and the documents not yet
    acknowledged stay pending, for a later push.

    What Solr answered is written by ``ledger``, the crawl's (outside a crawl, a source's own over
    its document table); what is pending and what must leave, it reads in the ledger's table. The
    same content that two URLs put in the index at the same moment (two
    nodes of a shared crawl) is first kept once (``Ledger.settle_pending``), so a duplicate is
    not sent; one settled after its push (the other node's record came later) leaves Solr with
    the run's removals.
    """
    source, table = ledger.source, ledger.table
    result = PushResult()
    scan = cache.scan()  # before the table is read: see DocumentCache.scan
    for url in ledger.settle_pending(cache.id):
        logger.debug("Duplicate of another node's copy, cached at the same moment, not pushed: %s", url)
    if remove and not remove_from_index(ledger, index, max_docs, result):
        result.pending = len(table.pending(source, cache.id))
        return result
    pending = table.pending(source, cache.id)  # what this cache holds: other machines push theirs
    result.pending = len(pending)
    checksums = dict(pending)
    for url in checksums.keys() - scan.select(checksums):
        logger.warning("Cached document of %s is missing or stale; it will be fetched again", url)
    push = BatchPush(source, ledger, index, scan, checksums, result)
    push.send(batches(_documents(scan, source, table), max_docs, max_bytes), max(1, requests_at_once), should_stop)
    if not preserve_cache:  # the spools whose documents Solr has (or refused) go
        cache.release(scan)
    if not push.node_failed:
        try:
            result.anchors = set_anchors(ledger, index, max_docs, should_stop, pacing)
        except IndexingError as exc:  # they stay due: the next push sets them
            logger.warning("Could not set the anchor field of documents of %s in Solr: %s", source, exc)
    return result


def remove_from_index(ledger: Ledger, index: SolrIndex, max_docs: int, result: PushResult) -> bool:
    """Delete what must leave the index (``DocumentTable.removals``) from Solr, ``max_docs`` at a
    time, each chunk marked removed once Solr took it. False when Solr failed or refused (the
    error is in ``result``): what is left stays to remove, and nothing is pushed."""
    source = ledger.source
    removals = ledger.table.removals(source)
    for start in range(0, len(removals), max_docs):
        chunk = removals[start : start + max_docs]
        try:
            index.delete([solr_id(source, url) for url in chunk])
        except IndexingError as exc:
            result.error, result.request_refused = str(exc), exc.refused
            return False
        ledger.mark_removed(chunk)
        result.removed += len(chunk)
        logger.debug("Removed %d documents of %s from Solr", len(chunk), source)
    return True


def _documents(scan: CacheScan, source: str, table: DocumentTable) -> Iterator[tuple[tuple[str, bytes], int]]:
    """The scan's documents as ((url, JSON with the source's id and anchor field), size), what
    ``batches`` groups; their anchors read ``ANCHOR_CHUNK`` documents at a time."""
    chunk: list[tuple[str, bytes]] = []
    for document in scan.documents():
        chunk.append(document)
        if len(chunk) >= ANCHOR_CHUNK:
            yield from _anchored(chunk, source, table)
            chunk = []
    yield from _anchored(chunk, source, table)


def _anchored(chunk: list[tuple[str, bytes]], source: str, table: DocumentTable) -> Iterator[tuple[tuple[str, bytes], int]]:
    found = table.anchor_candidates(source, [url for url, _data in chunk]) if chunk else {}
    for url, data in chunk:
        data = with_anchors(_with_id(data, solr_id(source, url)), found.get(url, ()))
        yield (url, data), len(data)


def with_anchors(data: bytes, candidates: Iterable[tuple[str, str, str | None]]) -> bytes:
    """A cached document's JSON with its anchor field (content/anchors.py ``anchor_field``: the
    anchors that count for the readers it is pushed with, read from it). A whole document without
    anchors is sent as it is; an atomic update of its access (a 304 whose readers changed:
    crawl/pipelines/checksum.py ``access_update``) always sets the field, for its new readers: the
    words that counted for the old ones must not stay on it."""
    candidates = list(candidates)
    # a quotation mark inside a JSON string is escaped: "set" is a key or a value, never text
    parsed: dict[str, Any] | None = json.loads(data) if b'"set"' in data else None
    atomic = _atomic(parsed)
    if not candidates and not atomic:
        return data

    def whole() -> dict[str, Any]:
        nonlocal parsed
        if parsed is None:
            parsed = json.loads(data)
        return parsed

    words = anchor_field(candidates, lambda: access_fields(whole()))
    if atomic:
        return _json({**whole(), ANCHOR_FIELD: {"set": words or None}})
    if not words:
        return data
    if f'"{ANCHOR_FIELD}":'.encode() in data:  # one of its own (a mapped attribute): replaced
        return _json({**whole(), ANCHOR_FIELD: words})
    return data[:-1] + b',"' + ANCHOR_FIELD.encode() + b'":' + _json(words) + b"}"


def _json(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _atomic(document: object) -> bool:
    """Whether a cached document is an atomic update (a value of it ``{"set": ...}``)."""
    return isinstance(document, dict) and any(isinstance(value, dict) and "set" in value for value in document.values())


def set_anchors(
    ledger: Ledger,
    index: SolrIndex,
    max_docs: int,
    should_stop: Callable[[], bool] = lambda: False,
    pacing: AnchorPacing | None = None,
) -> int:
    """Set in place the anchor field of the source's indexed documents whose anchors changed
    since it was set (``DocumentTable.anchors_due``: a linking page changed, left, or changed its
    readers), without fetching them again; returns how many were set. Each is computed for the
    readers Solr holds it with now, read together with its version (real-time get), and set on the
    condition of that version: a document pushed again meanwhile, perhaps with other readers, is
    not given words counted for its old ones (Solr refuses, 409: it stays due, for the next push).
    A field already as computed is left alone. The marks read, before its anchors were, go: a
    change meanwhile adds a mark, which keeps it due. A pending one waits for its push (which
    computes its field) and is set after it; one the mass-deletion guard holds in Solr is set as
    an indexed one is; one out of the index, or not in Solr, is unmarked. With ``pacing`` (a
    push during a crawl), a field computed from many anchors waits for enough of its marks
    (index/anchor_pacing.py)."""
    source, table = ledger.source, ledger.table
    after = updated = 0
    if pacing is not None:
        pacing.begin()
    while not should_stop():
        due = table.anchors_due(source, after, max_docs)
        if not due:
            break
        after = max(mark for row in due for mark in row.marks)
        updates, done, computed = _anchor_updates(source, table, index, due, pacing)
        try:
            if updates:
                index.update_versions(updates)
        except IndexingError as exc:
            if exc.status != 409:
                raise
            logger.debug("A document of %s changed while its anchor field was set: left due (%s)", source, exc.reason)
            continue
        updated += len(updates)
        ledger.mark_anchors_set(done)
        if pacing is not None:  # set: counted from now on (not before: a failed update leaves them due)
            for key, anchors in computed:
                pacing.computed(key, anchors)
    if updated:
        logger.debug("Set the anchor field of %d documents of %s", updated, source)
    return updated


Batch = list[tuple[str, bytes]]  # (url, the document's JSON) of one update request


@dataclass
class BatchPush:
    """One push of pending documents (``push_pending``): sends the batches, and marks in the
    ledger what each answered request did (indexed, refused), adding up ``result``."""

    source: str
    ledger: Ledger  # writes what Solr answered
    index: SolrIndex
    scan: CacheScan
    checksums: dict[str, str]  # url -> checksum of each pending document
    result: PushResult
    node_failed: bool = False  # once a node failed, nothing more is sent: what is left stays pending

    def send(self, batches: Iterable[Batch], at_once: int, should_stop: Callable[[], bool]) -> None:
        """Send every batch, ``at_once`` requests in flight. Solr indexes each update request on
        one thread: with ``at_once`` > 1 it uses more cores. This thread keeps it busy: it reads
        the next batch while the requests are in flight, sends it the moment the oldest request
        is answered, and only then marks what that request indexed (or, when Solr refused a
        document of it, finds that document, while the other requests stay in flight). A batch
        is marked indexed only once its own request succeeded, whatever happened to the others."""
        in_flight: deque[tuple[Batch, Future[None]]] = deque()
        with ThreadPoolExecutor(at_once, thread_name_prefix="solr-push") as senders:
            for batch in batches:
                if should_stop() or self.node_failed:
                    break
                answered = in_flight.popleft() if len(in_flight) >= at_once else None
                if answered is not None and _failed_for_the_request(answered[1]):  # waits for the answer
                    self.settle(*answered)
                    break
                in_flight.append((batch, senders.submit(self.index.add_json, [data for _url, data in batch])))
                if answered is not None and not self.settle(*answered):
                    break
            while in_flight:
                self.settle(*in_flight.popleft())

    def settle(self, batch: Batch, sent: Future[None]) -> bool:
        """Mark what an answered request did; False when nothing more is to be sent."""
        try:
            sent.result()
        except IndexingError as exc:
            if not exc.documents_refused or self.node_failed:
                self.failed(exc)
                return False
            logger.info(
                "Solr refused a batch of %d documents of %s (HTTP %s: %s); pushing it in halves to find the refused documents",
                len(batch),
                self.source,
                exc.status,
                exc.reason,
            )
            return self.isolate_refused(batch, exc)
        self.indexed(batch)
        return True

    def failed(self, exc: IndexingError) -> None:
        self.node_failed = self.node_failed or not exc.refused
        if self.result.error is None:
            self.result.error, self.result.request_refused = str(exc), exc.refused

    def indexed(self, batch: Batch) -> None:
        urls = [url for url, _data in batch]
        done = self.ledger.mark_indexed([(url, self.checksums[url]) for url in urls])
        self.scan.acknowledged(urls)
        self.result.indexed += len(done)
        self.result.pending -= len(done)
        logger.debug("Pushed %d documents of %s to Solr", len(batch), self.source)

    def refused(self, url: str, exc: IndexingError) -> None:
        self.ledger.mark_refused([(url, self.checksums[url], f"HTTP {exc.status}: {exc.reason}")])
        self.scan.acknowledged([url])  # its record is spent: it is not sent again
        self.result.refused += 1
        self.result.pending -= 1
        logger.warning(
            "Solr refused document %s of %s (status 924, not indexed): HTTP %s: %s", url, self.source, exc.status, exc.reason
        )

    def isolate_refused(self, batch: Batch, exc: IndexingError) -> bool:
        """Find the documents of ``batch`` Solr refuses, and mark them refused. A circuit breaker:
        when more than a twentieth of the batch (at least REFUSAL_FLOOR) is refused, it is not bad
        documents but Solr's configuration (an unknown field, a schema not deployed): the search
        stops, nothing is marked refused, and everything not yet indexed stays pending."""
        found: list[tuple[str, IndexingError]] = []
        limit = max(REFUSAL_FLOOR, len(batch) // 20)
        whole = self.isolate(batch, exc, found, limit)
        if len(found) > limit:
            self.failed(
                IndexingError(
                    f"Solr refuses more than {limit} documents of a batch of {len(batch)} of {self.source} "
                    f"(HTTP {exc.status}: {exc.reason}): a schema or configuration problem? They stay pending",
                    refused=True,
                    status=exc.status,
                    reason=exc.reason,
                )
            )
            return False
        for url, refusal in found:
            self.refused(url, refusal)
        return whole

    def isolate(self, batch: Batch, exc: IndexingError, found: list[tuple[str, IndexingError]], limit: int) -> bool:
        """Solr refused ``batch`` for a document in it: push its halves, recursively, until each
        refused document is alone (collected in ``found``). False when a node failed meanwhile,
        or when more than ``limit`` documents are refused (the rest stays pending)."""
        if len(batch) == 1:
            found.append((batch[0][0], exc))
            return len(found) <= limit
        middle = len(batch) // 2
        for part in (batch[:middle], batch[middle:]):
            try:
                self.index.add_json([data for _url, data in part])
            except IndexingError as part_exc:
                if part_exc.documents_refused:
                    if not self.isolate(part, part_exc, found, limit):
                        return False
                    continue
                self.failed(part_exc)
                return False
            self.indexed(part)
        return True


def _anchor_updates(
    source: str, table: DocumentTable, index: SolrIndex, due: list[DueDocument], pacing: AnchorPacing | None = None
) -> tuple[list[dict[str, Any]], list[int], list[tuple[str, int]]]:
    """One batch of ``set_anchors``: the conditional atomic updates of the documents whose field
    is not what counts now for the readers Solr holds them with, the marks done with (those of
    every document but the pending ones, which wait for their push, and those ``pacing`` leaves
    for later), and each field's key with the anchors it was computed from."""
    done = [mark for row in due if row.state not in IN_SOLR for mark in row.marks]
    held: list[tuple[DueDocument, str, Sequence[int]]] = []
    for row in due:
        if row.url is None or row.state not in IN_SOLR or row.state == State.PENDING:
            continue
        marks = row.marks if pacing is None else pacing.due_now(row.url_hash, row.marks)
        if marks is not None:
            held.append((row, row.url, marks))
    stored = index.latest([solr_id(source, url) for _row, url, _marks in held], LATEST_FIELDS)
    found = table.anchor_candidates(source, [url for _row, url, _marks in held])
    updates, computed = [], []
    for row, url, read in held:
        done.extend(read)
        candidates = found.get(url, [])
        computed.append((row.url_hash, len(candidates)))
        document = stored.get(solr_id(source, url))
        if document is None:
            continue  # not in Solr: the push that puts it there computes its field
        words = anchor_field(candidates, partial(access_fields, document))  # its readers as Solr holds it
        if words != list(document.get(ANCHOR_FIELD) or []):
            updates.append({"id": document["id"], "_version_": document["_version_"], ANCHOR_FIELD: {"set": words or None}})
    return updates, done, computed


def _failed_for_the_request(sent: Future[None]) -> bool:
    """Whether an answered request failed for another reason than a document in it (a node
    failed, Solr refused the request): then nothing more is sent (waits for the answer)."""
    error = sent.exception()
    return error is not None and not (isinstance(error, IndexingError) and error.documents_refused)


@dataclass
class SolrPusher:
    """Pushes one source's cached documents (``push_pending``) with a crawl's batch settings:
    what the Solr pipeline pushes during the crawl and the run's end pushes last. Processes
    sharing the cache push it in turn (its push lock); before a push, the source's documents
    an earlier searchcrawl indexed with the URL as their id get their per-source id (once)."""

    ledger: Ledger  # the crawl's: its source, the table it reads, and the writer of what Solr answered
    cache: DocumentCache
    index: SolrIndex
    max_docs: int
    max_bytes: int
    preserve_cache: bool = False
    requests_at_once: int = 1
    ids_migrated: bool = False
    pacing: AnchorPacing = field(default_factory=AnchorPacing)  # of the pushes during the crawl

    @property
    def source(self) -> str:
        return self.ledger.source

    def push_once(self, remove: bool = False, wait: bool = True, *, during_crawl: bool = False) -> PushResult:
        """One pass over the pending documents (blocking). Without ``wait``, a process finding
        another pushing skips its turn (the other pushes its documents too). A push
        ``during_crawl`` paces the anchor fields of pages many link to (index/anchor_pacing.py);
        any other sets every field due."""
        with self.cache.push_lock(wait) as mine:
            if not mine:
                return PushResult(skipped=True)
            self.migrate_ids()
            return push_pending(
                self.ledger,
                self.cache,
                self.index,
                max_docs=self.max_docs,
                max_bytes=self.max_bytes,
                preserve_cache=self.preserve_cache,
                remove=remove,
                requests_at_once=self.requests_at_once,
                pacing=self.pacing if during_crawl else None,
            )

    def migrate_ids(self) -> None:
        """Once, before the first push: documents of the source indexed by an earlier
        searchcrawl, whose id is the URL, get their per-source id (``migrate_ids``). A node
        failure is tried again with the next push; a refusal would be the same every time.
        Idempotent: a second pusher of the crawl (the run's end) finds nothing left to migrate."""
        if self.ids_migrated:
            return
        name, table = self.source, self.ledger.table
        try:
            migrated = migrate_ids(
                self.index,
                name,
                max_docs=min(self.max_docs, 200),
                max_bytes=self.max_bytes,
                holders=table.holders if table.count_by(name, "state") else None,
            )
        except IndexingError as exc:
            self.ids_migrated = exc.refused
            logger.warning(
                "Could not give the Solr documents of %s indexed by an earlier searchcrawl their ids "
                "of the form %s!<url> (`scrapy solr migrate-ids %s` does it too): %s",
                name,
                name,
                name,
                exc,
            )
            return
        self.ids_migrated = True
        if migrated:
            logger.info("Migrated %d Solr documents of %s from the URL as id to %s!<url>", migrated, name, name)


def push_with_retries(
    attempt: Callable[[], PushResult], times: int, backoff: float, sleep: Callable[[float], None] = time.sleep
) -> PushResult:
    """Call ``attempt`` until nothing is pending or ``times`` attempts failed, doubling the wait."""
    total = PushResult()
    delay = backoff
    for number in range(1, times + 1):
        result = attempt()
        total.indexed += result.indexed
        total.removed += result.removed
        total.refused += result.refused
        total.anchors += result.anchors
        total.pending, total.error, total.request_refused = result.pending, result.error, result.request_refused
        if result.error is None:
            return total
        if number < times:
            logger.warning("Solr push failed (attempt %d of %d, next in %.1fs): %s", number, times, delay, result.error)
            sleep(delay)
            delay *= 2
    return total
