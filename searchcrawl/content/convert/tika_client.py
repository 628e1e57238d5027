"""TikaConverter: documents converted by an Apache Tika server (``/rmeta/text``).

Tika is the field's converter (over a thousand formats, embedded documents, metadata), run as a
server of its own: ``scrapy tika start`` in development (searchcrawl/dev/tika_runner.py), any Tika
server by URL in production. ``/rmeta/text`` answers with one metadata map per document: the
container first, then every embedded document (attachments, embedded spreadsheets, OLE objects),
each with its text in ``X-TIKA:content``. The text of all of them is kept, in order.

Limits: the body is refused before sending when over ``max_bytes``; Tika stops writing text at
``write_limit`` characters (what was written is kept) and parses at most ``max_embedded``
embedded documents; the HTTP request has a time limit, and the server its own per-document
``taskTimeoutMillis`` (after which it restarts its parser JVM). At most ``concurrency``
documents are in Tika at once, per converter: callers block while all are taken.

A server that cannot be reached raises :class:`ConverterUnavailable`: the document is not at fault
and is tried again in a later crawl. A document Tika cannot parse raises :class:`ConversionError`
with its status, as the Python converters do; so does one that kills Tika's parser twice (see
:meth:`TikaConverter.convert`). OCR (Tesseract, in Tika) runs only when asked for: images and PDF
pages without a text layer, in the given languages, under a time limit of its own.
"""

from __future__ import annotations

import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from searchcrawl.content.convert.core import (
    MAX_BYTES,
    MIMETYPES,
    ConversionError,
    Converted,
    clean_metadata,
    normalize_space,
)

#: Tika's keys for the documented metadata, first found wins
METADATA_KEYS: dict[str, tuple[str, ...]] = {
    "title": ("dc:title", "pdf:docinfo:title"),
    "author": ("dc:creator", "meta:author", "pdf:docinfo:creator", "Author"),
    "subject": ("dc:subject", "cp:subject", "pdf:docinfo:subject"),
    "keywords": ("meta:keyword", "pdf:docinfo:keywords", "Keywords"),
    "language": ("dc:language",),
    "created": ("dcterms:created", "meta:creation-date", "pdf:docinfo:created"),
    "modified": ("dcterms:modified", "meta:save-date", "pdf:docinfo:modified"),
}
PAGE_KEYS = ("xmpTPg:NPages", "meta:page-count", "meta:slide-count")
CONTENT = "X-TIKA:content"
#: the exception Tika records when the container itself could not be parsed
CONTAINER_EXCEPTION = "X-TIKA:EXCEPTION:container_exception"
#: Tika's bookkeeping and per-part keys: not properties of the document
_SKIPPED_PREFIXES = ("X-TIKA:", "access_permission:", "pdf:charsPerPage", "pdf:unmappedUnicodeCharsPerPage")
#: longest property value kept for the attribute mapping (a metadata field may be immense)
MAX_PROPERTY_CHARS = 32 * 1024


class ConverterUnavailable(Exception):
    """The converter (a Tika server) could not be reached or failed as a server: the document is
    not at fault, and is tried again in a later crawl."""


