"""SHA-256 of the extracted text: what change detection and duplicate detection compare."""

from __future__ import annotations

import hashlib

from ..items import CrawledDocument


def text_checksum(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ChecksumPipeline:
    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        item.fields["checksum"] = text_checksum(item.fields.get("content", ""))
        return item
