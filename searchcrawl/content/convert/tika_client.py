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

import json
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
    garbled,
    garbled_error,
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


#: this many documents in a row failing twice is Tika's trouble, not theirs: an outage (926), so a
#: broken Tika that still answers /version cannot remove a source's documents crawl after crawl
CRASHES_FOR_AN_OUTAGE = 5


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
        write_limit: int = 5_000_000,
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
        # the text (UTF-8, escaped: up to 4 bytes a character) and 16 MiB for the metadata
        self.max_answer_bytes = 4 * write_limit + 16 * 2**20
        self.concurrency = concurrency
        self._slots = threading.BoundedSemaphore(concurrency)
        self._retrying = threading.Lock()
        self._crashes = 0  # documents in a row that failed twice
        self._session = requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=1, pool_maxsize=concurrency)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def convert(self, body: bytes, mimetype: str | None = None, filename: str | None = None) -> Converted:
        """Blocking; raises ConversionError (the document) or ConverterUnavailable (the server).

        Tika's parser runs in a JVM that its server restarts when a document kills it (out of
        memory, its task timeout): a connection dropped during the request, a 5xx, a cut or
        unreadable answer, is tried once more when Tika answers again, and alone (so that a
        document that kills the parser does not take another with it twice). Twice, and it is
        'crashed' (a counted, transient failure); Tika not back within ``recovery_wait`` seconds,
        or refusing the connection, is an outage (926).

        The site's Content-Type is not sent (``mimetype`` is unused): Tika would take it over its
        own detection by the bytes and the file name, and a site's type can be wrong or hostile."""
        if len(body) > self.max_bytes:
            raise ConversionError("too_large", f"{len(body)} bytes is over the {self.max_bytes} limit")
        limit = self.ocr_timeout if self.ocr else self.timeout
        headers = self.request_headers(filename)
        with self._slots:
            parts = self._attempt(body, headers, limit)
            if isinstance(parts, str):
                self._await_recovery(parts)
                with self._retrying:
                    again = self._attempt(body, headers, limit)
                if isinstance(again, str):
                    self._crashes += 1
                    if self._crashes >= CRASHES_FOR_AN_OUTAGE:
                        raise ConverterUnavailable(
                            f"Tika at {self.shown} failed on {self._crashes} documents in a row ({parts}, then {again}): "
                            "taken for an outage, not the documents' fault"
                        )
                    raise ConversionError("crashed", f"Tika failed on it twice ({parts}, then {again})")
                parts = again
        self._crashes = 0
        return converted_from_rmeta(parts)

    def request_headers(self, filename: str | None = None) -> dict[str, str]:
        """The headers of a document's request: the limits, the file name Tika detects the type
        by, and OCR asked for or skipped (the benchmark's "Tika alone" sends the same)."""
        limit = self.ocr_timeout if self.ocr else self.timeout
        headers = {
            "Accept": "application/json",
            "Content-Type": "application/octet-stream",
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
        return headers

    def _attempt(self, body: bytes, headers: dict[str, str], limit: float) -> list[dict[str, Any]] | str:
        """Tika's answer, or what went wrong on the server's side (worth one more try)."""
        deadline = time.monotonic() + limit
        try:
            response = self._session.put(self.endpoint, data=body, headers=headers, timeout=(10, limit), stream=True)
        except requests.ConnectTimeout:  # before Timeout: it is one, but no document was sent
            raise ConverterUnavailable(f"Tika unreachable at {self.shown}: no answer to connect") from None
        except requests.Timeout:
            raise ConversionError("timeout", f"Tika took over {limit:g}s") from None
        except requests.ConnectionError as exc:
            if _refused(exc):
                raise ConverterUnavailable(f"Tika unreachable at {self.shown}: connection refused") from None
            return "the connection dropped"
        except requests.RequestException as exc:  # what we would send is refused by requests itself
            raise ConversionError("corrupt", f"cannot be sent to Tika: {type(exc).__name__}") from None
        with response:
            code = response.status_code
            if 400 <= code < 500:  # the request, hence the document: too large, unsupported, unparsable
                status = {413: "too_large", 415: "unsupported"}.get(code, "corrupt")
                raise ConversionError(status, f"Tika answered {code}")
            if code != 200:
                return f"HTTP {code}"
            try:
                raw = self._read(response, deadline)
            except requests.Timeout:
                raise ConversionError("timeout", f"Tika took over {limit:g}s") from None
            except requests.RequestException:
                return "its answer was cut"
        try:
            parts = json.loads(raw)
        except ValueError:
            return "an answer that is not JSON"
        if parts == []:  # how Tika answers a request it refused
            return "an empty list (Tika's log says why)"
        if not isinstance(parts, list) or not all(isinstance(part, dict) for part in parts):
            return "an answer that is not a list of metadata maps"
        return parts

    def _read(self, response: requests.Response, deadline: float) -> bytes:
        """The answer's body, at most ``max_answer_bytes`` of it, by ``deadline``."""
        raw = bytearray()
        for chunk in response.iter_content(64 * 1024):
            raw += chunk
            if len(raw) > self.max_answer_bytes:
                raise ConversionError("too_large", f"Tika's answer is over {self.max_answer_bytes} bytes (its metadata?)")
            if time.monotonic() > deadline:
                raise requests.Timeout("the answer took too long")
        return bytes(raw)

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
    texts, garbage = _texts(parts)
    text = normalize_space("\n\n".join(texts))
    if failure and not text:
        raise ConversionError(_failure_status(failure), failure.splitlines()[0][:300])
    if garbage and not text:  # nothing but binary data read as text (a zip of NUL bytes)
        raise garbled_error(garbage[0])
    raw: dict[str, Any] = {}
    for key, names in METADATA_KEYS.items():
        for name in names:
            value = container.get(name)
            if value not in (None, "", []):
                raw[key] = value if key == "keywords" else _first(value)
                break
    metadata = clean_metadata(raw)
    pages = next((_first(container[key]) for key in PAGE_KEYS if key in container), None)
    pages = (pages or "").strip()
    if pages.isascii() and pages.isdigit() and len(pages) <= 9:  # a Solr int; hostile values are left out
        metadata["pages"] = pages
    content_type = (_first(container.get("Content-Type")) or "").split(";")[0].strip().lower()
    kind = MIMETYPES.get(content_type, content_type)
    warning = f"partly converted: {failure.splitlines()[0][:300]}" if failure else None
    return Converted(text=text, metadata=metadata, kind=kind, properties=properties(container), warning=warning)


def _texts(parts: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Each part's text, thumbnails left out, without the lines naming an embedded part (Tika
    writes an embedded document's name where it sits, and an image's text is its name); and,
    apart, the texts of the parts that are garbled (mostly U+FFFD: binary data read as text), so
    that one such member of an archive does not bury its other members' text."""
    embedded = [part for part in parts[1:] if _first(part.get("embeddedResourceType")) != "THUMBNAIL"]
    names = {name for part in parts[1:] if (name := _first(part.get("resourceName")))}
    texts: list[str] = []
    garbage: list[str] = []
    for part in [parts[0], *embedded]:
        lines = _without_title(_first(part.get(CONTENT)) or "", _first(part.get("dc:title"))).split("\n")
        text = "\n".join(line for line in lines if line.strip() not in names)
        if garbled(text):
            garbage.append(text)
        elif text.strip():
            texts.append(text)
    return texts, garbage


def _without_title(text: str, title: str | None) -> str:
    """``text`` without the title Tika writes before it (the XHTML ``<title>`` of its answer, the
    document's dc:title): not the document's text, which the Python converters never give (one
    text whatever the route), and a file of pictures with a default title would otherwise have its
    title for text, a duplicate of every other such file."""
    title = (title or "").strip()
    lead = text.lstrip()
    if title and (lead == title or lead.startswith(title + "\n")):
        return lead[len(title) :]
    return text


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
