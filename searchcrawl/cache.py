"""The document cache: converted documents as files, waiting to be pushed to Solr.

One JSON file per document (the Solr document itself), named by a hash of the URL, written
atomically so that a crash never leaves half a document. The document table says which cached
documents are pending, and which cache holds each (``cached_by``, this cache's ``id``): in a
shared crawl each machine pushes the documents its own cache holds. Processes on one machine
share the cache and take turns pushing it (``push_lock``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class DocumentCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._directory = os.fspath(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # the pipeline writes while a worker thread removes
        self.size_bytes = sum(p.stat().st_size for p in directory.glob("*.json"))
        self.id = self._identity()

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

    @contextlib.contextmanager
    def push_lock(self, wait: bool) -> Iterator[bool]:
        """Hold the right to push this cache (one process of the machine at a time); yields
        False at once, without ``wait``, when another process is pushing it."""
        with open(self.directory / ".push.lock", "a+b") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def path(self, url: str) -> str:
        # A str, not a Path: the push builds one per document, and pathlib costs more than the read.
        return os.path.join(self._directory, hashlib.sha256(url.encode("utf-8")).hexdigest()[:40] + ".json")

    def put(self, document: dict[str, Any]) -> int:
        """Store a Solr document (keyed by its ``id``); returns its size in bytes."""
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        target = self.path(document["id"])
        try:
            previous = os.stat(target).st_size
        except FileNotFoundError:
            previous = 0
        # A name of this process and thread (mkstemp's random names cost more than the write).
        temporary = f"{target[:-len('.json')]}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            with open(temporary, "wb") as stream:
                stream.write(data)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        with self._lock:
            self.size_bytes += len(data) - previous
        return len(data)

    def get(self, url: str) -> dict[str, Any] | None:
        data = self.get_json(url)
        return None if data is None else json.loads(data)

    def get_json(self, url: str) -> bytes | None:
        """The cached Solr document as its JSON text."""
        try:
            with open(self.path(url), "rb") as stream:
                return stream.read()
        except FileNotFoundError:
            return None

    def get_json_if(self, url: str, checksum: str) -> bytes | None:
        """The cached document's JSON text if it is the version with ``checksum``, else None
        (missing, or stale: the table moved on since the file was written)."""
        data = self.get_json(url)
        if data is None:
            return None
        # ``put`` writes compact JSON, where '":"' occurs only between a key and a string value
        # (inside a string every quote is escaped): finding the pair is exact, and spares the
        # push decoding every document. Anything written otherwise is decoded to be sure.
        if f'"checksum":"{checksum}"'.encode("utf-8") in data:
            return data
        return data if json.loads(data).get("checksum") == checksum else None

    def remove(self, url: str) -> None:
        path = self.path(url)
        try:
            size = os.stat(path).st_size
            os.unlink(path)
        except FileNotFoundError:
            return
        with self._lock:
            self.size_bytes -= size
