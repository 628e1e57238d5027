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
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from cssselect import GenericTranslator, SelectorError
from lxml import etree
from pydantic import Field, field_validator

from searchcrawl.content.extract import joined_text, visible_text
from searchcrawl.rules.tables import RuleTable, regular_expressions

LANDMARK_ROLES = frozenset(("navigation", "banner", "contentinfo", "complementary", "search"))
_LANDMARK_TAGS = frozenset(("nav", "aside"))
_BANNER_TAGS = frozenset(("header", "footer"))  # landmarks unless inside one of _SECTIONING
_SECTIONING = ("article", "main", "section")
# a list with a link, and no word outside its links: what is left of its text outside them, less
# the separators between links and XML's white space, is blank (as XPath's normalize-space reads it)
_LIST_TAGS = ("ul", "ol", "menu", "dl")
_TRACKED = frozenset(("a", *_SECTIONING, *_LIST_TAGS))  # the elements whose opening changes what is read
LINK_SEPARATORS = "|·•,;/»›>–—-"
_WORD = re.compile("[^" + re.escape(LINK_SEPARATORS) + " \t\n\r]")
_UNREAD = frozenset(("script", "style"))  # their own text is not the page's
EXCLUDE_ATTRIBUTE = "data-searchcrawl-exclude"
INCLUDE_ATTRIBUTE = "data-searchcrawl-include"
LINK_LISTS_FOUND = "link lists"  # what found them (``ContentRegions._found``)
LINK_LIST_REASON = "link list <"  # a decision's reason: ``link list <ul>``
_TEXT_NODES = etree.XPath("descendant-or-self::text()[not(parent::script or parent::style)]", smart_strings=False)


class _Walked(NamedTuple):
    """What one walk of a page found (``_walked``), each in the page's order."""

    marked: list[Any]  # elements with either of the site owner's attributes
    landmarks: list[Any]
    link_lists: list[Any]


def _walked(body: Any, landmarks: bool, link_lists: bool) -> _Walked:
    """The elements below ``body`` its site's owner marked, its landmarks and its link lists (the
    last two when asked), in one walk of the tree. Three XPaths walked it once each, and the link
    lists' read the text of a nested list again for each list around it: on the Nutch site's
    Javadoc, the regions' cost of a page fell by a quarter (issue 102). Iterative (lxml's
    ``iterwalk``), so a page's nesting sets no Python recursion depth. Without link lists (a page
    that is not indexed: half the Nutch site's), libxml2 finds the candidates in C
    (``_candidates``) and only those become Python objects: 551 against 700 us a Javadoc page."""
    if not link_lists:
        return _candidates(body, landmarks)
    walk = _Walk(body, link_lists)
    marked: list[Any] = []
    found_landmarks: list[Any] = []
    lists, tracking = walk.lists, walk.tracking
    # a comment or processing instruction comes once, as its own event: only its tail is read
    events = etree.iterwalk(body, events=("start", "end", "comment", "pi"))
    next(events)  # the body itself is none of its regions
    for event, element in events:
        if event == "start":
            tag = element.tag
            if element.get(EXCLUDE_ATTRIBUTE) is not None or element.get(INCLUDE_ATTRIBUTE) is not None:
                marked.append(element)
            if landmarks and _landmark(element, tag, walk.sectioned):
                found_landmarks.append(element)
            if tag in tracking:
                walk.open(element, tag)
            if lists and not walk.in_links and tag not in _UNREAD:
                walk.read(element.text)
        elif element is body:
            break
        else:  # an element's end, a comment or a processing instruction: the text after it
            if walk.tracked and walk.tracked[-1] is element:
                walk.close(element)
            if lists and not walk.in_links:
                walk.read(element.tail)
    walk.found_lists.sort(key=lambda found: found[0])
    return _Walked(marked, found_landmarks, [element for _, element in walk.found_lists])


