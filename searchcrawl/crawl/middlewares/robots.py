"""Downloader middleware: robots.txt, fetched once per site and applied to every request.

The decision is ``searchcrawl.rules.robots_txt`` (RFC 9309); this module only fetches. A robots.txt that
answers 4xx means no restrictions; 5xx, 429 or no answer disallows the whole site for now (its
URLs fail transiently: status 935, counted toward ``max_failures``, nothing removed for it
alone; a failed TLS handshake or proxy: status 937 or 938, not counted; the site's own address
refused by the internal-address guard when it connects: its URLs are refused with the guard's
status, 941 or 944), and is fetched once per crawl (again after ``SEARCHCRAWL_ROBOTS_RETRY_AFTER`` seconds if that is set);
redirects are followed (up to 5, http and https only, each one a request that passes the
internal-address guard like any other); only the first 500 KiB are downloaded and parsed. Sources whose owner runs the
site can set ``obey_robots = false``.

What is known of each site (its parsed rules, until when, what its fetch answered) is one record,
kept up to SEARCHCRAWL_ROBOTS_HELD_BYTES for all sites together, the sites used least recently
forgotten first (and their robots.txt fetched again when one of their URLs comes up): a source
that reaches many hosts (a domain rule over wildcard DNS), each with 500 KiB of rules, would
otherwise hold 10-13 MB per host for the whole crawl, and one without files a record per host. A
record weighs its robots.txt's text and its strings plus SITE_RECORD_BYTES. Records with rules
are forgotten before verdicts without (a 404, or no robots.txt to be had), so a few large files
cannot flush the verdicts: those go only when they alone pass the bound (some 30,000 of them),
and an unreachable robots.txt forgotten that way is fetched again when its site comes up, before
SEARCHCRAWL_ROBOTS_RETRY_AFTER. The ``robots_txt_read`` signal is sent on every fetch that gets
an answer (a 4xx's, with no rules, included).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import StopDownload

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import (
    CONNECTION_REFUSALS,
    DONT_REDIRECT,
    DONT_RETRY,
    HANDLE_HTTPSTATUS_ALL,
    LOGIN_REQUEST,
    PROXY,
    ROBOTS_REQUEST,
)
from searchcrawl.crawl.signals import robots_txt_read
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.robots_txt import (
    MAX_ROBOTS_BYTES,
    RobotsDecision,
    RobotsTxt,
    robots_for_response,
    robots_unreachable,
)
from searchcrawl.rules.status_codes import UNCOUNTED_FAILURES, Status, describe_failure, status_for_exception
from searchcrawl.rules.urls import location_target

logger = logging.getLogger(__name__)

MAX_ROBOTS_REDIRECTS = 5
# A site's record, weighed as this many bytes of robots.txt text besides its file's own: a record
# without a file takes 0.4-0.5 KB parsed and about as much again in its strings and the dict,
# where a file's text takes up to 27 times its size parsed, so SEARCHCRAWL_ROBOTS_HELD_BYTES bounds
# both the same way (4 MiB: some 31,000 records without files, of 135 bytes' weight with their
# answers and 830 bytes of memory each, about 26 MB).
SITE_RECORD_BYTES = 64
# the address guard's refusals of a site's host and port (an internal address the source does not
# admit, one of the installation's own services): its robots.txt refused so, its URLs are too
SITE_REFUSALS = frozenset({Status.INTERNAL_ADDRESS, Status.OWN_SERVICE})


@dataclass(slots=True)
class SiteRobots:
    """What the crawl knows of one site's robots.txt, the one record of it (`scrapy explain` reads it)."""

    robots: RobotsTxt
    expires: float | None  # when it is fetched again (monotonic time); None: not in this crawl
    answer: str  # what its fetch answered: "URL: HTTP 200, N bytes", or why there was none
    unavailable: str | None = None  # why no robots.txt could be had (its URLs fail for now)
    status: Status = Status.ROBOTS_UNAVAILABLE  # their status then: 935, 937/938 (TLS, proxy), or 941/944 (refused)

    @property
    def weight(self) -> int:
        """Its robots.txt's text and its own strings (a redirect's target URL, an error's message:
        a hostile Location can make them 100 KB), plus the record's fixed cost."""
        return self.robots.size + len(self.answer) + len(self.unavailable or "") + SITE_RECORD_BYTES


