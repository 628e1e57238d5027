"""The item pipelines' contract (issue 95): the order of ``ITEM_PIPELINES`` and, for each stage,
what it reads of the crawled item and what it gives it, read from the pipelines' code. A stage
gives the item a result of its own (the attributes stage a frozen ``ConvertedDocument``, the
checksum stage the Solr document); no stage clears what an earlier one set for a later one."""

from __future__ import annotations

import ast
import dataclasses

import pytest

from searchcrawl import settings as project_settings
from searchcrawl.crawl.items import ConvertedDocument
from tests.syntax_trees import PACKAGE, tree_of

PIPELINES = "searchcrawl.crawl.pipelines."

# In the order of ITEM_PIPELINES: (stage, what it reads of the item, what it gives the item). A
# subscript given is written ``fields[language]``: the one key the stage adds to a result.
STAGES: tuple[tuple[str, set[str], set[str]], ...] = (
    # who may read it, first: a document whose access cannot be known is never converted
    ("access.AccessPipeline", {"access_update", "access", "access_error", "url", "depth", "record"}, {"access", "access_error"}),
    # the spider's input (tree, text, body, headers, an agent's given values and metadata) becomes
    # the frozen ConvertedDocument; the input is let go once read (None), a note added
    (
        "attributes.AttributesPipeline",
        {"access_update", "tree", "region_text", "text", "body", "headers", "url", "source", "given", "metadata"}
        | {"note", "depth", "record"},
        {"converted", "tree", "region_text", "text", "body", "note"},
    ),
    # the converted document and the access become the Solr document (checksum, text digest, access fields)
    ("checksum.ChecksumPipeline", {"access_update", "converted", "access"}, {"fields"}),
    # the Solr document's checksum against what the index holds: unchanged and duplicates leave here
    # (an unchanged page with the spider's anchors: its links may have changed without its text)
    (
        "changes.ChangePipeline",
        {"access_update", "fields", "previous", "headers", "record", "url", "source", "canonical_url", "depth", "anchors"},
        set(),
    ),
    # after the change check: an unchanged page or a duplicate never needs its language detected
    ("language.LanguagePipeline", {"converted", "fields"}, {"fields[language]"}),
    # the Solr document cached under the converted document's display URL, its row marked pending
    # with the spider's anchors (content/anchors.py)
    (
        "cache_writer.CachePipeline",
        {
            "access_update",
            "converted",
            "fields",
            "previous",
            "access",
            "record",
            "note",
            "url",
            "source",
            "canonical_url",
            "depth",
            "anchors",
        },
        set(),
    ),
    ("solr_push.SolrPipeline", set(), set()),  # pushes the cache: reads nothing of the item
)


def item_uses(tree: ast.Module, name: str) -> tuple[set[str], set[str]]:
    """What the class ``name`` of ``tree`` reads of ``item`` and what it gives it, in any of its
    methods (``item.converted.fields`` reads ``converted``; ``item.fields["language"] = ...``
    gives ``fields[language]``)."""
    (found,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name]
    reads, gives = set(), set()
    for node in ast.walk(found):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "item":
            (gives if isinstance(node.ctx, ast.Store) else reads).add(node.attr)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Attribute):
            owner = node.value
            if isinstance(owner.value, ast.Name) and owner.value.id == "item":
                key = node.slice.value if isinstance(node.slice, ast.Constant) else ast.unparse(node.slice)
                gives.add(f"{owner.attr}[{key}]")
    return reads, gives


def stage_uses(stage: str) -> tuple[set[str], set[str]]:
    module, name = stage.split(".")
    return item_uses(tree_of(PACKAGE / "crawl" / "pipelines" / f"{module}.py"), name)


def test_the_pipelines_run_in_the_stated_order() -> None:
    order = sorted(project_settings.ITEM_PIPELINES, key=project_settings.ITEM_PIPELINES.__getitem__)
    assert order == [PIPELINES + stage for stage, _reads, _gives in STAGES]


def test_each_stage_reads_and_gives_what_is_stated() -> None:
    """A stage that reads (or gives) something new of the item changes the contract: state it in
    STAGES, where a reader sees which earlier stage gives it."""
    for stage, reads, gives in STAGES:
        assert stage_uses(stage) == (reads, gives), stage


def test_each_thing_the_item_carries_is_given_by_one_stage_and_read_only_after_it() -> None:
    """No later stage sets again (or clears) what an earlier stage gave; a stage reads a result only
    of a stage before it. Read from the code, as the stages run."""
    uses = [stage_uses(stage) for stage, _reads, _gives in STAGES]
    given_by: dict[str, int] = {}
    for number, (_reads, gives) in enumerate(uses):
        for name in gives:
            assert name not in given_by, f"{STAGES[number][0]} sets {name}, which {STAGES[given_by[name]][0]} gave"
            given_by[name] = number
    for number, (reads, _gives) in enumerate(uses):
        late = {name for name in reads if given_by.get(name, -1) > number}
        assert not late, f"{STAGES[number][0]} reads {late} before the stage that gives it"


def test_the_scan_finds_reads_gives_and_a_key_given() -> None:
    code = """
class Stage:
    def process_item(self, item):
        item.fields["language"] = detect(item.converted.fields["content"])
        item.body = None
        return self.more(item)
"""
    assert item_uses(ast.parse(code), "Stage") == ({"fields", "converted"}, {"fields[language]", "body"})


def test_the_converted_document_cannot_be_changed_by_a_later_stage() -> None:
    fields = {"url": "http://h.test/a", "content": "text"}
    converted = ConvertedDocument(fields, "Title\ntext", "http://h.test/a")
    fields["content"] = "changed after"  # the attributes stage's dict: the result holds a copy
    assert converted.fields["content"] == "text"
    with pytest.raises(dataclasses.FrozenInstanceError):
        converted.checksum_basis = ""  # type: ignore[misc]
    with pytest.raises(TypeError):
        converted.fields["language"] = "en"  # type: ignore[index]
