"""Kind detection, the result/error types and the checks every converter shares (in-process
conversion itself: in_process.py, above this module and formats.py).

Plain logic, no Scrapy: the crawler hands us a response body and gets text plus the document's own
metadata back, or a ConversionError whose `status` it can record.
"""

from __future__ import annotations

import io
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

#: Bodies larger than this are refused ('too_large') before any parsing.
MAX_BYTES = 100 * 2**20
#: Zip-based formats: refuse when the members' declared uncompressed sizes add up to more than
#: this, or when a big member inflates more than MAX_ZIP_RATIO times (a zip bomb). Python's
#: zipfile never inflates a member past its declared size, so checking declared sizes is sound.
MAX_ZIP_UNCOMPRESSED = 512 * 2**20
MAX_ZIP_RATIO = 200
#: Time limit for helper programs (antiword, catppt) when converting in-process.
SUBPROCESS_TIMEOUT = 60

#: 'timeout' and 'crashed' (the converter died on it twice) may be the converter's load as much
#: as the document: they count as transient failures; the others are the document's for good.
#: 'not_text': what the converter read is not text (see garbled())
STATUSES = ("unsupported", "encrypted", "corrupt", "timeout", "too_large", "no_text", "crashed", "not_text")
TRANSIENT_STATUSES = frozenset({"timeout", "crashed"})
KINDS = ("pdf", "docx", "xlsx", "pptx", "odt", "ods", "odp", "rtf", "doc", "xls", "ppt", "txt")
ZIP_KINDS = {"docx", "xlsx", "pptx", "odt", "ods", "odp"}
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

MIMETYPES = {
    "application/pdf": "pdf",
    "application/x-pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.oasis.opendocument.text": "odt",
    "application/vnd.oasis.opendocument.spreadsheet": "ods",
    "application/vnd.oasis.opendocument.presentation": "odp",
    "application/rtf": "rtf",
    "text/rtf": "rtf",
    "application/msword": "doc",
    "application/vnd.ms-excel": "xls",
    "application/vnd.ms-powerpoint": "ppt",
    "text/plain": "txt",
}
EXTENSIONS = {k: k for k in KINDS} | {"text": "txt", "pdf": "pdf"}


@dataclass
class Converted:
    """A converted document: its text; the documented metadata (title, author, subject, keywords,
    language, created, modified, pages), cleaned; its kind; every property the converter found,
    by the converter's own name in lower case, for a source's attribute mapping; and, when only
    part of it could be read (a damaged file whose text was partly recovered), what went wrong."""

    text: str
    metadata: dict[str, str | list[str]] = field(default_factory=dict)
    kind: str = ""
    properties: dict[str, str] = field(default_factory=dict)
    warning: str | None = None  # converted in part: what went wrong (kept as the row's reason)


class DocumentConverter(Protocol):
    """What the crawl converts documents with: a Tika server's client, or the Python converters'
    worker pool. Thread-safe; ``convert`` blocks; at most ``concurrency`` conversions at once."""

    concurrency: int

    def convert(self, body: bytes, mimetype: str | None = None, filename: str | None = None) -> Converted: ...

    def close(self) -> None: ...


class ConversionError(Exception):
    """A document we cannot turn into text; `status` says why (one of STATUSES)."""

    def __init__(self, status: str, message: str = "") -> None:
        assert status in STATUSES, status
        super().__init__(message or status)
        self.status = status

    def __reduce__(self):  # picklable across the worker pipe
        return (ConversionError, (self.status, str(self)))


# --- sniffing: the kind from the first bytes alone ------------------------------------------
# sniff_kind() may run on every response, HTML pages included, so it looks at the first KiB, a
# zip's first local headers (never its central directory, never inflating a member) or an OLE
# file's directory, and returns None rather than raise on hostile input.

#: A PDF header in the first KiB, at the start of a line (readers accept junk before it, such as
#: a script's warnings; a page that merely mentions "%PDF-1.4" mid-line is not a PDF).
_PDF_HEADER = re.compile(rb"(?:\A(?:\xef\xbb\xbf)?|[\r\n])[ \t]*%PDF-\d")
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")  # a zip local file header, before the name
_ZIP_LOCAL = b"PK\x03\x04"
#: sniff_kind() reads at most this many zip local headers, and looks this far for the next one
#: when an entry's size is not in its header (streamed zips put it after the data).
ZIP_SNIFF_ENTRIES = 64
ZIP_SNIFF_GAP = 64 * 1024
_OOXML_FOLDERS = {"word": "docx", "xl": "xlsx", "ppt": "pptx"}
_ODF_KINDS = {"odt", "ods", "odp"}


