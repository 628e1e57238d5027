"""Content regions: which parts of an HTML page are its text, and which are the site's furniture.

Every page of a site carries its menu, banner and footer: indexed as text, a word of the menu
finds every page, snippets show navigation, and a change of the menu makes every page "changed".
A source's ``[regions]`` table says what is dropped from a page's text (never from its links:
a menu's links are still followed) and what alone is kept:

- ``landmarks`` (default true): drop the page's landmarks that are not its content: ``nav`` and
  ``aside`` elements, a ``header`` or ``footer`` that is not inside an ``article``, ``main`` or
  ``section`` (the page's banner and footer, not an article's heading), and elements whose ARIA
  ``role`` is ``navigation``, ``banner``, ``contentinfo``, ``complementary`` or ``search``;
- ``link_lists`` (default true): keep the lists (``ul``, ``ol``, ``menu``, ``dl``) that are only
  links (every word of them a link's, bar separators: ``|``, ``·``, ``,`` ...) out of the page's
  *prose*, what snippets are highlighted from and passages cut from. A list of links is navigation,
  not sentences: left in, its link texts ran on from the page's last sentence into snippets and
  passages ("... receipts attached. index.html", issue 91). They stay in the text: the words query
  finds them (a policy index page, a list of mailto: links) and the checksum covers them (listing
  pages that differ only in their links are not duplicates);
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
crawl parsed once. `scrapy explain` asks the same ``ContentRegions.text`` with ``explain=True`` for
what it kept and dropped and why (``RegionDecision``): recorded only when asked, so the crawl's
pages cost what they did.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from cssselect import GenericTranslator, SelectorError
from lxml import etree
from pydantic import Field, field_validator

from searchcrawl.content.extract import joined_text, visible_text
from searchcrawl.rules.tables import RuleTable, regular_expressions

LANDMARK_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")
# ``[@role]`` first: the few elements with a role are compared, not every element five times
# (a third of the cost of the whole expression, issue 102)
LANDMARKS = (
    "descendant::nav | descendant::aside"
    " | descendant::header[not(ancestor::article or ancestor::main or ancestor::section)]"
    " | descendant::footer[not(ancestor::article or ancestor::main or ancestor::section)]"
    " | descendant::*[@role][@role='navigation' or @role='banner' or @role='contentinfo' or @role='complementary'"
    " or @role='search']"
)
# a list with a link, and no word outside its links: what is left of its text outside them, less
# the separators between links, is blank
LINK_SEPARATORS = "|·•,;/»›>–—-"
# (the lists found by tag, not every element tested: a blank text node is passed over before its
# ancestors are walked; a list with words outside its links fails before its links are looked for)
LINK_LISTS = (
    "(descendant::ul | descendant::ol | descendant::menu | descendant::dl)"
    f"[not(descendant::text()[normalize-space(translate(., '{LINK_SEPARATORS}', ''))]"
    "[not(parent::script or parent::style)][not(ancestor::a)])]"
    "[descendant::a[@href]]"
)
EXCLUDE_ATTRIBUTE = "data-searchcrawl-exclude"
INCLUDE_ATTRIBUTE = "data-searchcrawl-include"
_LANDMARKS = etree.XPath(LANDMARKS)
_LINK_LISTS = etree.XPath(LINK_LISTS)
LINK_LISTS_FOUND = "link lists"  # what found them (``ContentRegions._found``)
LINK_LIST_REASON = "link list <"  # a decision's reason: ``link list <ul>``
# both marks in one pass over the page (each element's attributes looked at once, issue 102)
_MARKED = etree.XPath(f"descendant::*[@{EXCLUDE_ATTRIBUTE} or @{INCLUDE_ATTRIBUTE}]")
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
        return regular_expressions(values)


class RegionsTable(Selectors):
    """A source's ``[regions]`` table (the module's docstring)."""

    landmarks: bool = True
    link_lists: bool = True
    rules: list[RegionRule] = Field(default_factory=list)


@dataclass(frozen=True)
class RegionDecision:
    """One region of a page the regions kept or dropped, and what decided it (for `scrapy
    explain`): ``reasons`` such as ``selector "div.share"``, ``landmark <nav>``, ``link list <ul>``,
    ``role=search``, ``data-searchcrawl-exclude``; ``element`` the element as a reader finds it
    in the page's source (``<div id="notice" class="share">``, bounded); ``text`` its text (a kept
    region's less what is dropped inside it). A region inside another one dropped (or kept) is
    part of that one's, and not listed itself."""

    kept: bool
    reasons: tuple[str, ...]
    element: str
    text: str

    @property
    def prose_only(self) -> bool:
        """A link list alone: in the page's text, kept out of its prose (snippets, passages)."""
        return not self.kept and all(reason.startswith(LINK_LIST_REASON) for reason in self.reasons)


