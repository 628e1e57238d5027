"""Downloader middleware: a source's sitemaps, read before the pages of their site are requested.

Which sitemaps: the source's ``sitemaps`` (any http(s) URL its author wrote), and the ``Sitemap:``
lines of each site's robots.txt (``sitemaps_from_robots``, read when robots.txt is: with
``obey_robots``); a sitemap index's children. A sitemap found in a robots.txt or an index is
fetched only on its site's host and port, and a sitemap lists only its own site's pages:
anything else in it is ignored (sitemaps.org's rule, and a hostile sitemap's reach). Hosts and
ports are compared as Scrapy will request the URL (``rules/sitemaps.same_site``). Every sitemap request goes
through the downloader middlewares like a page's (internal-address guard, robots.txt,
credentials, politeness), through ``engine.download``, so no callback and no ledger row sees it.

They are read before the first page request of their site (the source file's: of any site) is
sent; the source file's, when no request reaches here (every one refused before, by robots.txt
or a rule), once the crawl is idle (``idle``), so their URLs are seeds in every crawl. No
sitemap is read once the spider has closed.

What they do: their URLs join the crawl as seeds (depth 0), each still passing every scope rule;
and, in a maintenance crawl with ``trust_sitemap_lastmod``, a known, indexed URL whose sitemap
``lastmod`` is not newer than its last fetch is not requested at all: it is recorded unchanged
(status 915) without a request. That is why a site's page requests wait here until its
sitemaps are read (robots.txt has been, by then: RobotsMiddleware runs first). A source that
deletes orphans needs every page's links, so it requests every page, as with conditional GETs.

The sparing is done in bulk as each sitemap is read (``Ledger.record_spared``: a few statements
per 500 URLs), not request by request: an unchanged million costs its sitemaps' reading, not a
million trips through the downloader. A page spared so never reaches the middlewares before
this one, so it is spared in bulk only where they would let it through: its site's robots.txt
(the last one read, as RobotsMiddleware read it: ``robots_txt_read``) allows it (with
``obey_robots``), and it is on the sitemap's own host and port, whose address the sitemap's
request passed. The other URLs, and those leased already when their sitemap is read (in
flight), keep a lastmod hint, checked as their request passes here (``refuse_if_unchanged``, the
same rule: ``unchanged``); a first crawl keeps none (nothing known can be spared).

Bounds (hostile sitemaps): ``SEARCHCRAWL_SITEMAP_MAX_FILES`` files per crawl,
``SEARCHCRAWL_SITEMAP_MAX_SECONDS`` reading one site's (or the source file's) sitemaps,
``SEARCHCRAWL_SITEMAP_MAX_BYTES`` of text per file (gzip included), 50,000 entries per file,
``SEARCHCRAWL_SITEMAP_MAX_URLS`` lastmod hints held (8-byte hashes, in flight only); past a bound, a WARNING, and
the URLs without a hint are simply requested. What is held per site is bounded by the files too:
the robots.txt lists waiting for their site's first request hold at most ``max_files`` URLs (the
oldest lists dropped first: those sitemaps are not read), a site is remembered only when it has
sitemaps to read, and none once the crawl's ``max_files`` have been read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.exceptions import RequestRefused, not_needed
from searchcrawl.crawl.ledger_writer import LedgerWriter
from searchcrawl.crawl.meta import (
    DONT_REDIRECT,
    DONT_RETRY,
    DOWNLOAD_MAXSIZE,
    HANDLE_HTTPSTATUS_ALL,
    SITEMAP_REQUEST,
    own_request,
)
from searchcrawl.crawl.middlewares.conditional import known_of
from searchcrawl.crawl.middlewares.robots import site_of
from searchcrawl.crawl.requests import Admission, admission_of
from searchcrawl.crawl.run import Run
from searchcrawl.crawl.signals import robots_txt_read, run_started
from searchcrawl.crawl.spider import same_readers
from searchcrawl.crawl.stores import source_of, stores_of
from searchcrawl.rules.lifecycle import Event, Outcome, State
from searchcrawl.rules.navigation_pages import navigation_pattern
from searchcrawl.rules.robots_txt import RobotsTxt
from searchcrawl.rules.sitemap_files import (
    LastmodHints,
    SitemapTooLarge,
    canonical_site_key,
    read_sitemap,
    same_site,
    site_key,
    unchanged_since_fetch,
)
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.urls import canonical, location_target
from searchcrawl.store.database import as_utc
from searchcrawl.store.documents import DocumentTable
from searchcrawl.store.frontier import Entry, Frontier, Known
from searchcrawl.store.ledger import Spared

logger = logging.getLogger(__name__)

MAX_SITEMAP_REDIRECTS = 5
ROBOTS_HELD = 64  # sites whose last robots.txt bulk sparing asks (a few KB each); the others' pages are requested
SPARED_STAT = "searchcrawl/sitemap_spared"  # pages recorded unchanged by their lastmod, without a request
CONFIGURED = ""  # the key of the source file's own sitemaps, read before any page


class SitemapMiddleware:
    """Reads the source's sitemaps (see the module's docstring): their URLs enter through the
    admission into the run's frontier (``run_started``); in a maintenance crawl their lastmod
    dates spare unchanged pages (what the document table knows of them)."""

    def __init__(
        self,
        crawler: Crawler,
        settings: SourceSettings,
        admission: Admission,
        documents: DocumentTable,
        source: str,
        ledger: LedgerWriter | None = None,
    ) -> None:
        self.crawler = crawler
        self.admission = admission
        self.ledger = ledger  # None: a read-only crawl (explain), which spares nothing in bulk
        self.documents, self.source = documents, source
        self.run: Run | None = None
        self.frontier: Frontier | None = None
        self.configured = list(settings.sitemaps)
        self.from_robots = settings.sitemaps_from_robots and settings.obey_robots
        self.trust = settings.trust_sitemap_lastmod and settings.orphans != "delete"
        self.navigation_pages = settings.navigation_pages
        self.trust_for = timedelta(days=settings.sitemap_trust_days)
        self.max_files = crawler.settings.getint("SEARCHCRAWL_SITEMAP_MAX_FILES")
        self.max_bytes = crawler.settings.getint("SEARCHCRAWL_SITEMAP_MAX_BYTES")
        self.max_seconds = crawler.settings.getfloat("SEARCHCRAWL_SITEMAP_MAX_SECONDS")
        self.hints = LastmodHints(crawler.settings.getint("SEARCHCRAWL_SITEMAP_MAX_URLS"))
        # site -> the sitemaps its robots.txt lists on its own host and port, until its first request;
        # oldest first, at most max_files URLs in all
        self.listed: OrderedDict[str, list[str]] = OrderedDict()
        self.listed_urls = 0
        self.reading: dict[str, asyncio.Future[None]] = {}  # site (or CONFIGURED) -> its sitemaps being read
        self.fetched: set[str] = set()  # sitemap URLs requested in this crawl
        # the robots.txt last read of the latest sites (what bulk sparing asks: ``spare``)
        self.obey = settings.obey_robots
        self.robots_agent = settings.robots_agent
        self.robots: OrderedDict[str, RobotsTxt] = OrderedDict()
        self.warned = False
        crawler.signals.connect(self.robots_txt_read, signal=robots_txt_read)
        crawler.signals.connect(self.run_started, signal=run_started)
        crawler.signals.connect(self.idle, signal=signals.spider_idle)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
        self.closed = False  # the spider has closed: no sitemap is read or queued any more

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapMiddleware:
        source = source_of(crawler)
        settings = source.settings
        if not settings.sitemaps and not (settings.sitemaps_from_robots and settings.obey_robots):
            raise not_needed(cls, "the source reads no sitemaps")
        return cls(
            crawler,
            settings,
            admission_of(crawler),
            stores_of(crawler).documents,
            source.name,
            crawler.get_extension(LedgerWriter),
        )

    def run_started(self, run: Run, frontier: Frontier) -> None:
        self.run, self.frontier = run, frontier

    def robots_txt_read(self, site: str, robots: RobotsTxt) -> None:
        self.robots[site] = robots
        self.robots.move_to_end(site)
        while len(self.robots) > ROBOTS_HELD:
            self.robots.popitem(last=False)
        # a site's sitemaps are read once per crawl: a robots.txt fetched again (its rules
        # forgotten by RobotsMiddleware to bound memory) lists nothing to read
        if not self.from_robots or site in self.reading or site in self.listed or self.files_spent():
            return
        own: list[str] = []
        for url in robots.sitemaps():
            if len(own) >= self.max_files:
                break
            if same_site(url, site):
                own.append(canonical(url))  # what is requested is what was checked
            else:
                logger.debug("Sitemap %s (robots.txt of %s) is on another host or port: not read", url, site)
        if not own:
            return
        while self.listed and self.listed_urls + len(own) > self.max_files:
            dropped, urls = self.listed.popitem(last=False)
            self.listed_urls -= len(urls)
            logger.debug("Sitemaps of %s not read: more are listed than SEARCHCRAWL_SITEMAP_MAX_FILES", dropped)
        self.listed[site] = own
        self.listed_urls += len(own)

    def idle(self) -> None:
        """spider_idle: the source file's sitemaps, when no page request waited for them because
        every request was refused before it got here (robots.txt disallows the known pages, a
        rule keeps them out), are read now: the URLs they list are seeds all the same, and a page
        new to the sitemap, which robots.txt allows, must not wait a crawl for an allowed request.
        The crawl goes on until they are read. Only the source file's: those a robots.txt lists
        are its site's, read when a request to that site passes (a site whose every request is
        refused, such as a redirect's target outside the boundary, has nothing to add). A
        read-only crawl (explain's) reads none. In a shared crawl the reading node holds no lease
        meanwhile: another node finding the frontier empty may end the run first, and the
        entries are then queued by the next crawl."""
        if self.ledger is None or self.run is None or CONFIGURED in self.reading:
            return
        reading = self.start_reading(CONFIGURED)
        if reading is None:
            return
        logger.debug("Reading the source file's sitemaps, which no request waited for")
        reading.add_done_callback(_log_failure)
        raise DontCloseSpider

    def spider_closed(self) -> None:
        """No sitemap is read after the crawl: a reading started at idle, or for a request that
        a stop left waiting, is cancelled (its next request would find no engine)."""
        self.closed = True
        for reading in self.reading.values():
            reading.cancel()

    def files_spent(self) -> bool:
        """The crawl's ``max_files`` sitemaps have been requested: no more is read, or remembered."""
        return len(self.fetched) >= self.max_files

    async def process_request(self, request: Request) -> None:
        if own_request(request):
            return  # robots.txt, a sitemap, a form login (which a sitemap behind it waits for)
        await self.ready(CONFIGURED)
        site = site_of(request.url)
        if site is not None:
            await self.ready(site)
        self.refuse_if_unchanged(request)

    async def ready(self, key: str) -> None:
        """Wait until the sitemaps of ``key`` (a site, or the source file's) have been read."""
        reading = self.start_reading(key)
        if reading is not None:
            await asyncio.shield(reading)

    def start_reading(self, key: str) -> asyncio.Future[None] | None:
        """The reading of ``key``'s sitemaps, started at its first call in the crawl; None when
        there is nothing to read."""
        if key not in self.reading:
            urls = self.sitemaps_of(key)
            listed = self.listed.pop(key, None)  # read once per crawl: the list is not kept
            if listed is not None:
                self.listed_urls -= len(listed)
            if not urls or self.files_spent() or self.closed:
                return None  # nothing to read: nothing kept for the site
            self.reading[key] = asyncio.ensure_future(self.read_all(urls))
        return self.reading[key]

    def sitemaps_of(self, key: str) -> list[str]:
        """The sitemaps to read for ``key``: the source file's, or those a site's robots.txt lists
        on its own host and port (canonical, as they are requested)."""
        return self.configured if key == CONFIGURED else self.listed.get(key, [])

    async def read_all(self, urls: list[str]) -> None:
        """Read ``urls`` and the sitemaps their indexes name, one after the other (politeness
        holds for them as for pages); a sitemap that fails is logged and passed over."""
        queue: deque[str] = deque()
        queued: set[str] = set()
        self.enqueue(urls, queue, queued)
        deadline = time.monotonic() + self.max_seconds
        while queue and not self.closed:
            if time.monotonic() > deadline:  # a slow site's sitemaps hold its pages, and their slots
                logger.warning(
                    "Reading sitemaps took more than %ss: %d more are not read in this crawl", self.max_seconds, len(queue)
                )
                return
            url = queue.popleft()
            if url in self.fetched:  # read meanwhile for another site's robots.txt
                continue
            if len(self.fetched) >= self.max_files:  # by the sites read at the same time
                return
            self.fetched.add(url)
            try:
                children = await self.read_one(url)
            except Exception:  # a sitemap's failure never fails the crawl or its pages
                logger.exception("Reading the sitemap %s failed", url)
                continue
            self.enqueue(children, queue, queued)

    def enqueue(self, urls: list[str], queue: deque[str], queued: set[str]) -> None:
        """Queue the sitemaps not read or queued yet, as long as the crawl's ``max_files`` leaves
        room: an index of 50,000 children is not held whole (its children past the bound were
        kept in the queue, and never read)."""
        for url in urls:
            if url in self.fetched or url in queued:
                continue
            if len(self.fetched) + len(queue) >= self.max_files:
                if not self.warned:
                    self.warned = True
                    logger.warning("More than %d sitemaps: the others are not read in this crawl", self.max_files)
                return
            queue.append(url)
            queued.add(url)

    async def read_one(self, url: str) -> list[str]:
        """Fetch and read one sitemap: an index's children (on its host), or a urlset's pages
        queued and their lastmod remembered."""
        found = await self.fetch(url)
        if found is None:
            return []
        final, body = found
        try:
            sitemap = read_sitemap(body, self.max_bytes)
        except SitemapTooLarge as exc:
            logger.warning("Sitemap %s is %s: not read", url, exc)
            return []
        if sitemap.dropped:
            logger.warning("Sitemap %s lists more than %d entries: %d not read", url, len(sitemap.entries), sitemap.dropped)
        if sitemap.kind == "sitemapindex":
            children = [canonical(loc) for loc, _ in sitemap.entries if same_site(loc, final)]
            logger.info("Sitemap index %s: %d sitemaps", url, len(children))
            return children
        if sitemap.kind != "urlset":
            logger.warning("%s is not a sitemap (no <urlset> or <sitemapindex>): not read", url)
            return []
        if not self.closed:  # the crawl was stopped while it was fetched
            self.queue_pages(final, sitemap.entries)
        return []

    async def fetch(self, url: str) -> tuple[str, bytes] | None:
        """The sitemap's final URL and body, following redirects on its host only; None (logged)
        when it cannot be had."""
        for _hop in range(MAX_SITEMAP_REDIRECTS + 1):
            request = Request(
                url,
                dont_filter=True,
                meta={
                    SITEMAP_REQUEST: True,
                    DONT_REDIRECT: True,
                    HANDLE_HTTPSTATUS_ALL: True,
                    DONT_RETRY: True,
                    DOWNLOAD_MAXSIZE: self.max_bytes,  # not the source's max_download_bytes
                },
            )
            try:
                assert self.crawler.engine is not None
                response = await self.crawler.engine.download_async(request)
            except Exception as exc:  # refused by a rule, unreachable, an internal address, ...
                logger.info("Sitemap %s not read: %s", url, getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}")
                return None
            location = response.headers.get(b"Location")
            if 300 <= response.status < 400 and location:
                target = location_target(url, location)
                if target is None:
                    logger.info("Sitemap %s redirects to a URL that cannot be read: not read", url)
                    return None
                if not same_site(target, url):
                    logger.info("Sitemap %s redirects to another host or port (%s): not read", url, target)
                    return None
                url = target
                continue
            if response.status != 200:
                logger.info("Sitemap %s not read: HTTP %d", url, response.status)
                return None
            return url, response.body
        logger.info("Sitemap %s not read: more than %d redirects", url, MAX_SITEMAP_REDIRECTS)
        return None

    @property
    def spares(self) -> bool:
        """Whether this crawl spares unchanged pages a request: a maintenance run, not forced,
        of a source that trusts its sitemaps' lastmod."""
        run = self.run
        return self.trust and run is not None and run.mode == "maintenance" and not run.forced

    def queue_pages(self, sitemap_url: str, entries: list[tuple[str, Any]]) -> None:
        """A urlset's pages on its host join the crawl as seeds, through the source's rules;
        in a maintenance crawl, those their lastmod says are unchanged are recorded so at once
        (``spare``), and the others are requested."""
        seeds: list[Entry] = []
        lastmods: dict[str, datetime] = {}  # URL as queued -> its newest lastmod
        foreign = 0
        own = site_key(sitemap_url)
        for loc, lastmod in entries:
            try:
                url = canonical(loc)
            except ValueError:
                continue
            if own is None or canonical_site_key(url) != own:
                foreign += 1
                continue
            entry = self.admission.link(url, 0)  # rewritten, or None when excluded or queued already
            if entry is not None:
                seeds.append(entry)
            if lastmod is None or (entry is None and not (self.frontier and self.frontier.in_run(url))):
                continue  # no word on it, or the rules keep it out (the plan records so)
            listed = url if entry is None else entry.url  # as queued (the rules refuse the URL rewritten)
            lastmods[listed] = max(lastmod, lastmods.get(listed, lastmod))
        self.admission.flush()
        spared = self.spare(lastmods) if lastmods and self.spares else set()
        if spared:
            seeds = [entry for entry in seeds if entry.url not in spared]
        added = self.admission.queue(seeds) if self.frontier is not None else 0
        logger.info(
            "Sitemap %s: %d URLs, %d new to this crawl%s%s",
            sitemap_url,
            len(entries),
            added,
            f", {len(spared)} unchanged by their lastmod (not requested)" if spared else "",
            f", {foreign} of other hosts ignored" if foreign else "",
        )

    def spare(self, lastmods: dict[str, datetime]) -> set[str]:
        """Record unchanged, without a request, the URLs of ``lastmods`` queued in this run that
        ``unchanged`` spares (in bulk, through the ledger); those in flight keep a hint for
        their request. Returns the URLs spared."""
        if self.ledger is None:
            return set()
        bulk = [url for url in lastmods if self.robots_allow(url)]
        try:
            spared = self.ledger.record_spared(bulk, lambda url, known: self.unchanged(url, known, lastmods[url], {}))
            checked = set(bulk)
        except Exception:  # the database busy, a deadlock: their requests decide, as before
            logger.exception("Sparing the unchanged pages of a sitemap failed: they are checked as they are requested")
            spared, checked = Spared(), set()
        # a hint for each page whose request decides: in flight, or not asked in bulk (robots.txt
        # not held, or refusing it: the request path says so); none for one the bulk found not
        # spared (not known, not indexed, newer than its fetch): it is simply requested
        if spared.urls:
            self.crawler.stats.inc_value(SPARED_STAT, len(spared.urls))
        for url in [*spared.in_flight, *(url for url in lastmods if url not in checked)]:
            self.hints.add(url, lastmods[url])
        if self.hints.dropped and not self.warned:
            self.warned = True
            logger.warning("More than %d sitemap lastmod dates: later ones are not used in this crawl", self.hints.limit)
        return set(spared.urls)

    def robots_allow(self, url: str) -> bool:
        """Whether the robots.txt of ``url``'s site, as last read, lets it through now (True
        without ``obey_robots``); a site whose robots.txt is not held (not read yet, forgotten,
        unavailable) does not: its pages are checked as they are requested."""
        if not self.obey:
            return True
        site = site_of(url)
        robots = self.robots.get(site) if site is not None else None
        if robots is None:
            return False
        decision = robots.decide(self.robots_agent, url)
        return decision.allowed and not decision.undecided

    def unchanged(self, url: str, known: Known, lastmod: datetime, meta: Mapping[str, Any]) -> Outcome | None:
        """The rule: a known, indexed page whose sitemap ``lastmod`` is not newer than its last
        fetch (within ``sitemap_trust_days``), whose last request did not fail, and whose readers
        are the same, is unchanged without a request (status 915); None: it is requested (a 304
        updates its access alone). A failing page is requested until it answers or leaves: spared,
        its failures would start again from 0 each time, and a page that went private (a login page
        in its place) would stay searchable for as long as its sitemap is trusted."""
        if known.state != State.INDEXED or known.failures:
            return None
        if navigation_pattern(url, self.navigation_pages) is not None:
            return None  # indexed before the rule kept such pages out: fetched, it leaves the index
        last_fetched = as_utc(known.last_fetched)
        if not unchanged_since_fetch(lastmod, last_fetched, datetime.now(UTC), self.trust_for):
            return None
        if not same_readers(self.crawler.spider, url, meta, known.checksum):
            return None
        assert last_fetched is not None
        reason = (
            f"its sitemap's lastmod ({lastmod:%Y-%m-%d %H:%M:%S}Z) is not newer than its last fetch "
            f"({last_fetched:%Y-%m-%d %H:%M:%S}Z)"
        )
        # its last fetch time stays (not fetched): a sitemap may be regenerated late
        return Outcome(Event.UNCHANGED, int(Status.SITEMAP_UNCHANGED), reason, fetched=False)

    def refuse_if_unchanged(self, request: Request) -> None:
        """In a maintenance crawl: a request in flight when its sitemap was read, which
        ``unchanged`` spares, is refused (status 915, recorded unchanged)."""
        if not self.spares:
            return
        lastmod = self.hints.get(request.url)
        if lastmod is None:
            return
        known = known_of(request, self.documents, self.source)
        outcome = None if known is None else self.unchanged(request.url, known, lastmod, request.meta)
        if outcome is not None:
            assert outcome.status is not None and outcome.reason is not None
            self.crawler.stats.inc_value(SPARED_STAT)
            raise RequestRefused(outcome.status, outcome.reason, event=outcome.event, fetched=outcome.fetched)


def _log_failure(reading: asyncio.Future[None]) -> None:
    """A reading that no request awaits (started at idle) says how it failed."""
    if not reading.cancelled() and reading.exception() is not None:
        logger.error("Reading the sitemaps failed", exc_info=reading.exception())
