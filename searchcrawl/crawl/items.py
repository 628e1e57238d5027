"""Items that flow from the source spider through the pipelines.

The order of ``ITEM_PIPELINES`` is a contract: each stage reads what the spider or an earlier
stage gave the item, and gives it a result of its own, a frozen value no later stage writes
into (a stage that adds to one builds a new one from it). What each reads and gives is stated
once, in tests/crawl/pipelines/test_stages.py, and read there from the pipelines' code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from searchcrawl.access.tokens import Access
from searchcrawl.content.regions import RegionText


def frozen_fields(fields: Mapping[str, Any], **more: Any) -> Mapping[str, Any]:
    """A read-only Solr document of its own: ``fields`` with ``more`` (a new key, or a new value),
    in one shallow copy (its texts are shared, not copied). A stage adds to an earlier one's
    document by building a new one with this, never by writing into it."""
    return MappingProxyType({**fields, **more})


NO_FIELDS: Mapping[str, Any] = frozen_fields({})


@dataclass(frozen=True, slots=True)
class Fetched:
    """What the spider fetched of a document, one value no stage writes into: its response's
    headers and its content, which is one of a parsed HTML ``tree`` (shared with the link
    extraction, so that a page is parsed once; it never leaves the process) with its text by
    the source's regions when the spider read it already (``region_text``), a plain ``text``, or
    a ``body`` to convert (PDF, office, ...; or the raw body for checksum_of = "raw"). The
    attributes stage reads it and keeps its headers alone (``headers_only``)."""

    headers: Mapping[str, str]
    tree: Any | None = None
    region_text: RegionText | None = None
    text: str | None = None
    body: bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.headers, MappingProxyType):  # a Fetched's own (replace, headers_only): not copied again
            object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))  # read-only, a copy of its own

    def headers_only(self) -> Fetched:
        """This fetch once its content is read: its headers alone (what the change check reads),
        its content let go (a tree, a text or a file's bytes can be large)."""
        return Fetched(self.headers)


NOTHING_FETCHED = Fetched({})  # an item without a content (an access update, a 304)


@dataclass(frozen=True, slots=True)
class ConvertedDocument:
    """What the attributes stage (AttributesPipeline) made of a fetched document, read and never
    changed by the stages after it: the Solr document of its attributes (display URL included),
    what its checksum is taken over (the source's ``checksum_of``: its title and text, its main
    text, or a file's bytes), its display URL, and whether its language is to be detected
    (nothing declared one, and the source detects it: LanguagePipeline does, once the document
    is known to be indexed)."""

    fields: Mapping[str, Any]
    checksum_basis: str | bytes
    display_url: str
    detect_language: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", frozen_fields(self.fields))  # read-only, a copy of its own


@dataclass(slots=True)
class CrawledDocument:
    """A fetched document on its way to the index: each stage's result, given once.

    The spider gives it what it ``fetched`` (a frozen Fetched), the attributes stage ``converted``
    (a frozen ConvertedDocument), the checksum stage its Solr document ``fields`` (the converted
    fields with the checksum and access, read-only), of which the language stage builds a new
    one with the detected language, which the cache writer caches. ``slots``: a misspelt
    attribute is an error, not a new one.
    """

    source: str
    url: str
    depth: int
    fetched: Fetched = NOTHING_FETCHED
    converted: ConvertedDocument | None = None  # the attributes stage's result
    # the Solr document (or an access update's), read-only (``frozen_fields``)
    fields: Mapping[str, Any] = field(default_factory=lambda: NO_FIELDS)
    previous: dict[str, Any] | None = None  # what the index holds for this URL (maintenance crawls)
    canonical_url: str | None = None  # the page's rel=canonical target
    # What the fetch learned (content type and length, validators, how it was fetched, the
    # temporary redirect that led here from outside the boundary): written with its outcome.
    record: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # the reason kept with its row when indexed (e.g. "truncated: ...")
    # What a source's agent knows of it (searchcrawl/agents/base.py Reference): Solr fields that
    # win over extraction, and named values the source's ``attributes`` mapping may map
    given: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    # Who may read it (searchcrawl/access/): set by the spider (an agent's reference) or the
    # access pipeline (the source's [access]); ``access_error``: why it cannot be known (status 927)
    access: Access | None = None
    access_error: str | None = None
    # its links' words (content/anchors.py), as the spider read them: () for a document without
    # any (a file, a text, a page asking robots nofollow); None: not read (an agent's document)
    anchors: tuple[tuple[str, str], ...] | None = None
    # only its access changed (a 304, its content not read again): ``fields`` is a Solr atomic
    # update of the access fields, which the pipelines before the cache pass through as it is
    access_update: bool = False

    def __post_init__(self) -> None:
        if self.fields is not NO_FIELDS:
            self.fields = frozen_fields(self.fields)  # the spider's (an access update's): read-only, its own
