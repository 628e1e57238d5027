"""Pushing cached documents to Solr in bounded batches. Plain logic and pysolr, no Scrapy.

Every call here blocks; the Scrapy pipeline runs it in a worker thread so the reactor never
waits on Solr. Batches are bounded by document count and by bytes, so one request never grows
past what Solr (or a proxy in front of it) accepts.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pysolr

from .cache import DocumentCache
from .db import DocumentTable

logger = logging.getLogger(__name__)
T = TypeVar("T")
# pysolr logs every failed request with a traceback at ERROR; we report failures ourselves, once.
logging.getLogger("pysolr").setLevel(logging.CRITICAL)


class IndexingError(Exception):
    """Solr could not take a batch; the documents stay pending."""


def batches(documents: Iterable[tuple[T, int]], max_docs: int, max_bytes: int) -> Iterator[list[T]]:
    """Group (document, size) pairs into batches of at most max_docs and max_bytes (one oversize
    document still goes alone)."""
    batch: list[T] = []
    size = 0
    for document, document_size in documents:
        if batch and (len(batch) >= max_docs or size + document_size > max_bytes):
            yield batch
            batch, size = [], 0
        batch.append(document)
        size += document_size
    if batch:
        yield batch


def _node_failed(error: Exception) -> bool:
    """Is this a failure of the node (unreachable, 5xx) rather than of the request (4xx)?
    Only then is another node of a SolrCloud collection worth trying."""
    return not re.search(r"\(HTTP 4\d\d\)", str(error))


@dataclass
class SolrIndex:
    """One Solr core or SolrCloud collection, reached through pysolr.

    ``url`` may list several comma-separated URLs of one collection (one per SolrCloud node):
    a request goes to the node that answered last, and on to the next when a node is down or
    failing; any node routes updates to the shard leaders. Crawler machines need plain HTTP to
    Solr, no ZooKeeper client.
    """

    url: str
    timeout: float = 60
    commit_within_ms: int = 2000
    auth: tuple[str, str] | None = field(default=None, repr=False)  # HTTP basic auth

    def __post_init__(self) -> None:
        self.urls = [part.strip().rstrip("/") for part in self.url.split(",") if part.strip()]
        self.clients = [pysolr.Solr(url, timeout=self.timeout, always_commit=False, auth=self.auth) for url in self.urls]
        self.current = 0

    @property
    def client(self) -> pysolr.Solr:
        return self.clients[self.current]

    def _call(self, what: str, call: Callable[[pysolr.Solr], Any]) -> Any:
        """``call`` on the current node, then on each other node while nodes fail."""
        failures = []
        for step in range(len(self.clients)):
            number = (self.current + step) % len(self.clients)
            try:
                result = call(self.clients[number])
            except (pysolr.SolrError, OSError) as exc:
                failures.append(f"{self.urls[number]}: {exc}")
                if not _node_failed(exc):
                    break
                if len(self.clients) > 1:
                    logger.debug("Solr node %s failed (%s); trying the next", self.urls[number], exc)
                continue
            if number != self.current:
                logger.info("Solr node %s failed; now using %s", self.urls[self.current], self.urls[number])
                self.current = number
            return result
        raise IndexingError(f"Solr {what}: {'; '.join(failures)}")

    def add(self, documents: list[dict[str, Any]]) -> None:
        self.add_json([json.dumps(document, ensure_ascii=False).encode("utf-8") for document in documents])

    def add_json(self, documents: list[bytes]) -> None:
        """Add documents given as JSON objects, sent as they are: the document cache already holds
        each as Solr's JSON, so nothing is decoded and encoded again on the way."""
        body = b"[" + b",".join(documents) + b"]"  # pysolr 3.11's _update (pinned): Solr's JSON update API
        self._call(f"refused {len(documents)} documents", lambda client: client._update(
            body, clean_ctrl_chars=False, commitWithin=self.commit_within_ms, overwrite=True, solrapi="JSON"))

    def delete(self, ids: list[str]) -> None:
        self._call(f"did not delete {len(ids)} documents", lambda client: client.delete(id=ids, commit=False))

    def commit(self) -> None:
        """Make everything pushed so far searchable now (soft commit)."""
        self._call("did not commit", lambda client: client.commit(softCommit=True))

    def ping(self) -> bool:
        try:
            self._call("did not answer ping", lambda client: client.ping())
            return True
        except IndexingError:
            return False


