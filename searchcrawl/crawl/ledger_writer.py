"""LedgerWriter: the one writer of URL states during a crawl (built and kept by the CrawlState
extension, so a source's crawl never runs without it; kept, since signal receivers are weak
references). It is the source's ``Ledger`` (searchcrawl/store/ledger.py): every write of a URL's
row in a crawl goes through it, and the components that write (the push, the run's start and
end, the scope middleware, the agent spider) call its methods, never the document table's.

Spider, middlewares and pipelines report what happened to a URL; this component (not an extension of its own: CrawlState builds it) records it
through the document table, whose every state change the ledger (searchcrawl/rules/lifecycle.py) decides.
What it listens to:

- ``url_outcome`` (searchcrawl/crawl/signals.py): an ``Outcome`` sent by a component;
- ``item_dropped``: a ``NotIndexed`` carries its outcome; any other ``DropItem`` (a custom
  pipeline's) gives the URL status 934 with the pipeline's message;
- ``item_error`` and ``spider_error``: processing raised. The URL gets status 925 with the
  error, counted like a transient failure (its document, if any, stays until ``max_failures``),
  and the run goes on and finishes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.crawler import Crawler
from twisted.python.failure import Failure

from searchcrawl.crawl.meta import DEPTH
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.ledger import Ledger

if TYPE_CHECKING:
    from searchcrawl.crawl.extensions.crawl_state import CrawlState
    from searchcrawl.store import DocumentTable

logger = logging.getLogger(__name__)

MAX_REASON = 500  # characters of an error message kept in a row's reason


def processing_error(error: BaseException, depth: int | None = None) -> Outcome:
    """The outcome of a URL whose processing raised ``error``."""
    reason = f"processing raised {type(error).__name__}: {error}"[:MAX_REASON]
    return Outcome(Event.FAILED, int(Status.PROCESSING_ERROR), reason, depth)


def _raised(failure: Failure) -> BaseException:
    """The exception of ``failure``: Twisted types ``Failure.value`` Optional, None only while a
    Failure is being built."""
    assert failure.value is not None
    return failure.value


class LedgerWriter(Ledger):
    """The source's ledger (searchcrawl/store/ledger.py), which records what the crawl's components
    report through Scrapy's signals. The other writes of a URL's state (Solr's answers, the
    run's settlements, links in bulk) are its ``Ledger`` methods, which the components call."""

    def __init__(self, crawler: Crawler, context: CrawlState) -> None:
        super().__init__(context.table, context.source.name, context.source.settings.max_failures)
        self.crawler = crawler
        self.context = context
        crawler.signals.connect(self.url_outcome, signal=url_outcome)
        crawler.signals.connect(self.item_dropped, signal=signals.item_dropped)
        crawler.signals.connect(self.item_error, signal=signals.item_error)
        crawler.signals.connect(self.spider_error, signal=signals.spider_error)

    @property
    def table(self) -> DocumentTable:
        """The crawl's document table, that of its run once it started (CrawlState.table)."""
        return self.context.table

    def url_outcome(self, url: str, outcome: Outcome) -> None:
        self.record(url, outcome)
        self.crawler.stats.inc_value(f"searchcrawl/outcome/{outcome.event.value}")

    def item_dropped(self, item: Any, response: Any, exception: BaseException, spider: Any = None) -> None:
        url = getattr(item, "url", None)
        if url is None:
            return
        outcome = getattr(exception, "outcome", None) or Outcome(
            Event.GONE, int(Status.DROPPED), f"dropped by a pipeline: {exception}"[:MAX_REASON], getattr(item, "depth", None)
        )
        self.url_outcome(url, outcome)

    def item_error(self, item: Any, response: Any, spider: Any, failure: Failure) -> None:
        url = getattr(item, "url", None)
        if url is not None:
            self.url_outcome(url, processing_error(_raised(failure), getattr(item, "depth", None)))

    def spider_error(self, failure: Failure, response: Any, spider: Any = None) -> None:
        request = getattr(response, "request", None)
        url = request.url if request is not None else getattr(response, "url", None)
        if url is not None:
            depth = request.meta.get(DEPTH) if request is not None else None
            self.url_outcome(url, processing_error(_raised(failure), depth))
