"""One way in for a URL: its admission, once, and the one factory of its requests.

A URL enters a crawl as a link of a page (the spider), a seed (the spider's start), a sitemap's
entry (middlewares/sitemaps.py), an agent's reference (crawl/agent_spider.py), or a URL the
document table knows (a maintenance crawl: ``Ledger.plan_maintenance`` with ``Admission.known``).
``Admission`` decides on it once, with one call to the source's rule chain (rules/chain.py
``RuleChain``: the URL rewriter for a link, the boundary, the scope filter), and gives it its
depth: what it lets in is a frontier ``Entry``. ``RequestFactory`` makes every request of such an
entry, whether the spider yields it or the frontier leased it; the request says it was admitted
(meta ``ADMITTED``), so nothing admits it again. A request made otherwise (a redirect's target, a
custom spider's own) is admitted where it meets the crawl: the scope middleware, the boundary
check; so is a URL this process did not admit itself (a resumed run's earlier session, another
node's, a duplicate the document table queued again to take its original's place:
``Admission.was_admitted``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response
from scrapy.signalmanager import SignalManager
from scrapy.statscollectors import StatsCollector

from searchcrawl.config.source import Source
from searchcrawl.config.source_derived import rule_chain
from searchcrawl.crawl.meta import ADMITTED, DEPTH, KNOWN, LEASED, PERSISTED, RENDER
from searchcrawl.crawl.signals import run_started, urls_excluded
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.chain import SKIPPED, Rewrite, RuleChain, RuleStep
from searchcrawl.rules.rendering import render_mode
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.url_rewriter import identity
from searchcrawl.rules.urls import canonical
from searchcrawl.store.frontier import Entry, Frontier

if TYPE_CHECKING:
    from twisted.python.failure import Failure

    from searchcrawl.crawl.run import Run

logger = logging.getLogger(__name__)

# URLs (with their depth) a process remembers it admitted, then forgets: about 15 MB at most (the
# URLs' strings and the dict). A URL forgotten costs one decision of the rule chain when its
# request is made (the boundary check admits it again, as it was): about 20 us, against about
# 3 ms a page. At 1,000,000 it held a million-URL source's every URL, about 150 MB.
ADMITTED_LIMIT = 100_000
# URLs excluded a process remembers it recorded, then forgets (forgetting costs a repeated, idempotent write)
RECORDED_LIMIT = 100_000
# Links a process remembers the canonical target of (``Admission.target``: a page's anchors), then forgets
TARGETS_LIMIT = 16_384
# The crawl's stats key of each exclusion status (Enum.name costs a property call a link)
EXCLUDED_STAT = {status: f"searchcrawl/excluded/{status.name.lower()}" for status in Status}


class BoundedSet:
    """A set that forgets its oldest members beyond ``size``: memory stays flat on huge crawls."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, item: str) -> bool:
        return item in self.items

    def add(self, item: str) -> None:
        self.items[item] = None
        if len(self.items) > self.size:
            self.items.popitem(last=False)


def admitted(request: Request) -> bool:
    """Was ``request``'s URL admitted by the source's rules (as this URL: a redirect copies the meta)?"""
    return request.meta.get(ADMITTED) == request.url


