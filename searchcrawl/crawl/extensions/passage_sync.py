"""PassageSync: a crawl's source's passages brought up to date, off the crawl's hot path and CPU.

With semantic search on (SEARCHCRAWL_EMBEDDINGS), the crawl pushes its documents to Solr as ever,
searchable by words at once, and the passes that embed their passages (semantic/passage_index.py)
run in a process of their own (semantic/pass_process.py), started when the spider opens: every
``SEARCHCRAWL_EMBED_INTERVAL`` seconds while the crawl runs (the documents Solr holds by then), at
a lowered OS priority, and once more when the engine has stopped, after the run's last push, at
the crawl's priority; the crawl's end waits for the pass under way (its page) and that last pass
within ``SEARCHCRAWL_EMBED_FINAL_SECONDS`` together (what is left then is done by the next crawl
or `scrapy embed`). The crawl's process never loads the model nor imports its runtime: on a
thread of it, the passes shared its interpreter lock and the model loaded on its path, 4.5-5 CPU
seconds more than words-only's on the Nutch Javadoc; in their own process, none (issues 100 and
102; docs/semantic-search.md, "The crawl's speed with the default model"). The process ends with
the crawl, even a crawl killed by SIGKILL.

Of a crawl's local processes (``processes = N``) the first one alone writes passages. Nothing in
the item pipeline waits for a model; a model that fails leaves the documents to the next pass,
said once a pass. What can be told without the model is checked here, before the crawl runs
(embedders.py ``usable_spec``): a malformed setting, or a model that declares a dimension the
schema has no field for (a named model's, an embeddings server's ``?dimension=``), is refused
at start, the crawl does not run; a named model that is not installed leaves the crawl
words-only, said once, and no process is started. What only the loaded model tells (an
``onnx:`` file's dimension, a file that does not load, vectors not of the declared dimension)
the process says as soon as it has loaded it (while the crawl runs: waiting for it would delay
every crawl's first fetch by the model's load), and the crawl stops then, as
refused (``embeddings_refused``; its run resumes with the next crawl), and exits 1 even when
that came after its last page (commands/crawl.py ``exit_code``). The passes'
log lines reach the crawl's log, their counters its stats (``semantic/...``: not "passages/",
whose "PASS" the log's masking takes for a password's name), and the process's CPU seconds are
said at the end (``semantic/cpu_seconds``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import TYPE_CHECKING, Any, Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings

from searchcrawl.crawl.stores import source_of
from searchcrawl.ops.local_fleet import started_by_a_crawl
from searchcrawl.semantic.pass_process import COUNTERS, PassChannel, PassSettings, record_of, start
from searchcrawl.system import paths

if TYPE_CHECKING:
    import subprocess

logger = logging.getLogger(__name__)
REFUSED = "embeddings_refused"  # the close reason of a crawl whose model its passes' process refused
MODEL_REFUSED = "semantic/refused"  # the stat that says why (its exit code: commands/crawl.py)
END_GRACE = 120.0  # seconds the crawl's end waits for the process beyond the last pass's bound


def log_level(settings: BaseSettings) -> int:
    """Scrapy's LOG_LEVEL as a number (a name or a number; INFO for anything else)."""
    value = settings.get("LOG_LEVEL", "DEBUG")
    if isinstance(value, int):
        return value
    number = logging.getLevelName(str(value).strip().upper())
    return number if isinstance(number, int) else logging.INFO


def pass_settings(settings: BaseSettings, source: str, pid: int) -> PassSettings:
    """What the passes' process of a crawl of ``source`` (its pid ``pid``) is told: Solr as the
    crawl's stores reach it (crawl/stores.py), the model's setting, the passes' interval."""
    return PassSettings(
        source=source,
        embeddings=(settings.get("SEARCHCRAWL_EMBEDDINGS") or "").strip(),
        embed_timeout=settings.getfloat("SEARCHCRAWL_EMBED_TIMEOUT"),
        interval=settings.getfloat("SEARCHCRAWL_EMBED_INTERVAL"),
        solr_url=paths.solr_url(settings),
        solr_timeout=settings.getfloat("SEARCHCRAWL_SOLR_TIMEOUT"),
        solr_commit_within_ms=settings.getint("SEARCHCRAWL_SOLR_COMMIT_WITHIN"),
        solr_auth=paths.solr_auth(settings),
        parent=pid,
        log_level=log_level(settings),
    )


