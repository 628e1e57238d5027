"""PassageSync: a crawl's source's passages brought up to date, off the crawl's hot path.

With semantic search on (SEARCHCRAWL_EMBEDDINGS), the crawl pushes its documents to Solr as ever,
searchable by words at once, and this extension embeds their passages (semantic/passage_index.py)
on a thread of its own: every ``SEARCHCRAWL_EMBED_INTERVAL`` seconds while the crawl runs (the
documents Solr holds by then), and once more when the engine has stopped, after the run's last
push, for at most ``SEARCHCRAWL_EMBED_FINAL_SECONDS`` (what is left then is done by the next crawl
or `scrapy embed`). Of a crawl's local processes (``processes = N``) the first one alone writes
passages. Nothing in the item pipeline waits for a model; a model that fails leaves the
documents to the next pass, said once a pass. A model whose vectors are not of the dimension it
declares, or of one the schema has no field for, is refused at start: the crawl does not run; a
named model that is not installed leaves the crawl words-only, said once (embedders.py
``not_installed``).

The passes keep off the crawl's CPU (issue 100: pages/s with the default model within 10% of
words-only): ONNX Runtime runs on one thread (``PASS_THREADS``, unless the setting's ``?threads=``
says), tokenizing on it too, and that thread runs at a lower OS priority (``PASS_NICENESS``), so
that on a busy machine the crawl's own thread, Solr and the fetches come first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from searchcrawl.crawl.stores import source_of, stores_of
from searchcrawl.index.solr_client import IndexingError
from searchcrawl.ops.local_fleet import started_by_a_crawl

if TYPE_CHECKING:  # numpy and the models are imported only where semantic search is on
    from searchcrawl.semantic.embedders import Embedder
    from searchcrawl.semantic.passage_index import PassageIndex

logger = logging.getLogger(__name__)
PASS_THREADS = 1  # ONNX Runtime's threads for a crawl's passes
PASS_NICENESS = 10  # added to the passes' thread's nice value while the crawl runs


def lower_priority(increment: int = PASS_NICENESS) -> bool:
    """Lower the calling thread's OS priority (Linux: a thread's nice value is its own, set by its
    thread id) by ``increment``; False where the system does not allow it. Only ever lowered: an
    unprivileged process cannot raise it back, so only a thread of its own calls this."""
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + increment))
    except (AttributeError, OSError):  # no setpriority (not POSIX), or refused
        return False
    return True


class PassageSync:
    def __init__(self, crawler: Crawler, embedder: Embedder, source: str, interval: float, final_seconds: float) -> None:
        self.crawler, self.embedder, self.source = crawler, embedder, source
        self.interval, self.final_seconds = interval, final_seconds
        self.passages: PassageIndex | None = None  # the crawl's Solr index: its Stores, once the engine opens
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.totals: dict[str, int] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        if not (settings.get("SEARCHCRAWL_EMBEDDINGS") or "").strip():
            raise NotConfigured  # semantic search is off (SEARCHCRAWL_EMBEDDINGS): said by nothing, as Scrapy's own
        if started_by_a_crawl(settings):
            raise NotConfigured  # of a crawl's local processes, the first one writes the source's passages
        from searchcrawl.semantic.embedders import EmbeddingFailed, checked, embedder_from

        embedder = embedder_from(
            settings.get("SEARCHCRAWL_EMBEDDINGS") or "", settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"), threads=PASS_THREADS
        )
        if embedder is None:
            raise NotConfigured  # not installed: said once by embedder_from, the crawl is words-only
        try:
            checked(embedder)  # DimensionMismatch: refused, the crawl does not run
        except EmbeddingFailed as exc:  # it may answer later: the passes will try
            logger.warning("The embedding model does not answer now (%s); passages are left for later passes", exc)
        extension = cls(
            crawler,
            embedder,
            source_of(crawler).name,
            settings.getfloat("SEARCHCRAWL_EMBED_INTERVAL"),
            settings.getfloat("SEARCHCRAWL_EMBED_FINAL_SECONDS"),
        )
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def spider_opened(self) -> None:
        from searchcrawl.semantic.passage_index import PassageIndex

        self.passages = PassageIndex(stores_of(self.crawler).index, self.embedder)
        if self.interval > 0:
            self.thread = threading.Thread(target=self._during_the_crawl, name="passages", daemon=True)
            self.thread.start()

    def _during_the_crawl(self) -> None:
        lower_priority()  # this thread's alone: the last pass, which the crawl's end waits for, runs on another
        while not self.stopping.wait(self.interval):
            self._pass(None)

    def _pass(self, deadline: float | None) -> None:
        if self.passages is None:
            return
        try:
            result = self.passages.sync(self.source, self.stopping.is_set if deadline is None else lambda: False, deadline)
        except Exception as exc:  # noqa: BLE001 - whatever the model or Solr did, the crawl and the next passes go on
            logger.warning("Passages not brought up to date: %s: %s", type(exc).__name__, exc)
            return
        for name in ("documents", "embedded", "reused", "updated", "deleted", "skipped"):
            self.totals[name] = self.totals.get(name, 0) + getattr(result, name)
        if result.documents:
            logger.info(
                "Passages of %d documents up to date: %d embedded, %d kept their vectors, %d updated in place (%.1f s)",
                result.documents,
                result.embedded,
                result.reused,
                result.updated,
                result.seconds,
            )

    async def engine_stopped(self) -> None:
        """The last pass, after the run's last push: the documents it pushed have passages
        when the crawl ends (within ``final_seconds``)."""
        self.stopping.set()
        if self.thread is not None:
            await asyncio.to_thread(self.thread.join)
        if self.final_seconds > 0:
            await asyncio.to_thread(self._final)

    def _final(self) -> None:
        if self.passages is None:
            return
        try:
            self.passages.index.commit()  # the run's last documents, readable
        except IndexingError as exc:
            logger.warning("Passages not brought up to date: %s", exc)
            return
        self._pass(time.monotonic() + self.final_seconds)
