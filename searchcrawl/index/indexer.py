"""Pushing cached documents to Solr in bounded batches. Plain logic and pysolr, no Scrapy.

Every call here blocks; the Scrapy pipeline runs it in a worker thread so the reactor never
waits on Solr. Batches are bounded by document count and by bytes, so one request never grows
past what Solr (or a proxy in front of it) accepts.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import re
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from http.client import HTTPException
from typing import Any, TypeVar
from xml.etree import ElementTree

import pysolr
import requests

from searchcrawl.content.extract import solr_id
from searchcrawl.index.cache import CacheScan, DocumentCache
from searchcrawl.store import DocumentTable
from searchcrawl.store.ledger import Ledger

logger = logging.getLogger(__name__)
T = TypeVar("T")
# pysolr logs every failed request with a traceback at ERROR; we report failures ourselves, once.
logging.getLogger("pysolr").setLevel(logging.CRITICAL)

REFUSAL_FLOOR = 10  # refused documents of one batch that may be bad documents, whatever its size

# Answers by which Solr refuses a document of an update request (a value it cannot index: a bad
# date, an immense term, an unknown field; a body too large). Other 4xx answers (401, 403, 404,
# ...) refuse the request whatever it carries: its documents stay pending.
DOCUMENT_REFUSALS = frozenset({400, 409, 413})
MAX_REASON = 300  # characters of Solr's message kept in logs and in the document table
JSON_BODY = {"Content-type": "application/json; charset=utf-8"}


class IndexingError(Exception):
    """Solr did not take a request. ``refused``: Solr answered and refused the request (HTTP 4xx,
    ``status``), so the node works and another node would answer the same; otherwise the node
    failed (unreachable, timed out, 5xx: then ``status`` is the last node's 5xx, None when it
    gave no answer). ``reason`` is Solr's message, trimmed to something
    readable and never carrying a document's body."""

    def __init__(self, message: str, *, refused: bool = False, status: int | None = None, reason: str = "") -> None:
        super().__init__(message)
        self.refused = refused
        self.status = status
        self.reason = reason or message

    @property
    def documents_refused(self) -> bool:
        """Whether Solr refused a document of the request (rather than the request itself)."""
        return self.refused and self.status in DOCUMENT_REFUSALS


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


def _http_status(error: Exception | str) -> int | None:
    """The HTTP status of a Solr answer pysolr raised an error for (None: no answer)."""
    match = re.search(r"\(HTTP (\d{3})\)", str(error))
    return int(match.group(1)) if match else None


def _node_failed(error: Exception) -> bool:
    """Is this a failure of the node (unreachable, 5xx) rather than of the request (4xx)?
    Only then is another node of a SolrCloud collection worth trying."""
    status = _http_status(error)
    return status is None or not 400 <= status < 500


def readable(reason: str) -> str:
    """Solr's message made fit for a log line: the immense term's bytes and long quoted values
    (pieces of the document) left out, whitespace collapsed, at most MAX_REASON characters."""
    reason = re.sub(r"The prefix of the first immense term is: '\[[\d, ]*\]\.*',?\s*", "", reason)
    reason = re.sub(r",? all of which were skipped\.\s*Please correct the analyzer to not produce such terms\.", ".", reason)
    reason = re.sub(r"'([^'\n]{40})[^'\n]{40,}'", r"'\1...'", reason)
    reason = " ".join(reason.split())
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 3].rstrip() + "..."


def describe(error: Exception) -> str:
    """What went wrong with a Solr request, briefly: ``HTTP 400: <Solr's reason>``, ``cannot
    connect (Connection refused)``, ``timed out``."""
    text = str(error)
    status = _http_status(text)
    if status is not None:
        reason = text.split("[Reason: ", 1)[1] if "[Reason: " in text else text
        if reason.startswith("None]"):  # no message: pysolr appends the answer's body
            reason = re.sub(r"<[^>]+>", " ", reason[len("None]") :]) or "no message"
        else:
            reason = reason.rstrip().removesuffix("]")
        return f"HTTP {status}: {readable(reason)}"
    errno = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text)
    if errno:
        return f"cannot connect ({errno.group(1).strip()})"
    if "timed out" in text:
        return "timed out"
    return readable(text)


