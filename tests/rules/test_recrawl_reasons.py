"""Which settings changes force a full recrawl (rules/maintenance.py ``recrawl_reasons``), and
that each says why: the rules that make what is indexed of a page that has not changed (issue
72: a changed ``[regions]``, a new ``[[fields]]`` or ``[[display_urls]]`` rule never reached the
pages answered 304)."""

from __future__ import annotations

from typing import Any

import pytest

from searchcrawl.config.source import SourceSettings
from searchcrawl.rules.maintenance import INDEXING_RULES, recrawl_reasons, settings_fingerprint


def fingerprint_of(**settings: Any) -> dict[str, Any]:
    """The fingerprint of a source with ``settings`` (the defaults otherwise), as run_start makes it."""
    model = SourceSettings(**settings)
    indexing = model.model_dump(mode="json", include=set(INDEXING_RULES))
    return settings_fingerprint(model.index_dynamic_pages, model.attributes, None, indexing)


def test_every_rule_is_a_source_setting() -> None:
    assert set(INDEXING_RULES) <= set(SourceSettings.model_fields)


@pytest.mark.parametrize(
    ("setting", "value", "why"),
    [
        ("regions", {"drop": ["div.share"]}, "the [regions] rules changed"),
        ("fields", [{"name": "notice", "css": "span.docno"}], "the [[fields]] rules changed"),
        ("display_urls", [{"prefix": "http://h.test/", "replace": "https://www.h.test/"}], "the [[display_urls]] rules changed"),
        ("main_text", True, "main_text changed"),
        ("description_fallback", True, "description_fallback changed"),
        ("detect_language", False, "detect_language changed"),
        ("default_charset", "iso-8859-1", "default_charset changed"),
        ("obey_robots_meta", False, "obey_robots_meta changed"),
        ("index_without_text", False, "index_without_text changed"),
        ("ocr", True, "ocr changed"),
    ],
)
def test_a_changed_indexing_rule_forces_a_recrawl_saying_which(setting: str, value: Any, why: str) -> None:
    before = fingerprint_of()
    after = fingerprint_of(**{setting: value})
    reasons = recrawl_reasons(before, after)
    assert len(reasons) == 1 and reasons[0].startswith(why), reasons
    assert recrawl_reasons(after, fingerprint_of(**{setting: value})) == []  # the next crawl: unchanged
    assert recrawl_reasons(after, before)[0].startswith(why)  # and back again


def test_a_fingerprint_kept_before_the_rules_were_is_no_reason() -> None:
    """A fingerprint kept by a version that did not record the rules: no recrawl of every
    source at the upgrade; this run records them, and their next change forces it."""
    old = fingerprint_of()
    del old["indexing"]
    assert recrawl_reasons(old, fingerprint_of(regions={"drop": ["nav"]})) == []
    assert recrawl_reasons(None, fingerprint_of()) == []


def test_an_attribute_mapping_added_removed_or_remapped_forces_a_recrawl() -> None:
    before = fingerprint_of(attributes={"author": "creator"})
    assert recrawl_reasons(before, fingerprint_of(attributes={"author": "creator", "revision": "version"})) == [
        "attribute 'revision' was added to the attribute mapping"
    ]
    assert recrawl_reasons(before, fingerprint_of(attributes={})) == ["attribute 'author' was removed from the attribute mapping"]
    assert recrawl_reasons(before, fingerprint_of(attributes={"author": "writer"})) == [
        "attribute 'author' was remapped from 'creator' to 'writer'"
    ]
    assert recrawl_reasons(before, fingerprint_of(attributes={"author": "creator"})) == []
