"""Spider middleware: a page's requests go into the durable frontier, inside the source's boundary.

The spider's links were admitted as it found them (crawl/requests.py ``Admission``: an excluded
link never takes a place in the frontier, and gets a row with its crawler code); a request it
made otherwise (a custom spider's own) is admitted here, a link from the page (one level deeper)
or the page itself again. The admitted requests of a page are queued in one batch *before* its
document goes on to the pipelines: a page is marked done by its outcome (its document cached,
or why it has none: searchcrawl/rules/lifecycle.py), so a crash before that loses nothing (the
page is simply fetched again), and a page without an outcome is never quietly done. With
``SEARCHCRAWL_LINKS_WITH_OUTCOMES`` (the default) the batch is handed to the ledger writer, which
queues it in the transaction of its next batch of outcomes, before them (issue 94); not for a
source deleting orphans, whose links are marked linked at once, so their rows must exist then.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.meta import DEPTH
from searchcrawl.crawl.requests import Admission, admission_of, admitted, entry_of
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import run_started
from searchcrawl.crawl.stores import source_of
from searchcrawl.store.frontier import Entry, Frontier


def depth_of(request: Request, response: Response) -> int:
    """The depth of a request the spider made without its admission: the page's own for the page
    itself, else one more (as Scrapy's DepthMiddleware counts)."""
    depth: int = response.meta.get(DEPTH, 0)
    return depth if request.url == response.url else depth + 1


class ScopeMiddleware:
    """Queues a page's admitted requests in the run's frontier (see the module's docstring); with
    ``orphans = "delete"``, the ledger marks its links linked. Without a run (a read-only crawl,
    Scrapy's own scheduler) the requests go on to the scheduler."""

    def __init__(self, admission: Admission, ledger: LedgerWriter | None = None, *, marks_linked: bool = False) -> None:
        self.admission = admission
        self.ledger = ledger
        self.marks_linked = marks_linked and ledger is not None
        self.frontier: Frontier | None = None  # the run's (``run_started``)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScopeMiddleware:
        orphans = source_of(crawler).settings.orphans
        middleware = cls(admission_of(crawler), crawler.get_extension(LedgerWriter), marks_linked=orphans == "delete")
        crawler.signals.connect(middleware.run_started, signal=run_started)
        return middleware

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.frontier = frontier

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        links: list[Entry] = []
        again: list[Entry] = []  # dont_filter: the same URL once more in this run (a render after a static fetch)
        held: list[Any] = []
        frontier = self.frontier
        async for output in result:
            if isinstance(output, Request):
                if not admitted(output) and not self.admission.request(output, depth_of(output, response)).allowed:
                    continue
                if frontier is not None:
                    (again if output.dont_filter else links).append(entry_of(output))
                    continue
            held.append(output)
        self.admission.flush()
        if again:
            self.admission.queue(again, again=True)
        if links:
            if self.ledger is not None and self.ledger.links_with_outcomes and not self.marks_linked:
                # queued in the transaction of the batch that writes this page's outcome, before it
                self.ledger.before_outcomes(lambda connection: self.admission.queue(links, connection=connection))
            else:
                self.admission.queue(links)
            if self.marks_linked:
                assert self.ledger is not None
                self.ledger.mark_linked([link.url for link in links])
        for output in held:
            yield output
