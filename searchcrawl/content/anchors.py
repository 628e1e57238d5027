"""Anchor text: the words other pages use in their links to a page, searchable on that page.

A link's text (and its ``title`` attribute, an image's ``alt`` in an image link) often says what
the page it points to is about in the words a searcher types ("travel expenses" on a link to
``/hr/form-17.html``), as web search engines have long used it. Three pieces of plain logic here:

- ``page_anchors``: a page's anchors, (target URL, text), read from its parsed tree when the crawl
  parses it, bounded (``MAX_ANCHOR_CHARS`` a text, ``MAX_PAGE_ANCHORS`` a page,
  ``MAX_TEXTS_PER_TARGET`` texts from one page to one target; its first ``MAX_PAGE_LINKS`` links
  read). Left out: links marked
  ``rel="nofollow"``, ``ugc`` or ``sponsored`` (comments, paid links: what others wrote on the
  page), links inside an element its site marks ``data-searchcrawl-exclude``, links to the page
  itself, and links without words.
- ``counts_for``: the access rule. An anchor of page P counts for page Q only when every searcher
  who may read Q may read P: P is public (readable by everyone), or P's readers are exactly Q's
  (the same levels, tokens and denies, as the index holds them). Anything else, an access that
  cannot be read above all, does not count: a restricted page's words never reach the field of a
  page its readers do not all share (fail closed). Equal readers, not "at least Q's": a subset
  test over levels and denies would have to reason about every principal; equality is exact.
- ``anchor_field``: the target's field from the anchors that count: each distinct text once
  (without case), those of the most linking pages first, at most ``MAX_FIELD_TEXTS`` and
  ``MAX_FIELD_CHARS``: a page linked from a thousand pages with "Home" has "Home" once, and no one
  page can fill another's field.

Which pages' anchors are candidates (those in the index, of the same source) is the document
table's (store/anchor_table.py); when the field is written, the push's (index/push.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from lxml import etree

from searchcrawl.access.tokens import DENY_FIELD, LATE_DENY_FIELD, LEVEL_FIELDS, OVERRIDING_FIELD, Access, AccessError
from searchcrawl.content.clean_text import clean_text
from searchcrawl.content.extract import holds_another, visible_text
from searchcrawl.content.regions import EXCLUDE_ATTRIBUTE, outer_elements

ANCHOR_FIELD = "anchor"  # the Solr field (solr/configset/conf/schema.xml)
MAX_ANCHOR_CHARS = 200  # of one link's words
MAX_PAGE_ANCHORS = 100  # (target, text) pairs a page gives, in document order
MAX_PAGE_LINKS = 2_000  # links of a page read for them (a page of 100,000 links costs no more)
MAX_TEXTS_PER_TARGET = 3  # distinct texts one page gives one target
MAX_FIELD_TEXTS = 50  # distinct texts of a target's field
MAX_FIELD_CHARS = 5_000  # characters of a target's field
NOT_COUNTED_RELS = frozenset({"nofollow", "ugc", "sponsored"})
ACCESS_FIELDS = (*LEVEL_FIELDS, DENY_FIELD, LATE_DENY_FIELD, OVERRIDING_FIELD)
XHTML = "{http://www.w3.org/1999/xhtml}"
ANCHOR_TAGS = ("a", "area", XHTML + "a", XHTML + "area")
# The elements a site marks to exclude below the root, in the page's order (their outermost:
# regions.outer_elements). One XPath of every marked element's links had libxml2 merge each one's
# node set into the others': a page of marks inside marks took quadratic time (32,000 of them,
# 20 s of the crawl's thread; issue 102); an ancestor count for each mark, time as the marks
# times the depth
_MARKED = etree.XPath(f"descendant::*[@{EXCLUDE_ATTRIBUTE}]")

Anchor = tuple[str, str]  # (the target's canonical URL, the link's words)


def anchor_text(element: Any) -> str:
    """A link's words: its visible text (an image link's ``alt`` texts when it has none), then its
    ``title`` when that says something more; on one line, cleaned, at most ``MAX_ANCHOR_CHARS``."""
    if element.tag not in ("a", XHTML + "a"):
        parts = []
    elif len(element):  # words in elements of its own: joined as a reader sees them
        if holds_another(element, ANCHOR_TAGS):
            # A link with a link inside it (no HTML allows one; libxml2 nests them as written)
            # gives no words of its own: its inner links do. Read whole, each of n nested links
            # read all those inside it again (500 of them around 8,000 words: 44 s; issue 102)
            return ""
        parts = [visible_text(element)]
    else:  # most links: their text alone
        parts = [element.text or ""]
    if not parts or not parts[0].strip():
        parts = [str(image.get("alt") or "") for image in element.iter("img", XHTML + "img")]
        if element.tag in ("area", XHTML + "area"):
            parts.append(str(element.get("alt") or ""))
    title = " ".join(str(element.get("title") or "").split())
    text = " ".join(" ".join(parts).split())
    if title and title.casefold() not in text.casefold():
        text = f"{text} {title}" if text else title
    text = clean_text(text)
    if len(text) > MAX_ANCHOR_CHARS:
        text = text[:MAX_ANCHOR_CHARS].rsplit(" ", 1)[0] or text[:MAX_ANCHOR_CHARS]
    return text.strip()


def counted_link(element: Any) -> str | None:
    """The ``href`` of a link whose words may count (not ``rel`` nofollow, ugc or sponsored, not
    to a fragment of the page itself), else None."""
    href = element.get("href")
    if href is None or href.strip().startswith("#"):
        return None
    rel = element.get("rel")
    if rel and NOT_COUNTED_RELS & set(rel.lower().split()):
        return None
    return str(href)


def excluded_links(root: Any) -> set[Any]:
    """The links (``a`` and ``area``) inside the elements below ``root`` that its site marks to
    exclude (``data-searchcrawl-exclude``), the marked ones themselves too: each outermost mark's
    links, read once."""
    excluded: set[Any] = set()
    for marked in outer_elements(_MARKED(root), within=root):
        excluded.update(marked.iter("a", "area"))
    return excluded


def page_anchors(root: Any, page_url: str, target: Callable[[str], str | None]) -> tuple[Anchor, ...]:
    """The anchors of the page at ``page_url`` (its parsed tree ``root``), in document order,
    bounded (the module's docstring). ``target`` gives the canonical URL a link's ``href`` names
    as the document table keys it (resolved against the page, rewritten as the crawl rewrites
    links), or None."""
    excluded = excluded_links(root)
    found: dict[Anchor, None] = {}
    texts_of: dict[str, set[str]] = {}
    for read, element in enumerate(root.iter(*ANCHOR_TAGS)):
        if len(found) >= MAX_PAGE_ANCHORS or read >= MAX_PAGE_LINKS:
            break
        href = counted_link(element)
        if href is None or element in excluded:
            continue
        url = target(href)
        if url is None or url == page_url:
            continue
        text = anchor_text(element)
        if not text:
            continue
        texts = texts_of.setdefault(url, set())
        folded = text.casefold()
        if folded in texts or len(texts) >= MAX_TEXTS_PER_TARGET:
            continue
        texts.add(folded)
        found[(url, text)] = None
    return tuple(found)


def access_of(column: str | None) -> Access | None:
    """A page's access as the document table keeps it (``Access.to_data`` JSON); None when it has
    none or it cannot be read (then its anchors count for no one)."""
    if not column:
        return None
    try:
        data = json.loads(column)
        return Access.from_data(data) if isinstance(data, dict) else None
    except (ValueError, TypeError, KeyError, AccessError):
        return None


def access_fields(fields: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """The access fields of a Solr document (or of ``Access.fields``), each a sorted tuple: a
    field missing, null or empty is an empty one, as Solr leaves an empty multi-valued field out."""
    shown: dict[str, tuple[str, ...]] = {}
    for name in ACCESS_FIELDS:
        value = fields.get(name)
        if isinstance(value, Mapping):  # an atomic update's {"set": [...]}
            value = value.get("set")
        values = [value] if isinstance(value, str) else list(value or ())
        shown[name] = tuple(sorted(str(token) for token in values))
    return shown


def counts_for(source: Access | None, target: Mapping[str, Sequence[str]]) -> bool:
    """Whether an anchor of a page of access ``source`` counts for a page whose access fields are
    ``target`` (``access_fields``): ``source`` public, or exactly the same readers. Unknown: no."""
    if source is None:
        return False
    if source.is_public:
        return True
    return access_fields(source.fields()) == access_fields(target)


def anchor_field(
    candidates: Iterable[tuple[str, str, str | None]], target: Callable[[], Mapping[str, Sequence[str]]]
) -> list[str]:
    """The anchor field of a page whose access fields ``target()`` gives (asked only when a
    linking page is not public: reading them may mean parsing the whole document), from
    ``candidates``: (the linking page's key, the text, the linking page's access column) of the
    anchors of pages in the index. Those that count (``counts_for``), each distinct text once
    (without case: its least spelling, whatever order they come in), the texts of the most linking
    pages first, bounded."""
    accesses: dict[str | None, bool] = {}
    readers: list[Mapping[str, Sequence[str]]] = []
    pages: dict[str, set[str]] = {}
    spelling: dict[str, str] = {}
    for page, text, access in candidates:
        counted = accesses.get(access)
        if counted is None:
            source = access_of(access)
            if source is not None and not source.is_public and not readers:
                readers.append(target())
            counted = accesses[access] = counts_for(source, readers[0] if readers else {})
        if not counted or not text:
            continue
        folded = text.casefold()
        spelling[folded] = min(spelling.get(folded, text), text)
        pages.setdefault(folded, set()).add(page)
    field: list[str] = []
    size = 0
    for folded in sorted(pages, key=lambda folded: (-len(pages[folded]), folded)):
        text = spelling[folded]
        if len(field) >= MAX_FIELD_TEXTS or size + len(text) > MAX_FIELD_CHARS:
            break
        field.append(text)
        size += len(text)
    return field
