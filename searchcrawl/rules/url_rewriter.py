"""The per-source URL rewriter: a callable registered under the name the source file gives
(``url_rewriter``; config/implementations.py loads it) that sees every extracted link after
canonicalisation and returns it, a rewritten URL, or None to drop it (session ids stripped, print
versions dropped, ...)."""

from __future__ import annotations

from collections.abc import Callable

UrlRewriter = Callable[[str], "str | None"]


def identity(url: str) -> str:
    return url
