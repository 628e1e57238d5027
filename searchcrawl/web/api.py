"""The JSON API's logic, without HTTP (issue 59): who a token searches as, the search page's page
as JSON, and which browser origins may call it.

``GET /api/search`` takes the search page's parameters (SearchRequest.from_params: ``q``, the
facets, ``sort``, ``rows``, ``page``, ``from``, ``to``, with the same caps) and answers what
run_search gives the page, as JSON: the same search, never a second one. A token is sent as
``Authorization: Bearer <token>`` (store/api_tokens.py); a request without a valid one gets 401
with ``WWW-Authenticate: Bearer`` (RFC 6750: ``invalid_token`` for an unknown, revoked or
expired token, all alike). A token searches as an anonymous visitor: public documents only.
A token made to "search on behalf of users" may name one with ``user=<name>``: the search is
then trimmed to that user's principals, which come from the directory exactly as for a searcher
signed in on the page; when the directory cannot give them, public documents only (fail closed),
said in the answer's ``searcher.error``. ``user=`` with a token that may not act for users is
refused (403 ``insufficient_scope``), never quietly answered as public.

Snippets are plain text in ``snippet``; ``snippet_parts`` holds the same text as a list of
``{"text", "match"}`` pieces (``match``: Solr highlighted it), so a client marks the matches
without parsing markup. ``suggestions`` is filled by the hook ``Suggest`` (WebApp.suggest) when
one is set, else empty; ``spelling`` holds the spellcheck's corrected queries (the page's "Did you
mean").

CORS is off unless SEARCHCRAWL_WEB_API_ORIGINS names origins: a browser page of one of those
origins may call the API (its own token in the Authorization header: no cookie is ever read by
the API), the request's origin echoed back, never ``*``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from markupsafe import Markup

from searchcrawl.access.decision import Principals
from searchcrawl.web.search_page import FACET_TITLES, Hit, SearchPage

MAX_USER_CHARS = 256
MAX_AUTHORIZATION_CHARS = 300
# Suggestions for a query as a searcher with these principals may see them (issue 59's
# suggestions helper provides one; app.py's WebApp.suggest holds it)
Suggest = Callable[[str, Principals], list[str]]
_BEARER = re.compile(r"Bearer +([A-Za-z0-9._~+/=-]+)", re.IGNORECASE)
_MARK = re.compile(r"(</?mark>)")
PREFLIGHT_MAX_AGE = "600"


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


def snippet_parts(snippet: Markup) -> list[dict[str, Any]]:
    """The page's snippet (escaped text, Solr's matches as ``<mark>``) as plain-text pieces. The
    page escapes everything but the markers, so ``<mark>`` there can only be one of them."""
    parts: list[dict[str, Any]] = []
    inside = False
    for piece in _MARK.split(str(snippet)):
        if piece == "<mark>":
            inside = True
        elif piece == "</mark>":
            inside = False
        elif piece:
            parts.append({"text": Markup(piece).unescape(), "match": inside})
    return parts


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


def page_json(page: SearchPage, searcher: dict[str, Any], suggestions: Iterable[str] = ()) -> dict[str, Any]:
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
