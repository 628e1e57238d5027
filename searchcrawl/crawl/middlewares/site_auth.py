"""Downloader middleware: a source's site credentials, on the requests to their origins only.

The source's ``[[auth]]`` tables (searchcrawl/rules/credentials.py) name origins and a secret.
On every request this middleware first removes what the credentials make (``Authorization``,
a configured header, the configured cookies), then adds to a request for a credential's origin
what that credential makes: a redirect to another host, or to another port of the same host,
carries none of it (Scrapy's RedirectMiddleware copies headers to a redirect on the same host,
and cookies are not bound to a port). Configured cookies go after the ones Scrapy's cookie jar
added (this middleware runs after CookiesMiddleware).

Digest: the first request to an origin goes without credentials; its 401 challenge is answered
(the request is sent again, once) and kept, so later requests answer it at once (the nonce
count rises; a ``stale`` nonce is answered afresh). A robots.txt's challenge too: its rules and
``Sitemap:`` lines are behind it, and most often it is the origin's first request.

NTLM (``type = "ntlm"``): nothing is added here; the download handler
(searchcrawl/crawl/handlers/ntlm.py) answers the challenges on the connection they belong to, and
a 401 that comes through it is a refusal like any other.

A 401 or 403 from a credential's origin means the site refused them (a 403 on one page of an
origin that took them in this crawl is that page's own answer, recorded as such): the URL gets
status 936 (a transient failure of the source, never counted toward ``max_failures``, nothing
removed for it), and after ``SEARCHCRAWL_AUTH_REFUSED_LIMIT`` such answers from one origin, the
crawl stops asking it (its URLs get 936 without a request; those already on their way, at most
``CONCURRENT_REQUESTS``, still go) and says so in an ERROR line, rather than walking a site of
login pages.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.http import Response

from searchcrawl.crawl.exceptions import RequestRefused, not_needed
from searchcrawl.crawl.meta import AUTH_ANSWERED, AUTH_SENT, ROBOTS_REQUEST
from searchcrawl.crawl.stores import source_of
from searchcrawl.rules.credentials import (
    Credentials,
    basic_authorization,
    digest_authorization,
    origin_of,
    parse_digest_challenge,
    safe_header_value,
)
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.status_codes import Status
from searchcrawl.system.secrets import SecretError, required_secret

logger = logging.getLogger(__name__)


class SiteAuthError(ValueError):
    """A source's credentials cannot be used (a secret is not set); the message names the secret."""


def read_credentials(rules: list[Any]) -> list[Credentials]:
    """Each ``[[auth]]`` table with its secret read (and remembered, so that logs mask it)."""
    found = []
    for rule in rules:
        try:
            value = required_secret(rule.secret, f"[[auth]] for {rule.origins[0]}")
        except SecretError as exc:
            raise SiteAuthError(str(exc)) from None
        if not safe_header_value(value) or (rule.user and not safe_header_value(rule.user)):
            raise SiteAuthError(f"the secret {rule.secret} holds a line break or another control character")
        found.append(Credentials(rule, value))
    return found


