"""The document cache: converted documents as files, waiting to be pushed to Solr.

One JSON file per document (the Solr document itself), named by a hash of the URL, written
atomically so that a crash never leaves half a document. The document table says which cached
documents are pending; the cache only stores them and tracks its size.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any


class DocumentCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()  # the pipeline writes while a worker thread removes
        self.size_bytes = sum(p.stat().st_size for p in directory.glob("*.json"))

    def path(self, url: str) -> Path:
        return self.directory / (hashlib.sha256(url.encode("utf-8")).hexdigest()[:40] + ".json")

    def put(self, document: dict[str, Any]) -> int:
        """Store a Solr document (keyed by its ``id``); returns its size in bytes."""
        data = json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        target = self.path(document["id"])
        previous = target.stat().st_size if target.exists() else 0
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        with self._lock:
            self.size_bytes += len(data) - previous
        return len(data)

    def get(self, url: str) -> dict[str, Any] | None:
        try:
            return json.loads(self.path(url).read_bytes())
        except FileNotFoundError:
            return None

    def remove(self, url: str) -> None:
        path = self.path(url)
        try:
            size = path.stat().st_size
            path.unlink()
        except FileNotFoundError:
            return
        with self._lock:
            self.size_bytes -= size