# Semantic search's passages are documents of the core too (doc_type "passage", schema.xml): every
# query of documents (a searcher's, through search/searcher.py, and the operators' below) filters
# on DOCUMENTS, every query of passages on PASSAGES
DOCUMENTS = "-doc_type:passage"
PASSAGES = "{!term f=doc_type}passage"
PASSAGE_DELETE_CHUNK = 500  # parent ids in one delete-by-query of their passages


def passages_of(ids: list[str]) -> str:
    """The query of the passages of the documents ``ids`` (a Solr id holds no white space: a URL
    is percent-encoded where it is made, rules/urls.py)."""
    return '{!terms f=parent_id method=termsFilter separator=" "}' + " ".join(ids)


def escape_query(text: str) -> str:
    """``text`` as one term of Solr's standard query syntax (every special character escaped)."""
    return re.sub(r'([+\-&|!(){}\[\]^"~*?:\\/\s])', r"\\\1", text)


def _error_page(answer: requests.Response) -> tuple[str | None, str]:
    """The message of an error answer that is not JSON: Solr's XML error, or the title of a
    servlet container's or a proxy's HTML page (None, and the page, when it has none)."""
    page = answer.content.decode("utf-8", "replace")
    server = answer.headers.get("server", "").lower()
    if "coyote" in server:  # Tomcat's pages are no XML
        heading = re.search(r"<(h1)[^>]*>\s*(.+?)\s*</\1>", page, re.IGNORECASE)
        return (heading.group(2), "") if heading else (None, page)
    try:
        tree = ElementTree.fromstring(page)
    except ElementTree.ParseError:
        return None, page
    node = tree.find('lst[@name="error"]/str[@name="msg"]')
    if node is None:
        node = tree.find("body/pre" if "jetty" in server else "head/title")
    if node is not None and node.text and node.text.strip():
        return node.text.strip(), ""
    return None, page