def _zip_entries(body: bytes) -> Iterator[tuple[str, bytes]]:
    """(name, first bytes of the stored data) of the zip's first entries, from the local headers:
    no central directory (a truncated download still has its first entries) and no inflating."""
    offset = 0
    for _ in range(ZIP_SNIFF_ENTRIES):
        if len(body) < offset + _LOCAL_HEADER.size:
            return
        signature, _version, flags, method, _time, _date, _crc, size, _usize, name_length, extra_length = (
            _LOCAL_HEADER.unpack_from(body, offset)
        )
        if signature != _ZIP_LOCAL:
            return
        name_start = offset + _LOCAL_HEADER.size
        name = body[name_start : name_start + name_length].decode("utf-8" if flags & 0x800 else "cp437", "replace")
        data = name_start + name_length + extra_length
        head = body[data : data + min(size, 256)]
        if method == 8:  # deflated (an ODF 'mimetype' should be stored, but some are not)
            try:
                head = zlib.decompressobj(-15).decompress(head, 256)
            except zlib.error:
                head = b""
        yield name, head
        if size == 0xFFFFFFFF or (flags & 0x08 and size == 0):  # zip64, or size after the data
            offset = body.find(_ZIP_LOCAL, data, data + ZIP_SNIFF_GAP)
            if offset < 0:
                return
        else:
            offset = data + size


def _zip_kind(body: bytes) -> str | None:
    """ODF by its 'mimetype' entry; OOXML by [Content_Types].xml and a word/, xl/ or ppt/ part."""
    content_types = False
    ooxml = None
    for name, head in _zip_entries(body):
        if name == "mimetype":
            kind = MIMETYPES.get(head.decode("ascii", "replace").strip())
            if kind in _ODF_KINDS:
                return kind
        elif name == "[Content_Types].xml":
            content_types = True
        elif ooxml is None:
            ooxml = _OOXML_FOLDERS.get(name.partition("/")[0])
        if content_types and ooxml:
            return ooxml
    return None


def _ole_kind(body: bytes) -> str | None:
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(body)) as ole:  # bytes under 1536 would be a file name
            if ole.exists("WordDocument"):
                return "doc"
            if ole.exists("PowerPoint Document"):
                return "ppt"
            if ole.exists("Workbook") or ole.exists("Book"):
                return "xls"
    except Exception:  # olefile raises assorted errors on damaged files
        pass
    return None


def sniff_kind(body: bytes) -> str | None:
    """The document kind ('pdf', 'docx', 'doc', 'odt', 'rtf', ...) by magic bytes alone, or None.

    Strict enough to run on pages served as text/html (to catch a PDF or an Office file served
    under the wrong type): never 'txt', and never raises.
    """
    try:
        if body.startswith(_ZIP_LOCAL):
            return _zip_kind(body)
        if body.startswith(OLE_MAGIC):
            return _ole_kind(body)
        prefix = body[:1024]
        if _PDF_HEADER.search(prefix):
            return "pdf"
        if prefix.lstrip().startswith(b"{\\rtf"):
            return "rtf"
    except Exception:  # hostile input: whatever it is, it is not a document we recognise
        return None
    return None


def detect_kind(body: bytes, mimetype: str | None, filename: str | None) -> str | None:
    """'pdf','docx',... or None; by magic bytes first (a text BOM: 'txt'), then MIME type, then
    extension."""
    kind = sniff_kind(body)
    if kind:
        return kind
    if body.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        return "txt"
    if mimetype:
        kind = MIMETYPES.get(mimetype.split(";")[0].strip().lower())
        if kind:
            return kind
    if filename:
        name = filename.split("?")[0].split("#")[0].rsplit("/", 1)[-1]
        if "." in name:
            return EXTENSIONS.get(name.rsplit(".", 1)[1].lower())
    return None


