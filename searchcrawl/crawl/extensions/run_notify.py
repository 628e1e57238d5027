"""RunNotify: a run's events sent by mail and webhook once its end is recorded (issue 60).

The run's end has one owner, RunEnd (extensions/run_end.py): the process that records it sends
``run_ended`` from its worker thread, and this extension, on that signal, gathers what the project
recorded of the run (``run_facts``: its state, counters and delta report, the statuses of its
URLs from the document table, the deletions held, the documents Solr did not take) and hands it
to the notifier (ops/notifier.py), which sends each configured event once per run and channel.
Blocking there is fine (the end is in a thread, the reactor goes on); every failure is logged and
never fails the crawl. A test-mode run, and a process that does not record the end (a node
leaving a shared run), notify nothing. Without a channel configured it is not enabled.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured

from searchcrawl.config.source import Source
from searchcrawl.crawl.run import REQUESTED_ENDS, Run
from searchcrawl.crawl.signals import run_ended
from searchcrawl.crawl.stores import Stores, source_of
from searchcrawl.ops.notifier import Notifier, NotifyConfig
from searchcrawl.rules.notify_events import LOGIN_STATUSES, TIKA_STATUSES, TLS_STATUSES, EndedRun
from searchcrawl.store.database import now
from searchcrawl.store.notifications import Notifications, run_examples, run_statuses
from searchcrawl.system.secrets import SecretError, redact

logger = logging.getLogger(__name__)
MAX_ERROR = 500  # characters of the ERROR line told


class ErrorLines(logging.Handler):
    """The crawl's ERROR lines, counted, and the first one kept (masked: ``redact``): what a
    failed run's message says instead of "the log says why". The first, because what follows a
    failure (a push that cannot go, a commit) is mostly its consequence."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.first = ""
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if self.first:
            return
        try:
            message = record.getMessage().strip()
        except Exception:  # noqa: BLE001 - a broken format string is logging's business
            message = str(record.msg)
        line = message.splitlines()[0] if message else ""
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            described = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
            if str(exc) not in line:
                line = f"{line} ({described})" if line else described
        self.first = redact(f"[{record.name}] {line}")[:MAX_ERROR]


class RunNotify:
    def __init__(self, crawler: Crawler, source: Source, config: NotifyConfig) -> None:
        self.crawler = crawler
        self.source = source
        self.config = config
        self.errors = ErrorLines()
        logging.getLogger().addHandler(self.errors)  # from the crawl's start to its end
        crawler.signals.connect(self.ended, signal=run_ended)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    def closed(self) -> None:
        logging.getLogger().removeHandler(self.errors)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RunNotify:
        if crawler.settings.getbool("SEARCHCRAWL_READ_ONLY"):
            raise NotConfigured  # a read-only crawl has no run to end
        source = source_of(crawler)
        try:
            config = NotifyConfig.from_settings(crawler.settings).for_source(source.settings.notify)
        except (ValueError, SecretError) as exc:  # a bad address, a secret's file unreadable: said, the crawl goes on
            logger.error("Notifications are off for this crawl: %s", exc)
            raise NotConfigured from None
        if not config.channels():
            raise NotConfigured  # no channel (the usual case: said in no log line)
        return cls(crawler, source, config)

    def ended(self, run: Run, state: Any, reason: str, counters: dict[str, Any], stores: Stores) -> None:
        if run.test_mode:
            return
        try:
            facts = self.run_facts(run, str(state), reason, counters, stores)
            Notifier(self.config, Notifications(stores.documents.database)).notify_run(facts)
        except Exception:
            logger.exception("The notifications of run %d of %s failed", run.id, run.source)

    def run_facts(self, run: Run, state: str, reason: str, counters: dict[str, Any], stores: Stores) -> EndedRun:
        database = stores.documents.database
        stats = self.crawler.stats
        statuses = run_statuses(database, run.id)
        delta = counters.get("delta") or {}
        return EndedRun(
            source=run.source,
            run_id=run.id,
            state=state,
            reason=reason,
            mode=run.mode,
            started=run.started,
            ended=now(),
            counters={key: value for key, value in counters.items() if key != "delta"},
            delta=delta,
            statuses=statuses,
            examples=run_examples(database, run.id, [*LOGIN_STATUSES, *TLS_STATUSES, *TIKA_STATUSES]),
            held=int(stats.get_value("searchcrawl/deletions_held", 0) or 0),
            not_indexed=int(stats.get_value("searchcrawl/not_indexed", 0) or 0),
            solr_failures=int(stats.get_value("searchcrawl/solr_failures", 0) or 0),
            in_index=stores.documents.count_in_index(run.source),
            test_mode=run.test_mode,
            crawl_failed=reason not in REQUESTED_ENDS,
            error=self.errors.first,
            errors=self.errors.count,
        )
