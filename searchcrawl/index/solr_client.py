"""searchcrawl's Solr client (``SolrIndex``): one core or SolrCloud collection, its requests
failing over between nodes, its errors made readable (``IndexingError``, ``describe``), and the
reads every part shares (``cursor_pages``). Plain logic and pysolr, no Scrapy.

Every call here blocks; the Scrapy components run it in a worker thread so the reactor never
waits on Solr. The push of cached documents is index/push.py's, the id migration
index/id_migration.py's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.client import HTTPException
from typing import Any, TypeVar
from xml.etree import ElementTree

import pysolr
import requests

logger = logging.getLogger(__name__)
T = TypeVar("T")
# pysolr logs every failed request with a traceback at ERROR; we report failures ourselves, once.
logging.getLogger("pysolr").setLevel(logging.CRITICAL)

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
# query of documents (a searcher's, through search/trimmed_index.py, and the operators' below) filters
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

    def update_versions(self, updates: list[dict[str, Any]]) -> None:
        """Apply atomic updates each on the condition of its ``_version_``, failing (IndexingError,
        status 409) at the first whose document changed since that version was read: those before
        it are applied, and the caller sets them again once it has read them anew."""
        body = json.dumps(updates, ensure_ascii=False).encode("utf-8")
        path = f"update?commitWithin={int(self.commit_within_ms)}&wt=json"
        self._call(f"did not update {len(updates)} documents", lambda client: self._request(client, "post", path, body))

    def latest(self, ids: list[str], fields: str) -> dict[str, dict[str, Any]]:
        """The documents of ``ids`` Solr holds now (its real-time get: what was added a moment ago
        too, committed or not), with ``fields`` (``_version_`` among them for a conditional update),
        by id. Untrimmed: the crawl's own upkeep of a field (index/push.py ``set_anchors``), never a
        searcher's read."""
        if not ids:
            return {}
        body = json.dumps({"params": {"id": ids, "fl": fields}}, ensure_ascii=False).encode("utf-8")
        answer = self._call(
            f"did not give {len(ids)} documents", lambda client: self._request(client, "post", "get?wt=json", body)
        )
        data = json.loads(answer)
        documents = data["response"]["docs"] if "response" in data else [data["doc"]] if data.get("doc") else []
        return {str(document["id"]): document for document in documents}

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
