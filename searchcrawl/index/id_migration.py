"""The id migration: documents an earlier searchcrawl indexed with the URL as their id get their
per-source id (``solr_id(source, url)``), by `scrapy solr migrate-ids` and before a crawl's first
push (index/push.py ``SolrPusher.migrate_ids``). Plain logic, no Scrapy."""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Callable

from searchcrawl.content.extract import solr_id
from searchcrawl.index.solr_client import DOCUMENTS, SolrIndex, batches, cursor_pages, escape_query

logger = logging.getLogger(__name__)


def migrate_ids(
    index: SolrIndex,
    source: str,
    *,
    max_docs: int = 200,
    max_bytes: int = 10 * 1024 * 1024,
    holders: Callable[[list[str]], dict[str, set[str]]] | None = None,
) -> int:
    """Give ``source``'s documents written by searchcrawl before ids were per source (their id was
    the URL) the id ``solr_id(source, url)``; returns how many were migrated (0 when none is left).

    Finds them with ``source:<name> AND -id:<name>!*``, a page of ``max_docs`` at a time (a
    cursorMark, so deleting as it goes skips nothing), re-adds each with every stored field but
    ``_version_`` and the schema's copyField targets (Solr fills those again) under its new id,
    then deletes the old ids: a document is never missing from the index, and is in it twice only
    for the moment between the two requests. A new id Solr already holds (a crawl pushed a newer
    version meanwhile) is not overwritten. Idempotent: run it again after a failure, it goes on.
    Raises IndexingError when Solr fails or refuses.

    ``holders(urls)``: the sources whose document table rows hold each URL in the index (the
    table's word, DocumentTable.holders). Under the old ids two sources crawling one page shared
    one document: each holder gets its own copy (its ``source`` field set), and a document no
    source holds any more (removed, but under the new id only) is deleted, not migrated. Without
    ``holders`` every document is migrated to its own source.
    """
    filters = [f"{{!term f=source}}{source}", f"-id:{escape_query(solr_id(source, ''))}*", DOCUMENTS]
    targets = index.copy_field_targets()
    migrated = 0
    for old in cursor_pages(index, filters, "*", max_docs):
        renamed = []
        urls = [document.get("url") or document["id"] for document in old]
        owners = holders(urls) if holders is not None else {url: {source} for url in urls}
        for url, document in zip(urls, old, strict=False):
            fields = {
                name: value
                for name, value in document.items()
                # passages_model: the old id's passages go with it (delete), the new id gets its own
                if name not in ("_version_", "passages_model")
                and not any(fnmatch.fnmatchcase(name, target) for target in targets)
            }
            for holder in sorted(owners.get(url, ())):
                copy = {**fields, "id": solr_id(holder, url), "source": holder}
                renamed.append((copy, len(json.dumps(copy, ensure_ascii=False).encode("utf-8"))))
        for batch in batches(renamed, max_docs, max_bytes):
            index.add_new(batch)
        index.delete([document["id"] for document in old])
        migrated += len(old)
        logger.debug("Migrated %d Solr documents of %s to per-source ids", len(old), source)
    if migrated:
        index.commit()  # searchable now, and a second run at once finds nothing left to do
    return migrated
