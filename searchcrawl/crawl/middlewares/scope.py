"""Spider middleware: a page's requests go into the durable frontier, inside the source's boundary.

The spider's links were admitted as it found them (crawl/requests.py ``Admission``: an excluded
link never takes a place in the frontier, and gets a row with its crawler code); a request it
made otherwise (a custom spider's own) is admitted here, a link from the page (one level deeper)
or the page itself again. The admitted requests of a page are queued in one batch *before* its
document goes on to the pipelines: a page is marked done by its outcome (its document cached,
or why it has none: searchcrawl/rules/lifecycle.py), so a crash before that loses nothing (the
page is simply fetched again), and a page without an outcome is never quietly done.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from searchcrawl.crawl.extensions.crawl_state import CrawlState, crawl_state
from searchcrawl.crawl.meta import DEPTH
from searchcrawl.crawl.requests import Admission, admitted, entry_of
from searchcrawl.store.frontier import Entry


def depth_of(request: Request, response: Response) -> int:
    """The depth of a request the spider made without its admission: the page's own for the page
    itself, else one more (as Scrapy's DepthMiddleware counts)."""
    depth: int = response.meta.get(DEPTH, 0)
    return depth if request.url == response.url else depth + 1


class ScopeMiddleware:
    def __init__(self, context: CrawlState) -> None:
        self.context = context
        self.admission = Admission(context)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ScopeMiddleware:
        return cls(crawl_state(crawler))

    async def process_spider_output(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        links: list[Entry] = []
        again: list[Entry] = []  # dont_filter: the same URL once more in this run (a render after a static fetch)
        held: list[Any] = []
        for_frontier = self.context.frontier is not None
        async for output in result:
            if isinstance(output, Request):
                if not admitted(output) and not self.admission.request(output, depth_of(output, response)).allowed:
                    continue
                if for_frontier:
                    (again if output.dont_filter else links).append(entry_of(output))
                    continue
            held.append(output)
        self.context.flush_exclusions()
        if again:
            assert self.context.frontier is not None
            self.context.frontier.add(again, again=True)
        if links:
            assert self.context.frontier is not None
            self.context.frontier.add(links)
            if self.context.source.settings.orphans == "delete":
                self.context.writer.mark_linked([link.url for link in links])
        for output in held:
            yield output
