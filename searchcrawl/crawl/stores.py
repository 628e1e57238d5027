"""Stores: the handles of what a source's crawl reads and writes, opened once for the crawl.

The document table (and the runs table beside it, on one connection pool), the source's document
cache, its Solr index and the converter of PDF and office files. Handles only: no rule, no run state, no decision. A component's
``from_crawler`` takes the handles it uses from here (found with Scrapy's public
``crawler.get_extension``) and hands them to its ``__init__``, so a test builds it with the
handles of its own (an in-memory SQLite table, an unreachable Solr).

Built first of the extensions (EXTENSIONS -900), after the spider and before the engine builds
the middlewares, pipelines and scheduler, which find it in their ``from_crawler``. It opens (and
migrates: before any run starts, so no crawl is ever killed mid-migration) the database; a
read-only crawl (``SEARCHCRAWL_READ_ONLY``, what `scrapy explain` runs) opens it without migrating
and opens no document cache. It closes everything once the engine has stopped, after every
``spider_closed`` receiver (the fleet's release of its site slots, the run's end).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings

from searchcrawl.config.source import Source
from searchcrawl.content.convert import Converter, DocumentConverter, TikaConverter
from searchcrawl.index.cache import DocumentCache
from searchcrawl.index.solr_client import SolrIndex
from searchcrawl.ops.local_fleet import processes_of, usable_cores
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.runs import Runs
from searchcrawl.system import paths

logger = logging.getLogger(__name__)


def tika_configured(settings: BaseSettings) -> bool:
    """Whether a Tika server converts this crawl's documents (else the Python converters do)."""
    return bool(settings.get("SEARCHCRAWL_TIKA_URL"))


def source_of(crawler: Crawler) -> Source:
    """The source a source spider's crawler crawls (its spider class carries it); another
    spider's crawl: the component is not configured."""
    source: Source | None = getattr(crawler.spidercls, "source", None)
    if source is None:
        raise NotConfigured("not a searchcrawl source spider")
    return source


class Stores:
    """The crawl's store handles (see the module's docstring)."""

    def __init__(
        self,
        documents: DocumentTable,
        index: SolrIndex,
        cache: DocumentCache | None = None,
        converter: Callable[[], DocumentConverter] | None = None,
    ) -> None:
        self.documents = documents  # the document table, of no run (the ledger's is its run's)
        self.runs = Runs(documents.database)
        self.index = index
        self.document_cache = cache  # None in a read-only crawl (``cache``)
        self.make_converter = converter
        self._converter: DocumentConverter | None = None

    @property
    def read_only(self) -> bool:
        """A read-only crawl opens no document cache (opening one writes), and writes nothing."""
        return self.document_cache is None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Stores:
        source = source_of(crawler)
        settings = crawler.settings
        read_only = settings.getbool("SEARCHCRAWL_READ_ONLY")
        stores = cls(
            # read-only: an outdated schema is refused (SchemaOutdated), never migrated
            DocumentTable(
                Database(
                    paths.db_url(settings),
                    migrate=not read_only,
                    writer_lock=writer_lock(settings),
                    checkpoint_interval=0 if read_only else settings.getfloat("SEARCHCRAWL_SQLITE_CHECKPOINT_INTERVAL", 0.1),
                )
            ),
            SolrIndex(
                paths.solr_url(settings),
                timeout=settings.getfloat("SEARCHCRAWL_SOLR_TIMEOUT"),
                commit_within_ms=settings.getint("SEARCHCRAWL_SOLR_COMMIT_WITHIN"),
                auth=paths.solr_auth(settings),
            ),
            None if read_only else DocumentCache(paths.cache_dir(settings, source.name)),
            partial(make_converter, settings, source),
        )
        # closed once the engine has stopped: after every spider_closed receiver (the fleet's
        # release of its site slots, the run's end) that may still use the database
        crawler.signals.connect(stores.close, signal=signals.engine_stopped)
        return stores

    @property
    def database(self) -> Database:
        return self.documents.database

    @property
    def cache(self) -> DocumentCache:
        """The source's document cache (a read-only crawl opens none: opening one writes)."""
        if self.document_cache is None:
            raise RuntimeError("a read-only crawl (SEARCHCRAWL_READ_ONLY) has no document cache")
        return self.document_cache

    @property
    def converter(self) -> DocumentConverter:
        """What converts PDF, office and other files, made on first use: the Tika server at
        SEARCHCRAWL_TIKA_URL when one is set, else the Python converters' worker processes."""
        if self._converter is None:
            if self.make_converter is None:
                raise RuntimeError("these stores were made without a converter")
            self._converter = self.make_converter()
        return self._converter

    def close(self) -> None:
        if self.document_cache is not None:
            self.document_cache.close()
        if self._converter is not None:
            self._converter.close()
        self.documents.database.close()