class TikaConverter:
    """Converts documents through a Tika server; thread-safe, ``concurrency`` at a time."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 120,
        concurrency: int = 2,
        max_bytes: int = MAX_BYTES,
        write_limit: int = 10_000_000,
        max_embedded: int = 1000,
        ocr: bool = False,
        ocr_languages: tuple[str, ...] = ("eng",),
        ocr_timeout: float = 300,
        recovery_wait: float = 20,
    ) -> None:
        base = url.rstrip("/")
        self.endpoint = base + "/rmeta/text"
        self.version_url = base + "/version"
        self.shown = _without_userinfo(base)  # for reasons and logs: never a password
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.write_limit = write_limit
        self.max_embedded = max_embedded
        self.ocr = ocr
        self.ocr_languages = ocr_languages
        self.ocr_timeout = ocr_timeout
        self.recovery_wait = recovery_wait
        self._slots = threading.BoundedSemaphore(concurrency)
        self._session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=concurrency)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def convert(self, body: bytes, mimetype: str | None = None, filename: str | None = None) -> Converted:
        """Blocking; raises ConversionError (the document) or ConverterUnavailable (the server).

        Tika's parser runs in a JVM that its server restarts when a document kills it (out of
        memory, a timeout): a connection dropped during the request, or a 5xx, is tried once more
        once Tika answers again. Twice, and it is the document's fault (921); Tika not back within
        ``recovery_wait`` seconds, or refusing the connection, is an outage (926)."""
        if len(body) > self.max_bytes:
            raise ConversionError("too_large", f"{len(body)} bytes is over the {self.max_bytes} limit")
        limit = self.ocr_timeout if self.ocr else self.timeout
        headers = {
            "Accept": "application/json",
            # the server's type is a hint only: Tika detects by content, then by the name
            "Content-Type": mimetype or "application/octet-stream",
            "writeLimit": str(self.write_limit),
            "maxEmbeddedResources": str(self.max_embedded),
            # no X-Tika-Timeout-Millis: Tika refuses one over its taskTimeoutMillis (answering an
            # empty list), so the server's own setting bounds a document there, and ``limit`` here
        }
        if filename:
            headers["Content-Disposition"] = f'attachment; filename="{_header_safe(filename)}"'
        if self.ocr:  # images, and PDF pages without a text layer
            headers["X-Tika-OCRLanguage"] = "+".join(self.ocr_languages)
            headers["X-Tika-OCRtimeoutSeconds"] = str(int(limit))
            headers["X-Tika-PDFocrStrategy"] = "auto"
        else:
            headers["X-Tika-OCRskipOcr"] = "true"
        with self._slots:
            response = self._put(body, headers, limit)
            if response is None or response.status_code >= 500:
                first = "the connection dropped" if response is None else f"HTTP {response.status_code}"
                self._await_recovery(first)
                response = self._put(body, headers, limit)
                if response is None or response.status_code >= 500:
                    again = "the connection dropped" if response is None else f"HTTP {response.status_code}"
                    raise ConversionError("corrupt", f"Tika failed on it twice ({first}, then {again})")
        if response.status_code in (415, 422):  # unsupported type; a parse failure (some versions)
            status = "unsupported" if response.status_code == 415 else "corrupt"
            raise ConversionError(status, f"Tika answered {response.status_code}")
        if response.status_code != 200:
            raise ConverterUnavailable(f"Tika at {self.shown} answered {response.status_code} {response.reason}")
        try:
            parts = response.json()
        except ValueError:
            raise ConverterUnavailable(f"Tika's answer is not JSON ({self.shown})") from None
        if parts == []:  # how Tika answers a request it refused (its log says why)
            raise ConverterUnavailable(f"Tika at {self.shown} answered an empty list (its log says why)")
        if not isinstance(parts, list) or not all(isinstance(part, dict) for part in parts):
            raise ConverterUnavailable(f"Tika's answer is not a list of metadata maps ({self.shown})")
        return converted_from_rmeta(parts)

    def _put(self, body: bytes, headers: dict[str, str], limit: float) -> requests.Response | None:
        """Tika's answer; None when the connection dropped during the request."""
        try:
            return self._session.put(self.endpoint, data=body, headers=headers, timeout=(10, limit))
        except requests.Timeout:
            raise ConversionError("timeout", f"Tika took over {limit:g}s") from None
        except requests.ConnectionError as exc:
            if _refused(exc):
                raise ConverterUnavailable(f"Tika unreachable at {self.shown}: connection refused") from None
            return None
        except requests.RequestException as exc:
            raise ConverterUnavailable(f"Tika unreachable at {self.shown}: {type(exc).__name__}") from None

    def _await_recovery(self, what: str) -> None:
        """Wait until Tika answers again, or raise ConverterUnavailable."""
        deadline = time.monotonic() + self.recovery_wait
        while True:
            try:
                if self._session.get(self.version_url, timeout=5).status_code == 200:
                    return
            except requests.RequestException:
                pass
            if time.monotonic() >= deadline:
                raise ConverterUnavailable(f"Tika unreachable at {self.shown}: {what}, and not back in {self.recovery_wait:g}s")
            time.sleep(0.5)

    def close(self) -> None:
        self._session.close()


