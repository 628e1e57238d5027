"""A source's ``[access]`` table: who may read its documents when the repository does not say.

A web site says nothing of who may read a page, and a database table or a mailbox an agent lists
may not either: the source file says it. ``public = true`` makes every document of the source
public; ``allow`` and ``deny`` name tokens for every document; ``[[access.rules]]`` name tokens
per document, by URL path prefix (``paths``, ``/hr/`` matches ``/hr/pay.html``) or by regular
expression searched in the URL (``patterns``): the FIRST rule that matches gives the document's
``allow`` (its ``deny`` added to the source-wide ``deny``); a document that no rule matches gets
the source-wide ``allow`` (or is public with ``public = true``); with neither, it is not indexed
(status 927, ``AccessUnreadable``): a rule forgotten for a new folder never makes it public.

Plain code, no Scrapy: config/source.py validates the table into a ``SourceAccess``, the spider
and the agents' documents ask it (``access_of``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit

from searchcrawl.access.tokens import PUBLIC, Access, AccessUnreadable, Grant, normal_token


def tokens_of(values: Iterable[str]) -> tuple[str, ...]:
    """Tokens as written in a source file, normalised (AccessError, a ValueError, for one that is
    not a token), each once, in order."""
    return tuple(dict.fromkeys(normal_token(value) for value in values))


@dataclass(frozen=True)
class AccessRule:
    """One ``[[access.rules]]`` entry: the documents it covers, and their tokens."""

    paths: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    compiled: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.compiled and self.patterns:
            object.__setattr__(self, "compiled", tuple(re.compile(pattern) for pattern in self.patterns))

    def matches(self, url: str, path: str) -> bool:
        return any(path.startswith(prefix) for prefix in self.paths) or any(p.search(url) for p in self.compiled)

    def describe(self, number: int) -> str:
        covers = [*(f"path {prefix}" for prefix in self.paths), *(f"pattern {p!r}" for p in self.patterns)]
        return f"[[access.rules]] #{number} ({', '.join(covers)})"


@dataclass(frozen=True)
class SourceAccess:
    """A source's ``[access]`` table, validated (see the module's docstring). ``origin`` names
    the source file, for the tokens' origins (what `scrapy explain-access` shows)."""

    origin: str
    public: bool = False
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    rules: tuple[AccessRule, ...] = ()

    def access_of(self, url: str, path: str | None = None) -> Access:
        """The access of the document at ``url`` (``path``: what ``paths`` prefixes match; the
        URL's path, percent-decoded, by default). AccessUnreadable when no rule covers it and
        the source gives no access of its own."""
        path = unquote(urlsplit(url).path) if path is None else path
        deny = [Grant(token, f"{self.origin}: [access] deny") for token in self.deny]
        for number, rule in enumerate(self.rules, start=1):
            if rule.matches(url, path):
                where = f"{self.origin}: {rule.describe(number)}"
                allow = [Grant(token, f"{where} allow") for token in rule.allow]
                deny += [Grant(token, f"{where} deny") for token in rule.deny]
                return Access.of(allow, deny)
        if self.public:
            return Access.of([Grant(PUBLIC, f"{self.origin}: [access] public = true")], deny)
        if self.allow:
            return Access.of([Grant(token, f"{self.origin}: [access] allow") for token in self.allow], deny)
        raise AccessUnreadable(f"no rule of the source's [access] table covers it ({self.origin})")


def public_source(origin: str) -> Access:
    """The access of a web source's documents without ``[access]`` (and without ``[[auth]]``):
    public, as before access existed."""
    return Access.public(f"{origin}: no [access] table, no [[auth]]: public")


@dataclass(frozen=True)
class DocumentAccess:
    """The access of each document of one source: an agent's reference's own (its request data,
    ``Access.to_data``), else the source's ``[access]`` table, else (a web source without
    ``[access]`` and ``[[auth]]``) public. ``agent``: the source has an agent, whose documents
    without an access of their own are covered by ``[access]`` only (matched on ``/<key>``)."""

    origin: str
    rules: SourceAccess | None = None
    agent: bool = False

    def of(self, url: str, reference: dict[str, Any] | None = None, key: str | None = None) -> Access:
        """AccessUnreadable when the document's access cannot be known (see the module's docstring)."""
        reference = reference or {}
        if reference.get("access_unreadable"):
            raise AccessUnreadable(str(reference["access_unreadable"]))
        given = reference.get("access")
        if given is not None:
            access = Access.from_data(given)
            if self.rules is not None and self.rules.deny:
                deny = [Grant(token, f"{self.rules.origin}: [access] deny") for token in self.rules.deny]
                access = Access(access.levels, _unique_grants((*access.deny, *deny)), access.notes)
            return access
        if self.rules is not None:
            return self.rules.access_of(url, None if key is None else "/" + key)
        if self.agent:
            raise AccessUnreadable("the source's agent gave no access list for it, and the source has no [access] table")
        return public_source(self.origin)


def _unique_grants(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    seen: dict[str, Grant] = {}
    for grant in grants:
        seen.setdefault(grant.token, grant)
    return tuple(seen.values())
