"""Writes each document to the document cache and marks it pending in the document table."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from searchcrawl.access.tokens import Access
from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import run_started, url_outcome
from searchcrawl.crawl.stores import stores_of
from searchcrawl.index.cache import DocumentCache
from searchcrawl.rules.lifecycle import Delta, Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.documents import DocumentTable
from searchcrawl.store.frontier import Frontier

logger = logging.getLogger(__name__)


class CachePipeline:
    """Caches each document (not in a test run) and reports its outcome. Which copy of a content
    stays when two nodes of a shared crawl cached it at once is settled before each push
    (``DocumentTable.settle_pending``), not here. What it does depends on the run
    (``run_started``); a crawl without one (a source crawled with Scrapy's own SCHEDULER) caches
    as a plain run does: not in test mode, not forced."""

    def __init__(self, crawler: Crawler, documents: DocumentTable, cache: DocumentCache, ledger: LedgerWriter) -> None:
        self.crawler = crawler
        self.documents, self.cache, self.ledger = documents, cache, ledger
        self.stats = crawler.stats
        self.test_mode = self.forced = False
        crawler.signals.connect(self.run_started, signal=run_started)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CachePipeline:
        stores = stores_of(crawler)
        ledger = crawler.get_extension(LedgerWriter)
        if ledger is None:  # nothing records its outcomes
            raise NotConfigured("a read-only crawl (SEARCHCRAWL_READ_ONLY) caches nothing")
        return cls(crawler, stores.documents, stores.cache, ledger)

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.test_mode, self.forced = run.test_mode, run.forced

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        if item.access_update:
            return self.cache_access_update(item)
        table = self.documents
        assert item.converted is not None, "the attributes stage comes first (ITEM_PIPELINES)"
        display_url = item.converted.display_url
        self.ledger.flush_for("display_url", display_url)  # an owner waiting for its batch is one
        owner = table.display_url_owner(item.source, display_url)
        if owner is not None and owner != item.url:
            reason = f"display URL {display_url} is already {owner}'s"
            self.stats.inc_value("searchcrawl/display_url_conflicts")
            raise NotIndexed(
                Outcome(Event.GONE, int(Status.DISPLAY_URL_CONFLICT), reason, item.depth),
                f"Display URL conflict, not indexed: {item.url}: {reason}",
                log_level="WARNING",
            )
        size = self.put(item.fields)
        # pushed again by a forced recrawl with the title and text it was indexed with: unchanged
        # for the delta report (a searcher finds what was there)
        same = self.forced and item.previous is not None and item.previous.get("checksum") == item.fields["checksum"]
        self.crawler.signals.send_catch_log(
            url_outcome,
            url=item.url,
            outcome=Outcome(
                Event.CACHED,
                200,
                item.note,
                item.depth,
                Delta.UNCHANGED if same else None,
                columns={
                    **item.record,
                    "checksum": item.fields["checksum"],
                    "display_url": display_url,
                    "canonical_url": item.canonical_url,
                    "cached_by": self.cache.id,
                    "access": access_column(item.access),
                },
                anchors=item.anchors,
            ),
        )
        self.stats.inc_value("searchcrawl/cached")
        self.stats.inc_value("searchcrawl/cached_bytes", size)
        return item

    def put(self, fields: Mapping[str, Any]) -> int:
        """Append a document to the cache (not in a test run); returns its size. Before the
        cache seals a full spool, the outcomes waiting for their batch are written: a push
        deletes a sealed spool whose records the table does not expect pending."""
        if self.test_mode:
            return 0
        if self.cache.seals_next:
            self.ledger.flush()
        return self.cache.put(dict(fields))  # JSON writes a dict, not the item's read-only view of one

    def cache_access_update(self, item: CrawledDocument) -> CrawledDocument:
        """A document whose access alone changed (a 304: its content not read again): the Solr
        atomic update of its access fields is cached and pushed as any document is, and its row
        takes the new checksum and access (the content's columns stay)."""
        size = self.put(item.fields)
        columns = {
            **item.record,
            "checksum": item.fields["checksum"],
            "cached_by": self.cache.id,
            "access": access_column(item.access),
        }
        outcome = Outcome(Event.CACHED, 200, "its access changed (content not modified)", item.depth, columns=columns)
        self.crawler.signals.send_catch_log(url_outcome, url=item.url, outcome=outcome)
        self.stats.inc_value("searchcrawl/cached")
        self.stats.inc_value("searchcrawl/cached_bytes", size)
        self.stats.inc_value("searchcrawl/access_updates")
        return item


def access_column(access: Access | None) -> str | None:
    """The document table's ``access`` column: ``Access.to_data`` as JSON, origins included
    (what `scrapy explain-access` shows)."""
    return None if access is None else json.dumps(access.to_data(), ensure_ascii=False, separators=(",", ":"))
