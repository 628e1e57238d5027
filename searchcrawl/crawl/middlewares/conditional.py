"""Downloader middleware: conditional GETs for documents already in the index.

If-Modified-Since carries the stored Last-Modified, If-None-Match the stored ETag; a 304 reaches
the spider, which records the document as unchanged. Scrapy's HttpCache is not used for this: it
hides 304s and stores whole bodies. A forced recrawl sends no validators, nor does a source that
deletes orphans (a 304 has no links, and finding orphans needs every page's links).

A navigation page kept out of the index (917, rules/navigation_pages.py) is asked conditionally
too while the rules still keep it out: its 304 keeps it out, and its links are known URLs, which
a maintenance crawl queues anyway.
"""

from __future__ import annotations

from collections.abc import Sequence

from scrapy import Request
from scrapy.crawler import Crawler

from searchcrawl.crawl.meta import DUPLICATE_OF, KNOWN, PREVIOUS, RENDER, own_request
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import run_started
from searchcrawl.crawl.stores import source_of, stores_of
from searchcrawl.rules.navigation_pages import revalidated
from searchcrawl.store.documents import IN_INDEX, DocumentTable
from searchcrawl.store.frontier import Frontier, Known


def known_of(request: Request, documents: DocumentTable, source: str) -> Known | None:
    """What the document table knows of the request's URL: as the frontier leased it (meta
    ``KNOWN``), else looked up (a request not from the frontier: Scrapy's scheduler)."""
    if KNOWN in request.meta:
        known: Known | None = request.meta[KNOWN]
        return known
    row = documents.get(source, request.url)
    return None if row is None else Known.of(row)


class ConditionalGetMiddleware:
    """Validators from what the document table knows of a URL (see the module's docstring); a
    forced run (``run_started``) sends none. ``agent``: the source is an agent's (its duplicates
    stay duplicates while unchanged); ``navigation_pages``: the source's (None: the default ones)."""

    def __init__(
        self,
        documents: DocumentTable,
        source: str,
        *,
        agent: bool = False,
        orphans: str = "keep",
        navigation_pages: Sequence[str] | None = None,
    ) -> None:
        self.documents, self.source = documents, source
        self.agent = agent
        self.navigation_pages = navigation_pages
        # orphan detection needs every page's links: no validators
        self.validates = orphans != "delete"
        self.forced = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalGetMiddleware:
        source, stores = source_of(crawler), stores_of(crawler)
        settings = source.settings
        middleware = cls(
            stores.documents,
            source.name,
            agent=source.agent_class is not None,
            orphans=settings.orphans,
            navigation_pages=settings.navigation_pages,
        )
        crawler.signals.connect(middleware.run_started, signal=run_started)
        return middleware

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.forced = run.forced

    def process_request(self, request: Request) -> None:
        if own_request(request):
            return
        known = known_of(request, self.documents, self.source)
        request.meta.pop(KNOWN, None)  # read here: not carried on to the response
        if known is None:
            return
        if known.state not in IN_INDEX and not self.navigation_page(request.url, known):
            if self.agent and known.duplicate_of:
                # an agent's duplicate (a file copied, an attachment sent twice): unchanged, it stays one
                # with its checksum: a copy whose readers changed is no longer a copy (crawl/handlers/agent.py)
                request.meta[DUPLICATE_OF] = (known.etag, known.duplicate_of, known.checksum)
            return
        request.meta[PREVIOUS] = {
            "checksum": known.checksum,
            "last_modified": known.last_modified,
            "etag": known.etag,
            "state": known.state,
        }
        if self.forced or not self.validates or request.meta.get(RENDER) == "browser":
            return  # a forced recrawl ignores validators; orphan detection needs every page's links;
            # a page that may be rendered needs its body (a browser cannot render a 304)
        if known.last_modified:
            request.headers.setdefault(b"If-Modified-Since", known.last_modified.encode("latin-1"))
        if known.etag:
            request.headers.setdefault(b"If-None-Match", known.etag.encode("latin-1"))

    def navigation_page(self, url: str, known: Known) -> bool:
        """A web page kept out of the index as a navigation page, still one: asked conditionally
        (an agent's references are not web pages: their own handler answers them)."""
        return not self.agent and revalidated(url, known.status, self.navigation_pages)
