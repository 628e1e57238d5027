"""The per-source URL rewriter: a callable named in the source file (``url_rewriter``) that sees
every extracted link after canonicalisation and returns it, a rewritten URL, or None to drop it
(session ids stripped, print versions dropped, ...)."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

UrlRewriter = Callable[[str], "str | None"]


def identity(url: str) -> str:
    return url


def load_rewriter(path: str | None) -> UrlRewriter:
    """The callable at a dotted path (``package.module.function``); ImportError/TypeError if unusable
    (ValueError: not a dotted path; NameError: the module has no such name, as Scrapy's load_object)."""
    if not path:
        return identity
    module, dot, name = path.rpartition(".")
    if not dot:
        raise ValueError(f"Error loading object '{path}': not a full path")
    try:
        rewriter: object = getattr(import_module(module), name)
    except AttributeError:
        raise NameError(f"Module '{module}' doesn't define any object named '{name}'") from None
    if not callable(rewriter):
        raise TypeError(f"{path} is not callable")
    return rewriter
