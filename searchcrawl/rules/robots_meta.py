"""Robots directives of a page: ``<meta name="robots">`` (or ``<meta name="<agent token>">``) and
the ``X-Robots-Tag`` header. Plain logic.

``noindex`` keeps a page out of the index (its links are still followed); ``nofollow`` stops its
links being followed; ``none`` is both. An ``X-Robots-Tag`` value may name the agent it is for
(``X-Robots-Tag: otherbot: noindex``); values for other agents are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable

KNOWN = frozenset({"noindex", "nofollow"})


def _directives(value: str) -> set[str]:
    found: set[str] = set()
    for part in value.split(","):
        word = part.strip().lower()
        if word == "none":
            found |= KNOWN
        elif word in KNOWN:
            found.add(word)
    return found


def robots_directives(meta: dict[str, str], headers: Iterable[str], agent: str) -> frozenset[str]:
    """The directives (subset of {"noindex", "nofollow"}) that apply to this crawler.

    ``meta`` maps lower-case meta names to contents; ``headers`` are the X-Robots-Tag values.
    """
    agent = agent.lower()
    found: set[str] = set()
    for name in ("robots", agent):
        if name in meta:
            found |= _directives(meta[name])
    for value in headers:
        head, sep, tail = value.partition(":")
        if sep and head.strip() and " " not in head.strip() and "," not in head:
            if head.strip().lower() == agent:
                found |= _directives(tail)
        else:
            found |= _directives(value)
    return frozenset(found)
