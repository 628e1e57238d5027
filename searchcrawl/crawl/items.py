"""Items that flow from the source spider through the pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class CrawledDocument:
    """A fetched document on its way to the index.

    The spider fills what it saw on the wire; the pipelines add ``fields`` (the Solr document:
    attributes, then checksum) and cache it. ``tree`` is the parsed HTML, shared with the link
    extraction so that a page is parsed once; it never leaves the process.
    """

    source: str
    url: str
    depth: int
    headers: dict[str, str]
    tree: Any | None = None
    text: str | None = None
    body: bytes | None = None  # a document to convert (PDF, office, ...), or the raw body for checksum_of = "raw"
    checksum_basis: str | bytes = ""  # what the checksum is taken over (source's checksum_of)
    fields: dict[str, Any] = field(default_factory=dict)
    previous: dict[str, Any] | None = None  # what the index holds for this URL (maintenance crawls)
    canonical_url: str | None = None  # the page's rel=canonical target
    # What the fetch learned (content type and length, validators, how it was fetched, the
    # temporary redirect that led here from outside the boundary): written with its outcome.
    record: dict[str, Any] = field(default_factory=dict)
    note: str | None = None  # the reason kept with its row when indexed (e.g. "truncated: ...")
    # nothing declared its language and the source detects it: LanguagePipeline does, once the
    # document is known to be indexed (not unchanged, not a duplicate)
    detect_language: bool = False
    # What a source's agent knows of it (searchcrawl/agents/base.py Reference): Solr fields that
    # win over extraction, and named values the source's ``attributes`` mapping may map
    given: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
