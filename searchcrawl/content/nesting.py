"""Pages nested deeper than an HTML parser goes: their text and links kept. Plain logic, no Scrapy.

libxml2 (lxml, so parsel and Scrapy) stops parsing a page at 2,048 nested elements even with
``huge_tree`` (256 without it, as trafilatura parses): everything below that depth, and everything
after it in the page, is lost, text and links alike. A page whose tree reaches ``MAX_DEPTH``
(``too_deep``, which follows the last children down: where a halted parse ends) is written again
by ``flatten`` with its elements below ``MAX_DEPTH`` taken out and their text kept, so that any
parser reads all of it. Below that depth only the elements whose text or links matter are kept:
links (``a``, ``area``, ``frame``, ``iframe``) and the elements whose content is hidden
(applets, frames) for ``KEPT_BELOW`` more levels; void elements (a robots ``<meta>``, a canonical
``<link>``) at any depth, as they add none; the elements libxml2 reads as text (``RAW_TEXT``:
script, style, textarea ...) at any depth, with their content copied as it is; the others become
a space, so that their words stay apart. A new ``<a>`` closes an ``<a>`` open just before it, as
libxml2 closes it. No real page comes near: the Javadoc and Sphinx pages of the shared corpora nest under 30.
"""

from __future__ import annotations

import re
import sys
from array import array
from io import StringIO
from typing import Any

#: The depth of elements a flattened page keeps (under libxml2's 256 without huge_tree).
MAX_DEPTH = 200
#: How many more link and hidden-content elements are kept below MAX_DEPTH (for links in links).
KEPT_BELOW = 40
#: An end tag closes the nearest open element of its name among this many (the rest: ignored).
END_TAG_REACH = 64
VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "frame",
        "hr",
        "img",
        "input",
        "keygen",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    }
)
KEPT_DEEP = frozenset({"a", "iframe", "script", "style", "applet", "frameset", "noframes", "title"})


def too_deep(root: Any) -> bool:
    """Whether the parsed page (an lxml element) is at least MAX_DEPTH deep along its last
    children, the path where a parse halted by the depth limit ends (a few steps on a real page)."""
    element = root
    for _ in range(MAX_DEPTH):
        if len(element) == 0:
            return False
        element = element[-1]
    return True


# A tag (quoted attribute values may hold ">"), a comment, or a declaration or processing
# instruction; what is between them is text, written as it is. A tag or a quoted value that is
# not closed ends with the page, as the HTML5 tokenizer ends it; the quantifiers are possessive,
# so that a "<" with no ">" after it is read once, not retried at every split (a 64 KB page of
# "<a" took hours to read).
_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(/?)([A-Za-z][^\t\n\f\r />]*+)((?:[^>\"']++|\"[^\"]*+(?:\"|\Z)|'[^']*+(?:'|\Z))*+)(?:>|\Z)"
    r"|<[!?][^>]*+>?",
    re.S,
)
#: Elements whose content libxml2 (2.14, as HTML5) reads as text up to their end tag: their
#: content is copied as it is (a link written in a <textarea> is no link), and they are kept at
#: any depth (they hold no elements). <plaintext> holds the rest of the page.
RAW_TEXT = frozenset({"script", "style", "textarea", "title", "xmp", "noembed", "noframes", "iframe", "plaintext"})
_RAW_TEXT_END = {tag: re.compile(rf"</{tag}[\t\n\f\r />]", re.I) for tag in RAW_TEXT - {"plaintext"}}


class _Depth:
    """The open elements of the page written again, tag by tag (a start tag opens one, its end tag
    closes it and any left open inside it, as an HTML parser closes them): whether each tag is
    written, or taken out (a space)."""

    def __init__(self) -> None:
        # the open elements' tags, and whether each is written (a page may open a million: no tuples)
        self.open: list[str] = []
        self.kept = bytearray()
        self.places: dict[str, array[int]] = {}  # where in self.open each tag is open: end tags look no further
        self.written = 0  # open elements written: the depth of the page written so far

    def start(self, tag: str, empty: bool) -> bool:
        """Whether a start tag is written."""
        if empty or tag in VOID:  # a void element, or one closed where it opens (<div/>): no depth
            return True
        if tag == "a" and self.open and self.open[-1] == "a":
            self.close(len(self.open) - 1)  # libxml2 closes an <a> that a new one opens in
        keep = self.written < MAX_DEPTH or (tag in KEPT_DEEP and self.written < MAX_DEPTH + KEPT_BELOW)
        keep = keep or tag in RAW_TEXT  # they hold no elements, and their text may not be read as tags
        if tag not in self.places:
            self.places[tag] = array("q")
        self.places[tag].append(len(self.open))
        self.open.append(tag)
        self.kept.append(keep)
        self.written += keep
        return keep

    def close(self, index: int) -> bool:
        """Close the open element at ``index`` and those left open inside it; whether it was written."""
        for tag in reversed(self.open[index:]):
            self.places[tag].pop()
        self.written -= sum(self.kept[index:])
        written = bool(self.kept[index])
        del self.open[index:], self.kept[index:]
        return written

    def end(self, tag: str) -> bool:
        """Whether an end tag is written: its element's was, or it closes nothing above the depth."""
        places = self.places.get(tag)
        if places and places[-1] >= len(self.open) - END_TAG_REACH:
            return self.close(places[-1])
        return self.written < MAX_DEPTH  # nothing to close: as it is, or nothing


def flatten(html: str) -> str:
    """``html`` with its elements below MAX_DEPTH taken out, their text and links kept (a
    regular expression's tokens, in C: html.parser took 20 s for a 4 MB page). The page is
    written as it is but for the tags taken out, each a space: runs of those are counted, not
    copied (a 4 MB page of them took 150 MB)."""
    depth = _Depth()
    out = StringIO()
    copied = spaces = 0  # html[:copied] is written, but for ``spaces`` spaces
    position = 0
    while (token := _TOKEN.search(html, position)) is not None:
        start, position = token.span()
        name = token.group(2)
        if name is None:  # a comment, a declaration, a processing instruction: as it is
            continue
        tag = sys.intern(name.lower())  # one string per tag name, however many are open
        if token.group(1):
            kept = depth.end(tag)
        else:
            empty = token.group(3).endswith("/")  # libxml2 closes <div/> and <script/> where they open
            kept = depth.start(tag, empty)
            if tag in RAW_TEXT and not empty:  # its text, as it is, up to its end tag
                end = _RAW_TEXT_END[tag].search(html, position) if tag in _RAW_TEXT_END else None
                position = end.start() if end else len(html)
        if not kept:
            if start > copied:
                out.write(" " * spaces)
                out.write(html[copied:start])
                spaces = 0
            spaces += 1
            copied = position
    out.write(" " * spaces)
    out.write(html[copied:])
    return out.getvalue()
