"""LanguagePipeline: the language of a document that nothing declared one for, detected from its
text once the document is known to be indexed.

AttributesPipeline marks such a document (``ConvertedDocument.detect_language``, frozen); this runs after
ChangePipeline, so an unchanged page or a duplicate, dropped there, never needs it. Detection
itself is cheap, its model is not: loading it costs a process about 0.08 s of CPU (numpy, and
68 MB of tables mapped from the user's cache, searchcrawl/content/language_detection.py), a
twelfth of a one-page crawl.
"""

from __future__ import annotations

from scrapy.crawler import Crawler

from searchcrawl.content.language_detection import detect_language
from searchcrawl.crawl.items import CrawledDocument, frozen_fields


class LanguagePipeline:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LanguagePipeline:
        return cls()

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        """The item's Solr document, a new one with its detected language (the checksum stage's
        stays as it made it)."""
        if item.converted is not None and item.converted.detect_language:
            language = detect_language(item.fields.get("content") or "")
            if language is not None:
                item.fields = frozen_fields(item.fields, language=language)
        return item