def _solr_error(answer: requests.Response) -> pysolr.SolrError:
    """The error for an answer other than 200, worded as pysolr words its own (``Solr responded
    with an error (HTTP 400): [Reason: <Solr's message>]``, the body after it when there is no
    message), so that _call and describe() treat both alike."""
    reason = answer.headers.get("reason")
    page = ""
    if reason is None:
        try:
            reason = answer.json()["error"]["msg"]
        except (KeyError, TypeError):
            page = answer.content.decode("utf-8", "replace")
        except ValueError:  # not JSON
            reason, page = _error_page(answer)
    message = f"[Reason: {reason}]" + (f"\n{page}" if reason is None else "")
    return pysolr.SolrError(f"Solr responded with an error (HTTP {answer.status_code}): {message}")


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
        # one HTTP session (connection pool) per node, for pysolr's requests and ours (_request)
        self.sessions = [requests.Session() for _url in self.urls]
        self.clients = [
            pysolr.Solr(url, timeout=self.timeout, always_commit=False, auth=self.auth, session=session)
            for url, session in zip(self.urls, self.sessions, strict=True)
        ]
        self.current = 0

    @property
    def client(self) -> pysolr.Solr:
        return self.clients[self.current]

    def _call(self, what: str, call: Callable[[pysolr.Solr], Any]) -> Any:
        """``call`` on the current node, then on each other node while nodes fail. Raises
        IndexingError saying ``what`` failed, on which node, and why."""
        failures = []
        status = None  # of the last node's answer, when it gave one (HTTP 5xx)
        for step in range(len(self.clients)):
            number = (self.current + step) % len(self.clients)
            try:
                result = call(self.clients[number])
            except (pysolr.SolrError, OSError) as exc:
                failures.append(f"{self.urls[number]}: {describe(exc)}")
                if not _node_failed(exc):
                    status = _http_status(exc)
                    raise IndexingError(
                        f"Solr {what}: {'; '.join(failures)}",
                        refused=True,
                        status=status,
                        reason=describe(exc).removeprefix(f"HTTP {status}: "),
                    ) from None
                status = _http_status(exc)
                if len(self.clients) > 1:
                    logger.debug("Solr node %s failed (%s); trying the next", self.urls[number], describe(exc))
                continue
            if number != self.current:
                logger.info("Solr node %s failed; now using %s", self.urls[self.current], self.urls[number])
                self.current = number
            return result
        raise IndexingError(f"Solr {what}: {'; '.join(failures)}", status=status, reason="; ".join(failures))

    def _request(self, client: pysolr.Solr, method: str, path: str, body: bytes | None = None, node: bool = False) -> str:
        """A request to ``client``'s node that pysolr has no public method for (Solr's JSON update
        API with the body as it is, the schema API), made as pysolr makes its own: the node's
        session, ``timeout`` and ``auth``; a failure raised as the pysolr.SolrError pysolr would
        raise, so _call classifies it alike (refused, status, reason). ``path`` is under the
        core's URL, or the node's when ``node``. Returns the answer's text."""
        number = self.clients.index(client)
        base = self.urls[number].rpartition("/")[0] if node else self.urls[number]
        url = f"{base}/{path}"
        try:
            answer = self.sessions[number].request(
                method, url, data=body, headers=JSON_BODY if body is not None else {}, timeout=self.timeout, auth=self.auth
            )
        except requests.exceptions.Timeout as exc:
            raise pysolr.SolrError(f"Connection to server '{url}' timed out: {exc}") from None
        except requests.exceptions.ConnectionError as exc:
            raise pysolr.SolrError(f"Failed to connect to server at {url}: {exc}") from None
        except HTTPException as exc:
            raise pysolr.SolrError(f"Unhandled error: {method} {url}: {exc}") from None
        if answer.status_code != 200:
            raise _solr_error(answer)
        return answer.content.decode("utf-8", "replace")

    def request(self, method: str, path: str, what: str, body: bytes | None = None, *, node: bool = False) -> str:
        """A request pysolr has no method for (the managed resources' REST API, the cores' and
        collections' admin API), sent as every request here is: to the node that answered last
        and on to the next while nodes fail, with each node's session, ``timeout`` and ``auth``.
        ``path`` is under the core's (collection's) URL, or under the node's (``.../solr``) when
        ``node``; ``body`` is sent as JSON. Returns the answer's text; IndexingError saying
        ``what`` failed (``refused`` and ``status`` when Solr answered 4xx, with its reason)."""
        return self._call(what, lambda client: self._request(client, method, path, body, node))

    @property
    def name(self) -> str:
        """The core's (collection's) name: the last part of its URL."""
        return self.urls[self.current].rpartition("/")[2]

    def add(self, documents: list[dict[str, Any]]) -> None:
        self.add_json([json.dumps(document, ensure_ascii=False).encode("utf-8") for document in documents])

    def add_json(self, documents: list[bytes]) -> None:
        """Add documents given as JSON objects, sent as they are: the document cache already holds
        each as Solr's JSON, so nothing is decoded and encoded again on the way."""
        body = b"[" + b",".join(documents) + b"]"  # Solr's JSON update API: an array of documents
        path = f"update/?commitWithin={int(self.commit_within_ms)}&overwrite=true"
        self._call(f"did not take {len(documents)} documents", lambda client: self._request(client, "post", path, body))

    def add_new(self, documents: list[dict[str, Any]]) -> None:
        """Add only those of ``documents`` whose id Solr does not hold yet; the others are skipped,
        silently (optimistic concurrency: ``_version_`` -1 means "must not exist", and
        ``failOnVersionConflicts=false`` skips a conflict instead of refusing the request)."""
        body = json.dumps([{**document, "_version_": -1} for document in documents], ensure_ascii=False).encode("utf-8")
        path = f"update?commitWithin={int(self.commit_within_ms)}&failOnVersionConflicts=false&wt=json"
        self._call(f"did not take {len(documents)} documents", lambda client: self._request(client, "post", path, body))

    def delete(self, ids: list[str]) -> None:
        """Delete documents by Solr id (``extract.solr_id``: a source's id of a URL) and their
        passages (semantic search's: ``parent_id``), in one request: a gone document takes its
        passages with it."""
        if not ids:
            return
        # Solr's JSON update API takes one command a key, a key repeated for several commands
        commands = ['"delete":' + json.dumps(ids, ensure_ascii=False)]
        for start in range(0, len(ids), PASSAGE_DELETE_CHUNK):
            query = passages_of(ids[start : start + PASSAGE_DELETE_CHUNK])
            commands.append('"delete":' + json.dumps({"query": query}, ensure_ascii=False))
        body = ("{" + ",".join(commands) + "}").encode("utf-8")
        self._call(f"did not delete {len(ids)} documents", lambda client: self._request(client, "post", "update/?wt=json", body))

    def update_existing(self, updates: list[dict[str, Any]]) -> None:
        """Apply atomic updates (``{"set": ...}``) to documents Solr holds, each on the condition
        of its ``_version_`` (1: that it exists; a number: that it is that version); one whose
        condition fails is skipped, silently (``failOnVersionConflicts=false``)."""
        body = json.dumps(updates, ensure_ascii=False).encode("utf-8")
        path = f"update?commitWithin={int(self.commit_within_ms)}&failOnVersionConflicts=false&wt=json"
        self._call(f"did not update {len(updates)} documents", lambda client: self._request(client, "post", path, body))

    def delete_query(self, query: str) -> None:
        """Delete the documents matching ``query`` (operators' and the passages' upkeep)."""
        body = json.dumps({"delete": {"query": query}}).encode("utf-8")
        self._call("did not delete by query", lambda client: self._request(client, "post", "update?wt=json", body))

    def delete_passages(self, ids: list[str]) -> None:
        """Delete passages (or any documents) by id alone."""
        if ids:
            self._call(f"did not delete {len(ids)} passages", lambda client: client.delete(id=ids, commit=False))

    def search(self, query: str, **params: Any) -> pysolr.Results:
        return self._call("did not answer a query", lambda client: client.search(query, **params))

    def copy_field_targets(self) -> list[str]:
        """The schema's copyField destinations (names or globs): Solr fills them itself."""
        answer = self._call(
            "did not list its copyFields", lambda client: self._request(client, "get", "schema/copyfields?wt=json")
        )
        return sorted({rule["dest"] for rule in json.loads(answer).get("copyFields", [])})

    def document_count(self) -> int:
        """How many documents the whole index holds (every source's, untrimmed, not counting
        passages): for operators (the admin page's Solr health), never shown to a searcher."""
        return int(self.search("*:*", fq=DOCUMENTS, rows=0).hits)

    def sources(self) -> list[str]:
        """The sources that have documents in the index."""
        results = self.search(
            "*:*", fq=DOCUMENTS, rows=0, facet="true", **{"facet.field": "source", "facet.limit": -1, "facet.mincount": 1}
        )
        counts = results.facets.get("facet_fields", {}).get("source", [])
        return sorted(counts[::2])

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
    pending: int = 0  # documents left waiting for Solr
    removed: int = 0
    refused: int = 0  # documents Solr refused, one by one: status 924, no longer pending
    error: str | None = None  # why documents were left pending
    request_refused: bool = False  # the error is Solr refusing the requests (4xx), not a node failing
    skipped: bool = False  # not tried: another process sharing the cache was pushing it


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
    ledger: Ledger | None = None,
) -> PushResult:
    """Remove what must leave the index (if ``remove``), then push every pending document of
    ``source`` to Solr, batch by batch. Documents are addressed in Solr by ``solr_id(source, url)``.

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

    What Solr answered is written by ``ledger``, the crawl's (a source's own when none is given:
    outside a crawl). The same content that two URLs put in the index at the same moment (two
    nodes of a shared crawl) is first kept once (``Ledger.settle_pending``), so a duplicate is
    not sent; one settled after its push (the other node's record came later) leaves Solr with
    the run's removals.
    """
    ledger = ledger if ledger is not None else Ledger(table, source)
    result = PushResult()
    scan = cache.scan()  # before the table is read: see DocumentCache.scan
    for url in ledger.settle_pending(cache.id):
        logger.debug("Duplicate of another node's copy, cached at the same moment, not pushed: %s", url)
    if remove and not remove_from_index(source, table, ledger, index, max_docs, result):
        result.pending = len(table.pending(source, cache.id))
        return result
    pending = table.pending(source, cache.id)  # what this cache holds: other machines push theirs
    result.pending = len(pending)
    checksums = dict(pending)
    for url in checksums.keys() - scan.select(checksums):
        logger.warning("Cached document of %s is missing or stale; it will be fetched again", url)
    push = BatchPush(source, ledger, index, scan, checksums, result)
    push.send(batches(_documents(scan, source), max_docs, max_bytes), max(1, requests_at_once), should_stop)
    if not preserve_cache:  # the spools whose documents Solr has (or refused) go
        cache.release(scan)
    return result


