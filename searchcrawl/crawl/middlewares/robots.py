"""Downloader middleware: robots.txt, fetched once per site and applied to every request.

The decision is ``searchcrawl.rules.robots_txt`` (RFC 9309); this module only fetches. A robots.txt that
answers 4xx means no restrictions; 5xx, 429 or no answer disallows the whole site for now (its
URLs fail transiently: status 935, counted toward ``max_failures``, nothing removed for it
alone; a failed TLS handshake or proxy: status 937 or 938, not counted), and is fetched once per crawl (again after ``SEARCHCRAWL_ROBOTS_RETRY_AFTER`` seconds if that is set);
redirects are followed (up to 5, http and https only, each one a request that passes the
internal-address guard like any other); only the first 500 KiB are downloaded and parsed. Sources whose owner runs the
site can set ``obey_robots = false``.

The parsed robots.txt of at most SEARCHCRAWL_ROBOTS_HELD_BYTES (of robots.txt text, all sites
together) are kept, the sites used least recently forgotten first (and their robots.txt fetched
again when one of their URLs comes up): a source that reaches many hosts (a domain rule over
wildcard DNS), each with 500 KiB of rules, would otherwise hold 10-13 MB per host for the whole
crawl. A verdict without a file (no robots.txt, or none to be had) takes next to nothing and is
never forgotten: an unreachable robots.txt is not fetched again before its time. The
``robots_txt_read`` signal is sent on a site's first fetch only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import StopDownload

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.extensions.crawl_state import CrawlState, crawl_state
from searchcrawl.crawl.meta import (
    CONNECTION_REFUSALS,
    DONT_REDIRECT,
    DONT_RETRY,
    HANDLE_HTTPSTATUS_ALL,
    LOGIN_REQUEST,
    PROXY,
    ROBOTS_BYTES,
    ROBOTS_REQUEST,
)
from searchcrawl.crawl.signals import robots_txt_read
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


def site_of(url: str) -> str | None:
    """scheme://host:port, the unit a robots.txt applies to (None for file: URLs)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return None
    return f"{parts.scheme}://{parts.netloc.lower()}"


