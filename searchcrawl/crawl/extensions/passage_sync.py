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
said at the end (``semantic/cpu_seconds``): the last pass's counters and these come after Scrapy's
stats dump (engine_stopped follows it), in the crawler's stats all the same. What the process says
is data (pass_process.py): a message this process cannot take ends it, and the crawl's end waits
for it within bounds (``_end``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
import subprocess
import threading
from typing import Any, Self

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings

from searchcrawl.crawl.stores import source_of
from searchcrawl.ops.local_fleet import started_by_a_crawl
from searchcrawl.ops.terminal import printable
from searchcrawl.semantic.pass_process import COUNTERS, PassChannel, PassSettings, start
from searchcrawl.semantic.pass_process import logger as passes_logger
from searchcrawl.system import paths

logger = logging.getLogger(__name__)
REFUSED = "embeddings_refused"  # the close reason of a crawl whose model its passes' process refused
MODEL_REFUSED = "semantic/refused"  # the stat that says why (its exit code: commands/crawl.py)
END_GRACE = 120.0  # seconds the crawl's end waits for the process beyond the last pass's bound
KILL_GRACE = 10.0  # seconds the crawl's end waits for the process to exit once it has said bye, or been killed
# What the crawl takes of what the passes' process says (it reads hostile documents and runs a
# model: its words are data): a logger's name, a log line's text, its traceback, a stat's text, a counter.
LOGGER_NAME = re.compile(r"[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*", re.ASCII)
NAME_LIMIT = 200
TEXT_LIMIT = 4000
TRACEBACK_LIMIT = 16000
COUNT_LIMIT = 1 << 53
# The log lines of the passes' process a crawl relays at most: what its passes say in a crawl is a
# few lines a pass (progress, a model that fails, once); past this many the rest are dropped and
# counted (LOG_DROPPED), said once, so that a process whose words are a hostile document's cannot
# fill the crawl's log or its disk.
LOG_LINES = 1000
LOG_DROPPED = "semantic/log_lines_dropped"


def log_level(settings: BaseSettings) -> int:
    """Scrapy's LOG_LEVEL as a number (a name or a number; INFO for anything else)."""
    value = settings.get("LOG_LEVEL", "DEBUG")
    if isinstance(value, int):
        return value
    number = logging.getLevelName(str(value).strip().upper())
    return number if isinstance(number, int) else logging.INFO


def text_of(value: object, limit: int = TEXT_LIMIT) -> str:
    """What the process said as one inert line of at most ``limit`` characters (its control
    characters escaped: ops/terminal.py ``printable``): no line of the crawl's log is forged."""
    return printable(str(value)[:limit])


def count_of(value: object) -> int:
    """A counter the process said: a whole number from 0 below COUNT_LIMIT, else 0."""
    return value if type(value) is int and 0 <= value < COUNT_LIMIT else 0


def record_of(message: dict[str, Any]) -> logging.LogRecord:
    """A ``log`` message as a record of the crawl's log: the passes' logger's name (a dotted name,
    else pass_process.py's) and level, the text as the process formatted it, one line, its
    traceback after it, each line indented (none starts as a line of the log does)."""
    level = message.get("level")
    level = level if type(level) is int and 0 < level <= logging.CRITICAL else logging.WARNING
    name = message.get("name")
    name = name if isinstance(name, str) and len(name) <= NAME_LIMIT and LOGGER_NAME.fullmatch(name) else passes_logger.name
    text = text_of(message.get("message", ""))
    trace = message.get("traceback")
    if trace:
        text += "".join(f"\n  {printable(line)}" for line in str(trace)[-TRACEBACK_LIMIT:].splitlines())
    return logging.makeLogRecord(
        {
            "name": name,
            "levelno": level,
            "levelname": logging.getLevelName(level),
            "msg": "%s",
            "args": (text,),
        }
    )


def logger_for(record: logging.LogRecord) -> logging.Logger:
    """The crawl's logger a record of the passes' process goes through: the one of its name when
    the crawl has it (its level, its filters), else the passes' own. A name the process chose makes
    no logger: logging keeps every logger for the life of the process."""
    known = logging.Logger.manager.loggerDict.get(record.name)
    return known if isinstance(known, logging.Logger) else passes_logger


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
        self.engine_ran = False  # else no engine_stopped comes: the spider's close ends the process
        self.log_lines = 0  # relayed so far (LOG_LINES at most)

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
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
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
        """What the process says, until it leaves; what this process cannot take (a message over
        MESSAGE_LIMIT, not JSON, nested too deep, a value that breaks its handling) ends it: a
        reader that died would leave it unread, blocked on a full pair, and the crawl's end
        waiting for it."""
        assert self.channel is not None and self.process is not None
        while True:
            try:
                message = self.channel.receive()
            except EOFError:  # it has left
                break
            except (OSError, ValueError) as exc:
                self._stop_for(type(exc).__name__)
                return
            try:
                self.received(message)
            except Exception as exc:  # noqa: BLE001 - whatever it said: the crawl goes on, the process is ended
                self._stop_for(type(exc).__name__)
                return
        if self.cpu_seconds is None:  # no bye: it failed (or was killed) before the crawl's end
            self.process.kill()
            logger.warning(
                "The passes' process has ended (exit code %d); passages are left for the next crawl or `scrapy embed`",
                self.process.wait(),
            )

    def _stop_for(self, what: str) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait()
        logger.warning(
            "The passes' process said what the crawl cannot read (%s); it is stopped, passages are left for the next crawl or `scrapy embed`",
            what,
        )

    def received(self, message: dict[str, Any]) -> None:
        """One message of the passes' process (pass_process.py says which), on the reader's thread."""
        kind = message.get("kind")
        stats = self.crawler.stats
        if kind == "log":
            if self.log_lines >= LOG_LINES:
                if stats is not None:
                    stats.inc_value(LOG_DROPPED)
                return
            self.log_lines += 1
            if self.log_lines == LOG_LINES:
                logger.warning(
                    "The passes' process has said %d log lines; the crawl relays no more of them (%s counts them)",
                    LOG_LINES,
                    LOG_DROPPED,
                )
            record = record_of(message)
            target = logger_for(record)
            if target.isEnabledFor(record.levelno):
                target.handle(record)
        elif kind == "pass" and stats is not None:
            stats.inc_value("semantic/runs")  # passes (a stat named so would be masked)
            for name in COUNTERS:
                stats.inc_value(f"semantic/{name}", count_of(message.get(name)))
        elif kind == "ready" and stats is not None:
            stats.set_value("semantic/model", text_of(message.get("model", ""), NAME_LIMIT))
        elif kind == "refused":
            reason = text_of(message.get("reason", ""))
            logger.error("Semantic search's model is refused: %s; the crawl stops", reason)
            if stats is not None:
                stats.set_value(MODEL_REFUSED, reason or "refused")
            self._close_from_thread()
        elif kind == "bye":
            seconds = message.get("cpu_seconds")
            if type(seconds) is float and math.isfinite(seconds) and seconds >= 0:
                self.cpu_seconds = seconds
            elif type(seconds) is int and 0 <= seconds < 1 << 53:
                self.cpu_seconds = float(seconds)

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

    def engine_started(self) -> None:
        self.engine_ran = True

    async def spider_closed(self) -> None:
        """A spider closed before its engine started (a CloseSpider as it opened: no run for this
        process, crawl/frontier_scheduler.py) gets no engine_stopped from Scrapy: its passes'
        process, which would otherwise load the model and pass over the source beside the crawl
        that has the run until this process exits, ends here, with no last pass (nothing pushed)."""
        if self.process is not None and not self.engine_ran:
            self.final_seconds = 0
            await asyncio.to_thread(self._end)
            self.process = None

    async def engine_stopped(self) -> None:
        """The last pass, after the run's last push: the documents it pushed have passages when
        the crawl ends (within ``final_seconds``); then the process leaves."""
        if self.process is not None:
            await asyncio.to_thread(self._end)

    def _end(self) -> None:
        """Every wait bounded: the reader's (the process's bye, then its end of the pair closed)
        by the last pass's bound and END_GRACE, the process's exit by KILL_GRACE; then it is
        killed, and the pair shut, which ends the reader even where a descendant of the
        process holds its end."""
        assert self.process is not None and self.channel is not None and self.reader is not None
        try:
            self.channel.send("end", final_seconds=self.final_seconds)
        except OSError:  # it has left already (refused, failed): the reader has said why
            pass
        self.reader.join(max(self.final_seconds, 0) + END_GRACE)
        if self.reader.is_alive():
            logger.warning("The passes' process did not end %.0f s after its last pass's bound; it is stopped", END_GRACE)
            self.process.kill()
            self.channel.shutdown()
            self.reader.join(KILL_GRACE)
        try:
            self.process.wait(KILL_GRACE)
        except subprocess.TimeoutExpired:  # its end of the pair closed, and it lives on
            self.process.kill()
            self.process.wait()
        if self.reader.is_alive():  # blocked still: its descriptor is not closed under it (nor reused)
            logger.warning("The passes' process's reader did not end; it is left")
        else:
            self.channel.close()
        if self.cpu_seconds is not None:
            if self.crawler.stats is not None:
                self.crawler.stats.set_value("semantic/cpu_seconds", self.cpu_seconds)
            logger.info("The passes' process used %.1f s of CPU", self.cpu_seconds)