@dataclass
class PushResult:
    indexed: int = 0
    pending: int = 0
    removed: int = 0
    error: str | None = None


def push_pending(
    source: str,
    table: DocumentTable,
    cache: DocumentCache,
    index: SolrIndex,
    *,
    max_docs: int,
    max_bytes: int,
    preserve_cache: bool = False,
    remove: bool = True,
    should_stop: Callable[[], bool] = lambda: False,
    requests_at_once: int = 1,
) -> PushResult:
    """Remove what must leave the index (if ``remove``), then push every pending document of
    ``source`` to Solr, batch by batch.

    A batch is marked indexed only after Solr acknowledged it (Solr writes its update log before
    it answers, so an acknowledged document survives a Solr crash). A crash between the
    acknowledgement and the mark re-pushes the same document next time: Solr's uniqueKey makes
    that an overwrite, never a second copy.
    """
    result = PushResult()
    scan = cache.scan()  # before the table is read: see DocumentCache.scan
    removals = table.removals(source) if remove else []
    for start in range(0, len(removals), max_docs):
        chunk = removals[start:start + max_docs]
        try:
            index.delete(chunk)
        except IndexingError as exc:
            result.error = str(exc)
            result.pending = len(table.pending(source, cache.id))
            return result
        table.mark_removed(source, chunk)
        result.removed += len(chunk)
        logger.debug("Removed %d documents of %s from Solr", len(chunk), source)
    pending = table.pending(source, cache.id)  # what this cache holds: other machines push theirs
    result.pending = len(pending)
    checksums = dict(pending)
    for url in checksums.keys() - scan.select(checksums):
        logger.warning("Cached document of %s is missing or stale; it will be fetched again", url)

    def documents() -> Iterator[tuple[tuple[str, bytes], int]]:
        for url, data in scan.documents():
            yield (url, data), len(data)

    def settle(batch: list[tuple[str, bytes]], sent: Future[None]) -> None:
        try:
            sent.result()
        except IndexingError as exc:
            result.error = result.error or str(exc)
            return
        urls = [url for url, _data in batch]
        done = table.mark_indexed(source, [(url, checksums[url]) for url in urls])
        scan.acknowledged(urls)
        result.indexed += len(done)
        result.pending -= len(done)
        logger.debug("Pushed %d documents of %s to Solr", len(batch), source)

    # Solr indexes each update request on one thread: with ``requests_at_once`` > 1 it uses more
    # cores. This thread keeps it busy: it reads the next batch while the requests are in flight,
    # sends it the moment the oldest request is answered, and only then marks what that request
    # indexed. A batch is marked indexed only once its own request succeeded, whatever happened
    # to the others; the cache's spools are deleted at the end, those whose documents Solr has.
    in_flight: deque[tuple[list[tuple[str, bytes]], Future[None]]] = deque()
    at_once = max(1, requests_at_once)
    with ThreadPoolExecutor(at_once, thread_name_prefix="solr-push") as senders:
        for batch in batches(documents(), max_docs, max_bytes):
            if should_stop():
                break
            answered = in_flight.popleft() if len(in_flight) >= at_once else None
            if answered is not None and answered[1].exception() is not None:  # waits for the answer
                settle(*answered)
                break
            in_flight.append((batch, senders.submit(index.add_json, [data for _url, data in batch])))
            if answered is not None:
                settle(*answered)
        while in_flight:
            settle(*in_flight.popleft())
    if not preserve_cache:
        cache.release(scan)
    return result


def push_with_retries(attempt: Callable[[], PushResult], times: int, backoff: float, sleep: Callable[[float], None] = time.sleep) -> PushResult:
    """Call ``attempt`` until nothing is pending or ``times`` attempts failed, doubling the wait."""
    total = PushResult()
    delay = backoff
    for number in range(1, times + 1):
        result = attempt()
        total.indexed += result.indexed
        total.removed += result.removed
        total.pending, total.error = result.pending, result.error
        if result.error is None:
            return total
        if number < times:
            logger.warning("Solr push failed (attempt %d of %d, next in %.1fs): %s", number, times, delay, result.error)
            sleep(delay)
            delay *= 2
    return total
