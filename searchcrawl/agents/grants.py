"""Access tokens as the built-in agents read them: a list of tokens in one text (a database
column), the grants of a list of tokens, and the access of a document whose tokens cannot be read.

A text of tokens: tokens are separated by spaces, commas or semicolons, but a new token begins
only where a namespace (access/tokens.py's NAMESPACES: ``user:``, ``group:``, ``member:``,
``uid:``, ``gid:``, ``sid:``) or ``public`` follows the separator, so that a DN
(``group:cn=sales,ou=groups,dc=example,dc=org``) or a group name with a space (``group:Domain
Users``) stays one token; ``group:staff member:cn=x,dc=org`` is two. A separator escaped with a backslash (``\\,``)
never begins one. Text before the first namespace is a piece of its own, which is not a token:
``grants_of`` refuses it (``AccessError``), as any token ``normal_token`` refuses, and a deny
written ``-user:bob`` (a piece of its own too: deny tokens have a column or kind of their own).

Unreadable access (a row whose tokens are not tokens, an access query that failed) is fail
closed: ``unreadable(why)`` is an access of one level that allows nobody, named
``unreadable access: <why>``, so that the document is shown to no one, and `scrapy
explain-access` says why; ``unreadable_reason`` tells it from an access that names readers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from searchcrawl.access.tokens import NAMESPACES, PUBLIC, Access, AccessError, Grant, Level

UNREADABLE = "unreadable access: "
MAX_REASON_CHARS = 300
# a separator (spaces, commas, semicolons; not one escaped with a backslash) before a new token
_TOKEN_START = re.compile(
    r"(?<![\\\s,;])[\s,;]+(?=-?(?:" + "|".join(NAMESPACES) + r")\s*:|-?" + PUBLIC + r"(?:[\s,;]|$))",
    re.IGNORECASE,
)


def split_tokens(text: str) -> list[str]:
    """The tokens of ``text`` as written (see the module's docstring), not yet normalised: []
    when it holds none."""
    text = text.strip().strip(",;").strip()
    if not text:
        return []
    return [piece.strip().strip(",;").strip() for piece in _TOKEN_START.split(text)]


def grants_of(tokens: Iterable[str], origin: str) -> tuple[Grant, ...]:
    """Each token normalised with its origin; AccessError at the first that is not a token."""
    return tuple(Grant.of(token, origin) for token in tokens)


def unreadable(why: str) -> Access:
    """The access of a document whose tokens cannot be read: nobody may read it."""
    why = " ".join(why.split())[:MAX_REASON_CHARS]
    return Access((Level(UNREADABLE + why, ()),))


def unreadable_reason(access: Access | None) -> str | None:
    """Why ``access`` is ``unreadable(...)``, or None when it is another."""
    if access is None or len(access.levels) != 1 or access.levels[0].allow:
        return None
    name = access.levels[0].name
    return name[len(UNREADABLE) :] if name.startswith(UNREADABLE) else None


__all__ = ["AccessError", "grants_of", "split_tokens", "unreadable", "unreadable_reason"]
