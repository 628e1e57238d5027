"""Spider middleware: a page's links go into the durable frontier, inside the source's boundary.

Links are checked here, as the spider yields them, so that an excluded link never takes a place
in the frontier; each excluded URL gets a row with its crawler code. The admitted links of a
page are queued in one batch *before* its document goes on to the pipelines: a page is marked
done by its outcome (its document cached, or why it has none: searchcrawl/rules/lifecycle.py), so a crash
before that loses nothing (the page is simply fetched again), and a page without an outcome is
never quietly done. Requests need ``meta['depth']`` (set by Scrapy's
DepthMiddleware, which runs before this one).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from searchcrawl.crawl.extensions.crawl_state import CrawlState, crawl_state
from searchcrawl.crawl.frontier_scheduler import entry_from_request
from searchcrawl.crawl.meta import DEPTH, SAME_DEPTH
from searchcrawl.store.frontier import Entry


class ScopeMiddleware:
    def __init__(self, context: CrawlState) -> None:
        self.context = context

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
                if output.meta.pop(SAME_DEPTH, False):  # DepthMiddleware counted it as a link
                    output.meta[DEPTH] = response.meta.get(DEPTH, 0)
                if not self.context.admit(output.url, output.meta.get(DEPTH, 0)).allowed:
                    continue
                if for_frontier:
                    (again if output.dont_filter else links).append(entry_from_request(output))
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
