"""Conversion of non-HTML documents (PDF, Office, OpenDocument, RTF, text) to text + metadata.

`TikaConverter` sends them to an Apache Tika server (the converter when one is configured);
`Converter` runs the project's Python converters in worker processes bounded in time and memory
(the fallback without Tika); `convert()` runs those in-process.
"""

from searchcrawl.content.convert.core import (
    ConversionError,
    Converted,
    DocumentConverter,
    detect_kind,
    sniff_kind,
)
from searchcrawl.content.convert.in_process import convert
from searchcrawl.content.convert.pool import Converter
from searchcrawl.content.convert.tika_client import ConverterUnavailable, TikaConverter

__all__ = [
    "ConversionError",
    "Converted",
    "Converter",
    "ConverterUnavailable",
    "DocumentConverter",
    "TikaConverter",
    "convert",
    "detect_kind",
    "sniff_kind",
]
