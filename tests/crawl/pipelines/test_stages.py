"""The item pipelines' contract (issues 95 and 101): the order of ``ITEM_PIPELINES`` and, for each
stage, what it reads of the crawled item and what it gives it, read from the pipelines' code. A
stage gives the item a result of its own, a frozen value (the attributes stage a
``ConvertedDocument``, the checksum stage the Solr document); nothing writes into a result, a
stage that adds to one builds a new one from it (the language stage), and no stage clears what an
earlier one set for a later one.

The item is whatever a stage's functions take as a parameter annotated with its type
(``CrawledDocument``), whatever the parameter's name, and what a local name is bound to of it
(``converted = item.converted``)."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterator
from types import MappingProxyType

import pytest

from searchcrawl import settings as project_settings
from searchcrawl.crawl.items import ConvertedDocument, CrawledDocument, Fetched
from tests.syntax_trees import PACKAGE, Function, tree_of

PIPELINES = "searchcrawl.crawl.pipelines."
ITEM_TYPE = CrawledDocument.__name__
# the methods that change a dict, a list or a set in place: called on what the item carries, a write into it
MUTATORS = frozenset("update setdefault pop popitem clear append extend insert remove add discard sort reverse".split())

# In the order of ITEM_PIPELINES: (stage, what it reads of the item, what it gives the item). A
# result given ``new``: the stage builds a new value from the one the spider or an earlier stage
# gave (``item.fields = frozen_fields(item.fields, language=...)``); that one stays as it was.
STAGES: tuple[tuple[str, set[str], set[str]], ...] = (
    # who may read it, first: a document whose access cannot be known is never converted
    ("access.AccessPipeline", {"access_update", "access", "access_error", "url", "depth", "record"}, {"access", "access_error"}),
    # what the spider fetched (headers, tree, text or body), an agent's given values and metadata
    # become the frozen ConvertedDocument; the fetch's content is let go once read (its headers
    # stay, for the change check), a note added
    (
        "attributes.AttributesPipeline",
        {"access_update", "fetched", "url", "source", "given", "metadata", "note", "depth", "record"},
        {"converted", "new fetched", "new note"},
    ),
    # the converted document and the access become the frozen Solr document (checksum, text digest, access fields)
    ("checksum.ChecksumPipeline", {"access_update", "converted", "access"}, {"fields"}),
    # the Solr document's checksum against what the index holds: unchanged and duplicates leave here
    # (an unchanged page with the spider's anchors: its links may have changed without its text)
    (
        "changes.ChangePipeline",
        {"access_update", "fields", "previous", "fetched", "record", "url", "source", "canonical_url", "depth", "anchors"},
        set(),
    ),
    # after the change check: an unchanged page or a duplicate never needs its language detected;
    # a new Solr document with it
    ("language.LanguagePipeline", {"converted", "fields"}, {"new fields"}),
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


@dataclasses.dataclass
class Uses:
    """What code does with the item: reads, gives (``new x``: built from its ``x``), and writes
    into (what the item carries, changed in place: a key set, an attribute set, a mutating call)."""

    reads: set[str] = dataclasses.field(default_factory=set)
    gives: set[str] = dataclasses.field(default_factory=set)
    writes: set[str] = dataclasses.field(default_factory=set)


def names_the_item(annotation: ast.expr | None) -> bool:
    """Whether a parameter's annotation is the item's type, or includes it (``CrawledDocument | None``)."""
    for node in ast.walk(annotation) if annotation is not None else ():
        if isinstance(node, ast.Name | ast.Attribute) and ITEM_TYPE in (getattr(node, "id", None), getattr(node, "attr", None)):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(rf"\b{ITEM_TYPE}\b", node.value):
            return True
    return False


def item_parameters(function: Function) -> set[str]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    return {argument.arg for argument in every if argument is not None and names_the_item(argument.annotation)}


def carried(node: ast.expr, items: set[str], aliases: dict[str, str]) -> str | None:
    """What of the item ``node`` is or lies in (``item.converted.fields["x"]``, or ``converted``
    bound to ``item.converted``: ``converted``); None: nothing of the item's (the item itself)."""
    outermost = None
    while isinstance(node, ast.Attribute | ast.Subscript):
        outermost, node = node, node.value
    if not isinstance(node, ast.Name):
        return None
    if node.id in aliases:
        return aliases[node.id]
    return outermost.attr if node.id in items and isinstance(outermost, ast.Attribute) else None