class Admission:
    """The crawl's admission of URLs (an extension, EXTENSIONS -800: one a crawl, shared by the
    spider, the scope and boundary middlewares, the sitemaps and the run's start): the source's
    rule chain on each URL entering the crawl, once, and its depth. It remembers what this
    process admitted (``was_admitted``, bounded) and the exclusions, which the ledger writes with
    the next ``flush`` (the caller's, once per page or batch); a read-only crawl writes none."""

    def __init__(self, chain: RuleChain, stats: StatsCollector, signals: SignalManager, *, orphans: str = "keep") -> None:
        self.chain = chain
        self.stats = stats
        self.signals = signals
        # a source that deletes orphans needs every link seen (to mark it linked), queued or not
        self.skip_queued = orphans != "delete"
        self.frontier: Frontier | None = None  # the run's, once it started (``run_started``)
        self.admitted: dict[str, int] = {}  # URL -> depth: what this process's rules let in
        self.excluded: list[tuple[str, int, int, str]] = []  # to record: (url, status, depth, rule)
        self.recorded = BoundedSet(RECORDED_LIMIT)
        self.targets: OrderedDict[str, str | None] = OrderedDict()  # link -> its target (``target``)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Admission:
        source = source_of(crawler)
        # a source of another type than web sites: its agent (the spider's, built before the
        # extensions) says which URLs are its documents
        agent = getattr(crawler.spider, "agent", None)
        chain = rule_chain(source, crawler.settings.getint("SEARCHCRAWL_MAX_URL_LENGTH"), agent)
        admission = cls(chain, crawler.stats, crawler.signals, orphans=source.settings.orphans)
        crawler.signals.connect(admission.run_started, signal=run_started)
        return admission

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.frontier = frontier

    # --- the ways in ---

    @property
    def rewrites(self) -> bool:
        return self.chain.rewriter is not identity

    def link(self, url: str, depth: int) -> Entry | None:
        """A link found ``depth`` links from a seed (or a sitemap's entry, at depth 0): canonical,
        as the URL rewriter makes it, inside the rules; None when a rule keeps it out (recorded)
        or it is queued in this run already (nothing to do)."""
        try:
            url = canonical(url)
        except ValueError as exc:  # e.g. a port out of range: the page's other links go on
            self.exclude_now(url[:2000], Status.EXCLUDED_PORT, depth, f"not a valid URL: {exc}")
            return None
        # Most links of a site lead to pages queued already: the rules are not asked about those
        # (as the rewriter makes them), which costs the crawl's hot path one look-up
        step = self.admit(url, depth, rewrite="link" if self.rewrites else None, skip=self.queued)
        if not step.allowed or step.decision is SKIPPED:
            return None
        return Entry(step.url, depth)

    def target(self, url: str) -> str | None:
        """The URL the document table knows a link to ``url`` by: canonical, as the URL rewriter
        makes it (what ``link`` would queue), recording nothing; None when it is no URL, the
        rewriter drops it, or the source's domain rules keep it out (``RuleChain.off_domains``:
        never a document of the source, whatever its path or depth). What a page's anchors name
        (content/anchors.py): an anchor to another site was kept, written with the page, looked up
        for a mark with it, and never counted (37 % of the Nutch site's 84,980 anchors: its Javadoc's links to the
        JDK's and Hadoop's). Other rules judge nothing here: a link beyond the depth, or a path a
        rule keeps out, names a URL whose document may come (another link, the rules changed).
        The site's menus name the same links on every page: remembered, bounded."""
        targets = self.targets
        try:
            targets.move_to_end(url)
            return targets[url]
        except KeyError:
            pass
        try:
            found: str | None = canonical(url)
        except ValueError:
            found = None
        if found is not None and self.rewrites:
            step = self.chain.rewrite_step(found, link=True)
            found = step.url if step.allowed else None
        if found is not None and self.chain.off_domains(found):
            found = None
        targets[url] = found
        if len(targets) > TARGETS_LIMIT:
            targets.popitem(last=False)
        return found

    def seed(self, url: str) -> tuple[Entry | None, RuleStep]:
        """A seed (canonical, at depth 0, never rewritten): its entry, or None, and the rules' step."""
        step = self.admit(url, 0)
        return (Entry(url, 0) if step.allowed else None), step

    def reference(self, url: str, data: dict[str, Any]) -> Entry | None:
        """An agent's document (at depth 0), with its reference's request data."""
        return Entry(url, 0, data) if self.admit(url, 0).allowed else None

    def request(self, request: Request, depth: int) -> RuleStep:
        """A request made without an entry (a custom spider's own, a redirect's target), judged
        as it is at ``depth``; admitted, it says so (meta ``ADMITTED``, ``DEPTH``). The rules' step."""
        step = self.admit(request.url, depth)
        if step.allowed:
            request.meta[DEPTH] = depth
            request.meta[ADMITTED] = request.url
        return step

    def known(self, url: str, depth: int) -> tuple[int, str] | None:
        """(status, rule) when the rules keep a URL the document table knows out now (a
        maintenance crawl's, queued again unless so), else None (and it is admitted)."""
        refusal = self.chain.refusal(url, depth)
        if refusal is None:
            self.remember(url, depth)
        return refusal

    def queued(self, url: str) -> bool:
        frontier = self.frontier
        return self.skip_queued and frontier is not None and frontier.in_run(url)

    # --- the one door into the run's frontier ---

    def queue(self, entries: Sequence[Entry], again: bool = False, connection: Any = None) -> int:
        """Put admitted ``entries`` in the run's frontier: the links of a page (the scope
        middleware), a sitemap's URLs, an agent's listing, a request the engine schedules (the
        frontier scheduler). ``again``: the same URL once more in this run (a retry, a render
        after a static fetch). ``connection``: in that transaction (the ledger's batch, which
        writes a page's links with its outcome). Returns how many were stored (0 before the run
        started, or in a read-only crawl, which has none). The one caller of the frontier's
        ``add`` (tests/store/test_one_writer.py)."""
        frontier = self.frontier
        return frontier.add(entries, again=again, connection=connection) if frontier is not None and entries else 0

    # --- what it remembers ---

    def admit(self, url: str, depth: int, *, rewrite: Rewrite = None, skip: Any = None) -> RuleStep:
        """The chain's decision on ``url`` (``RuleChain.decide``); an exclusion is remembered
        for the ledger (written by ``flush``) and counted per crawler code."""
        step = self.chain.decide(url, depth, rewrite=rewrite, skip=skip)
        decision = step.decision
        if decision is SKIPPED:
            return step
        if decision.allowed:
            self.remember(step.url, depth)
        else:
            assert decision.status is not None
            # the rewriter's refusal names the link as found (cut: it may be anything a page holds)
            self.exclude(step.url[:2000] if step.name == "url_rewriter" else step.url, decision.status, depth, decision.rule)
        return step

    def exclude(self, url: str, status: Status, depth: int, rule: str) -> None:
        """``url`` is kept out (``rule``): counted, and recorded with the next ``flush``."""
        self.stats.inc_value(EXCLUDED_STAT[status])
        if url not in self.recorded:
            self.recorded.add(url)
            self.excluded.append((url, int(status), depth, rule))
            logger.debug("Excluded (%s): %s", rule, url)

    def exclude_now(self, url: str, status: Status, depth: int, rule: str) -> None:
        """A link kept out before the rules can judge it (an invalid URL), written at once."""
        self.exclude(url, status, depth, rule)
        self.flush()

    def flush(self) -> None:
        """Send the exclusions remembered since the last flush (``urls_excluded``: the ledger
        writer records them; a read-only crawl has none, and records nothing)."""
        if self.excluded:
            excluded, self.excluded = self.excluded, []
            self.signals.send_catch_log(urls_excluded, rows=excluded)

    def remember(self, url: str, depth: int) -> None:
        """``url`` was admitted at ``depth`` by this process's rules: its request need not be
        admitted again (``was_admitted``). Bounded: past ``ADMITTED_LIMIT`` URLs the memory is
        cleared, and a URL forgotten is only admitted once more."""
        if len(self.admitted) >= ADMITTED_LIMIT:
            self.admitted.clear()
        self.admitted[url] = depth

    def was_admitted(self, url: str, depth: int) -> bool:
        """Did this process's rules admit ``url`` at ``depth``? Not a URL another process queued
        (a resumed run's earlier session, another node of a shared crawl: the source file may
        have changed since), nor one the document table queued again itself (a duplicate taking
        its original's place): the boundary check admits those when they are requested."""
        return self.admitted.get(url) == depth


