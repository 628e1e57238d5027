"""Text as Solr may take it, whatever a document holds.

Converters hand back what the file says: RTF and PDF text may hold UTF-16 surrogates (paired, for
a character beyond the BMP written as two escapes, or alone: garbage), which no UTF-8 encoder
takes, and control characters, which are noise in a search result. Fields that Solr indexes as
one term (``string`` fields: author, language, the ``*_s`` and ``*_ss`` attributes) make Lucene
refuse the whole document when a term passes 32,766 bytes: a 40 KB author metadata value would.
So every field of a document is cleaned here, once, before its checksum is taken and it is sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

# Lucene refuses a term above 32,766 bytes; a facet value of a kilobyte is already more than anyone
# reads. Single-term fields are cut at this many UTF-8 bytes, on a character boundary.
MAX_TERM_BYTES = 1024

# The schema's single-term (string) fields that hold document text; the identity fields (id,
# url, display_url, source, host, checksum) are the crawler's own and bounded where they are made.
TERM_FIELDS = frozenset({"author", "language", "mimetype"})
TERM_SUFFIXES = ("_s", "_ss")

# The marks Solr's highlighter puts around a match for the search page (searchcrawl/search/results.py):
# private-use characters, removed from every text indexed, so that a page cannot show a highlight
# of its own making.
HIGHLIGHT_MARKS = ("\ue000", "\ue001")

# C0 controls but tab, newline and carriage return; DEL; C1 controls; the two noncharacters
# U+FFFE and U+FFFF (not allowed in XML, so not in a Solr XML update either); the highlight marks.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffe\uffff" + "".join(HIGHLIGHT_MARKS) + "]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` encodable as UTF-8 and without control characters: a surrogate pair becomes the
    character it stands for, a lone surrogate U+FFFD; controls are removed."""
    if _SURROGATE.search(text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return _CONTROL.sub("", text)


def cut_term(text: str, limit: int = MAX_TERM_BYTES) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, never inside a character."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    return encoded[:limit].decode("utf-8", "ignore").rstrip()


def is_term_field(name: str) -> bool:
    """Whether Solr indexes field ``name`` as one term (the schema's string fields)."""
    return name in TERM_FIELDS or name.endswith(TERM_SUFFIXES)


def clean_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A document's fields with every text cleaned (clean_text) and single-term fields cut
    (cut_term); values that are not text are kept as they are."""

    def clean(name: str, value: Any) -> Any:
        if isinstance(value, str):
            value = clean_text(value)
            return cut_term(value) if is_term_field(name) else value
        if isinstance(value, list):
            return [clean(name, part) for part in value]
        return value

    return {name: clean(name, value) for name, value in fields.items()}