@dataclass(frozen=True)
class RegionText:
    """A page's text by its regions, and what was kept and dropped (for `scrapy explain`)."""

    text: str
    # the text less its link lists (``link_lists``), what snippets and passages are made of; None
    # when it is the text (no link list, or a page of link lists alone: never emptied)
    prose: str | None = None
    kept: tuple[str, ...] = ()  # the selectors that matched and kept
    dropped: tuple[str, ...] = ()  # the selectors that matched and dropped
    whole: bool = False  # the regions left no text: the whole page's is kept
    # asked for (``explain=True``) only: each region kept or dropped, in the page's order, and the
    # number of characters of the page's whole text
    decisions: tuple[RegionDecision, ...] = ()
    page_chars: int | None = None


class RuleMatch(NamedTuple):
    """The ``[[regions.rules]]`` entry that applies to a URL: its number (from 1), the pattern that
    matched, and the rule."""

    number: int
    pattern: str
    rule: RegionRule


class ContentRegions:
    """The regions of a source (the module's docstring), compiled once."""

    def __init__(self, table: RegionsTable | None = None) -> None:
        self.table = table or RegionsTable()
        self.rules = [([re.compile(p) for p in rule.patterns], rule) for rule in self.table.rules]

    def rule(self, url: str) -> RuleMatch | None:
        """The first ``[[regions.rules]]`` entry one of whose patterns matches ``url``, else None."""
        for number, (patterns, rule) in enumerate(self.rules, 1):
            for pattern in patterns:
                if pattern.search(url):
                    return RuleMatch(number, pattern.pattern, rule)
        return None

    def selectors(self, url: str) -> tuple[list[str], list[str]]:
        """The keep and drop selectors for ``url``: the table's, and the first matching rule's."""
        keep, drop = list(self.table.keep), list(self.table.drop)
        match = self.rule(url) if self.rules else None
        if match is not None:
            keep.extend(match.rule.keep)
            drop.extend(match.rule.drop)
        return keep, drop

    def text(self, body: Any, url: str, explain: bool = False, prose: bool = True) -> RegionText:
        """``body``'s text by the regions for ``url`` (its whole visible text when nothing is
        dropped or kept: the fast path of most pages without landmarks), and its prose where its
        link lists leave one of their own; ``explain``: with what was kept and dropped and why
        (``RegionText.decisions``), for `scrapy explain`. ``prose`` False: the text alone, the
        link lists not looked for (the dearest part: a page that is not indexed needs no prose)."""
        keep, drop = self.selectors(url)
        dropped_by: list[str] = []
        dropping: list[Any] = []
        link_lists_asked = self.table.link_lists and (prose or explain)
        marked = _MARKED(body)
        found_dropping = self._found(body, drop, marked, EXCLUDE_ATTRIBUTE, self.table.landmarks, link_lists_asked)
        link_lists: list[Any] = []
        for name, found in found_dropping:
            if name == LINK_LISTS_FOUND:  # out of the prose alone
                link_lists = found
                continue
            dropping.extend(found)
            dropped_by.append(name)
        kept_by: list[str] = []
        keeping: list[Any] = []
        found_keeping = self._found(body, keep, marked, INCLUDE_ATTRIBUTE, False)
        for name, found in found_keeping:
            keeping.extend(found)
            kept_by.append(name)
        roots = _outermost(keeping) or [body]
        without_lists = _text_without(body, roots, [*dropping, *link_lists]) if link_lists else None
        if not dropping and not keeping:
            text = visible_text(body)
            found_text = RegionText(text, _prose(without_lists, text))
        else:
            text = _text_without(body, roots, dropping)
            found_text = RegionText(text, _prose(without_lists, text), tuple(kept_by), tuple(dropped_by))
            if not text:
                found_text = RegionText(visible_text(body), None, tuple(kept_by), tuple(dropped_by), whole=True)
        if not explain:
            return found_text
        decisions = _decisions(body, found_keeping, found_dropping)
        whole = found_text.whole or not (dropping or keeping)
        page_chars = len(found_text.text) if whole else len(visible_text(body))
        return replace(found_text, decisions=decisions, page_chars=page_chars)

    @staticmethod
    def _found(
        body: Any, selectors: Sequence[str], marked: list[Any], attribute: str, landmarks: bool, link_lists: bool = False
    ) -> list[tuple[str, list[Any]]]:
        """What each selector finds, then the elements of ``marked`` with ``attribute``, the
        landmarks and link lists (when asked): (what found them, the elements), those that found any."""
        asked: list[tuple[str, Any]] = [(selector, compiled(selector)) for selector in selectors]
        asked.append((f"[{attribute}]", lambda _body: [element for element in marked if element.get(attribute) is not None]))
        if landmarks:
            asked.append(("landmarks", _LANDMARKS))
        if link_lists:
            asked.append((LINK_LISTS_FOUND, _LINK_LISTS))
        found = []
        for name, path in asked:
            try:
                # elements only: a comment or processing instruction an XPath selects holds no
                # visible text (and has no text nodes to read: kept, it failed the page)
                elements = [e for e in path(body) if isinstance(e, etree._Element) and isinstance(e.tag, str)]
            except etree.XPathEvalError:
                continue  # an XPath that is valid but not on this page (an unknown function)
            if elements:
                found.append((name, elements))
        return found


