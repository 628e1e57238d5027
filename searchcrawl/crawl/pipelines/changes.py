"""Change detection and duplicates: what reaches the cache is new or changed, and indexed once.

- A document in the index is compared with what was indexed on the source's ``modified_when``
  signals (Last-Modified, ETag, checksum; any differs: changed); the checksum holds who may read
  it (pipelines/checksum.py), so a change of access alone is a change whatever the signals. Unchanged: no cache write, no
  Solr update, its Solr ``_version_`` does not move; only the fetch's validators (ETag, an
  agent's change token; Last-Modified) are kept, so that the next crawl's conditional GET gets
  its 304. A forced recrawl re-indexes everything.
- The same content at several URLs of a source is indexed once: the ``rel=canonical`` target
  if it is among them, else the first seen (discovered first, whatever order the concurrent
  downloads finish in); the others are recorded as its duplicates.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from scrapy.crawler import Crawler

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.exceptions import NotIndexed
from searchcrawl.crawl.items import CrawledDocument
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.pipelines.checksum import ACCESS_PART
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import run_started, url_outcome
from searchcrawl.crawl.stores import source_of, stores_of
from searchcrawl.rules.lifecycle import Delta, Event, Outcome
from searchcrawl.rules.maintenance import has_changed, holder_of
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.documents import DocumentTable
from searchcrawl.store.frontier import Frontier

logger = logging.getLogger(__name__)
# What a fetch learned that the next conditional GET sends back (an agent's change token travels
# as the ETag): kept with an unchanged document too, so that a new token or date over the same
# content (a file touched, a restore that reset every time stamp) costs one read, not one a crawl
VALIDATORS = ("etag", "last_modified")


def access_changed(indexed: str | None, checksum: str) -> bool:
    """Whether the access part of two checksums differs (pipelines/checksum.py): whatever the
    source's ``modified_when`` signals, a change of readers is a change."""
    return indexed is not None and indexed.partition(ACCESS_PART)[2] != checksum.partition(ACCESS_PART)[2]


def duplicate_of(
    original: str,
    depth: int | None = None,
    record: dict[str, Any] | None = None,
    item: CrawledDocument | None = None,
) -> Outcome:
    """The outcome of a URL whose content is indexed at ``original``, with what its fetch
    learned (``record``: its validators, so that an unchanged duplicate is known next time) and,
    from its ``item``, the content's checksum and the canonical URL it names: a copy of the
    group, which the choice of its holder weighs (``holder_of``) while it stays one."""
    columns = {**(record or {}), "duplicate_of": original}
    if item is not None:
        columns.update(checksum=item.fields["checksum"], canonical_url=item.canonical_url)
    return Outcome(Event.GONE, int(Status.DUPLICATE), f"duplicate of {original}", depth, Delta.DUPLICATE, columns)


class ChangePipeline:
    """Unchanged documents and duplicates (see the module's docstring), from what the document
    table knows; a forced run (``run_started``) takes every document as changed."""

    def __init__(
        self, crawler: Crawler, documents: DocumentTable, settings: SourceSettings, ledger: LedgerWriter | None = None
    ) -> None:
        self.crawler = crawler
        self.documents, self.settings, self.ledger = documents, settings, ledger
        self.forced = False
        crawler.signals.connect(self.run_started, signal=run_started)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChangePipeline:
        return cls(crawler, stores_of(crawler).documents, source_of(crawler).settings, crawler.get_extension(LedgerWriter))

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.forced = run.forced

    def process_item(self, item: CrawledDocument) -> CrawledDocument:
        if item.access_update:  # the spider compared its access already (a 304: no content)
            return item
        table = self.documents
        checksum = item.fields["checksum"]
        previous = item.previous
        if previous is not None and not self.forced:
            changed, why = has_changed(
                previous,
                item.fetched.headers.get("last-modified"),
                item.fetched.headers.get("etag"),
                checksum,
                self.settings.modified_when,
            )
            if not changed and access_changed(previous.get("checksum"), checksum):
                changed, why = True, "who may read it"
            if not changed:
                validators = {name: item.record[name] for name in VALIDATORS if name in item.record}
                raise NotIndexed(
                    Outcome(
                        Event.UNCHANGED,
                        int(Status.UNCHANGED),
                        "same content as indexed",
                        item.depth,
                        Delta.UNCHANGED,
                        validators=validators,
                        compared_checksum=previous.get("checksum"),
                        anchors=item.anchors,  # its links may have changed without its text
                    ),
                    f"Unchanged ({why}): {item.url}",
                )
            logger.debug("Changed (%s): %s", why, item.url)
        if self.ledger is not None:  # a copy whose outcome waits for its batch is one
            self.ledger.flush_for("checksum", checksum)
        duplicate = table.find_duplicate(item.source, checksum, item.url)
        if duplicate is not None:
            self.settle_group(item, duplicate)
        return item

    def settle_group(self, item: CrawledDocument, duplicate: dict[str, Any]) -> None:
        """``item`` has the content ``duplicate`` holds in the index: which copy keeps it is
        decided over the whole group (``holder_of``), whichever order its copies are fetched in.
        This URL takes the place of every copy holding it, or is a duplicate of the holder (a
        copy out of the index that should hold it is fetched again: DocumentTable._recall_holder)."""
        this = {"url": item.url, "canonical_url": item.canonical_url, "id": duplicate["first_seen_id"]}
        copies = duplicate["copies"]
        holder = holder_of([this, *copies])
        if holder is not this:
            original = holder["url"] if holder["holds"] else duplicate["url"]
            raise NotIndexed(duplicate_of(original, item.depth, item.record, item), f"Duplicate of {original}: {item.url}")
        for copy in copies:
            if copy["holds"]:  # this URL takes its place in the index
                # The other leaves for it, compared by the content it was indexed with; not yet
                # fetched in this run, it still is (its content may have changed, or it may be
                # gone: the sequence test, seed 34, crawl 22, two processes)
                replaced = replace(duplicate_of(item.url), fetched=False, finishes=False)
                self.crawler.signals.send_catch_log(url_outcome, url=copy["url"], outcome=replaced)
                logger.debug("Canonical copy replaces %s: %s", copy["url"], item.url)
