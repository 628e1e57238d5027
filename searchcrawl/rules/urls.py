"""URL canonicalisation: one canonical form per document, before any scope decision or lookup."""

from __future__ import annotations

import functools
from urllib.parse import quote, urljoin, urlparse

from w3lib.url import canonicalize_url, safe_url_string


@functools.lru_cache(maxsize=65_536)  # the same links recur on page after page of a site
def canonical(url: str) -> str:
    """w3lib's canonical form (sorted query, normalised escapes, no fragment), without user info:
    a link such as ``http://user:pw@host/`` must not carry its password into the document table,
    the logs, the reports or the index. Idempotent."""
    return without_userinfo(canonicalize_url(url, keep_fragments=False))


def location_target(url: str, location: bytes) -> str | None:
    """The canonical URL a redirect of ``url`` with the ``Location`` header ``location`` points
    to, read as Scrapy reads it (w3lib); None when it cannot be read (``http://h:80:1/``,
    ``http://[::1/``): a redirect nowhere, never an exception."""
    try:
        return canonical(urljoin(url, safe_url_string(location.decode("latin-1"))))
    except ValueError:
        return None


def without_userinfo(url: str) -> str:
    """``url`` without the ``user:password@`` of its authority. Expects a canonical URL, whose
    authority holds no ``@`` but the one ending the user info (w3lib percent-encodes the others)."""
    if "@" not in url:  # nearly every URL: no parsing
        return url
    start = url.find("://")
    if start < 0:
        return url  # no authority (mailto:, data:, ...)
    start += 3
    end = first_of(url, "/?#", start)
    at = url.rfind("@", start, end)
    return url if at < 0 else url[:start] + url[at + 1 :]


def first_of(url: str, delimiters: str, start: int) -> int:
    """Where the first of ``delimiters`` is in ``url`` from ``start`` on; its length if none is."""
    end = len(url)
    for delimiter in delimiters:
        found = url.find(delimiter, start, end)
        if found >= 0:
            end = found
    return end


def has_extension(url: str, suffixes: tuple[str, ...]) -> bool:
    """Whether the path of ``url`` ends with one of ``suffixes`` (lowercase, dot included), as
    Scrapy's ``url_has_any_extension`` decides, in one call instead of one per suffix: asked for
    every link of every page."""
    return urlparse(url).path.lower().endswith(suffixes)


def agent_url(scheme: str, source: str, key: str) -> str:
    """The URL an agent's document is indexed under: ``scheme://source/key``, the source and the
    key each percent-encoded whole (a ``/``, ``:`` or ``#`` of a key too: ``imap://mail/bob%2FINBOX%2F17%2F4``),
    so that any key makes one URL and back (agents/base.py; the file and smb types have their own)."""
    return f"{scheme}://{quote(source, safe='')}/{quote(key, safe='')}"