# What may be a landmark or marked, below the body, in the page's order: the elements of a
# landmark's tag or with a role, and those with either of the site owner's attributes. One step
# with a predicate, not a union of steps: libxml2 merges a union's node sets pairwise, and a page
# of many navs, asides and roles took quadratic time (16,000 of each: 80 s)
_LANDMARK_CANDIDATES = etree.XPath(
    "descendant::*["
    + " or ".join(
        [
            *(f"self::{tag}" for tag in sorted(_LANDMARK_TAGS | _BANNER_TAGS)),
            "@role",
            f"@{EXCLUDE_ATTRIBUTE}",
            f"@{INCLUDE_ATTRIBUTE}",
        ]
    )
    + "]"
)
_MARKED_CANDIDATES = etree.XPath(f"descendant::*[@{EXCLUDE_ATTRIBUTE} or @{INCLUDE_ATTRIBUTE}]")


def _candidates(body: Any, landmarks: bool) -> _Walked:
    """``_walked``'s marked elements and landmarks without link lists, the same elements in the
    same order (tests/content/test_regions.py holds them to the walk's): the candidates found by
    XPath, each then decided as the walk decides it (a banner's sectioning ancestors are the
    walk's count of them)."""
    candidates = (_LANDMARK_CANDIDATES if landmarks else _MARKED_CANDIDATES)(body)
    marked = [e for e in candidates if e.get(EXCLUDE_ATTRIBUTE) is not None or e.get(INCLUDE_ATTRIBUTE) is not None]
    if not landmarks:
        return _Walked(marked, [], [])
    # a banner inside a sectioning element is none (the walk's count of them); the body itself is
    # no region: a sectioning body counts only for what is above it
    banners = [element for element in candidates if element.tag in _BANNER_TAGS]
    above = next(body.iterancestors(*_SECTIONING), None) is not None
    sectioned = dict(zip(banners, _inside(banners, lambda node: node.tag in _SECTIONING, {body: above}), strict=True))
    found_landmarks = [element for element in candidates if _landmark(element, element.tag, sectioned.get(element, False))]
    return _Walked(marked, found_landmarks, [])


def _landmark(element: Any, tag: str, sectioned: int) -> bool:
    """Whether ``element`` is a landmark (the module's docstring), inside ``sectioned``
    sectioning elements."""
    return tag in _LANDMARK_TAGS or (tag in _BANNER_TAGS and not sectioned) or element.get("role") in LANDMARK_ROLES


class _Walk:
    """``_walked``'s state: the open elements that change what is read (links, sectioning
    elements, lists), and the link lists found."""

    __slots__ = ("found_lists", "in_links", "lists", "opened", "sectioned", "tracked", "tracking")

    def __init__(self, body: Any, link_lists: bool) -> None:
        # the open lists, innermost last: [the list, a word outside links in it, a link in it, its number]
        self.lists: list[list[Any]] = []
        self.found_lists: list[tuple[int, Any]] = []
        self.tracked: list[Any] = []  # the open elements of ``tracking``, innermost last
        self.tracking = _TRACKED if link_lists else _SECTIONING  # links and lists matter to link lists alone
        self.in_links = sum(1 for _ in body.iterancestors("a"))
        self.sectioned = sum(1 for _ in body.iterancestors(*_SECTIONING))
        self.opened = 0  # lists opened so far: a list's place in the page's order

    def open(self, element: Any, tag: str) -> None:
        self.tracked.append(element)
        if tag == "a":
            self.in_links += 1
            if self.lists and element.get("href") is not None:
                self.lists[-1][2] = True
        elif tag in _SECTIONING:
            self.sectioned += 1
        else:
            self.lists.append([element, False, False, self.opened])
            self.opened += 1

    def read(self, text: str | None) -> None:
        """Text inside the innermost open list, outside links: a word in it makes it no link list."""
        if text and _WORD.search(text) is not None:
            self.lists[-1][1] = True

    def close(self, element: Any) -> None:
        self.tracked.pop()
        tag = element.tag
        if tag == "a":
            self.in_links -= 1
        elif tag in _SECTIONING:
            self.sectioned -= 1
        else:
            _, worded, linked, number = self.lists.pop()
            if linked and not worded:
                self.found_lists.append((number, element))
            if self.lists:
                outer = self.lists[-1]
                outer[1] = outer[1] or worded
                outer[2] = outer[2] or linked


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
        walked = _walked(body, self.table.landmarks, self.table.link_lists and (prose or explain))
        found_dropping = self._found(
            body, drop, walked.marked, EXCLUDE_ATTRIBUTE, (("landmarks", walked.landmarks), (LINK_LISTS_FOUND, walked.link_lists))
        )
        link_lists: list[Any] = []
        for name, found in found_dropping:
            if name == LINK_LISTS_FOUND:  # out of the prose alone
                link_lists = found
                continue
            dropping.extend(found)
            dropped_by.append(name)
        kept_by: list[str] = []
        keeping: list[Any] = []
        found_keeping = self._found(body, keep, walked.marked, INCLUDE_ATTRIBUTE)
        for name, found in found_keeping:
            keeping.extend(found)
            kept_by.append(name)
        roots = _outermost(keeping) or [body]
        if not dropping and not keeping:
            text = visible_text(body)
            without_lists = _text_without(body, roots, link_lists) if link_lists else None
            found_text = RegionText(text, _prose(without_lists, text))
        else:
            text, without_lists = _text_and_prose(body, roots, dropping, link_lists)
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
        body: Any, selectors: Sequence[str], marked: list[Any], attribute: str, walked: Sequence[tuple[str, list[Any]]] = ()
    ) -> list[tuple[str, list[Any]]]:
        """What each selector finds, then the elements of ``marked`` with ``attribute``, then
        ``walked``'s (the landmarks and link lists the page's walk found): (what found them, the
        elements), those that found any."""
        found = []
        for selector in selectors:
            try:
                # elements only: a comment or processing instruction an XPath selects holds no
                # visible text (and has no text nodes to read: kept, it failed the page)
                elements = [e for e in compiled(selector)(body) if isinstance(e, etree._Element) and isinstance(e.tag, str)]
            except etree.XPathEvalError:
                continue  # an XPath that is valid but not on this page (an unknown function)
            if elements:
                found.append((selector, elements))
        for name, elements in (
            (f"[{attribute}]", [element for element in marked if element.get(attribute) is not None]),
            *walked,
        ):
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
    dropped = outer_elements([element for kept, element in reasons if not kept])
    regions = [(True, element) for element in outer_elements([element for kept, element in reasons if kept])]
    regions += [(False, element) for element in dropped]
    order = {element: number for number, element in enumerate(body.getroottree().iter())}
    regions.sort(key=lambda region: order.get(region[1], 0))
    # each kept region's text less what is dropped (``_text_without``'s), the dropped swapped out
    # once for all of them: once for each took the kept times the dropped (4,000 of each: 35 s)
    kept_texts: dict[Any, str] = {}
    swapped: list[tuple[Any, Any]] = []
    try:
        _swap_out(outer_elements(dropped), swapped)
        for kept, element in regions:
            if kept:
                kept_texts[element] = joined_text(_TEXT_NODES(element))
    finally:
        _put_back(swapped)
    return tuple(
        RegionDecision(
            kept,
            tuple(dict.fromkeys(reasons[kept, element])),
            _element(element),
            kept_texts[element] if kept else visible_text(element),
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


def outer_elements(elements: Sequence[Any], within: Any = None) -> list[Any]:
    """The ``elements`` none of whose ancestors is among them, each once, in their order; with
    ``within``, only its descendants count as ancestors (it and those above it are no part of
    what is read)."""
    chosen = set(elements)
    inside = _inside(elements, chosen.__contains__, {} if within is None else {within: False})
    return list(dict.fromkeys(element for element, covered in zip(elements, inside, strict=True) if not covered))


def _inside(elements: Sequence[Any], chosen: Callable[[Any], bool], known: dict[Any, bool]) -> list[bool]:
    """For each of ``elements``, whether one of its ancestors is ``chosen``; ``known``: what is
    known of some ancestors already (whether they or one above them is chosen), where the walk
    up stops, kept and added to. Each ancestor is looked at once for all of them: reading every
    element's ancestors took time as the elements times the depth, and a page of 16,000 landmarks
    2,000 elements deep took 9 s (a hostile-input review, issue 102)."""
    found: list[bool] = []
    for element in elements:
        path: list[Any] = []
        node = element.getparent()
        inside = False
        while node is not None:
            seen = known.get(node)
            if seen is not None:
                inside = seen
                break
            if chosen(node):
                inside = True
                break
            path.append(node)
            node = node.getparent()
        for passed in path:
            known[passed] = inside
        found.append(inside)
    return found


def _outermost(elements: list[Any]) -> list[Any]:
    """``outer_elements``' elements in document order."""
    outer = outer_elements(elements)
    if len(outer) < 2:
        return outer
    order = {element: number for number, element in enumerate(outer[0].getroottree().iter())}
    return sorted(outer, key=lambda element: order.get(element, 0))


def _text_without(body: Any, roots: list[Any], dropping: list[Any]) -> str:
    """The visible text of ``roots`` less the ``dropping`` elements: each is swapped for an empty
    placeholder (keeping the text that follows it) while the text is read, then put back, so the
    tree the crawl parsed is the same after (its links are taken from the whole page)."""
    swapped: list[tuple[Any, Any]] = []
    try:
        _swap_out(outer_elements(dropping), swapped)
        return joined_text([node for root in roots for node in _TEXT_NODES(root)])
    finally:
        _put_back(swapped)


def _text_and_prose(body: Any, roots: list[Any], dropping: list[Any], link_lists: list[Any]) -> tuple[str, str | None]:
    """``_text_without(body, roots, dropping)``, and the same less ``link_lists`` too (None when
    there are none), from one read of the page's text nodes (issue 102: two reads had been a
    fifth of the cost of a page's regions): each link list is swapped for a placeholder holding a
    marker no page can know, its own text nodes read apart and put where its marker was read.
    The prose is always the text less its link lists: a kept root that is itself dropped or a link
    list keeps what is dropped inside it out of its prose (two reads had read it back in)."""
    if not link_lists:
        return _text_without(body, roots, dropping), None
    marker = f"\ue000{secrets.token_hex(8)}:"
    swapped: list[tuple[Any, Any]] = []
    try:
        _swap_out(outer_elements(dropping), swapped)
        lists = _swap_out(outer_elements(link_lists), swapped, marker)
        nodes = [node for root in roots for node in _TEXT_NODES(root)]
        lists_nodes = [_TEXT_NODES(element) for element in lists]
    finally:
        _put_back(swapped)
    text: list[str] = []
    prose: list[str] = []
    for node in nodes:
        if node.startswith(marker):
            text.extend(lists_nodes[int(node[len(marker) :])])
        else:
            text.append(node)
            prose.append(node)
    return joined_text(text), joined_text(prose)


def _swap_out(elements: list[Any], swapped: list[tuple[Any, Any]], marker: str | None = None) -> list[Any]:
    """Swap each of ``elements`` still in the tree for a placeholder that keeps the text after it
    (its tail), recorded in ``swapped`` for ``_put_back``; the elements swapped. With ``marker``,
    each placeholder holds it and the element's number among those swapped."""
    out: list[Any] = []
    for element in elements:
        parent = element.getparent()
        if parent is None:
            continue  # the root, or inside one swapped out already
        placeholder = etree.Element("span")
        if marker is not None:
            placeholder.text = f"{marker}{len(out)}"
        placeholder.tail = element.tail
        parent.replace(element, placeholder)
        swapped.append((placeholder, element))
        out.append(element)
    return out


def _put_back(swapped: list[tuple[Any, Any]]) -> None:
    """Undo ``_swap_out``: the tree as it was, each element with its own tail."""
    for placeholder, element in reversed(swapped):
        tail = placeholder.tail
        placeholder.getparent().replace(placeholder, element)
        element.tail = tail