class RobotsMiddleware:
    def __init__(self, crawler: Crawler, context: CrawlState) -> None:
        self.crawler = crawler
        self.context = context
        settings = context.source.settings
        self.obey = settings.obey_robots
        self.agent = settings.robots_agent
        self.retry_after = crawler.settings.getfloat("SEARCHCRAWL_ROBOTS_RETRY_AFTER")
        self.sites: OrderedDict[str, tuple[RobotsTxt, float | None]] = OrderedDict()  # least recently used first
        self.held_bytes = 0  # robots.txt text parsed into ``sites``
        self.max_held_bytes = crawler.settings.getint("SEARCHCRAWL_ROBOTS_HELD_BYTES")
        self.signalled: set[str] = set()  # sites whose robots_txt_read was sent
        self.unavailable: dict[str, str] = {}  # site -> why its robots.txt could not be fetched
        self.unavailable_status: dict[str, Status] = {}  # site -> 937/938 when TLS or the proxy failed
        self.answers: dict[str, str] = {}  # site -> what its robots.txt fetch answered (`scrapy explain` shows it)
        self.fetching: dict[str, asyncio.Future[tuple[RobotsTxt, float | None]]] = {}
        # this instance's robots.txt downloads in flight: the size cap counts only these (the
        # bytes_received signal reaches every instance, e.g. a test's second one)
        self.downloading: set[Request] = set()
        crawler.signals.connect(self.bytes_received, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler, crawl_state(crawler))

    async def process_request(self, request: Request) -> None:
        if not self.obey or request.meta.get(ROBOTS_REQUEST) or request.meta.get(LOGIN_REQUEST):
            return  # a form login's requests: the login page the source's author named (middlewares/form_login.py)
        site = site_of(request.url)
        if site is None:
            return
        robots = await self.robots_txt(site)
        unavailable = self.unavailable.get(site)
        if unavailable is not None:
            self.crawler.stats.inc_value("searchcrawl/robots_unavailable")
            # not a rule: a failure that may pass. The URL counts a failing crawl, and nothing
            # leaves the index for it alone (README, "robots.txt and robots meta")
            status = self.unavailable_status.get(site, Status.ROBOTS_UNAVAILABLE)
            raise RequestRefused(
                status, f"robots.txt of {site} {unavailable}", event=Event.FAILED, counted=status not in UNCOUNTED_FAILURES
            )
        refused = self.refusal(site, robots.decide(self.agent, request.url))
        if refused is not None:
            raise refused

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

    async def robots_txt(self, site: str) -> RobotsTxt:
        """The site's robots rules, fetched once (concurrent requests wait for the same fetch)."""
        cached = self.sites.get(site)
        if cached is not None and (cached[1] is None or time.monotonic() < cached[1]):
            self.sites.move_to_end(site)
            return cached[0]
        if site not in self.fetching:
            self.fetching[site] = asyncio.ensure_future(self._fetch(site))
            self.fetching[site].add_done_callback(lambda _f: self.fetching.pop(site, None))
        robots, expires = await asyncio.shield(self.fetching[site])
        self._hold(site, robots, expires)
        return robots

    def _hold(self, site: str, robots: RobotsTxt, expires: float | None) -> None:
        """Keep ``site``'s rules, forgetting the least recently used files beyond max_held_bytes
        (never a verdict without a file: it weighs nothing, and stands until it expires)."""
        replaced = self.sites.pop(site, None)
        if replaced is not None:
            self.held_bytes -= replaced[0].size
        self.sites[site] = (robots, expires)
        self.held_bytes += robots.size
        if self.held_bytes <= self.max_held_bytes:
            return
        for old in [held for held, (rules, _expires) in self.sites.items() if rules.size and held != site]:
            self.held_bytes -= self.sites.pop(old)[0].size
            logger.debug("robots.txt of %s forgotten (%d bytes held): fetched again when needed", old, self.held_bytes)
            if self.held_bytes <= self.max_held_bytes:
                break

    def _unavailable(self, site: str, why: str) -> tuple[RobotsTxt, float | None]:
        """No robots.txt could be had: the site is disallowed for now (RFC 9309), and its URLs
        fail transiently (status 935) instead of being excluded."""
        logger.info("robots.txt of %s %s: the site's URLs fail for now (a transient failure)", site, why)
        self.unavailable[site] = why
        self.answers[site] = f"{site}/robots.txt {why}"
        return robots_for_response(None, None), self._expiry()

    async def _fetch(self, site: str) -> tuple[RobotsTxt, float | None]:
        url = f"{site}/robots.txt"
        for hop in range(MAX_ROBOTS_REDIRECTS + 1):
            request = Request(
                url,
                priority=1000,
                dont_filter=True,
                # fetched once: RetryMiddleware would turn an outage into a burst of fetches
                meta={ROBOTS_REQUEST: True, DONT_REDIRECT: True, HANDLE_HTTPSTATUS_ALL: True, DONT_RETRY: True},
            )
            self.downloading.add(request)
            try:
                # through every downloader middleware, the internal-address guard included
                response = await self.crawler.engine.download_async(request)
            except Exception as exc:  # unreachable: DNS, refused, timeout, an internal address, ...
                status = getattr(exc, "status", None) or status_for_exception(exc, proxied=bool(request.meta.get(PROXY)))
                if status in (Status.TLS_FAILED, Status.PROXY_FAILED):
                    # the source's TLS or proxy configuration, not the site: its URLs get that status,
                    # not counted (nothing leaves the index for it)
                    self.unavailable_status[site] = Status(status)
                    self.crawler.stats.inc_value(CONNECTION_REFUSALS)
                    return self._unavailable(site, f"is unreachable ({describe_failure(exc)})")
                return self._unavailable(site, f"is unreachable ({type(exc).__name__}: {exc})")
            finally:
                self.downloading.discard(request)
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
            self.unavailable.pop(site, None)
            self.unavailable_status.pop(site, None)
            logger.debug("robots.txt of %s: HTTP %d, %d bytes", site, response.status, len(response.body))
            redirects = f" (after {hop} redirect{'s' if hop > 1 else ''})" if hop else ""
            self.answers[site] = f"{url}: HTTP {response.status}, {len(response.body)} bytes{redirects}"
            robots = robots_for_response(response.status, response.body)
            if site not in self.signalled:
                self.signalled.add(site)
                self.crawler.signals.send_catch_log(robots_txt_read, site=site, robots=robots)
            return robots, None
        return self._unavailable(site, f"redirects more than {MAX_ROBOTS_REDIRECTS} times")

    def _expiry(self) -> float | None:
        """When a failed robots.txt is fetched again: never in this crawl (None) by default."""
        return time.monotonic() + self.retry_after if self.retry_after > 0 else None

    def bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        """Stop a robots.txt download after 500 KiB: the rest would not be parsed anyway."""
        if request not in self.downloading:
            return
        received = request.meta.get(ROBOTS_BYTES, 0) + len(data)
        request.meta[ROBOTS_BYTES] = received
        if received > MAX_ROBOTS_BYTES:
            raise StopDownload(fail=False)
