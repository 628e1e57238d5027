"""Downloader middleware: each site's not-found page, learned before its pages are fetched.

A site with soft 404s answers a URL that does not exist with a page (status 200), often after a
redirect to its error page. To tell such pages from the content (content/soft_errors.py), this
middleware fetches, once per site and crawl, a URL that cannot exist: a random name beside the
site's first page (``searchcrawl-not-found-<16 hex digits>``, with that page's extension), which the
source's rules must admit (boundary, scope filter) as they would a link, and which passes every
downloader middleware like a page (the address guard, robots.txt, credentials, a form login,
politeness). The answer:

- 404, 410 or any answer but a page (an honest site, or one that cannot be asked): nothing to
  learn, the site's pages are compared with no not-found page;
- a redirect on the site (at most ``MAX_PROBE_REDIRECTS``): followed, its target's answer counts;
- 200 with an HTML page: its title and text (the source's content regions) become the site's
  ``NotFoundPage``, set on every later page request of the site (meta ``NOT_FOUND_PAGE``), which
  the spider compares the page with;
- unless that page is the site's home page (its root, fetched the same way when the source's
  rules admit it, and as like the answer as the source's ``similarity``): a single-page app's
  fallback, a "404 to home page" plugin, a redirect to /. Every page like it would be a soft
  404, the home page first, whose links would then never be followed. What the answer shares
  with the home page is the site's template (a menu or footer that is no landmark), which would
  make every short page like it: the pages are compared with the rest.

A site's page requests wait for its probe's answer (as they wait for its robots.txt and sitemaps:
the probe runs after them). The probe has no ledger row and no callback: it goes through
``engine.download_async``, like a sitemap. What is held is bounded: at most
``SEARCHCRAWL_NOT_FOUND_SITES`` sites' pages (each at most ``MAX_SHINGLE_WORDS`` hashes), the
least recently used forgotten first (and probed again if met again).
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import secrets
from collections import OrderedDict
from urllib.parse import urlsplit, urlunsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import HtmlResponse, Response

from searchcrawl.config.source import SourceSettings
from searchcrawl.content.extract import body_of
from searchcrawl.content.regions import ContentRegions
from searchcrawl.content.soft_errors import NotFoundPage, Page
from searchcrawl.crawl.exceptions import not_needed
from searchcrawl.crawl.meta import (
    DONT_REDIRECT,
    DONT_RETRY,
    DOWNLOAD_MAXSIZE,
    HANDLE_HTTPSTATUS_ALL,
    NOT_FOUND_PAGE,
    PROBE_REQUEST,
    own_request,
)
from searchcrawl.crawl.middlewares.robots import site_of
from searchcrawl.crawl.requests import Admission, admission_of
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.redirect_policy import REDIRECTS
from searchcrawl.rules.sitemap_files import same_site
from searchcrawl.rules.urls import canonical, location_target

logger = logging.getLogger(__name__)

MAX_PROBE_REDIRECTS = 5
MAX_PROBE_BYTES = 1024 * 1024  # a not-found page is small; a larger answer is read no further
PAGE_EXTENSIONS = (".html", ".htm", ".php", ".asp", ".aspx", ".jsp", ".shtml", ".xhtml")


def probe_url(page: str, token: str) -> str:
    """A URL that cannot exist beside ``page``: in its folder, named ``searchcrawl-not-found-<token>``
    with the page's extension when it has one of a page (a site may answer unknown ``.html`` names
    otherwise than unknown folders)."""
    parts = urlsplit(page)
    folder, name = posixpath.split(parts.path or "/")
    extension = next((e for e in PAGE_EXTENSIONS if name.lower().endswith(e)), "")
    path = posixpath.join(folder or "/", f"searchcrawl-not-found-{token}{extension}")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class NotFoundProbeMiddleware:
    """Learns each site's not-found page (the module's docstring) and sets it on its page requests."""

    def __init__(self, crawler: Crawler, settings: SourceSettings, admission: Admission) -> None:
        self.crawler = crawler
        self.admission = admission
        self.regions = ContentRegions(settings.regions)
        self.similarity = settings.soft_errors.similarity
        self.max_sites = crawler.settings.getint("SEARCHCRAWL_NOT_FOUND_SITES")
        self.learned: OrderedDict[str, NotFoundPage | None] = OrderedDict()
        self.probing: dict[str, asyncio.Future[NotFoundPage | None]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NotFoundProbeMiddleware:
        source = source_of(crawler)
        if not source.settings.soft_errors.probe_not_found:
            raise not_needed(cls, "the source does not probe for not-found pages (probe_not_found = false)")
        return cls(crawler, source.settings, admission_of(crawler))

    async def process_request(self, request: Request) -> None:
        if own_request(request):
            return
        site = site_of(request.url)
        if site is None:
            return
        page = await self.not_found_page(site, request.url)
        if page is not None:
            request.meta[NOT_FOUND_PAGE] = page

    async def not_found_page(self, site: str, url: str) -> NotFoundPage | None:
        """The site's not-found page (None: it has none, or it could not be learned), probed
        beside ``url`` when the site is met first."""
        if site in self.learned:
            self.learned.move_to_end(site)
            return self.learned[site]
        if site not in self.probing:
            self.probing[site] = asyncio.ensure_future(self.safe_probe(url))
        future = self.probing[site]
        page = await asyncio.shield(future)
        if self.probing.get(site) is future:
            del self.probing[site]
            self.learned[site] = page
            while len(self.learned) > self.max_sites:
                self.learned.popitem(last=False)
        return page

    async def safe_probe(self, page: str) -> NotFoundPage | None:
        """``probe``, whose failure (a bug, a page lxml cannot read) costs the site its soft-404
        likeness, never its pages: every request of the site waits for it."""
        try:
            return await self.probe(page)
        except Exception:
            logger.exception("Learning the not-found page beside %s failed; its site's pages are not compared", page)
            return None

    async def probe(self, page: str) -> NotFoundPage | None:
        """Fetch a URL that cannot exist beside ``page`` and learn what the site answers; none
        when it answers with its home page."""
        url = canonical(probe_url(page, secrets.token_hex(8)))
        answer = await self.answer(url)
        found = None if answer is None else self.learn(*answer)
        if found is None:
            return None
        assert answer is not None
        home = canonical(urlunsplit((*urlsplit(url)[:2], "/", "", "")))
        at_home = answer if answer[0] == home else await self.answer(home)
        home_page = None if at_home is None else self.learn(*at_home)
        if home_page is not None:
            at_home_too = frozenset(home_page.shingles)
            if found.similarity(at_home_too) >= self.similarity:
                # a single-page app's fallback, a "404 to home page" plugin, a redirect to /: every
                # page like it would be a soft 404, the home page first, and the site not crawled
                logger.info("%s answers a URL that cannot exist with its home page: no soft 404s to tell", url)
                return None
            # what it shares with the home page is the site's template (a menu that is no
            # landmark), which would make a short page of the site like it
            found = found.without(at_home_too)
            if found is None:
                return None
        logger.info("%s answers a URL that cannot exist with a page (soft 404s): pages like it are not indexed", url)
        return found

    async def answer(self, url: str) -> tuple[str, Response] | None:
        """The site's answer to ``url``, after its redirects on the site within the source's
        rules (the URL it came from, and it); None when there is none to learn from."""
        if not self.admission.chain.decide(url, 0).allowed:
            logger.debug("Not-found probe %s: outside the source's rules, not fetched", url)
            return None
        for _hop in range(MAX_PROBE_REDIRECTS + 1):
            response = await self.fetch(url)
            if response is None:
                return None
            location = response.headers.get(b"Location")
            if response.status in REDIRECTS and location:
                target = location_target(url, location)
                if target is None or not same_site(target, url) or not self.admission.chain.decide(target, 0).allowed:
                    logger.debug("Not-found probe %s: redirected off the site or its rules (%s)", url, target)
                    return None
                url = target
                continue
            return url, response
        logger.debug("Not-found probe: more than %d redirects", MAX_PROBE_REDIRECTS)
        return None

    async def fetch(self, url: str) -> Response | None:
        request = Request(
            url,
            dont_filter=True,
            meta={
                PROBE_REQUEST: True,
                DONT_REDIRECT: True,
                HANDLE_HTTPSTATUS_ALL: True,
                DONT_RETRY: True,
                DOWNLOAD_MAXSIZE: MAX_PROBE_BYTES,
            },
        )
        try:
            assert self.crawler.engine is not None
            return await self.crawler.engine.download_async(request)
        except Exception as exc:  # refused by a rule or robots.txt, unreachable, too large, ...
            logger.debug("Not-found probe %s: %s", url, getattr(exc, "reason", None) or f"{type(exc).__name__}: {exc}")
            return None

    def learn(self, url: str, response: Response) -> NotFoundPage | None:
        """The page the site answered ``url`` with (None: an answer but a page, or no words)."""
        if response.status != 200 or not isinstance(response, HtmlResponse):
            logger.debug("Not-found probe %s: HTTP %d, no soft 404s", url, response.status)
            return None
        root = response.selector.root
        page = Page(url, {}, root, lambda: self.regions.text(body_of(root), url, prose=False).text)
        return NotFoundPage.of(url, page.title, page.text)