def check_zip(body: bytes) -> None:
    """Refuse zip bombs by the members' declared sizes, before any library inflates them."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ConversionError("corrupt", f"not a valid zip container: {exc}") from None
    total = sum(i.file_size for i in infos)
    if total > MAX_ZIP_UNCOMPRESSED:
        raise ConversionError("too_large", f"zip members inflate to {total} bytes (zip bomb?)")
    for info in infos:
        if info.flag_bits & 0x1:
            raise ConversionError("encrypted", f"zip member {info.filename} is encrypted")
        if info.file_size > 2**20 and info.file_size > MAX_ZIP_RATIO * max(info.compress_size, 1):
            raise ConversionError(
                "too_large",
                f"zip member {info.filename} inflates {info.file_size // max(info.compress_size, 1)} times (zip bomb?)",
            )


def check_ole_encrypted(body: bytes) -> None:
    """Password-protected OOXML files are OLE containers holding an EncryptedPackage stream."""
    if not body.startswith(OLE_MAGIC):
        return
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(body)) as ole:
            if ole.exists("EncryptedPackage") or ole.exists("EncryptionInfo"):
                raise ConversionError("encrypted", "password-protected Office document")
    except ConversionError:
        raise
    except Exception:
        pass


def iso_utc(value) -> str | None:
    """datetime or ISO-like string -> 'YYYY-MM-DDTHH:MM:SSZ'; naive values are taken as UTC."""
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return None
        try:
            value = datetime.fromisoformat(value)  # 3.11+ reads "Z"
        except ValueError:
            return None
    if not isinstance(value, datetime):
        return None
    if value.tzinfo is not None:
        try:
            value = value.astimezone(UTC)
        except OverflowError:  # year 1 or 9999 with an offset
            return None
    if not 1000 <= value.year <= 9999:  # .NET's empty date (0001-01-01) and the like: no date
        return None
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def split_keywords(value) -> list[str]:
    if isinstance(value, (list, tuple)):
        parts = [str(v) for v in value]
    else:
        parts = str(value or "").replace(";", ",").split(",")
    return [p.strip() for p in parts if p and p.strip()]


def clean_metadata(raw: dict) -> dict[str, str | list[str]]:
    """Keep the documented keys with non-empty values, in their documented shapes."""
    out: dict[str, str | list[str]] = {}
    for key in ("title", "author", "subject", "language"):
        value = raw.get(key)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if value is not None and str(value).strip():
            out[key] = str(value).strip().replace("\x00", "")
    keywords = split_keywords(raw.get("keywords"))
    if keywords:
        out["keywords"] = keywords
    for key in ("created", "modified"):
        value = iso_utc(raw.get(key))
        if value:
            out[key] = value
    return out


#: A converted document's text identifies it (is its checksum: what change and duplicate detection
#: compare) only when it holds at least this many letters or digits (of any script): fewer (a
#: one-word file, "Test text", a slide number, "Figure 1") are indexed and found like any text, but
#: two unrelated files saying "Test", or two files of pictures with one default title and "1", would
#: be duplicates of each other: such a document's checksum is over its bytes (docs/indexing.md:
#: "Short texts"). A text without any letter or digit (whitespace, a stray bullet) is no text.
MIN_TEXT_CHARS = 10
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")


def identifies(text: str) -> bool:
    """Whether ``text`` holds MIN_TEXT_CHARS letters or digits (counted up to that many only)."""
    found = _LETTER_OR_DIGIT.finditer(text)
    return sum(1 for _ in zip(found, range(MIN_TEXT_CHARS), strict=False)) >= MIN_TEXT_CHARS


def has_words(text: str) -> bool:
    """Whether ``text`` holds a letter or a digit: something a search can find (else: no text)."""
    return _LETTER_OR_DIGIT.search(text) is not None


#: A text of which more than this share of the characters (whitespace aside) are U+FFFD is
#: binary data decoded as text: a zip of 100 MB of NUL bytes, read by Tika as a text file, was
#: 5 million replacement characters. Text in a mislabelled encoding that loses a few characters
#: stays far below it.
MAX_REPLACEMENT_SHARE = 0.5
_REPLACEMENT = "\ufffd"
_WHITESPACE = (" ", "\n", "\t", "\r")


def garbled(text: str) -> bool:
    """Whether ``text`` is mostly U+FFFD (over MAX_REPLACEMENT_SHARE of its other than whitespace
    characters): not text, whichever converter read it (status 'not_text')."""
    replaced = text.count(_REPLACEMENT)
    return replaced > 0 and replaced > MAX_REPLACEMENT_SHARE * (len(text) - sum(map(text.count, _WHITESPACE)))


def garbled_error(text: str) -> ConversionError:
    """The one error of a garbled text, in either converter."""
    return ConversionError(
        "not_text", f"{text.count(_REPLACEMENT)} of its {len(text)} characters are U+FFFD: binary data read as text"
    )


def normalize_space(text: str) -> str:
    """Lone CRs, NBSPs and runs of spaces become one space; tabs (cell separators) stay one tab."""
    text = re.sub(r"[^\S\n\t]+", " ", text.replace("\r\n", "\n").replace("\x00", ""))
    text = re.sub(r" *\t[ \t]*", "\t", text)
    text = "\n".join(line.rstrip() for line in text.split("\n")).strip()
    return re.sub(r"\n{3,}", "\n\n", text)


def run_tool(args: list[str], body: bytes, suffix: str) -> tuple[int, str, str]:
    """Run a helper program on the body (written to a temp file) with a time limit."""
    import subprocess
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=suffix) as tmp:
        tmp.write(body)
        tmp.flush()
        try:
            proc = subprocess.run(
                [*args, tmp.name],
                check=False,
                capture_output=True,
                timeout=SUBPROCESS_TIMEOUT,
                env={**os.environ, "LC_ALL": "C.UTF-8"},
            )
        except FileNotFoundError:
            raise ConversionError("unsupported", f"{args[0]} is not installed") from None
        except subprocess.TimeoutExpired:
            raise ConversionError("timeout", f"{args[0]} took over {SUBPROCESS_TIMEOUT}s") from None
    return (
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )
