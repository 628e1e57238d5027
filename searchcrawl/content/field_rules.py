"""Field rules: values a site shows in its own markup (a date, a department, a document number)
taken into typed Solr fields.

A source's ``[[fields]]`` entries each name a search attribute (``name``), its ``type`` (as
``search_attributes``: ``string``, ``strings``, ``text``, ``int``, ``long``, ``double``, ``date``,
``boolean``; the Solr field is the name with the type's suffix, ``published_dt``) and where the
value is found, exactly one of:

- ``css`` or ``xpath``: the matching elements' text, or with ``attribute`` that attribute's value
  (``<time datetime="...">``, ``<meta name="dept" content="...">``);
- ``json_ld``: a property of the page's JSON-LD (``datePublished``, ``author.name``: a dotted path
  into each ``<script type="application/ld+json">`` object, and into the objects of an ``@graph``);
- ``url = true``: the page's URL itself (with ``regex``: ``/docs/(DOC-\\d+)/``).

``regex`` (optional) is applied to each value found: its first group (or the whole match) is the
value, a value it does not match is left out. ``patterns`` (optional) are regular expressions on
the URL: the rule applies to the pages one of them matches. A ``strings`` field keeps every value
found (the index's only multi-valued type of attribute); the others the first. At most 100 values and 10,000 characters each are
kept from a page. A rule whose selector, expression or JSON path does not parse refuses the source
file. A value that is not of its type (a date that is no date) is left out, and said at WARNING
once per rule and crawl (then at DEBUG): a site's markup that changed shows once, not per page.

Plain logic on the tree the crawl parsed once; the attributes pipeline applies it to HTML pages.
Fields an agent gives win over these, and these over the ``attributes`` mapping's.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from lxml import etree
from pydantic import Field, field_validator, model_validator

from searchcrawl.content.extract import TYPE_SUFFIXES, typed_value
from searchcrawl.content.regions import compiled
from searchcrawl.rules.tables import RuleTable, regular_expression, regular_expressions

logger = logging.getLogger(__name__)

MAX_VALUES = 100
MAX_VALUE_CHARS = 10_000
MAX_JSON_LD_BYTES = 1_000_000  # a script larger than this is not read
MAX_JSON_LD_DEPTH = 64  # objects and lists nested deeper are not walked
_NAME = re.compile(r"[a-z][a-z0-9_]{0,60}")
_JSON_LD = etree.XPath("//script[@type='application/ld+json']")
FieldType = Literal["string", "strings", "text", "int", "long", "double", "date", "boolean"]


class FieldRule(RuleTable):
    """A ``[[fields]]`` entry (the module's docstring)."""

    name: str
    type: FieldType = "string"
    css: str | None = None
    xpath: str | None = None
    attribute: str | None = None
    json_ld: str | None = None
    url: bool = False
    regex: str | None = None
    patterns: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.fullmatch(value):
            raise ValueError(f"expected a field name of lower-case letters, digits and '_', got {value!r}")
        return value

    @field_validator("regex")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            regular_expression(value)
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, values: list[str]) -> list[str]:
        return regular_expressions(values)

    @field_validator("json_ld")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and not all(re.fullmatch(r"@?[A-Za-z_][A-Za-z0-9_:-]*", part) for part in value.split(".")):
            raise ValueError(f"expected a dotted JSON-LD property path such as 'author.name', got {value!r}")
        return value

    @model_validator(mode="after")
    def _one_place(self) -> FieldRule:
        places = [name for name in ("css", "xpath", "json_ld") if getattr(self, name) is not None] + (["url"] if self.url else [])
        if len(places) != 1:
            raise ValueError(
                f"field {self.name!r}: expected exactly one of css, xpath, json_ld or url = true, got {places or 'none'}"
            )
        if self.css is not None:
            compiled(self.css)
        if self.xpath is not None:
            compiled("xpath:" + self.xpath)
        if self.attribute is not None and self.css is None and self.xpath is None:
            raise ValueError(f"field {self.name!r}: 'attribute' goes with css or xpath")
        return self

    @property
    def target(self) -> str:
        return self.name + TYPE_SUFFIXES[self.type]


