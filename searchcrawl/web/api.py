"""The JSON API's logic, without HTTP (issue 59): who a token searches as, the search page's page
as JSON, and which browser origins may call it.

``GET /api/search`` takes the search page's parameters (SearchRequest.from_params: ``q``, the
facets, ``sort``, ``rows``, ``page``, ``from``, ``to``, with the same caps) and answers what
run_search gives the page, as JSON: the same search, never a second one. A token is sent as
``Authorization: Bearer <token>`` (store/api_tokens.py); a request without a valid one gets 401
with ``WWW-Authenticate: Bearer`` (RFC 6750: ``invalid_token`` for an unknown, revoked or
expired token, all alike, the same message: a leaked token is not confirmed to have been one;
checks bounded and their verdicts kept a while: TokenGate). A token searches as an anonymous visitor: public documents only.
A token made to "search on behalf of users" may name one with ``user=<name>``: the search is
then trimmed to that user's principals, which come from the directory exactly as for a searcher
signed in on the page; when the directory cannot give them, public documents only (fail closed),
said in the answer's ``searcher.error``. ``user=`` with a token that may not act for users is
refused (403 ``insufficient_scope``), never quietly answered as public.

Snippets are plain text in ``snippet``; ``snippet_parts`` holds the same text as a list of
``{"text", "match"}`` pieces (``match``: Solr highlighted it), so a client marks the matches
without parsing markup. ``suggestions`` holds the completions of the query as the search box
offers them (WebContext.completions: readable titles and past queries, ``{"text", "kind"}``), as
``GET /api/suggest?q=`` gives them alone; ``spelling`` holds the spellcheck's corrected queries (the page's "Did you
mean").

CORS is off unless SEARCHCRAWL_WEB_API_ORIGINS names origins: a browser page of one of those
origins may call the API (its own token in the Authorization header: no cookie is ever read by
the API), the request's origin echoed back, never ``*``.

Each valid token has a rate (RateLimit, SEARCHCRAWL_WEB_API_RATE requests a minute, bursts of
SEARCHCRAWL_WEB_API_BURST): one portal with a bug, or a leaked token, cannot take the Solr behind
the search page down. Over it: 429 with ``Retry-After``, /api/search and /api/suggest alike.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from searchcrawl.access.decision import Principals
from searchcrawl.search.request import FACET_TITLES
from searchcrawl.search.results import Hit, SearchPage, snippet_parts
from searchcrawl.store.api_tokens import TokenCheck

logger = logging.getLogger(__name__)

MAX_USER_CHARS = 256
MAX_AUTHORIZATION_CHARS = 300
_BEARER = re.compile(r"Bearer +([A-Za-z0-9._~+/=-]+)", re.IGNORECASE)
PREFLIGHT_MAX_AGE = "600"
# Token checks: at most this many ask the database at once (one that hangs holds these threads,
# never the application's whole pool: the search page goes on), each verdict kept this long
# (a busy portal asks the database once in a while; a revocation made by another process applies
# after it, one made on this process's page at once), at most this many verdicts kept
CONCURRENT_CHECKS = 4
VERDICT_SECONDS = 30.0
MAX_VERDICTS = 4096
REFUSALS_LOGGED_EVERY = 60.0  # seconds: refused tokens are logged once a minute at most, counted
REFUSED_TOKEN = "API: %d request(s) refused for an invalid token, the last from %s (%s)"
OVER_RATE = "API: %d request(s) refused over the rate limit, the last for token %s %r"
# Rate limits: at most this many tokens' buckets kept (the least recently used dropped first)
MAX_BUCKETS = 4096


class Refusals:
    """Refusals counted (``total``: since the start, for /metrics) and logged at WARNING at most
    once every ``every`` seconds, with how many since the last line: anyone may send junk, and
    one line per request would let them fill the log. Thread-safe."""

    def __init__(self, message: str, clock: Callable[[], float] = time.monotonic, every: float = REFUSALS_LOGGED_EVERY):
        self.message, self.clock, self.every = message, clock, every
        self.total = 0
        self._since_logged = 0
        self._logged_at: float | None = None
        self._lock = threading.Lock()

    def count(self, *args: object) -> None:
        """One more refusal; logged (``message`` % (count, *args)) unless one was within ``every``."""
        with self._lock:
            self._since_logged += 1
            self.total += 1
            moment = self.clock()
            if self._logged_at is not None and moment - self._logged_at < self.every:
                return
            count, self._since_logged, self._logged_at = self._since_logged, 0, moment
        logger.warning(self.message, count, *args)


class TokenGate:
    """The API's checks of tokens (store/api_tokens.py's ``check``), bounded: ``verdict`` is None
    when CONCURRENT_CHECKS checks wait on the database already (the request is answered 503 at
    once), verdicts are kept VERDICT_SECONDS by the token's hash (never the token), and refusals
    are logged at most once every REFUSALS_LOGGED_EVERY, with their count (anyone may send junk)."""

    def __init__(
        self,
        check: Callable[[str], TokenCheck],
        clock: Callable[[], float] = time.monotonic,
        concurrent: int = CONCURRENT_CHECKS,
        ttl: float = VERDICT_SECONDS,
        size: int = MAX_VERDICTS,
    ) -> None:
        self.check, self.clock, self.ttl, self.size = check, clock, ttl, size
        self._checking = threading.BoundedSemaphore(concurrent)
        self._verdicts: OrderedDict[str, tuple[float, TokenCheck]] = OrderedDict()
        self._lock = threading.Lock()
        self.refusals = Refusals(REFUSED_TOKEN, clock)

    def verdict(self, token: str) -> TokenCheck | None:
        """The token's verdict (kept, or asked of the database now); None: too many checks wait."""
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        with self._lock:
            kept = self._verdicts.get(key)
            if kept is not None and self.clock() - kept[0] < self.ttl:
                return kept[1]
        if not self._checking.acquire(blocking=False):
            return None
        try:
            found = self.check(token)
        finally:
            self._checking.release()
        with self._lock:
            self._verdicts[key] = (self.clock(), found)
            self._verdicts.move_to_end(key)
            while len(self._verdicts) > self.size:
                self._verdicts.popitem(last=False)
        return found

    def forget(self) -> None:
        """Drops every kept verdict (a token was revoked on this process's page: at once)."""
        with self._lock:
            self._verdicts.clear()

    def refused(self, client: str, reason: str) -> None:
        """Logs a refused token (never the token itself), once every REFUSALS_LOGGED_EVERY at most."""
        self.refusals.count(client, reason)


