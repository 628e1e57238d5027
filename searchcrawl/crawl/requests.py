"""One way in for a URL: its admission, once, and the one factory of its requests.

A URL enters a crawl as a link of a page (the spider), a seed (the spider's start), a sitemap's
entry (middlewares/sitemaps.py), an agent's reference (crawl/agent_spider.py), or a URL the
document table knows (a maintenance crawl: ``DocumentTable.plan_maintenance`` with
``CrawlState.rule_excluding``). ``Admission`` decides on it once, with one call to the source's
rule chain (``CrawlState.admit``: the URL rewriter for a link, the boundary, the scope filter),
and gives it its depth: what it lets in is a frontier ``Entry``. ``RequestFactory`` makes every
request of such an entry, whether the spider yields it or the frontier leased it; the request
says it was admitted (meta ``ADMITTED``), so nothing admits it again. A request made otherwise
(a redirect's target, a custom spider's own) is admitted where it meets the crawl: the scope
middleware, the boundary check; so is a URL this process did not admit itself (a resumed run's
earlier session, another node's, a duplicate the document table queued again to take its
original's place: ``CrawlState.was_admitted``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request

from searchcrawl.crawl.extensions.crawl_state import SKIPPED
from searchcrawl.crawl.meta import ADMITTED, DEPTH, KNOWN, LEASED, PERSISTED, RENDER
from searchcrawl.rules.rendering import render_mode
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.urls import canonical
from searchcrawl.store.frontier import Entry

if TYPE_CHECKING:
    from searchcrawl.crawl.extensions.crawl_state import CrawlState, RuleStep
    from searchcrawl.crawl.spider import SourceSpider


def admitted(request: Request) -> bool:
    """Was ``request``'s URL admitted by the source's rules (as this URL: a redirect copies the meta)?"""
    return request.meta.get(ADMITTED) == request.url


class Admission:
    """The source's rules on a URL entering the crawl, once (``CrawlState.admit``), and its depth.

    Exclusions are remembered by the crawl's state and written with its next
    ``flush_exclusions`` (the caller's, once per page or batch)."""

    def __init__(self, state: CrawlState) -> None:
        self.state = state
        settings = state.source.settings
        self.rewrites = bool(settings.url_rewriter)
        # a source that deletes orphans needs every link seen (to mark it linked), queued or not
        self.skip_queued = settings.orphans != "delete"

    def link(self, url: str, depth: int) -> Entry | None:
        """A link found ``depth`` links from a seed (or a sitemap's entry, at depth 0): canonical,
        as the URL rewriter makes it, inside the rules; None when a rule keeps it out (recorded)
        or it is queued in this run already (nothing to do)."""
        try:
            url = canonical(url)
        except ValueError as exc:  # e.g. a port out of range: the page's other links go on
            self.state.exclude_link(url[:2000], Status.EXCLUDED_PORT, depth, f"not a valid URL: {exc}")
            return None
        # Most links of a site lead to pages queued already: the rules are not asked about those
        # (as the rewriter makes them), which costs the crawl's hot path one look-up
        step = self.state.admit(url, depth, rewrite="link" if self.rewrites else None, skip=self.queued)
        if not step.allowed or step.decision is SKIPPED:
            return None
        return Entry(step.url, depth)

    def seed(self, url: str) -> tuple[Entry | None, RuleStep]:
        """A seed (canonical, at depth 0, never rewritten): its entry, or None, and the rules' step."""
        step = self.state.admit(url, 0)
        return (Entry(url, 0) if step.allowed else None), step

    def reference(self, url: str, data: dict[str, Any]) -> Entry | None:
        """An agent's document (at depth 0), with its reference's request data."""
        return Entry(url, 0, data) if self.state.admit(url, 0).allowed else None

    def request(self, request: Request, depth: int) -> RuleStep:
        """A request made without an entry (a custom spider's own, a redirect's target), judged
        as it is at ``depth``; admitted, it says so (meta ``ADMITTED``, ``DEPTH``). The rules' step."""
        step = self.state.admit(request.url, depth)
        if step.allowed:
            request.meta[DEPTH] = depth
            request.meta[ADMITTED] = request.url
        return step

    def queued(self, url: str) -> bool:
        frontier = self.state.frontier
        return self.skip_queued and frontier is not None and frontier.in_run(url)


class RequestFactory:
    """Every request of a URL of the source: from an admitted entry, as the spider yields it or
    the frontier leased it. Its meta: the depth, the render mode of the source's render rules,
    the persisted request data, and from a lease what the document table knew (``KNOWN``)."""

    def __init__(self, spider: SourceSpider, renders: bool = True) -> None:
        self.spider = spider
        settings = spider.source.settings
        self.render: tuple[Any, Any] | None = (settings.render_js, settings.render_rules) if renders else None
        crawler = getattr(spider, "crawler", None)
        # breadth-first with Scrapy's scheduler, as its DepthMiddleware would (the frontier leases by depth)
        self.depth_priority = crawler.settings.getint("DEPTH_PRIORITY") if crawler is not None else 0

    def __call__(self, entry: Entry, *, leased: bool = False) -> Request:
        """The request of ``entry``; ``leased`` from the frontier. It is marked admitted when this
        process's rules admitted its URL at its depth (``CrawlState.was_admitted``): not what an
        earlier process queued (a resumed run: the source file may have changed since), another
        node, or the document table itself (a duplicate taking its original's place); the
        boundary check admits those."""
        meta: dict[str, Any] = {DEPTH: entry.depth}
        if self.render is not None:
            mode = render_mode(entry.url, *self.render)
            if mode != "static":
                meta[RENDER] = mode
        callback: Any = self.spider.parse
        priority = -entry.depth * self.depth_priority
        data = entry.data
        if data:
            meta.update({key: value for key, value in data.items() if key in PERSISTED})
            if data.get("callback"):
                callback = getattr(self.spider, data["callback"])
            priority = data.get("priority") or priority
        if self.spider.context.was_admitted(entry.url, entry.depth):
            meta[ADMITTED] = entry.url
        if entry.known is not None:
            meta[KNOWN] = entry.known
        if leased:
            meta[LEASED] = True
        return Request(entry.url, callback=callback, errback=self.spider.failed, meta=meta, priority=priority)


def entry_of(request: Request) -> Entry:
    """The frontier entry of a request: its URL, depth and persisted data (crawl/meta.py
    ``PERSISTED``; the callback's name when not ``parse``; a priority). Whether it was admitted is
    not kept: the factory asks ``CrawlState.was_admitted`` when the entry is leased."""
    meta = request.meta
    data: dict[str, Any] = {key: meta[key] for key in PERSISTED if meta.get(key) is not None}
    callback = getattr(request.callback, "__name__", None)
    if callback and callback != "parse":
        data["callback"] = callback
    if request.priority:
        data["priority"] = request.priority
    return Entry(request.url, meta.get(DEPTH, 0), data)
