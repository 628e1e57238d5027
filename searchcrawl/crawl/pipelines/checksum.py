"""SHA-256 of the extracted text: what change detection and duplicate detection compare."""

from __future__ import annotations

import hashlib

from searchcrawl.crawl.items import CrawledDocument


def text_checksum(text: str | bytes) -> str:
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


class ChecksumPipeline:
    """Over the extracted text by default; over the main text (a changed footer date does not
    re-index a page) or the raw bytes, as the source's ``checksum_of`` says."""

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        item.fields["checksum"] = text_checksum(item.checksum_basis or item.fields.get("content", ""))
        item.checksum_basis = ""
        return item
