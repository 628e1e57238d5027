"""The per-source URL rewriter: a callable named in the source file (``url_rewriter``) that sees
every extracted link after canonicalisation and returns it, a rewritten URL, or None to drop it
(session ids stripped, print versions dropped, ...)."""

from __future__ import annotations

from collections.abc import Callable

from scrapy.utils.misc import load_object

UrlRewriter = Callable[[str], "str | None"]


def identity(url: str) -> str:
    return url


def load_rewriter(path: str | None) -> UrlRewriter:
    """The callable at a dotted path (``package.module.function``); ImportError/TypeError if unusable."""
    if not path:
        return identity
    rewriter = load_object(path)
    if not callable(rewriter):
        raise TypeError(f"{path} is not callable")
    return rewriter