def remove_from_index(
    source: str, table: DocumentTable, ledger: Ledger, index: SolrIndex, max_docs: int, result: PushResult
) -> bool:
    """Delete what must leave the index (``DocumentTable.removals``) from Solr, ``max_docs`` at a
    time, each chunk marked removed once Solr took it. False when Solr failed or refused (the
    error is in ``result``): what is left stays to remove, and nothing is pushed."""
    removals = table.removals(source)
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


def _documents(scan: CacheScan, source: str) -> Iterator[tuple[tuple[str, bytes], int]]:
    """The scan's documents as ((url, JSON with the source's id), size), what ``batches`` groups."""
    for url, data in scan.documents():
        data = _with_id(data, solr_id(source, url))
        yield (url, data), len(data)


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

    source: str
    table: DocumentTable
    cache: DocumentCache
    index: SolrIndex
    max_docs: int
    max_bytes: int
    preserve_cache: bool = False
    requests_at_once: int = 1
    ids_migrated: bool = False
    ledger: Ledger | None = None  # the crawl's (push_pending's own when None)

    def push_once(self, remove: bool = False, wait: bool = True) -> PushResult:
        """One pass over the pending documents (blocking). Without ``wait``, a process finding
        another pushing skips its turn (the other pushes its documents too)."""
        with self.cache.push_lock(wait) as mine:
            if not mine:
                return PushResult(skipped=True)
            self.migrate_ids()
            return push_pending(
                self.source,
                self.table,
                self.cache,
                self.index,
                max_docs=self.max_docs,
                max_bytes=self.max_bytes,
                preserve_cache=self.preserve_cache,
                remove=remove,
                requests_at_once=self.requests_at_once,
                ledger=self.ledger,
            )

    def migrate_ids(self) -> None:
        """Once, before the first push: documents of the source indexed by an earlier
        searchcrawl, whose id is the URL, get their per-source id (``migrate_ids``). A node
        failure is tried again with the next push; a refusal would be the same every time.
        Idempotent: a second pusher of the crawl (the run's end) finds nothing left to migrate."""
        if self.ids_migrated:
            return
        name = self.source
        try:
            migrated = migrate_ids(
                self.index,
                name,
                max_docs=min(self.max_docs, 200),
                max_bytes=self.max_bytes,
                holders=self.table.holders if self.table.count_by(name, "state") else None,
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
        total.pending, total.error, total.request_refused = result.pending, result.error, result.request_refused
        if result.error is None:
            return total
        if number < times:
            logger.warning("Solr push failed (attempt %d of %d, next in %.1fs): %s", number, times, delay, result.error)
            sleep(delay)
            delay *= 2
    return total


def cursor_pages(index: SolrIndex, filters: list[str], fields: str, rows: int) -> Iterator[list[dict[str, Any]]]:
    """The documents matching ``filters`` (with ``fields``), a page of ``rows`` at a time in id
    order, read with a cursorMark: documents deleted or added meanwhile (the caller deleting what
    it read) make it skip nothing it had not read yet. Raises IndexingError when Solr fails."""
    cursor = "*"
    while True:
        page = index.search("*:*", fq=filters, fl=fields, sort="id asc", rows=rows, cursorMark=cursor, hl="false", facet="false")
        documents = list(page.docs)
        if documents:
            yield documents
        cursor, previous = page.nextCursorMark, cursor
        if not documents or cursor is None or cursor == previous:
            return


def found_documents(index: SolrIndex, source: str, rows: int = 1000) -> Iterator[list[tuple[str, str | None, str | None]]]:
    """What Solr holds of ``source`` (its ``source`` field), a page at a time, as (url, display
    URL, checksum): what a new document table takes over (DocumentTable.record_found). Documents
    without a URL (not written by searchcrawl) are left out."""
    for page in cursor_pages(index, [f"{{!term f=source}}{source}", DOCUMENTS], "id,url,display_url,checksum", rows):
        found = [
            (document["url"], document.get("display_url"), document.get("checksum")) for document in page if document.get("url")
        ]
        if found:
            yield found


def migrate_ids(
    index: SolrIndex,
    source: str,
    *,
    max_docs: int = 200,
    max_bytes: int = 10 * 1024 * 1024,
    holders: Callable[[list[str]], dict[str, set[str]]] | None = None,
) -> int:
    """Give ``source``'s documents written by searchcrawl before ids were per source (their id was
    the URL) the id ``solr_id(source, url)``; returns how many were migrated (0 when none is left).

    Finds them with ``source:<name> AND -id:<name>!*``, a page of ``max_docs`` at a time (a
    cursorMark, so deleting as it goes skips nothing), re-adds each with every stored field but
    ``_version_`` and the schema's copyField targets (Solr fills those again) under its new id,
    then deletes the old ids: a document is never missing from the index, and is in it twice only
    for the moment between the two requests. A new id Solr already holds (a crawl pushed a newer
    version meanwhile) is not overwritten. Idempotent: run it again after a failure, it goes on.
    Raises IndexingError when Solr fails or refuses.

    ``holders(urls)``: the sources whose document table rows hold each URL in the index (the
    table's word, DocumentTable.holders). Under the old ids two sources crawling one page shared
    one document: each holder gets its own copy (its ``source`` field set), and a document no
    source holds any more (removed, but under the new id only) is deleted, not migrated. Without
    ``holders`` every document is migrated to its own source.
    """
    filters = [f"{{!term f=source}}{source}", f"-id:{escape_query(solr_id(source, ''))}*", DOCUMENTS]
    targets = index.copy_field_targets()
    migrated = 0
    for old in cursor_pages(index, filters, "*", max_docs):
        renamed = []
        urls = [document.get("url") or document["id"] for document in old]
        owners = holders(urls) if holders is not None else {url: {source} for url in urls}
        for url, document in zip(urls, old, strict=False):
            fields = {
                name: value
                for name, value in document.items()
                # passages_model: the old id's passages go with it (delete), the new id gets its own
                if name not in ("_version_", "passages_model")
                and not any(fnmatch.fnmatchcase(name, target) for target in targets)
            }
            for holder in sorted(owners.get(url, ())):
                copy = {**fields, "id": solr_id(holder, url), "source": holder}
                renamed.append((copy, len(json.dumps(copy, ensure_ascii=False).encode("utf-8"))))
        for batch in batches(renamed, max_docs, max_bytes):
            index.add_new(batch)
        index.delete([document["id"] for document in old])
        migrated += len(old)
        logger.debug("Migrated %d Solr documents of %s to per-source ids", len(old), source)
    if migrated:
        index.commit()  # searchable now, and a second run at once finds nothing left to do
    return migrated
