"""What change detection and duplicate detection compare: SHA-256 of the extracted text, and who
may read it.

The checksum of a public document is its content's alone (as before access existed); a
restricted document's is ``<content>+<access digest>`` (``versioned``), so that a change of
readers alone is a change (re-indexed, ``changed`` in the delta report), and two copies with
different readers are not duplicates. The content part is kept whole in it: a 304 whose access
changed gives the new checksum without reading the content again (``content_of``).
"""

from __future__ import annotations

import hashlib
from typing import Any

from searchcrawl.access.tokens import Access
from searchcrawl.content.anchors import ANCHOR_FIELD
from searchcrawl.content.extract import solr_id
from searchcrawl.crawl.items import CrawledDocument, frozen_fields
from searchcrawl.semantic.passage_index import TEXT_DIGEST, text_digest

ACCESS_PART = "+"


def text_checksum(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def versioned(content: str, access: Access | None) -> str:
    """The checksum of a content with ``access`` (see the module's docstring)."""
    if access is None or access.is_public:
        return content
    return f"{content}{ACCESS_PART}{access.digest()}"


def content_of(checksum: str) -> str:
    """The content part of a (versioned) checksum."""
    return checksum.split(ACCESS_PART, 1)[0]


class ChecksumPipeline:
    """Over the extracted text by default; over the main text (a changed footer date does not
    re-index a page) or the raw bytes, as the source's ``checksum_of`` says; with the access, whose
    Solr fields it adds. And the digest of the text its passages are cut from (``text_digest``):
    what tells a passage made from an older text, whatever the checksum is taken over."""

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        """The checksum stage: the item's Solr document (read-only), its converted fields with the
        checksum, the digest of its text and its access fields."""
        if item.access_update:
            return item
        converted = item.converted
        assert converted is not None, "the attributes stage comes first (ITEM_PIPELINES)"
        fields = converted.fields
        content = text_checksum(converted.checksum_basis or fields.get("content", ""))
        access = item.access.fields() if item.access is not None else {}
        digest = {TEXT_DIGEST: text_digest(fields)}
        item.fields = frozen_fields(fields, checksum=versioned(content, item.access), **digest, **access)
        return item


def access_update(source: str, url: str, checksum: str, access: Access) -> dict[str, Any]:
    """The Solr atomic update of a document whose access alone changed: its access fields and
    checksum, nothing else (its content is not read again). ``_version_`` 1: Solr applies it only
    to a document it holds, and refuses it (409, the document refused: status 924) instead of
    creating a document of these fields alone."""
    document: dict[str, Any] = {"id": solr_id(source, url), "url": url, "checksum": checksum}
    document.update({name: {"set": values} for name, values in access.fields().items()})
    # its passages' copies of the access are now stale: semantic/passage_index.py sets them anew
    document["passages_model"] = {"set": None}
    # so is its anchor field, counted for its old readers: the push sets it for the new ones
    # (index/push.py ``with_anchors``); none until then
    document[ANCHOR_FIELD] = {"set": None}
    document["_version_"] = 1
    return document
