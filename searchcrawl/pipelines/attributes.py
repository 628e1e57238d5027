"""Turns a fetched document into its Solr document: the search attributes."""

from __future__ import annotations

import logging

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from ..context import CrawlContext
from ..extract import html_attributes, mapped_attributes, meta_tags, solr_document, text_attributes
from ..items import CrawledDocument
from ..status import Status

logger = logging.getLogger(__name__)


class AttributesPipeline:
    def __init__(self, context: CrawlContext) -> None:
        self.context = context

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AttributesPipeline:
        return cls(CrawlContext.of(crawler))

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        if item.tree is not None:
            attributes = html_attributes(item.tree, item.headers)
            attributes.update(mapped_attributes(meta_tags(item.tree), self.context.source.settings.attributes))
            item.tree = None  # the tree can be large; nothing after this needs it
        else:
            attributes = text_attributes(item.text or "", item.url, item.headers)
            item.text = None
        if not attributes.get("content") and not attributes.get("title"):
            self.context.table.record_outcome(
                item.source, item.url, status=Status.EMPTY, reason="no text to index", depth=item.depth
            )
            raise DropItem(f"No text to index: {item.url}")
        item.fields = solr_document(item.source, item.url, attributes, item.headers)
        item.fields["display_url"] = self.context.display_urls.display_url(item.url)
        return item