def site_of(url: str) -> str | None:
    """scheme://host:port, the unit a robots.txt applies to (None for file: URLs)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    return f"{parts.scheme}://{parts.netloc.lower()}"


class RobotsMiddleware:
    def __init__(self, crawler: Crawler, settings: SourceSettings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.obey = settings.obey_robots
        self.agent = settings.robots_agent
        self.retry_after = crawler.settings.getfloat("SEARCHCRAWL_ROBOTS_RETRY_AFTER")
        # least recently used first: the records with rules (forgotten first), and those without
        self.sites: OrderedDict[str, SiteRobots] = OrderedDict()
        self.verdicts: OrderedDict[str, SiteRobots] = OrderedDict()
        self.held_bytes = 0  # the records' weights, both kinds
        self.max_held_bytes = crawler.settings.getint("SEARCHCRAWL_ROBOTS_HELD_BYTES")
        self.fetching: dict[str, asyncio.Future[SiteRobots]] = {}
        # this instance's robots.txt fetches in flight, by the token in their requests' meta (a
        # request sent again answering a digest challenge is a copy): the size cap counts only
        # these (the bytes_received signal reaches every instance, e.g. a test's second one)
        self.downloading: set[object] = set()
        self.received: WeakKeyDictionary[Request, int] = WeakKeyDictionary()  # bytes, per download
        crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler, source_of(crawler).settings)

    async def process_request(self, request: Request) -> None:
        if not self.obey or request.meta.get(ROBOTS_REQUEST) or request.meta.get(LOGIN_REQUEST):
            return  # a form login's requests: the login page the source's author named (middlewares/form_login.py)
        site = site_of(request.url)
        if site is None:
            return
        record = await self.record(site)
        if record.unavailable is not None:
            if record.status not in SITE_REFUSALS:
                self.crawler.stats.inc_value("searchcrawl/robots_unavailable")
            raise self.unavailable(site, record)
        refused = self.refusal(site, record.robots.decide(self.agent, request.url))
        if refused is not None:
            raise refused

    def unavailable(self, site: str, record: SiteRobots) -> RequestRefused:
        """What a request to a site whose robots.txt is unavailable gets, for the crawl and
        `scrapy explain`: not a rule but a failure that may pass, so nothing leaves the index for it
        alone (docs/rules.md, "robots.txt and robots meta"); 935 counts toward ``max_failures``, a TLS or
        proxy failure (937, 938) does not. A site the address guard refused (941, 944) is refused
        so, a rule: its robots.txt is the site's own host and port."""
        if record.status in SITE_REFUSALS:
            return RequestRefused(record.status, record.unavailable or record.answer)
        return RequestRefused(
            record.status,
            f"robots.txt of {site} {record.unavailable}",
            event=Event.FAILED,
            counted=record.status not in UNCOUNTED_FAILURES,
        )

    def refusal(self, site: str, decision: RobotsDecision) -> RequestRefused | None:
        """What a request gets for ``decision`` (None: it goes on), for the crawl and `scrapy explain`."""
        if decision.allowed:
            return None
        reason = f"robots.txt of {site}: {decision.group or 'no group'}: {decision.line}"
        if decision.undecided:  # too costly to decide: not fetched, and not a rule either
            self.crawler.stats.inc_value("searchcrawl/robots_undecided")
            return RequestRefused(Status.ROBOTS_UNAVAILABLE, reason, event=Event.FAILED)
        self.crawler.stats.inc_value("searchcrawl/excluded/excluded_robots")
        return RequestRefused(Status.EXCLUDED_ROBOTS, reason)

    async def record(self, site: str) -> SiteRobots:
        """What is known of the site's robots.txt, fetched when not known (or no longer);
        concurrent requests wait for the same fetch."""
        for held_in in (self.sites, self.verdicts):
            held = held_in.get(site)
            if held is not None and (held.expires is None or time.monotonic() < held.expires):
                held_in.move_to_end(site)
                return held
        if site not in self.fetching:
            self.fetching[site] = asyncio.ensure_future(self._fetch_and_hold(site))
        return await asyncio.shield(self.fetching[site])

    async def _fetch_and_hold(self, site: str) -> SiteRobots:
        """The fetch, its record kept before the site leaves ``fetching``: a request arriving in
        between finds one or the other, never neither (which started a second fetch)."""
        try:
            record = await self._fetch(site)
            self._hold(site, record)
            return record
        finally:
            del self.fetching[site]

    def _hold(self, site: str, record: SiteRobots) -> None:
        """Keep ``site``'s record, forgetting the least recently used beyond max_held_bytes,
        records with rules before verdicts without."""
        for held_in in (self.sites, self.verdicts):
            replaced = held_in.pop(site, None)
            if replaced is not None:
                self.held_bytes -= replaced.weight
        (self.sites if record.robots.size else self.verdicts)[site] = record
        self.held_bytes += record.weight
        while self.held_bytes > self.max_held_bytes:
            others = [held for held in (self.sites, self.verdicts) if held and next(iter(held)) != site]
            if not others:
                break  # the site's own record alone: kept while it is used
            old, forgotten = others[0].popitem(last=False)
            self.held_bytes -= forgotten.weight
            logger.debug("robots.txt of %s forgotten (%d bytes held): fetched again when needed", old, self.held_bytes)

    def _unavailable(self, site: str, why: str, status: Status = Status.ROBOTS_UNAVAILABLE) -> SiteRobots:
        """No robots.txt could be had: the site is disallowed for now (RFC 9309), and its URLs
        fail transiently (status 935, or 937/938) instead of being excluded."""
        logger.info("robots.txt of %s %s: the site's URLs fail for now (a transient failure)", site, why)
        return SiteRobots(robots_for_response(None, None), self._expiry(), f"{site}/robots.txt {why}", why, status)

    async def _fetch(self, site: str) -> SiteRobots:
        url = f"{site}/robots.txt"
        for hop in range(MAX_ROBOTS_REDIRECTS + 1):
            fetch = object()
            request = Request(
                url,
                priority=1000,
                dont_filter=True,
                # fetched once: RetryMiddleware would turn an outage into a burst of fetches
                meta={ROBOTS_REQUEST: fetch, DONT_REDIRECT: True, HANDLE_HTTPSTATUS_ALL: True, DONT_RETRY: True},
            )
            self.downloading.add(fetch)
            try:
                # through every downloader middleware, the internal-address guard included
                response = await self.crawler.engine.download_async(request)
            except Exception as exc:  # unreachable: DNS, refused, timeout, an internal address, ...
                status = getattr(exc, "status", None) or status_for_exception(exc, proxied=bool(request.meta.get(PROXY)))
                if hop == 0 and status in SITE_REFUSALS:
                    # the site itself (a name the rules admit, refused when it connects): so are its URLs
                    logger.debug("robots.txt of %s refused (%s): so are the site's URLs", site, describe_failure(exc))
                    return SiteRobots(
                        robots_for_response(None, None), self._expiry(), f"{url}: refused", describe_failure(exc), status
                    )
                if status in (Status.TLS_FAILED, Status.PROXY_FAILED):
                    # the source's TLS or proxy configuration, not the site: its URLs get that status,
                    # not counted (nothing leaves the index for it)
                    self.crawler.stats.inc_value(CONNECTION_REFUSALS)
                    return self._unavailable(site, f"is unreachable ({describe_failure(exc)})", Status(status))
                return self._unavailable(site, f"is unreachable ({type(exc).__name__}: {exc})")
            finally:
                self.downloading.discard(fetch)
            if 300 <= response.status < 400:
                # a redirect it cannot follow is a failure that may pass (status 935), as an
                # outage is: not a rule that takes the site's documents out of the index
                location = response.headers.get(b"Location")
                if not location:
                    return self._unavailable(site, f"answered {response.status} without a Location to follow")
                target = location_target(url, location)
                if target is None:  # a port that is no number, a broken IPv6 address, ...
                    return self._unavailable(site, "redirects to a URL that cannot be read")
                url = target
                if urlsplit(url).scheme not in ("http", "https"):
                    return self._unavailable(site, "redirects to a non-http(s) URL")
                continue
            if robots_unreachable(response.status):  # "come back later"
                return self._unavailable(site, f"answered {response.status}")
            logger.debug("robots.txt of %s: HTTP %d, %d bytes", site, response.status, len(response.body))
            redirects = f" (after {hop} redirect{'s' if hop > 1 else ''})" if hop else ""
            robots = robots_for_response(response.status, response.body)
            self.crawler.signals.send_catch_log(robots_txt_read, site=site, robots=robots)
            return SiteRobots(robots, None, f"{url}: HTTP {response.status}, {len(response.body)} bytes{redirects}")
        return self._unavailable(site, f"redirects more than {MAX_ROBOTS_REDIRECTS} times")

    def _expiry(self) -> float | None:
        """When a failed robots.txt is fetched again: never in this crawl (None) by default."""
        return time.monotonic() + self.retry_after if self.retry_after > 0 else None

    def bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        """Stop a robots.txt download after 500 KiB: the rest would not be parsed anyway."""
        if request.meta.get(ROBOTS_REQUEST) not in self.downloading:
            return
        received = self.received.get(request, 0) + len(data)
        self.received[request] = received
        if received > MAX_ROBOTS_BYTES:
            raise StopDownload(fail=False)
