"""Content regions: which parts of an HTML page are its text, and which are the site's furniture.

Every page of a site carries its menu, banner and footer: indexed as text, a word of the menu
finds every page, snippets show navigation, and a change of the menu makes every page "changed".
A source's ``[regions]`` table says what is dropped from a page's text (never from its links:
a menu's links are still followed) and what alone is kept:

- ``landmarks`` (default true): drop the page's landmarks that are not its content: ``nav`` and
  ``aside`` elements, a ``header`` or ``footer`` that is not inside an ``article``, ``main`` or
  ``section`` (the page's banner and footer, not an article's heading), and elements whose ARIA
  ``role`` is ``navigation``, ``banner``, ``contentinfo``, ``complementary`` or ``search``;
- ``drop``: selectors of more elements to drop (a share bar, a cookie notice);
- ``keep``: selectors of the elements that alone are the text (``main``, ``article.news``), when
  one matches the page; with none matching, the whole page (less what is dropped);
- ``[[regions.rules]]``: ``patterns`` (regular expressions on the URL; the first rule whose
  pattern matches applies) with their own ``keep`` and ``drop``, added to the table's.

A selector is CSS (``div.share``, ``#cookie-notice``) or, prefixed ``xpath:``, XPath 1.0; one that
does not parse refuses the source file. Site owners mark regions themselves: an element with a
``data-searchcrawl-exclude`` attribute is dropped, one with ``data-searchcrawl-include`` is kept as
a ``keep`` selector's. A page whose kept text would be empty (everything in its banner, say) keeps
its whole text: a page is never emptied by its regions. The checksum and duplicate detection read
the kept text, so only a change of the content makes a page "changed".

Plain logic on lxml trees, tested directly; the attributes pipeline applies it to the tree the
crawl parsed once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cssselect import GenericTranslator, SelectorError
from lxml import etree
from pydantic import Field, field_validator

from searchcrawl.content.extract import joined_text, visible_text
from searchcrawl.rules.tables import RuleTable

LANDMARKS = (
    "descendant::nav | descendant::aside"
    " | descendant::header[not(ancestor::article or ancestor::main or ancestor::section)]"
    " | descendant::footer[not(ancestor::article or ancestor::main or ancestor::section)]"
    " | descendant::*[@role='navigation' or @role='banner' or @role='contentinfo' or @role='complementary'"
    " or @role='search']"
)
EXCLUDE_ATTRIBUTE = "data-searchcrawl-exclude"
INCLUDE_ATTRIBUTE = "data-searchcrawl-include"
_LANDMARKS = etree.XPath(LANDMARKS)
_MARKED = {
    EXCLUDE_ATTRIBUTE: etree.XPath(f"descendant::*[@{EXCLUDE_ATTRIBUTE}]"),
    INCLUDE_ATTRIBUTE: etree.XPath(f"descendant::*[@{INCLUDE_ATTRIBUTE}]"),
}
_TEXT_NODES = etree.XPath("descendant-or-self::text()[not(parent::script or parent::style)]", smart_strings=False)


@functools.lru_cache(maxsize=512)
def compiled(selector: str) -> etree.XPath:
    """A CSS selector, or an ``xpath:`` one, as an XPath relative to the body; ValueError saying
    why when it does not parse."""
    text = selector.strip()
    if not text:
        raise ValueError("an empty selector")
    try:
        if text.startswith("xpath:"):
            return etree.XPath(text[len("xpath:") :].strip())
        return etree.XPath(GenericTranslator().css_to_xpath(text, prefix="descendant::"))
    except (SelectorError, etree.XPathSyntaxError, etree.XPathEvalError) as exc:
        kind = "XPath" if text.startswith("xpath:") else "CSS"
        raise ValueError(f"{selector!r} is not a {kind} selector: {exc}") from None


def _selectors(values: list[str]) -> list[str]:
    for value in values:
        compiled(value)
    return values


class Selectors(RuleTable):
    """What a ``[regions]`` table and its rules share: the selectors kept and dropped, each
    checked when the source file is read."""

    keep: list[str] = Field(default_factory=list)
    drop: list[str] = Field(default_factory=list)

    @field_validator("keep", "drop")
    @classmethod
    def _parse(cls, values: list[str]) -> list[str]:
        return _selectors(values)


class RegionRule(Selectors):
    """A ``[[regions.rules]]`` entry: the URLs it applies to and its own selectors."""

    patterns: list[str] = Field(min_length=1)

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, values: list[str]) -> list[str]:
        for value in values:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"{value!r} is not a regular expression: {exc}") from None
        return values


class RegionsTable(Selectors):
    """A source's ``[regions]`` table (the module's docstring)."""

    landmarks: bool = True
    rules: list[RegionRule] = Field(default_factory=list)


@dataclass(frozen=True)
class RegionText:
    """A page's text by its regions, and what was kept and dropped (for `scrapy explain`)."""

    text: str
    kept: tuple[str, ...] = ()  # the selectors that matched and kept
    dropped: tuple[str, ...] = ()  # the selectors that matched and dropped
    whole: bool = False  # the regions left no text: the whole page's is kept