def assignments(function: Function) -> Iterator[tuple[ast.expr, ast.expr | None, bool]]:
    """(target, its value or None, augmented) of every assignment in ``function``; tuples paired."""
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            values = node.value.elts if isinstance(node.value, ast.Tuple) else None
            for target in node.targets:
                if isinstance(target, ast.Tuple) and values is not None and len(target.elts) == len(values):
                    yield from ((part, value, False) for part, value in zip(target.elts, values, strict=True))
                else:
                    yield target, node.value, False
        elif isinstance(node, ast.AnnAssign | ast.AugAssign):
            yield node.target, node.value, isinstance(node, ast.AugAssign)


def function_uses(function: Function, outer: set[str], uses: Uses) -> None:
    """Add what ``function`` (its nested functions too) does with the item: its parameters of
    the item's type, and ``outer``'s, the enclosing function's."""
    items = outer | item_parameters(function)
    aliases = {
        target.id: what
        for target, value, _augmented in assignments(function)
        if isinstance(target, ast.Name) and value is not None and (what := carried(value, items, aliases={})) is not None
    }
    given: set[int] = set()
    for target, value, augmented in assignments(function):
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in items:
            built = augmented or any(
                isinstance(node, ast.expr) and carried(node, items, aliases) == target.attr
                for node in ast.walk(value)
                if value is not None
            )
            uses.gives.add(f"new {target.attr}" if built else target.attr)
            given.add(id(target))
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in items:
            if isinstance(node.ctx, ast.Load):
                uses.reads.add(node.attr)
            elif id(node) not in given:  # set in a loop or a with, or deleted
                uses.gives.add(node.attr)
        if isinstance(node, ast.Attribute | ast.Subscript) and not isinstance(node.ctx, ast.Load):
            if (inside := carried(node.value, items, aliases)) is not None:
                uses.writes.add(inside)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            if (inside := carried(node.func.value, items, aliases)) is not None:
                uses.writes.add(inside)
        if isinstance(node, Function) and node is not function:
            function_uses(node, items, uses)


def item_uses(tree: ast.Module, name: str) -> Uses:
    """What the class ``name`` of ``tree`` does with the item in any of its methods, and the
    module's functions that take the item (the stage's helpers)."""
    (found,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name]
    uses = Uses()
    for node in [*found.body, *tree.body]:
        if isinstance(node, Function) and (node in found.body or item_parameters(node)):
            function_uses(node, set(), uses)
    return uses


def stage_tree(stage: str) -> tuple[ast.Module, str]:
    module, name = stage.split(".")
    return tree_of(PACKAGE / "crawl" / "pipelines" / f"{module}.py"), name


def stage_uses(stage: str) -> Uses:
    return item_uses(*stage_tree(stage))


def test_the_pipelines_run_in_the_stated_order() -> None:
    order = sorted(project_settings.ITEM_PIPELINES, key=project_settings.ITEM_PIPELINES.__getitem__)
    assert order == [PIPELINES + stage for stage, _reads, _gives in STAGES]


def test_each_stage_names_its_item_by_its_type() -> None:
    """What the scan follows: a stage's ``process_item`` takes the item annotated with its type."""
    for stage, _reads, _gives in STAGES:
        tree, name = stage_tree(stage)
        (found,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == name]
        (process,) = [node for node in found.body if isinstance(node, Function) and node.name == "process_item"]
        assert item_parameters(process), stage


