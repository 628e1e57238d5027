"""Conversion of non-HTML documents (PDF, Office, OpenDocument, RTF, text) to text + metadata.

`convert()` runs in-process; `Converter` runs conversions in worker processes bounded in time and
memory, which is what the crawler should use for untrusted documents.
"""

from searchcrawl.content.convert.core import ConversionError, Converted, convert, detect_kind, sniff_kind
from searchcrawl.content.convert.pool import Converter

__all__ = ["ConversionError", "Converted", "Converter", "convert", "detect_kind", "sniff_kind"]
