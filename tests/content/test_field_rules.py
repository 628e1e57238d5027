"""Field rules (searchcrawl/content/field_rules.py): a page's own values into typed fields."""

from __future__ import annotations

import logging

import pytest
from lxml import html
from pydantic import ValidationError

from searchcrawl.config.source import SourceSettings
from searchcrawl.content.field_rules import FieldRule, FieldRules

PAGE = """<html><head><title>Travel policy</title>
<meta name="dept" content="Finance">
<script type="application/ld+json">{"@context": "https://schema.org", "@graph": [
  {"@type": "Article", "datePublished": "2026-03-01", "author": [{"name": "Ann"}, {"name": "Bo"}],
   "wordCount": 412}]}</script>
<script type="application/ld+json">not json at all</script>
</head><body>
<p>Document <span class="docno">DOC-4411</span>, revision <span class="rev">7</span>.</p>
<time datetime="2026-02-28T09:30:00Z">last week</time>
<ul class="tags"><li>travel</li><li>expenses</li></ul>
</body></html>"""
URL = "https://intranet.example/policies/2026/travel"


def rules(*entries: dict[str, object]) -> FieldRules:
    return FieldRules([FieldRule.model_validate(entry) for entry in entries])


def test_values_from_elements_attributes_json_ld_and_the_url() -> None:
    found = rules(
        {"name": "docno", "css": "span.docno"},
        {"name": "revision", "type": "int", "css": "span.rev"},
        {"name": "department", "css": "meta[name=dept]", "attribute": "content"},
        {"name": "reviewed", "type": "date", "xpath": "//time/@datetime"},
        {"name": "tags", "type": "strings", "css": "ul.tags li"},
        {"name": "published", "type": "date", "json_ld": "datePublished"},
        {"name": "authors", "type": "strings", "json_ld": "author.name"},
        {"name": "words", "type": "long", "json_ld": "wordCount"},
        {"name": "year", "type": "int", "url": True, "regex": r"/(\d{4})/"},
    ).fields(html.fromstring(PAGE), URL)
    assert found == {
        "docno_s": "DOC-4411",
        "revision_i": 7,
        "department_s": "Finance",
        "reviewed_dt": "2026-02-28T09:30:00Z",
        "tags_ss": ["travel", "expenses"],
        "published_dt": "2026-03-01T00:00:00Z",
        "authors_ss": ["Ann", "Bo"],
        "words_l": 412,
        "year_i": 2026,
    }


def test_patterns_choose_the_pages_and_a_regex_that_misses_leaves_nothing() -> None:
    ruled = rules({"name": "docno", "css": "span.docno", "patterns": ["/news/"]}, {"name": "x", "url": True, "regex": "zzz"})
    assert ruled.fields(html.fromstring(PAGE), URL) == {}


def test_a_value_not_of_its_type_is_left_out_and_said_once(caplog: pytest.LogCaptureFixture) -> None:
    ruled = rules({"name": "revision", "type": "date", "css": "span.rev"})
    with caplog.at_level(logging.DEBUG, logger="searchcrawl.content.field_rules"):
        for _ in range(3):
            assert ruled.fields(html.fromstring(PAGE), URL) == {}
    warnings = [record for record in caplog.records if record.levelno == logging.WARNING]
    assert len(warnings) == 1 and "revision" in warnings[0].getMessage()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "a", "css": "span[[["}, "is not a CSS selector"),
        ({"name": "a", "xpath": "//span[@"}, "is not a XPath selector"),
        ({"name": "a", "css": "p", "regex": "(open"}, "is not a regular expression"),
        ({"name": "a", "css": "p", "xpath": "//p"}, "exactly one of"),
        ({"name": "a"}, "exactly one of"),
        ({"name": "A b", "css": "p"}, "field name"),
        ({"name": "a", "json_ld": "author..name"}, "JSON-LD property path"),
        ({"name": "a", "json_ld": "x", "attribute": "content"}, "'attribute' goes with css or xpath"),
        ({"name": "a", "css": "p", "type": "datetime"}, "type"),
    ],
)
def test_a_rule_that_does_not_parse_refuses_the_source_file(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SourceSettings.model_validate({"seeds": ["https://x/"], "fields": [entry]})


def test_hostile_pages_are_bounded() -> None:
    many = "<html><body>" + "<b>1</b>" * 5000 + "</body></html>"
    found = rules({"name": "n", "type": "strings", "css": "b"}).fields(html.fromstring(many), URL)
    assert len(found["n_ss"]) == 100


@pytest.mark.parametrize("depth", [900, 100_000])
def test_json_ld_nested_beyond_reason_is_passed_over(depth: int) -> None:
    """A hostile page's JSON-LD of lists nested thousands deep: Python's JSON reader, and a walk
    of it, would raise RecursionError and fail the page; the script is passed over instead."""
    nested = "[" * depth + '{"a": 1}' + "]" * depth
    page = f'<html><head><script type="application/ld+json">{nested}</script></head><body><h1>t</h1></body></html>'
    found = rules({"name": "a", "type": "int", "json_ld": "a"}, {"name": "t", "css": "h1"}).fields(html.fromstring(page), URL)
    assert found == {"t_s": "t"}