def test_each_stage_reads_and_gives_what_is_stated() -> None:
    """A stage that reads (or gives) something new of the item changes the contract: state it in
    STAGES, where a reader sees which earlier stage gives it."""
    for stage, reads, gives in STAGES:
        uses = stage_uses(stage)
        assert (uses.reads, uses.gives) == (reads, gives), stage


def test_no_stage_writes_into_what_the_item_carries() -> None:
    """A result is frozen: a stage that adds to one gives a new one, and the one before stays as
    its stage made it (what an earlier reader saw, what a test asserts of it)."""
    for stage, _reads, _gives in STAGES:
        assert not stage_uses(stage).writes, stage


def test_each_thing_the_item_carries_is_given_by_one_stage_and_read_only_after_it() -> None:
    """No later stage sets again (or clears) what an earlier stage gave, but as a new value built
    from it; a stage reads a result only of a stage before it. Read from the code, as the stages run."""
    uses = [stage_uses(stage) for stage, _reads, _gives in STAGES]
    given_by: dict[str, int] = {}
    for number, found in enumerate(uses):
        for name in found.gives - {f"new {name}" for name in given_by}:
            assert name not in given_by, f"{STAGES[number][0]} sets {name}, which {STAGES[given_by[name]][0]} gave"
            given_by[name] = number
    for number, found in enumerate(uses):
        late = {name for name in found.reads if given_by.get(name, -1) > number}
        assert not late, f"{STAGES[number][0]} reads {late} before the stage that gives it"


SCANNED = """
class Stage:
    def process_item(self, document: CrawledDocument) -> CrawledDocument:
        document.fields["language"] = detect(document.converted.fields["content"])
        document.note = f"{document.note}; read" if document.note else "read"
        document.fetched = None
        return self.more(document, document)

    def more(self, doc: "CrawledDocument | None", item) -> CrawledDocument:
        converted = doc.converted
        converted.fields.update(language="en")
        item.fields["ignored"] = 1  # not annotated with the item's type: not the item
        doc.record["via"] = None
        return doc


def helper(item: CrawledDocument) -> str:
    return item.url


def other(item) -> str:
    return item.source
"""


def test_the_scan_follows_the_items_type_and_finds_reads_gives_and_writes_into() -> None:
    uses = item_uses(ast.parse(SCANNED), "Stage")
    assert uses.reads == {"fields", "converted", "note", "record", "url"}
    assert uses.gives == {"new note", "fetched"}
    assert uses.writes == {"fields", "converted", "record"}


def test_the_stages_results_cannot_be_changed_by_a_later_stage() -> None:
    fields = {"url": "http://h.test/a", "content": "text"}
    converted = ConvertedDocument(fields, "Title\ntext", "http://h.test/a")
    fields["content"] = "changed after"  # the attributes stage's dict: the result holds a copy
    assert converted.fields["content"] == "text"
    with pytest.raises(dataclasses.FrozenInstanceError):
        converted.checksum_basis = ""  # type: ignore[misc]
    with pytest.raises(TypeError):
        converted.fields["language"] = "en"  # type: ignore[index]
    item = CrawledDocument("unit", "http://h.test/a", 0, fields=fields)  # the spider's (an access update's)
    fields["content"] = "changed again"
    assert item.fields["content"] == "changed after" and isinstance(item.fields, MappingProxyType)
    with pytest.raises(TypeError):
        item.fields["language"] = "en"  # type: ignore[index]
    with pytest.raises(AttributeError):  # slots: a misspelt attribute is an error, not a new one
        item.feilds = {}  # type: ignore[attr-defined]


def test_what_the_spider_fetched_is_one_frozen_value() -> None:
    headers = {"content-type": "text/html"}
    tree = object()
    fetched = Fetched(headers, tree=tree)
    headers["etag"] = '"later"'
    assert dict(fetched.headers) == {"content-type": "text/html"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        fetched.tree = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        fetched.headers["etag"] = '"x"'  # type: ignore[index]
    read = fetched.headers_only()  # the attributes stage's: its content let go, its headers kept
    assert (read.tree, read.headers, fetched.tree) == (None, fetched.headers, tree)