class ContentRegions:
    """The regions of a source (the module's docstring), compiled once."""

    def __init__(self, table: RegionsTable | None = None) -> None:
        self.table = table or RegionsTable()
        self.rules = [([re.compile(p) for p in rule.patterns], rule) for rule in self.table.rules]

    def selectors(self, url: str) -> tuple[list[str], list[str]]:
        """The keep and drop selectors for ``url``: the table's, and the first matching rule's."""
        keep, drop = list(self.table.keep), list(self.table.drop)
        for patterns, rule in self.rules:
            if any(pattern.search(url) for pattern in patterns):
                keep.extend(rule.keep)
                drop.extend(rule.drop)
                break
        return keep, drop

    def text(self, body: Any, url: str) -> RegionText:
        """``body``'s text by the regions for ``url`` (its whole visible text when nothing is
        dropped or kept: the fast path of most pages without landmarks)."""
        keep, drop = self.selectors(url)
        dropped_by: list[str] = []
        dropping: list[Any] = []
        for name, found in self._found(body, drop, EXCLUDE_ATTRIBUTE, self.table.landmarks):
            dropping.extend(found)
            dropped_by.append(name)
        kept_by: list[str] = []
        keeping: list[Any] = []
        for name, found in self._found(body, keep, INCLUDE_ATTRIBUTE, False):
            keeping.extend(found)
            kept_by.append(name)
        if not dropping and not keeping:
            return RegionText(visible_text(body))
        text = _text_without(body, _outermost(keeping) or [body], dropping)
        if not text:
            return RegionText(visible_text(body), tuple(kept_by), tuple(dropped_by), whole=True)
        return RegionText(text, tuple(kept_by), tuple(dropped_by))

    @staticmethod
    def _found(body: Any, selectors: Sequence[str], attribute: str, landmarks: bool) -> list[tuple[str, list[Any]]]:
        asked = [(selector, compiled(selector)) for selector in selectors]
        asked.append((f"[{attribute}]", _MARKED[attribute]))
        if landmarks:
            asked.append(("landmarks", _LANDMARKS))
        found = []
        for name, path in asked:
            try:
                elements = [element for element in path(body) if isinstance(element, etree._Element)]
            except etree.XPathEvalError:
                continue  # an XPath that is valid but not on this page (an unknown function)
            if elements:
                found.append((name, elements))
        return found


def _outer(elements: list[Any]) -> list[Any]:
    """The elements none of whose ancestors is among them (each once)."""
    chosen = set(elements)
    unique = dict.fromkeys(element for element in elements if not any(a in chosen for a in element.iterancestors()))
    return list(unique)


def _outermost(elements: list[Any]) -> list[Any]:
    """``_outer``'s elements in document order."""
    outer = _outer(elements)
    if len(outer) < 2:
        return outer
    order = {element: number for number, element in enumerate(outer[0].getroottree().iter())}
    return sorted(outer, key=lambda element: order.get(element, 0))


def _text_without(body: Any, roots: list[Any], dropping: list[Any]) -> str:
    """The visible text of ``roots`` less the ``dropping`` elements: each is swapped for an empty
    placeholder (keeping the text that follows it) while the text is read, then put back, so the
    tree the crawl parsed is the same after (its links are taken from the whole page)."""
    swapped = []
    try:
        for element in _outer(dropping):
            parent = element.getparent()
            if parent is None:
                continue
            placeholder = etree.Element("span")
            placeholder.tail = element.tail
            parent.replace(element, placeholder)
            swapped.append((placeholder, element))
        return joined_text([node for root in roots for node in _TEXT_NODES(root)])
    finally:
        for placeholder, element in reversed(swapped):
            tail = placeholder.tail
            placeholder.getparent().replace(placeholder, element)
            element.tail = tail
