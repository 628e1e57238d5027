"""URL canonicalisation: one canonical form per document, before any scope decision or lookup."""

from __future__ import annotations

import functools

from w3lib.url import canonicalize_url


@functools.lru_cache(maxsize=65_536)  # the same links recur on page after page of a site
def canonical(url: str) -> str:
    """w3lib's canonical form (sorted query, normalised escapes, no fragment)."""
    return canonicalize_url(url, keep_fragments=False)