class FieldRules:
    """A source's field rules, compiled once; ``fields(root, url)`` the values of a page."""

    def __init__(self, rules: Sequence[FieldRule]) -> None:
        self.rules = [
            (rule, [re.compile(p) for p in rule.patterns], re.compile(rule.regex) if rule.regex else None) for rule in rules
        ]
        self._warned: set[str] = set()

    def fields(self, root: Any, url: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        json_ld: list[Any] | None = None
        for rule, patterns, regex in self.rules:
            if patterns and not any(pattern.search(url) for pattern in patterns):
                continue
            if rule.json_ld is not None and json_ld is None:
                json_ld = _json_ld_objects(root)
            raw = list(self._raw(rule, root, url, json_ld or []))
            values = []
            for value in raw[:MAX_VALUES]:
                value = " ".join(str(value).split())[:MAX_VALUE_CHARS]
                if regex is not None:
                    match = regex.search(value)
                    if match is None:
                        continue
                    value = match.group(1) if match.groups() else match.group(0)
                if value:
                    values.append(value)
            typed = self._typed(rule, values, url)
            if typed:
                found[rule.target] = typed if rule.type == "strings" else typed[0]
        return found

    @staticmethod
    def _raw(rule: FieldRule, root: Any, url: str, json_ld: list[Any]) -> Iterator[Any]:
        if rule.url:
            yield url
        elif rule.json_ld is not None:
            for item in json_ld:
                yield from _property(item, rule.json_ld.split("."))
        else:
            path = compiled(rule.css) if rule.css is not None else compiled("xpath:" + str(rule.xpath))
            try:
                matched = path(root)
            except etree.XPathEvalError:
                return
            for element in matched if isinstance(matched, list) else [matched]:
                if isinstance(element, etree._Element):
                    if rule.attribute is not None:
                        value = element.get(rule.attribute)
                        if value is not None:
                            yield value
                    else:
                        yield " ".join(element.itertext())
                elif isinstance(element, str | int | float):
                    yield element

    def _typed(self, rule: FieldRule, values: list[str], url: str) -> list[Any]:
        typed: list[Any] = []
        for value in values:
            try:
                converted = typed_value(value, rule.type)
            except ValueError as exc:
                (logger.debug if rule.target in self._warned else logger.warning)(
                    "Field rule %r: a value left out, not of its type %s (%s), on %s%s",
                    rule.name,
                    rule.type,
                    exc,
                    url,
                    "" if rule.target in self._warned else " (said once a crawl; later ones at DEBUG)",
                )
                self._warned.add(rule.target)
                continue
            typed.extend(converted if isinstance(converted, list) else [converted])
        return typed


def _json_ld_objects(root: Any) -> list[Any]:
    """The page's JSON-LD objects (a top-level list's items, an @graph's objects); a script that
    does not parse, or is too large, is passed over."""
    objects: list[Any] = []
    for script in _JSON_LD(root):
        text = script.text or ""
        if len(text) > MAX_JSON_LD_BYTES:
            continue
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):  # a hostile script of lists nested thousands deep
            continue
        for item in data if isinstance(data, list) else [data]:
            if isinstance(item, dict):
                objects.append(item)
                graph = item.get("@graph")
                if isinstance(graph, list):
                    objects.extend(node for node in graph if isinstance(node, dict))
    return objects


def _property(item: Any, path: list[str], depth: int = 0) -> Iterator[Any]:
    """The values at a dotted path (lists walked, an object's ``@value`` or ``name`` at its end),
    at most MAX_JSON_LD_DEPTH levels down."""
    if depth > MAX_JSON_LD_DEPTH:
        return
    if not path:
        if isinstance(item, list):
            for value in item:
                yield from _property(value, [], depth + 1)
        elif isinstance(item, dict):
            for key in ("@value", "name", "@id"):
                if isinstance(item.get(key), str | int | float):
                    yield item[key]
                    return
        elif isinstance(item, str | int | float) and not isinstance(item, bool):
            yield item
        return
    if isinstance(item, list):
        for value in item:
            yield from _property(value, path, depth + 1)
    elif isinstance(item, dict) and path[0] in item:
        yield from _property(item[path[0]], path[1:], depth + 1)