def writer_lock(settings: BaseSettings) -> bool:
    """Whether a SQLite document table's writers take turns through its lock file
    (``SEARCHCRAWL_SQLITE_WRITER_LOCK``); ``"auto"``: unless the crawl runs more processes than
    this machine has usable cores. Measured on 2 cores (issue 94): with a core for each of two
    processes the lock cut their waits; four processes on two cores waited more with it than with
    SQLite's busy handler (a process given the lock may not be running, and the others wait for
    it to be scheduled, where a sleeping poller that happens to run takes the lock first)."""
    value = settings.get("SEARCHCRAWL_SQLITE_WRITER_LOCK", "auto")
    if isinstance(value, str) and value.strip().lower() == "auto":
        return processes_of(settings) <= usable_cores()
    return settings.getbool("SEARCHCRAWL_SQLITE_WRITER_LOCK")


def make_converter(settings: BaseSettings, source: Source) -> DocumentConverter:
    """The converter of a crawl of ``source`` with ``settings``: the Tika server at
    SEARCHCRAWL_TIKA_URL when one is set, else the Python converters' worker processes."""
    options = source.settings
    if tika_configured(settings):
        return TikaConverter(
            settings.get("SEARCHCRAWL_TIKA_URL"),
            timeout=settings.getfloat("SEARCHCRAWL_TIKA_TIMEOUT"),
            concurrency=settings.getint("SEARCHCRAWL_TIKA_CONCURRENCY"),
            write_limit=settings.getint("SEARCHCRAWL_TIKA_WRITE_LIMIT"),
            max_embedded=settings.getint("SEARCHCRAWL_TIKA_MAX_EMBEDDED"),
            ocr=options.ocr,
            ocr_languages=tuple(options.ocr_languages),
            ocr_timeout=options.ocr_timeout,
        )
    if options.ocr:
        logger.warning(
            "Source %s asks for OCR, which needs a Tika server (SEARCHCRAWL_TIKA_URL): "
            "scanned documents are indexed without their text",
            source.name,
        )
    return Converter(
        workers=settings.getint("SEARCHCRAWL_CONVERT_WORKERS"),
        timeout=settings.getfloat("SEARCHCRAWL_CONVERT_TIMEOUT"),
        memory_mb=settings.getint("SEARCHCRAWL_CONVERT_MEMORY_MB"),
        temp_dir=settings.get("SEARCHCRAWL_TEMP_DIR") or None,
    )


def stores_of(crawler: Crawler) -> Stores:
    """The crawl's store handles, for a component's ``from_crawler``. Other spiders' crawls have
    none: the component is then not configured. A source spider's crawl without them (EXTENSIONS
    overridden) is refused, since nothing would record what happens to its URLs."""
    stores = crawler.get_extension(Stores)
    if stores is not None:
        return stores
    source_of(crawler)  # NotConfigured for another spider
    raise RuntimeError("searchcrawl.crawl.stores.Stores is not enabled (EXTENSIONS): a source's crawl needs it")