def _prose(prose: str | None, text: str) -> str | None:
    """The prose of a page whose text is ``text``: None when it is the text, or empty (a page of
    link lists alone keeps them: a page is never emptied)."""
    return prose if prose and prose != text else None


def _decisions(
    body: Any, keeping: list[tuple[str, list[Any]]], dropping: list[tuple[str, list[Any]]]
) -> tuple[RegionDecision, ...]:
    """The regions kept and dropped (``ContentRegions._found``'s, by what found them), each
    outermost one once with every reason that found it, in the page's order (explain only)."""
    reasons: dict[tuple[bool, Any], list[str]] = {}
    for kept, found in ((True, keeping), (False, dropping)):
        for name, elements in found:
            for element in elements:
                reasons.setdefault((kept, element), []).append(_reason(name, element))
    dropped = _outer([element for kept, element in reasons if not kept])
    regions = [(True, element) for element in _outer([element for kept, element in reasons if kept])]
    regions += [(False, element) for element in dropped]
    order = {element: number for number, element in enumerate(body.getroottree().iter())}
    regions.sort(key=lambda region: order.get(region[1], 0))
    return tuple(
        RegionDecision(
            kept,
            tuple(dict.fromkeys(reasons[kept, element])),
            _element(element),
            _text_without(body, [element], dropped) if kept else visible_text(element),
        )
        for kept, element in regions
    )


def _reason(name: str, element: Any) -> str:
    """What found ``element``, as `scrapy explain` says it: the selector, the attribute, or which
    landmark it is."""
    if name == "landmarks":
        tag, role = element.tag, element.get("role")
        if tag in ("nav", "aside") or role not in LANDMARK_ROLES:  # else a role made it one
            return f"landmark <{tag}>"
        return f"role={role}"
    if name == LINK_LISTS_FOUND:
        return f"{LINK_LIST_REASON}{element.tag}>"
    if name in (f"[{EXCLUDE_ATTRIBUTE}]", f"[{INCLUDE_ATTRIBUTE}]"):
        return name[1:-1]
    return f'selector "{name}"'


def _element(element: Any, width: int = 40) -> str:
    """The element as its page's source shows it, its id and class cut at ``width`` characters
    (a page may give them any length): ``<div id="x" class="share">``."""
    shown = [element.tag[:width]]
    for attribute in ("id", "class"):
        value = element.get(attribute)
        if value:
            value = " ".join(value.split())
            shown.append(f'{attribute}="{value[:width]}{"..." if len(value) > width else ""}"')
    return f"<{' '.join(shown)}>"


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