class SiteAuthMiddleware:
    def __init__(self, crawler: Crawler, credentials: list[Credentials], refused_limit: int) -> None:
        self.crawler = crawler
        self.by_origin: dict[str, list[Credentials]] = {}
        for credential in credentials:
            for origin in credential.rule.origins:
                self.by_origin.setdefault(origin, []).append(credential)
        self.managed = {"Authorization"} | {c.rule.header for c in credentials if c.rule.header}
        # a cookie credential is "name=value" (or several, "; "-separated): its pairs, to strip
        self.cookies = {
            pair.strip() for c in credentials if c.rule.type == "cookie" for pair in c.value.split(";") if pair.strip()
        }
        self.challenges: dict[str, tuple[dict[str, str], int]] = {}  # origin -> digest challenge, uses
        self.refused: Counter[str] = Counter()  # 401/403 in a row, per origin
        self.accepted: set[str] = set()  # origins that answered a request with credentials in this crawl
        self.refused_limit = refused_limit

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SiteAuthMiddleware:
        # form logins are middlewares/form_login.py's
        rules = [rule for rule in source_of(crawler).settings.auth if rule.type != "form"]
        if not rules:
            raise not_needed(cls, "the source has no [[auth]] tables but form logins")
        return cls(crawler, read_credentials(rules), crawler.settings.getint("SEARCHCRAWL_AUTH_REFUSED_LIMIT"))

    def process_request(self, request: Request, spider: Any = None) -> None:
        origin = origin_of(request.url)
        self.strip(request)  # nothing of any credential, whatever the request carries (a copied redirect)
        request.meta.pop(AUTH_SENT, None)  # a redirect's copy of its origin request's: apply() says
        mine = self.by_origin.get(origin or "", [])
        if not mine:
            return None
        assert origin is not None
        if self.refused[origin] >= self.refused_limit:
            raise RequestRefused(
                Status.AUTH_REFUSED,
                f"{origin} refused the source's credentials {self.refused[origin]} times: not asked again in this crawl",
                event=Event.FAILED,
                counted=False,
            )
        for credential in mine:
            self.apply(credential, request, origin)
        return None

    def strip(self, request: Request) -> None:
        """Remove the headers the source's credentials make, and their cookies."""
        for name in self.managed:
            request.headers.pop(name, None)
        if self.cookies and "Cookie" in request.headers:
            pairs = [pair.strip() for pair in (request.headers.get("Cookie") or b"").decode("latin-1").split(";")]
            kept = "; ".join(pair for pair in pairs if pair and pair not in self.cookies)
            if kept:
                request.headers["Cookie"] = kept
            else:
                request.headers.pop("Cookie", None)

    def apply(self, credential: Credentials, request: Request, origin: str) -> None:
        rule, value = credential.rule, credential.value
        if rule.type == "basic":
            assert rule.user is not None
            request.headers["Authorization"] = basic_authorization(rule.user, value)
        elif rule.type == "bearer":
            request.headers["Authorization"] = f"Bearer {value}"
        elif rule.type == "header":
            assert rule.header is not None
            request.headers[rule.header] = value
        elif rule.type == "cookie":
            existing = (request.headers.get("Cookie") or b"").decode("latin-1")
            request.headers["Cookie"] = f"{existing}; {value}" if existing else value
        elif rule.type == "digest" and origin in self.challenges:
            assert rule.user is not None
            challenge, uses = self.challenges[origin]
            self.challenges[origin] = (challenge, uses + 1)
            request.headers["Authorization"] = digest_authorization(
                challenge, rule.user, value, request.method, _request_uri(request.url), uses + 1
            )
        elif rule.type == "ntlm":
            request.meta.pop(AUTH_SENT, None)  # the download handler says whether its handshake answered
            return
        else:
            return  # digest without a challenge yet: the site's 401 brings one
        request.meta[AUTH_SENT] = True

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Request | Response:
        origin = origin_of(request.url)
        mine = self.by_origin.get(origin or "", [])
        if not mine or origin is None:
            return response
        if response.status not in (401, 403):
            self.refused[origin] = 0  # any other answer ends the refusals in a row
            if response.status < 300:
                self.accepted.add(origin)
            return response
        retry = self.challenge_answered(request, response, origin, mine)
        if isinstance(retry, Request):
            return retry
        unanswerable = retry
        if request.meta.get(ROBOTS_REQUEST):
            return response  # robots.txt refused: its own rules (a 4xx allows all); the pages will say
        if unanswerable:
            logger.error("%s asks for credentials this crawl cannot give (%s)", origin, _schemes(response))
        if response.status == 403 and origin in self.accepted:
            return response  # one page the account may not see, on a site that took the credentials
        raise self.refusal(origin, response.status)

    def refusal(self, origin: str, status: int) -> RequestRefused:
        """The origin refused the credentials (once more in a row: at ``refused_limit``, said
        once, and its other URLs are not requested in this crawl)."""
        self.refused[origin] += 1
        self.crawler.stats.inc_value("searchcrawl/auth_refused")
        if self.refused[origin] == self.refused_limit:
            logger.error(
                "%s refused the source's credentials %d times in a row (HTTP %d): its other URLs are not requested "
                "in this crawl; check the secret of its [[auth]] table",
                origin,
                self.refused[origin],
                status,
            )
        return RequestRefused(
            Status.AUTH_REFUSED, f"HTTP {status}: {origin} refused the source's credentials", event=Event.FAILED, counted=False
        )

    def challenge_answered(self, request: Request, response: Response, origin: str, mine: list[Credentials]) -> Request | bool:
        """A 401's challenge answered (the request again, with digest credentials: robots.txt's
        too, its rules are behind it), or whether it asks for credentials this crawl cannot give
        (a digest challenge it cannot answer, or answered already; no NTLM or Negotiate challenge
        the download handler could answer)."""
        digest = any(c.rule.type == "digest" for c in mine)
        answered = request.meta.get(AUTH_ANSWERED) == request.url and request.meta.get(AUTH_SENT)
        if digest and response.status == 401 and not answered:
            retry = self.answer_digest(request, response, origin)
            return retry if retry is not None else True
        return response.status == 401 and any(c.rule.type == "ntlm" for c in mine) and not request.meta.get(AUTH_SENT)

    def answer_digest(self, request: Request, response: Response, origin: str) -> Request | None:
        """The request sent again answering the 401's digest challenge (kept for the origin's
        later requests), or None when the 401 offers none this crawl can answer."""
        for header in response.headers.getlist("WWW-Authenticate"):
            challenge = parse_digest_challenge(header.decode("latin-1"))
            if challenge is not None:
                known = self.challenges.get(origin)
                uses = known[1] if known and known[0]["nonce"] == challenge["nonce"] else 0  # nc keeps rising
                self.challenges[origin] = (challenge, uses)
                logger.debug("Answering the digest challenge of %s (realm %r)", origin, challenge["realm"])
                # the URL answered, not a flag: a redirect of the retry copies its meta, and is not the answer
                retry = request.replace(dont_filter=True, meta={**request.meta, AUTH_ANSWERED: request.url})
                retry.headers.pop("Authorization", None)
                return retry
        return None


def _schemes(response: Response) -> str:
    """The authentication schemes a 401 offers, for a log line (never their parameters)."""
    offered = [header.decode("latin-1").split(" ", 1)[0] for header in response.headers.getlist("WWW-Authenticate")]
    return ", ".join(offered) or "no WWW-Authenticate header"


def _request_uri(url: str) -> str:
    """The request-target of ``url`` (path and query), as a digest ``uri``."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