class RateLimit:
    """A token bucket per API token (keyed by its id or hash, never the token): ``burst``
    requests at once, then ``rate`` a minute. ``wait`` is 0.0 when a request may go (it takes
    one from its bucket), else the seconds until it could. At most ``size`` buckets are kept,
    the least recently used dropped first, and buckets full again are dropped as they come to the
    front (a full bucket dropped loses nothing: a new one is full). Thread-safe (one lock, no
    blocking work under it). ``rate`` 0: no limit, nothing kept."""

    def __init__(
        self,
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        size: int = MAX_BUCKETS,
    ) -> None:
        if rate < 0 or burst < 1 or size < 1:
            raise ValueError("a rate limit needs rate >= 0 (0: none), burst >= 1 and size >= 1")
        self.per_second, self.burst, self.clock, self.size = rate / 60.0, float(burst), clock, size
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key: (tokens, when counted)
        self._lock = threading.Lock()
        self.refusals = Refusals(OVER_RATE, clock)

    @property
    def enabled(self) -> bool:
        return self.per_second > 0

    def _level(self, tokens: float, counted: float, moment: float) -> float:
        return min(self.burst, tokens + max(0.0, moment - counted) * self.per_second)

    def wait(self, key: str) -> float:
        """0.0: the request may go (one taken from ``key``'s bucket); else seconds to wait."""
        if not self.enabled:
            return 0.0
        with self._lock:
            moment = self.clock()
            kept = self._buckets.pop(key, None)
            tokens = self.burst if kept is None else self._level(*kept, moment)
            if tokens >= 1.0:
                tokens -= 1.0
                waiting = 0.0
            else:
                waiting = (1.0 - tokens) / self.per_second
            self._buckets[key] = (tokens, moment)  # the most recently used: last
            while len(self._buckets) > self.size:
                self._buckets.popitem(last=False)
            while self._buckets:  # the least recently used, full again: dropped (nothing lost)
                oldest = next(iter(self._buckets.values()))
                if self._level(*oldest, moment) < self.burst:
                    break
                self._buckets.popitem(last=False)
            return waiting

    def refused(self, check: TokenCheck) -> None:
        """Logs a request refused for the rate (the token's id and name, never the token), once
        every REFUSALS_LOGGED_EVERY at most, with the count since the last line."""
        self.refusals.count(check.token_id, check.name)


class ApiRefusals(Collector):
    """/metrics' count of API requests refused, by reason: ``rate`` (RateLimit) and
    ``invalid_token`` (TokenGate: unknown, revoked or expired). Read from the counts the two keep
    in memory since the process started: nothing asked of the database."""

    def __init__(self, gate: TokenGate, limit: RateLimit) -> None:
        self.gate, self.limit = gate, limit

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "searchcrawl_web_api_refused", "JSON API requests refused since the start, by reason", labels=["reason"]
        )
        family.add_metric(["rate"], self.limit.refusals.total)
        family.add_metric(["invalid_token"], self.gate.refusals.total)
        yield family


