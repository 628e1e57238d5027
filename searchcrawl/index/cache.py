"""The document cache: converted documents waiting to be pushed to Solr, in spool files.

Each ``DocumentCache`` (one per crawling process) appends the documents it converts to a spool
file of its own, ``<creation time>-<pid>-<random>.spool``. A record is a header line,
``["<url>","<checksum>",<length>]``, then the Solr document as compact JSON and a newline,
written with one ``write()``: a killed process leaves at most one incomplete record at the end
of its spool, which readers skip. The writer holds an exclusive ``flock`` on its open spool;
once it lets go (the spool reached ``SPOOL_BYTES``, the crawl ended, the process died), the
spool is sealed for good.

Why spools rather than one file per document: a push deletes what Solr acknowledged, and
deleting a file costs the same whatever its size (on ext4 with online discard about 60 us of CPU
and 200 us of I/O): one file per document made deletion a fifth of the push's CPU and slowed
Solr's own writes by 15-25 % (measured). A spool is deleted whole, by a push, once it is sealed
and none of its records is still waiting for Solr.

The cache is keyed by URL, like the document table, not by the document's Solr id (which is
``<source>!<url>``, see ``extract.solr_id``): a record's header names its ``url`` field. Spools
written by earlier versions, whose documents had the URL as their id, have the same headers;
the push gives their documents the current id (``push.push_pending``).

The document table says which documents are pending, with which checksum, and which cache holds
them (``cached_by``, this cache's ``id``). A push takes, for each, the newest record with that
checksum, and ignores every other record (older versions, duplicates, removed pages). In a
shared crawl each machine pushes what its own cache holds; processes on one machine share the
cache directory and take turns pushing it (``push_lock``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

SPOOL_BYTES = 8 * 1024 * 1024  # a spool is sealed (and a new one begun) past this size
SPOOL_SUFFIX = ".spool"
PUSH_LOCK = ".push.lock"  # held by the process pushing the cache; its time: when the last push began
# Record headers a cache remembers of its spools (``SpoolIndex``; about 200 bytes each): past
# this, the oldest spools' are forgotten, and read again by the next push
RECORDS_REMEMBERED = 200_000

Record = tuple[str, str, int, int]  # url, checksum, offset of the JSON, its length


def spool_fill(directory: Path) -> tuple[int, int]:
    """(bytes, spool files) of a source's cache directory, as `scrapy status` and the web
    administration show it: read from the files, so it is right while a crawl writes them."""
    files = list(directory.glob("*" + SPOOL_SUFFIX)) if directory.is_dir() else []
    size = 0
    for path in files:
        with contextlib.suppress(FileNotFoundError):  # a push deleted it meanwhile
            size += path.stat().st_size
    return size, len(files)


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def spool_records(path: str, offset: int = 0) -> Iterator[Record]:
    """(url, checksum, offset of the JSON, its length) of each complete record in a spool, from
    byte ``offset`` on (where a record begins)."""
    try:
        stream = open(path, "rb")
    except FileNotFoundError:
        return
    with stream:
        size = os.fstat(stream.fileno()).st_size  # a live spool grows: what is there now
        stream.seek(offset)
        while offset < size:
            header = stream.readline()
            try:
                url, checksum, length = json.loads(header)
            except (ValueError, TypeError):
                if offset + len(header) < size:  # not merely the end of a killed writer's record
                    logger.warning("Document cache spool %s is damaged at byte %d; the rest is skipped", path, offset)
                return
            start = offset + len(header)
            offset = start + length + 1
            if offset > size:
                return
            yield url, checksum, start, length
            stream.seek(offset)


def _sealed(path: str) -> bool:
    """Whether no writer holds the spool (its own writer, if alive, holds it exclusively)."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(handle)  # closing drops the shared lock


