"""Downloader middleware: searchcrawl's redirect policy (searchcrawl/rules/redirect_policy.py) on top of
Scrapy's own RedirectMiddleware.

Scrapy's middleware still does everything it does for safety: it follows only http and https
targets, drops ``Cookie`` and ``Authorization`` when a redirect changes scheme or host (and the
proxy credentials when it changes scheme), drops the ``Content-*`` headers when a 303 (or a
301/302 after POST) turns the request into a GET, bounds the chain (``REDIRECT_MAX_TIMES``) and
keeps the ``redirect_*`` meta. This subclass only decides whether the request Scrapy built is
followed, and gives the redirecting URL its row: its redirect status (301, 302, ...) with the
target, or the crawler code that refused it (redirect loop, target outside the boundary, a
scheme other than http(s)). A URL that moved permanently leaves the index. A redirect to a login
page (the source's ``[soft_errors]`` redirect markers: content/soft_errors.py) is a soft error
(928): not followed, and the URL's indexed version stays.

Whether the target's *address* may be reached is not decided here: the target is a request like
any other and passes the internal-address guard (middlewares/address_guard.py) on its way out.
"""

from __future__ import annotations

import logging
from urllib.parse import urljoin

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from w3lib.url import safe_url_string

from searchcrawl.content.soft_errors import SoftErrors
from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import DEPTH, DONT_REDIRECT, LEAVES_BOUNDARY, REDIRECT_URLS, own_request
from searchcrawl.crawl.requests import Admission, admission_of
from searchcrawl.crawl.signals import url_outcome
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.lifecycle import Event, Outcome
from searchcrawl.rules.redirect_policy import PERMANENT, REDIRECTS, decide_redirect
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.urls import canonical

logger = logging.getLogger(__name__)


class RedirectPolicyMiddleware(RedirectMiddleware):
    """Scrapy's redirects, with the source's redirect policy (rules/redirect_policy.py) on each:
    built by Scrapy's own ``from_crawler``, with the crawl's admission (its rule chain's boundary
    decides; a permanent redirect's target it keeps out is recorded)."""

    admission: Admission
    soft_errors: SoftErrors

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedirectMiddleware:  # type: ignore[override]  # Scrapy's for other spiders
        if getattr(crawler.spidercls, "source", None) is None:
            # another spider of the project (scrapy shell, scrapy fetch, a spider of one's own):
            # Scrapy's own redirects, since this one replaces Scrapy's in DOWNLOADER_MIDDLEWARES
            return RedirectMiddleware.from_crawler(crawler)
        middleware = super().from_crawler(crawler)
        middleware.admission = admission_of(crawler)
        settings = source_of(crawler).settings
        middleware.soft_errors = SoftErrors(settings.soft_errors, settings.signed_in_origins)
        middleware.crawler = crawler
        return middleware

    async def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        try:
            redirected = super().process_response(request, response)
        except IgnoreRequest:  # Scrapy's chain bound (REDIRECT_MAX_TIMES)
            raise RequestRefused(Status.REDIRECT_LOOP, f"more than {self.max_redirect_times} redirects in a row") from None
        except ValueError as exc:  # w3lib cannot read the Location (http://h:80:1/, http://[::1/): no request
            raise RequestRefused(Status.REDIRECT_UNREADABLE, f"{response.status} to a URL that cannot be read ({exc})") from None
        if not isinstance(redirected, Request):
            header = response.headers.get(b"Location")
            if response.status in REDIRECTS and header is not None and not request.meta.get(DONT_REDIRECT):
                # Scrapy built no request: the target is not an http(s) URL (file:, ftp:, ...)
                location = safe_url_string(header.decode("latin-1"))
                target = urljoin(request.url, location).split(":", 1)[0]
                raise RequestRefused(Status.EXCLUDED_SCHEME, f"{response.status} to a {target}: URL, never fetched")
            return response
        return await self._apply_policy(request, response, redirected)

    async def _apply_policy(self, request: Request, response: Response, redirected: Request) -> Request:
        target = canonical(redirected.url)
        depth = request.meta.get(DEPTH, 0)
        chain = redirected.meta[REDIRECT_URLS]
        left = request.meta.get(LEAVES_BOUNDARY) == request.url  # as BoundaryMiddleware lets it out
        # a login wall answers a lost session for now: a permanent redirect to a login path (a help
        # page renamed /help/sign-in) is a move, which a browser would keep
        walled = not own_request(request) and response.status not in PERMANENT
        soft = self.soft_errors.of_redirect(request.url, target) if walled else None
        if soft is not None:  # a login wall: the page is still there, behind it (content/soft_errors.py)
            self.crawler.stats.inc_value(f"searchcrawl/soft_errors/{soft.kind}")
            logger.debug("Redirect not followed, a soft error (%d): %s: %s", soft.status, request.url, soft.reason)
            raise RequestRefused(soft.status, soft.reason, event=Event.FAILED, counted=soft.counted)
        verdict = decide_redirect(response.status, target, depth, chain, self.admission.chain.boundary, left)
        if not verdict.follow:
            logger.info("Redirect not followed: %s: %s", request.url, verdict.reason)
            if verdict.target_status is not None:  # a permanent redirect out of the boundary
                self.admission.admit(target, depth)  # the target's row, with the rule that excludes it
                self.admission.flush()  # on the reactor's thread, as the signal's receivers expect
                # the old URL keeps its redirect status: it moved, and leaves the index
                raise RequestRefused(response.status, verdict.reason, event=Event.GONE)
            assert verdict.status is not None
            raise RequestRefused(verdict.status, verdict.reason)
        if response.status in PERMANENT:
            outcome = Outcome(Event.GONE, response.status, f"moved to {target}", depth)
        else:  # no document of its own while it redirects; its target is indexed
            outcome = Outcome(Event.REDIRECTED, response.status, f"redirected to {target}", depth, columns={"target": target})
        self.crawler.signals.send_catch_log(url_outcome, url=request.url, outcome=outcome)
        logger.debug("Redirect followed: %s: %s", request.url, verdict.reason)
        redirected.meta[LEAVES_BOUNDARY] = target if verdict.leaves_boundary else None
        return redirected.replace(url=target) if target != redirected.url else redirected
