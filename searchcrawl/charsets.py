"""Character sets of pages: the declared one when it is right, the source's default when none is
declared, and a correction for the common mislabelling (UTF-8 bytes served as ISO-8859-1 or
windows-1252, or invalid UTF-8 served as UTF-8). Plain logic over w3lib's public functions.
"""

from __future__ import annotations

import codecs

from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom, resolve_encoding

SINGLE_BYTE_WESTERN = {"latin-1", "iso8859-1", "cp1252", "ascii"}


def _name(encoding: str | None) -> str | None:
    if not encoding:
        return None
    resolved = resolve_encoding(encoding) or encoding
    try:
        return codecs.lookup(resolved).name
    except LookupError:
        return None


def declared_encoding(content_type: str | None, body: bytes) -> str | None:
    """What the page says: BOM first, then the HTTP header, then <meta charset>."""
    bom, _ = read_bom(body)
    if bom:
        return _name(bom)
    return _name(http_content_type_encoding(content_type)) or _name(html_body_declared_encoding(body))


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def choose_encoding(content_type: str | None, body: bytes, default: str | None) -> str | None:
    """The encoding to decode a page with; None: let Scrapy decide (declared or auto-detected)."""
    declared = declared_encoding(content_type, body)
    if declared is None:
        return _name(default)
    if read_bom(body)[0]:
        return declared  # a BOM is never wrong
    non_ascii = not body.isascii()
    if declared in SINGLE_BYTE_WESTERN and non_ascii and _is_utf8(body):
        return "utf-8"  # UTF-8 bytes labelled Latin-1: valid UTF-8 is almost never Latin-1 text
    if declared == "utf-8" and not _is_utf8(body):
        return _name(default) or "cp1252"  # labelled UTF-8 but is not
    return None