class SpoolIndex:
    """The record headers of a cache's spools as its pushes read them, each spool's with how far
    it was read. A spool is only ever appended to, so a push reads only what was appended since
    the last (issue 102): every push read every spool whole, the live ones too (up to
    ``SPOOL_BYTES`` each), and with ``processes = N`` there are N live spools, and N processes
    pushing. Bounded: past ``limit`` records the oldest spools' are forgotten (read again)."""

    def __init__(self, limit: int = RECORDS_REMEMBERED) -> None:
        self.limit = limit
        self.spools: dict[str, tuple[int, list[Record]]] = {}  # name -> (bytes read, its records)
        self._lock = threading.Lock()  # the crawl's push and the run's end's may be threads of one process

    def read(self, directory: str, names: list[str]) -> list[tuple[str, list[Record]]]:
        """Each of the spools ``names`` (in that order) with its complete records; a spool gone
        meanwhile has none."""
        found = []
        with self._lock:
            for name in names:
                path = os.path.join(directory, name)
                try:
                    size = os.stat(path).st_size
                except FileNotFoundError:
                    self.spools.pop(name, None)
                    continue
                read, records = self.spools.get(name, (0, []))
                if size > read:
                    new = list(spool_records(path, read))
                    if new:
                        _url, _checksum, start, length = new[-1]
                        read, records = start + length + 1, records + new
                found.append((name, records))
                self.spools[name] = (read, records)
            listed = set(names)
            for name in [name for name in self.spools if name not in listed]:  # deleted by a push
                del self.spools[name]
            total = sum(len(records) for _read, records in self.spools.values())
            while total > self.limit and self.spools:
                _read, records = self.spools.pop(next(iter(self.spools)))  # the oldest read first
                total -= len(records)
        return found


class CacheScan:
    """One push's view of the cache: the spools that were sealed when it began (only these
    may be deleted afterwards), the record each pending document is sent from, and which
    records Solr has acknowledged."""

    def __init__(self, directory: str, sealed: dict[str, int], index: SpoolIndex | None = None) -> None:
        self.directory = directory
        self.sealed = sealed  # spool name -> size
        self.index = index or SpoolIndex()  # the cache's: what earlier pushes read of its spools
        self.records: dict[str, tuple[str, int, int]] = {}  # url -> (spool, offset, length)
        self.waiting: Counter[str] = Counter()  # spool -> records chosen and not yet acknowledged

    def select(self, checksums: Mapping[str, str]) -> set[str]:
        """Choose, for each URL, the newest complete record with the checksum the table
        expects (live spools included); returns the URLs found."""
        names = sorted(name for name in os.listdir(self.directory) if name.endswith(SPOOL_SUFFIX))
        for name, records in self.index.read(self.directory, names):
            for url, checksum, offset, length in records:
                if checksums.get(url) == checksum:
                    self.records[url] = (name, offset, length)
        self.waiting = Counter(name for name, _offset, _length in self.records.values())
        return set(self.records)

    def documents(self) -> Iterator[tuple[str, bytes]]:
        """The chosen records' JSON, spool by spool, in the order they were written."""
        by_spool: dict[str, list[tuple[int, int, str]]] = {}
        for url, (name, offset, length) in self.records.items():
            by_spool.setdefault(name, []).append((offset, length, url))
        for name in sorted(by_spool):
            try:
                handle = os.open(os.path.join(self.directory, name), os.O_RDONLY)
            except FileNotFoundError:
                logger.warning("Document cache spool %s vanished during the push", name)
                continue
            try:
                for offset, length, url in sorted(by_spool[name]):
                    data = os.pread(handle, length + 1, offset)
                    if len(data) == length + 1 and data.endswith(b"\n"):
                        yield url, data[:-1]
            finally:
                os.close(handle)

    def acknowledged(self, urls: list[str]) -> None:
        for url in urls:
            self.waiting[self.records[url][0]] -= 1

    def spent(self) -> dict[str, int]:
        """The sealed spools none of whose records still waits for Solr, with their sizes."""
        return {name: size for name, size in self.sealed.items() if self.waiting[name] <= 0}


