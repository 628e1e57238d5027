"""The source editor's key reference (searchcrawl/config/source_reference.py): the packaged
source_keys.json is docs/sources.md's key table, and names every key the model takes."""

from __future__ import annotations

from searchcrawl.config.source import SourceSettings
from searchcrawl.config.source_reference import parse_reference, plain, reference
from tests.conftest import ROOT


def test_the_packaged_reference_is_the_docs_table() -> None:
    """Regenerate it with `python -m searchcrawl.config.source_reference docs/sources.md`."""
    assert reference() == parse_reference((ROOT / "docs" / "sources.md").read_text(encoding="utf-8"))


def test_the_reference_names_every_key_of_the_model_once() -> None:
    keys = [item.key for item in reference()]
    assert sorted(keys) == sorted(SourceSettings.model_fields) and len(keys) == len(set(keys))
    assert all(item.meaning for item in reference())


def test_markdown_is_reduced_to_text() -> None:
    assert plain("`a` see [Scope](rules.md#scope), `x \\| y`") == "a see Scope, x | y"