def retry_after(wait: float) -> str:
    """The ``Retry-After`` of a wait: whole seconds, rounded up, at least 1."""
    return str(max(1, math.ceil(wait - 1e-9)))


def rate_key(check: TokenCheck, token: str) -> str:
    """The key of a token's bucket: its id in the token table, else (a check that gave none) its
    hash; never the token. Each process keeps its own buckets."""
    if check.token_id is not None:
        return f"id:{check.token_id}"
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def bearer(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization or len(authorization) > MAX_AUTHORIZATION_CHARS:
        return None
    match = _BEARER.fullmatch(authorization.strip())
    return match[1] if match else None


def challenge(error: str = "", description: str = "") -> str:
    """The WWW-Authenticate header of a refusal (RFC 6750)."""
    parts = ['Bearer realm="searchcrawl"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append(f'error_description="{description}"')
    return ", ".join(parts)


def hit_json(hit: Hit) -> dict[str, Any]:
    """One hit (or best bet) of a page, as the answer gives it."""
    parts = snippet_parts(hit.snippet)
    return {
        "url": hit.url,
        "title": hit.title,
        "snippet": "".join(part["text"] for part in parts),
        "snippet_parts": parts,
        "type": hit.type_label,
        "mimetype": hit.mimetype,
        "last_modified": hit.date or None,
        "source": hit.source,
        "host": hit.host,
        "language": hit.language or None,
    }


def page_json(page: SearchPage, searcher: dict[str, Any], suggestions: Iterable[dict[str, str]] = ()) -> dict[str, Any]:
    """The JSON answer of a search page: its best bets (the relevance page's, on page 1, trimmed
    like the hits) apart from its hits, as the page shows them."""
    request = page.request
    facets = {
        name: {
            "title": FACET_TITLES.get(name, name),
            "values": [
                {"value": value.value, "label": value.label, "count": value.count, "chosen": value.selected} for value in values
            ],
        }
        for name, values in page.facets.items()
    }
    return {
        "q": request.q,
        "total": page.total,
        "page": request.page,
        "rows": page.rows,
        "pages": page.pages,
        "sort": request.sort,
        "filters": [{"name": name, "value": value} for name, value in request.filters],
        "from": request.date_from or None,
        "to": request.date_to or None,
        "best_bets": [hit_json(hit) for hit in page.bets],
        "hits": [hit_json(hit) for hit in page.hits],
        "facets": facets,
        "spelling": [text for text, _url in page.suggestions],
        "suggestions": list(suggestions),
        "searcher": searcher,
    }


def searcher_json(principals: Principals) -> dict[str, Any]:
    """Who the search was trimmed for, as the answer says it (never the principals themselves)."""
    return {"user": principals.user, "public_only": principals.user is None or bool(principals.error), "error": principals.error}


def api_user(value: str | None) -> str | None:
    """The ``user`` a request names: None for none; "" for one that is no user name."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > MAX_USER_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in value):
        return ""
    return value


def cors_headers(origin: str | None, allowed: Iterable[str], preflight: bool = False) -> dict[str, str]:
    """The CORS headers of an API answer to a browser page of ``origin``: none unless that origin
    is one of ``allowed`` (SEARCHCRAWL_WEB_API_ORIGINS, exact matches); ``Vary: Origin`` always,
    so a cache never hands one origin's answer to another."""
    headers = {"vary": "Origin"}
    if origin and origin != "null" and origin in set(allowed):
        headers["access-control-allow-origin"] = origin
        if preflight:
            headers["access-control-allow-methods"] = "GET"
            headers["access-control-allow-headers"] = "Authorization"
            headers["access-control-max-age"] = PREFLIGHT_MAX_AGE
        else:  # a 429's wait, readable by the page (not a header browsers expose by themselves)
            headers["access-control-expose-headers"] = "Retry-After"
    return headers


def normal_origins(values: Iterable[str]) -> tuple[str, ...]:
    """SEARCHCRAWL_WEB_API_ORIGINS checked: each ``scheme://host[:port]``, no path, no ``*``."""
    origins = []
    for value in values:
        value = value.strip().rstrip("/")
        if not value:
            continue
        if value == "*" or not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+", value):
            raise ValueError(f"SEARCHCRAWL_WEB_API_ORIGINS: {value!r} is not an origin (scheme://host[:port])")
        origins.append(value.lower())
    return tuple(origins)
