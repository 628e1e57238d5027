"""Character sets of pages: the declared one when it is right, the source's default when none is
declared, and a correction for the common mislabellings. Plain logic over w3lib's public functions.

**UTF-8 or a single-byte charset?** A label is trusted unless the other reading damages strictly
fewer characters. Decoding as UTF-8 (with replacement, as Scrapy and w3lib do) loses one
character per invalid sequence; decoding UTF-8 bytes as a single-byte charset garbles every valid
multi-byte character. So, counting in a sample of the body (``valid``: valid non-ASCII UTF-8
characters, ``invalid``: invalid UTF-8 sequences, each counted once as Python's decoder replaces
it):

* labelled UTF-8: decoded as UTF-8 unless ``invalid > valid`` *and* the fallback (the source's
  ``default_charset``, else windows-1252) decodes the sample with fewer errors than UTF-8 does.
  One stray byte in a UTF-8 page with any other non-ASCII character no longer turns the page
  into mojibake; a windows-1252 page labelled UTF-8 (``invalid`` high, ``valid`` about 0) is
  still read as windows-1252.
* labelled ISO-8859-1, windows-1252 or ASCII: decoded as UTF-8 when ``valid > invalid`` (valid
  UTF-8 is almost never Latin-1 text: it takes a capital accented letter followed by a
  symbol, such as ``Ã©``).
* nothing declared: UTF-8 when ``valid >= invalid`` (and ``valid > 0``): at most one invalid
  sequence per valid non-ASCII character, so a UTF-8 page with a stray byte is UTF-8 with one
  replacement character. UTF-8 is what the web mostly is, and text in a single-byte charset is
  almost never valid UTF-8, so the bytes win over the source's ``default_charset``, which
  decodes the other undeclared pages (else Scrapy's own detection).

The sample is ``SAMPLE_BYTES`` from the first non-ASCII byte, so an all-ASCII ``<head>`` of
inline scripts does not hide the text, and a huge page is never decoded in full here (Scrapy
decodes it once, later). A BOM is never second-guessed.
"""

from __future__ import annotations

import codecs
import re

from w3lib.encoding import html_body_declared_encoding, http_content_type_encoding, read_bom, resolve_encoding

SINGLE_BYTE_WESTERN = {"latin-1", "iso8859-1", "cp1252", "ascii"}
#: How much of a body, from its first non-ASCII byte, the UTF-8 evidence is counted in.
SAMPLE_BYTES = 64 * 1024
#: How much of a body (after a BOM) looks_binary() reads.
BINARY_SAMPLE_BYTES = 8 * 1024
#: looks_binary(): the share of "binary data bytes" above which a body is not text.
BINARY_SHARE = 0.05

_NON_ASCII = re.compile(rb"[\x80-\xff]")
_ASCII_BYTES = bytes(range(0x80))
_REPLACEMENT = "\ufffd"
_ENCODED_REPLACEMENT = _REPLACEMENT.encode("utf-8")
# WHATWG MIME Sniffing's "binary data bytes": C0 controls but TAB, LF, FF, CR and ESC (which
# ISO-2022-JP text uses), and NUL.
_BINARY_BYTES = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])
_BINARY_CHARS = _BINARY_BYTES.decode("ascii")


def _name(encoding: str | None) -> str | None:
    if not encoding:
        return None
    resolved = resolve_encoding(encoding) or encoding
    try:
        name = codecs.lookup(resolved).name
        b"a".decode(name, "replace")  # "base64", "rot13", ...: codecs Python knows, not text encodings
    except (LookupError, ValueError):  # ValueError: a NUL in the name
        return None
    return name


def declared_encoding(content_type: str | None, body: bytes) -> str | None:
    """What the page says: BOM first, then the HTTP header, then <meta charset>."""
    bom, _ = read_bom(body)
    if bom:
        return _name(bom)
    return _name(http_content_type_encoding(content_type)) or _name(html_body_declared_encoding(body))