class DocumentCache:
    def __init__(self, directory: Path, spool_bytes: int = SPOOL_BYTES) -> None:
        self.directory = directory
        self._directory = os.fspath(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.spool_bytes = spool_bytes
        self._lock = threading.Lock()  # the pipeline appends while a worker thread pushes
        self._spool: int | None = None  # this cache's open spool (a file descriptor)
        self._spool_size = 0
        self.id = self._identity()
        self.size_bytes = sum(os.path.getsize(path) for path in self._spool_paths())
        self.bytes_put = 0  # bytes this object appended since it was opened (only ever grows)
        self.index = SpoolIndex()  # its spools' record headers, as its pushes read them
        self._adopt_document_files()

    def _identity(self) -> str:
        """A name for this cache directory, made once and kept in it (survives host renames)."""
        path = self.directory / ".cache-id"
        try:
            return path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            pass
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="ascii") as stream:
            stream.write(uuid.uuid4().hex)
        try:
            os.link(temporary, path)  # first writer wins; the others read its name
        except FileExistsError:
            pass
        finally:
            os.unlink(temporary)
        return path.read_text(encoding="ascii").strip()

    def _spool_paths(self) -> list[str]:
        return [os.path.join(self._directory, name) for name in os.listdir(self._directory) if name.endswith(SPOOL_SUFFIX)]

    def _adopt_document_files(self) -> None:
        """Documents cached by searchcrawl before spools (one ``<hash>.json`` file each) are
        copied into a spool, so that an upgrade loses nothing that was waiting for Solr."""
        for path in self.directory.glob("*.json"):
            with contextlib.suppress(FileNotFoundError, ValueError, KeyError, TypeError):
                document = json.loads(path.read_bytes())
                document.setdefault("url", document["id"])  # their id was the URL
                self.put(document)
                path.unlink()
        self.seal()

    @contextlib.contextmanager
    def push_lock(self, wait: bool) -> Iterator[bool]:
        """Hold the right to push this cache (one process of the machine at a time); yields
        False at once, without ``wait``, when another process is pushing it. The lock file's
        time says when the last push began (``last_push_began``)."""
        with open(self.directory / PUSH_LOCK, "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                with contextlib.suppress(OSError):  # a file of another owner: the others push on their own intervals
                    os.utime(handle.fileno())
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def last_push_began(self) -> float:
        """When a push of this cache last began (``time.time()``), by whichever process of the
        machine; 0.0 when none has."""
        try:
            return os.stat(os.path.join(self._directory, PUSH_LOCK)).st_mtime
        except FileNotFoundError:
            return 0.0

    def put(self, document: dict[str, Any]) -> int:
        """Append a Solr document (keyed by its ``url``); returns its size in bytes."""
        data = _compact(document)
        record = b"%s\n%s\n" % (_compact([document["url"], document.get("checksum", ""), len(data)]), data)
        with self._lock:
            # A full spool is sealed here, before the next document, never right after a write:
            # the caller marks the document pending only after ``put`` returns, and a push
            # deletes sealed spools whose records the table does not expect.
            if self._spool is None or self._spool_size >= self.spool_bytes:
                self._begin_spool()
            assert self._spool is not None
            view = memoryview(record)
            while view:
                view = view[os.write(self._spool, view) :]
            self._spool_size += len(record)
            self.size_bytes += len(record)
            self.bytes_put += len(record)
        return len(data)

    @property
    def seals_next(self) -> bool:
        """Whether the next ``put`` seals this cache's spool first (it is full): whoever marks
        documents pending in batches writes them first (store/outcome_batcher.py)."""
        return self._spool is not None and self._spool_size >= self.spool_bytes

    def _begin_spool(self) -> None:
        self._seal()
        name = f"{time.time_ns():019d}-{os.getpid()}-{uuid.uuid4().hex[:8]}{SPOOL_SUFFIX}"
        path = os.path.join(self._directory, name)
        # Locked before it has its name: a spool without a writer's lock is sealed.
        handle = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        fcntl.flock(handle, fcntl.LOCK_EX)
        os.rename(path + ".tmp", path)
        self._spool, self._spool_size = handle, 0

    def _seal(self) -> None:
        if self._spool is not None:
            os.close(self._spool)
            self._spool = None

    def seal(self) -> None:
        """Close this cache's spool for good (call once every document put is marked pending),
        so that a push may delete it once Solr has it all."""
        with self._lock:
            self._seal()

    close = seal

    def scan(self) -> CacheScan:
        """Begin a push: notes which spools are sealed. Call it before reading the table's
        pending documents, so that every sealed spool's documents are in what the table says."""
        sealed = {}
        for path in self._spool_paths():
            with contextlib.suppress(FileNotFoundError):
                if _sealed(path):
                    sealed[os.path.basename(path)] = os.path.getsize(path)
        return CacheScan(self._directory, sealed, self.index)

    def release(self, scan: CacheScan) -> int:
        """Delete the spools the push has finished with; returns how many."""
        spent = scan.spent()
        for name, size in spent.items():
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self._directory, name))
                with self._lock:  # other processes' spools too: what it counts is an estimate
                    self.size_bytes = max(0, self.size_bytes - size)
        return len(spent)

    def documents(self) -> dict[str, dict[str, Any]]:
        """Every URL's newest cached document (for inspection and tests; a push reads less)."""
        found: dict[str, dict[str, Any]] = {}
        for path in sorted(self._spool_paths()):
            with open(path, "rb") as stream:
                for url, _checksum, offset, length in spool_records(path):
                    stream.seek(offset)
                    found[url] = json.loads(stream.read(length))
        return found