def admission_of(crawler: Crawler) -> Admission:
    """The crawl's admission, for a component's ``from_crawler``."""
    admission = crawler.get_extension(Admission)
    if admission is None:
        source_of(crawler)  # NotConfigured for another spider
        raise RuntimeError("searchcrawl.crawl.requests.Admission is not enabled (EXTENSIONS): a source's crawl needs it")
    return admission


class CrawlingSpider(Protocol):
    """What the factory asks of the spider whose requests it makes: its source, and its callback and
    errback (crawl/spider.py ``SourceSpider``, named here by its shape: the spider imports this
    module, which imports no spider back)."""

    @property
    def source(self) -> Source: ...

    def parse(self, response: Response) -> Any: ...

    def failed(self, failure: Failure) -> None: ...


class RequestFactory:
    """Every request of a URL of the source: from an admitted entry, as the spider yields it or
    the frontier leased it. Its meta: the depth, the render mode of the source's render rules,
    the persisted request data, and from a lease what the document table knew (``KNOWN``)."""

    def __init__(self, spider: CrawlingSpider, admission: Admission, renders: bool = True) -> None:
        self.spider = spider
        self.admission = admission
        settings = spider.source.settings
        self.render: tuple[Any, Any] | None = (settings.render_js, settings.render_rules) if renders else None
        crawler = getattr(spider, "crawler", None)
        # breadth-first with Scrapy's scheduler, as its DepthMiddleware would (the frontier leases by depth)
        self.depth_priority = crawler.settings.getint("DEPTH_PRIORITY") if crawler is not None else 0

    def __call__(self, entry: Entry, *, leased: bool = False) -> Request:
        """The request of ``entry``; ``leased`` from the frontier. It is marked admitted when this
        process's rules admitted its URL at its depth (``Admission.was_admitted``): not what an
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
        if self.admission.was_admitted(entry.url, entry.depth):
            meta[ADMITTED] = entry.url
        if entry.known is not None:
            meta[KNOWN] = entry.known
        if leased:
            meta[LEASED] = True
        return Request(entry.url, callback=callback, errback=self.spider.failed, meta=meta, priority=priority)


def entry_of(request: Request) -> Entry:
    """The frontier entry of a request: its URL, depth and persisted data (crawl/meta.py
    ``PERSISTED``; the callback's name when not ``parse``; a priority). Whether it was admitted is
    not kept: the factory asks ``Admission.was_admitted`` when the entry is leased."""
    meta = request.meta
    data: dict[str, Any] = {key: meta[key] for key in PERSISTED if meta.get(key) is not None}
    callback = getattr(request.callback, "__name__", None)
    if callback and callback != "parse":
        data["callback"] = callback
    if request.priority:
        data["priority"] = request.priority
    return Entry(request.url, meta.get(DEPTH, 0), data)