def _sample(body: bytes) -> tuple[bytes, bool]:
    """SAMPLE_BYTES from the first non-ASCII byte (b"" if none), and whether it reaches the end."""
    first = _NON_ASCII.search(body)
    if first is None:
        return b"", True
    start = first.start()
    return body[start : start + SAMPLE_BYTES], start + SAMPLE_BYTES >= len(body)


def _replaced(text: str, sample: bytes) -> int:
    """Replacement characters the decoder put in ``text``: those not already in ``sample``."""
    return text.count(_REPLACEMENT) - sample.count(_ENCODED_REPLACEMENT)


def _utf8_counts(sample: bytes, final: bool) -> tuple[int, int]:
    """(valid non-ASCII UTF-8 characters, invalid UTF-8 sequences) in ``sample``; unless ``final``,
    a character cut in two by its end is left out rather than counted invalid."""
    text, consumed = codecs.utf_8_decode(sample, "replace", final)
    ascii_chars = consumed - len(sample[:consumed].translate(None, _ASCII_BYTES))
    invalid = _replaced(text, sample)
    return len(text) - ascii_chars - invalid, invalid


def choose_encoding(content_type: str | None, body: bytes, default: str | None) -> str | None:
    """The encoding to decode a page with; None: let Scrapy decide (declared or auto-detected)."""
    declared = declared_encoding(content_type, body)
    if declared is not None and read_bom(body)[0]:
        return declared  # a BOM is never wrong
    if body.isascii():
        return _name(default) if declared is None and default else None
    if declared is not None and declared != "utf-8" and declared not in SINGLE_BYTE_WESTERN:
        return None
    sample, whole = _sample(body)
    valid, invalid = _utf8_counts(sample, whole)
    if declared is None:
        return _undeclared(valid, invalid, whole, default)
    if declared in SINGLE_BYTE_WESTERN:
        return "utf-8" if valid > invalid else None  # UTF-8 bytes labelled Latin-1
    if invalid > valid:  # labelled UTF-8 but mostly is not
        return _not_utf8(sample, invalid, default)
    return None


def _undeclared(valid: int, invalid: int, whole: bool, default: str | None) -> str | None:
    """A page that declares no encoding: UTF-8 when its bytes say so, whatever default_charset says."""
    if valid >= invalid and (valid or not default):
        # no default and all valid: Scrapy's own strict UTF-8 detection says the same
        return None if invalid == 0 and whole and not default else "utf-8"
    return _name(default) if default else None  # else Scrapy: strict UTF-8, then a guess


def _not_utf8(sample: bytes, invalid: int, default: str | None) -> str | None:
    """A page labelled UTF-8 whose bytes mostly are not: the default charset (else cp1252) when it
    reads the sample with fewer replacements; None: Scrapy decides."""
    fallback = _name(default) or "cp1252"
    if fallback != "utf-8" and _replaced(sample.decode(fallback, "replace"), sample) < invalid:
        return fallback
    return None


def looks_binary(body: bytes) -> bool:
    """Is this "text" binary garbage (an image, an archive, compressed bytes served as text/html)?

    Over the first BINARY_SAMPLE_BYTES after a BOM, more than BINARY_SHARE of the bytes are
    WHATWG "binary data bytes" (NUL and the C0 controls but TAB, LF, FF, CR, ESC). Text has next
    to none (a lone NUL in a long page is damage, not proof); random bytes have about 10%.
    A UTF-16 or UTF-32 body with a BOM is read as characters of that encoding; one without a BOM
    (a NUL every other byte) counts as binary. Run sniff_kind() first: PDFs and Office files are
    binary too, but documents.
    """
    bom, bom_bytes = read_bom(body)
    skip = len(bom_bytes or b"")
    sample = body[skip : skip + BINARY_SAMPLE_BYTES]
    if bom and _name(bom) != "utf-8":  # UTF-16/32: look at its characters' code points
        text = sample.decode(bom, "replace")
        if not text:
            return False
        return sum(map(text.count, _BINARY_CHARS)) > BINARY_SHARE * len(text)
    if not sample:
        return False
    return len(sample) - len(sample.translate(None, _BINARY_BYTES)) > BINARY_SHARE * len(sample)