class PassageSync:
    def __init__(self, crawler: Crawler, settings: PassSettings, final_seconds: float) -> None:
        self.crawler, self.settings, self.final_seconds = crawler, settings, final_seconds
        self.process: subprocess.Popen[bytes] | None = None
        self.channel: PassChannel | None = None
        self.reader: threading.Thread | None = None
        self.cpu_seconds: float | None = None  # the process's, said as it leaves

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        text = (settings.get("SEARCHCRAWL_EMBEDDINGS") or "").strip()
        if not text:
            raise NotConfigured  # semantic search is off (SEARCHCRAWL_EMBEDDINGS): said by nothing, as Scrapy's own
        if started_by_a_crawl(settings):
            raise NotConfigured  # of a crawl's local processes, the first one writes the source's passages
        from searchcrawl.semantic.embedders import usable_spec

        if usable_spec(text) is None:  # DimensionMismatch: refused, the crawl does not run
            raise NotConfigured  # not installed: said once by usable_spec, the crawl is words-only
        extension = cls(
            crawler,
            pass_settings(settings, source_of(crawler).name, os.getpid()),
            settings.getfloat("SEARCHCRAWL_EMBED_FINAL_SECONDS"),
        )
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.engine_stopped, signal=signals.engine_stopped)
        return extension

    def spider_opened(self) -> None:
        """The passes' process started (from the reactor's thread, which lives as long as the
        crawl: pass_process.py ``start``), and a thread of this process reading what it says."""
        try:
            self.process, self.channel = start(self.settings)
        except OSError as exc:  # out of processes or memory: the crawl goes on words-only
            logger.warning("The passes' process did not start (%s); passages are left for the next crawl or `scrapy embed`", exc)
            return
        self.reader = threading.Thread(target=self._read, name="passes-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.channel is not None and self.process is not None
        while True:
            try:
                message = self.channel.receive()
            except (EOFError, OSError, ValueError):  # it has left (or said nonsense: it is ended)
                break
            self.received(message)
        if self.cpu_seconds is None:  # no bye: it failed (or was killed) before the crawl's end
            self.process.kill()  # what said nonsense, if it lives
            logger.warning(
                "The passes' process has ended (exit code %d); passages are left for the next crawl or `scrapy embed`",
                self.process.wait(),
            )

    def received(self, message: dict[str, Any]) -> None:
        """One message of the passes' process (pass_process.py says which), on the reader's thread."""
        kind = message.get("kind")
        stats = self.crawler.stats
        if kind == "log":
            record = record_of(message)
            target = logging.getLogger(record.name)
            if target.isEnabledFor(record.levelno):
                target.handle(record)
        elif kind == "pass" and stats is not None:
            stats.inc_value("semantic/runs")  # passes (a stat named so would be masked)
            for name in COUNTERS:
                number = message.get(name)
                stats.inc_value(f"semantic/{name}", number if isinstance(number, int) else 0)
        elif kind == "ready" and stats is not None:
            stats.set_value("semantic/model", str(message.get("model", "")))
        elif kind == "refused":
            reason = str(message.get("reason", ""))
            logger.error("Semantic search's model is refused: %s; the crawl stops", reason)
            if stats is not None:
                stats.set_value(MODEL_REFUSED, reason or "refused")
            self._close_from_thread()
        elif kind == "bye":
            seconds = message.get("cpu_seconds")
            self.cpu_seconds = float(seconds) if isinstance(seconds, (int, float)) else None

    def _close_from_thread(self) -> None:
        """The spider closed as refused (REFUSED), from the reader's thread."""
        from twisted.internet import reactor

        reactor.callFromThread(self._close)

    def _close(self) -> None:
        asyncio.ensure_future(self._close_spider())

    async def _close_spider(self) -> None:
        engine = self.crawler.engine
        try:
            if engine is not None:
                await engine.close_spider_async(reason=REFUSED)  # one closing already: awaited
        except RuntimeError:  # the spider has closed: the crawl's exit code says the refusal (MODEL_REFUSED)
            pass

    async def engine_stopped(self) -> None:
        """The last pass, after the run's last push: the documents it pushed have passages when
        the crawl ends (within ``final_seconds``); then the process leaves."""
        if self.process is not None:
            await asyncio.to_thread(self._end)

    def _end(self) -> None:
        assert self.process is not None and self.channel is not None and self.reader is not None
        try:
            self.channel.send("end", final_seconds=self.final_seconds)
        except OSError:  # it has left already (refused, failed): the reader has said why
            pass
        self.reader.join(max(self.final_seconds, 0) + END_GRACE)
        if self.reader.is_alive():
            logger.warning("The passes' process did not end %.0f s after its last pass's bound; it is stopped", END_GRACE)
            self.process.kill()
            self.reader.join()
        self.process.wait()
        self.channel.close()
        if self.cpu_seconds is not None:
            if self.crawler.stats is not None:
                self.crawler.stats.set_value("semantic/cpu_seconds", self.cpu_seconds)
            logger.info("The passes' process used %.1f s of CPU", self.cpu_seconds)