def _refused(error: requests.ConnectionError) -> bool:
    """Whether the connection was never made (refused, no route, no such host), as opposed to
    dropped during the request."""
    import urllib3.exceptions

    reason = error.args[0] if error.args else None
    inner = getattr(reason, "reason", reason)
    return isinstance(inner, urllib3.exceptions.NewConnectionError | urllib3.exceptions.ConnectTimeoutError)


def _without_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def converted_from_rmeta(parts: list[dict[str, Any]]) -> Converted:
    """The text, metadata and properties of Tika's ``/rmeta`` answer (container first)."""
    container = parts[0]
    failure = _first(container.get(CONTAINER_EXCEPTION))
    text = normalize_space("\n\n".join(_texts(parts)))
    if failure and not text:
        raise ConversionError(_failure_status(failure), failure.splitlines()[0][:300])
    raw: dict[str, Any] = {}
    for key, names in METADATA_KEYS.items():
        for name in names:
            value = container.get(name)
            if value not in (None, "", []):
                raw[key] = value if key == "keywords" else _first(value)
                break
    metadata = clean_metadata(raw)
    pages = next((_first(container[key]) for key in PAGE_KEYS if key in container), None)
    if pages and pages.strip().isdigit() and len(pages.strip()) <= 9:  # a Solr int; hostile values are left out
        metadata["pages"] = pages.strip()
    content_type = (_first(container.get("Content-Type")) or "").split(";")[0].strip().lower()
    kind = MIMETYPES.get(content_type, content_type)
    warning = f"partly converted: {failure.splitlines()[0][:300]}" if failure else None
    return Converted(text=text, metadata=metadata, kind=kind, properties=properties(container), warning=warning)


def _texts(parts: list[dict[str, Any]]) -> list[str]:
    """Each part's text, thumbnails left out, without the lines naming an embedded part (Tika
    writes an embedded document's name where it sits, and an image's text is its name)."""
    embedded = [part for part in parts[1:] if _first(part.get("embeddedResourceType")) != "THUMBNAIL"]
    names = {name for part in parts[1:] if (name := _first(part.get("resourceName")))}
    texts = []
    for part in [parts[0], *embedded]:
        lines = (_first(part.get(CONTENT)) or "").split("\n")
        text = "\n".join(line for line in lines if line.strip() not in names)
        if text.strip():
            texts.append(text)
    return texts


def properties(container: dict[str, Any]) -> dict[str, str]:
    """Every property Tika found on the document, by its Tika name in lower case (``dc:creator``,
    ``xmptpg:npages``, ``custom:department``): what a source's attribute mapping can name."""
    found: dict[str, str] = {}
    for key, value in container.items():
        if key.startswith(_SKIPPED_PREFIXES) or value in (None, "", []):
            continue
        text = ", ".join(str(item) for item in value) if isinstance(value, list) else str(value)
        found[key.lower()] = text[:MAX_PROPERTY_CHARS]
    return found


def _failure_status(failure: str) -> str:
    if "timeout" in failure.split("\n", 1)[0].lower():  # TesseractOCRParser timeout, a task timeout
        return "timeout"
    if "EncryptedDocumentException" in failure:
        return "encrypted"
    if "ZeroByteFileException" in failure:
        return "no_text"
    if "TikaMemoryLimitException" in failure or "ZipBomb" in failure:
        return "too_large"
    return "corrupt"


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return None if value is None else str(value)


def _header_safe(filename: str) -> str:
    """A file name as a quoted header value: ASCII printable, no quotes or backslashes."""
    return "".join(ch if " " <= ch <= "~" and ch not in '"\\' else "_" for ch in filename)[:200]
