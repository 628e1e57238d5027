"""In-process conversion: a document's kind checked, its extractor (formats.py) run, its text and
metadata cleaned. What the Python converters' worker processes run (pool.py); a module above
core.py and formats.py, so that formats.py's use of core.py makes no import circle."""

from __future__ import annotations

from searchcrawl.content.convert.core import (
    MAX_BYTES,
    ZIP_KINDS,
    ConversionError,
    Converted,
    check_ole_encrypted,
    check_zip,
    clean_metadata,
    detect_kind,
    garbled,
    garbled_error,
    normalize_space,
)
from searchcrawl.content.convert.formats import EXTRACTORS


def convert(body: bytes, mimetype: str | None = None, filename: str | None = None) -> Converted:
    """In-process conversion (raises ConversionError). Use Converter to bound time and memory."""
    if len(body) > MAX_BYTES:
        raise ConversionError("too_large", f"{len(body)} bytes is over the {MAX_BYTES} byte limit")
    kind = detect_kind(body, mimetype, filename)
    if kind is None:
        check_ole_encrypted(body)
        raise ConversionError("unsupported", f"unsupported document type ({mimetype}, {filename})")
    check_ole_encrypted(body)
    if kind in ZIP_KINDS:
        check_zip(body)
    try:
        text, meta = EXTRACTORS[kind](body)
    except ConversionError:
        raise
    except MemoryError:
        raise ConversionError("too_large", "out of memory while converting") from None
    except Exception as exc:  # the parsers raise all sorts of errors on damaged input
        raise ConversionError("corrupt", f"cannot parse {kind}: {type(exc).__name__}: {exc}") from None
    text = normalize_space(text)
    if garbled(text):
        raise garbled_error(text)
    return Converted(text=text, metadata=clean_metadata(meta), kind=kind)
