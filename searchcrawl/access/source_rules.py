"""A source's ``[access]`` table: who may read its documents when the repository does not say.

A web site says nothing of who may read a page, and a database table or a mailbox an agent lists
may not either: the source file says it. ``public = true`` makes every document of the source
public; ``allow`` and ``deny`` name tokens for every document; ``[[access.rules]]`` name tokens
per document, by URL path prefix (``paths``, ``/hr/`` matches ``/hr/pay.html``) or by regular
expression searched in the URL (``patterns``): the FIRST rule that matches gives the document's
``allow`` (its ``deny`` added to the source-wide ``deny``); a document that no rule matches gets
the source-wide ``allow`` (or is public with ``public = true``); with neither, it is not indexed
(status 927, ``AccessUnreadable``): a rule forgotten for a new folder never makes it public.

The rules see the URL as a server may resolve it, not only as it is written: a link such as
``/public/..%2Fhr/pay.html``, ``//hr/pay.html``, ``/HR/pay.html`` (a case-insensitive server),
``/hr;x=1/pay.html`` or ``/board/q1.pdf?dl=1`` is served the restricted document by some server,
while its written path matches a looser rule. Each way of reading it (``views``: the path
percent-decoded as written; decoded, once and until stable, with ``\\`` as ``/``, ``;params``
dropped or not, dot segments and repeated slashes resolved; and these lower-cased, compared with
the rules without case, with each segment's trailing dots and spaces dropped; and the URL without
its query) gets its rule; when they differ, the document gets all of their levels, so that a reader
must pass every one (the stricter access: fail closed), and when one is covered by no rule, it is
unreadable.

Plain code, no Scrapy: config/source.py validates the table into a ``SourceAccess``, the spider
and the agents' documents ask it (``access_of``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import unquote, urlsplit

from searchcrawl.access.tokens import PUBLIC, Access, AccessUnreadable, Grant, Level, normal_token


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

    def matches(self, url: str, path: str, fold: bool = False) -> bool:
        """Whether the rule covers the URL ``url`` with the decoded path ``path``; ``fold``:
        compared without case (a view of a case-insensitive server)."""
        if fold:
            path, url = path.lower(), url.lower()
            return any(path.startswith(prefix) for prefix in self._folded_paths) or any(p.search(url) for p in self._folded)
        return any(path.startswith(prefix) for prefix in self._decoded_paths) or any(p.search(url) for p in self.compiled)

    @cached_property
    def _decoded_paths(self) -> tuple[str, ...]:
        # a source file's prefixes are kept percent-encoded (config/source.py); paths are decoded
        return tuple(dict.fromkeys((*self.paths, *(unquote(prefix) for prefix in self.paths))))

    @cached_property
    def _folded_paths(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(prefix.lower() for prefix in self._decoded_paths))

    @cached_property
    def _folded(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(pattern, re.IGNORECASE) for pattern in self.patterns)

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
        URL's path by default), over every way a server may read it (``views``: see the module's
        docstring). AccessUnreadable when no rule covers one of them and the source gives no
        access of its own."""
        combined: Access | None = None
        chosen: set[int] = set()
        for view in views(url, path):
            number, access = self._access_of_view(view)
            if number in chosen:
                continue
            chosen.add(number)
            if combined is None:
                combined = access
                continue
            seen = f" (the URL read as {view.url})"
            for level in access.levels:
                renamed = tuple(Grant(grant.token, grant.origin + seen) for grant in level.allow)
                combined = combined.within(Level(f"{level.name}{seen}", renamed), access.deny)
        assert combined is not None  # views() gives the URL as written at least
        return combined

    def _access_of_view(self, view: View) -> tuple[int, Access]:
        """The number of the rule that covers ``view`` (0: the source's own access) and its access."""
        deny = [Grant(token, f"{self.origin}: [access] deny") for token in self.deny]
        for number, rule in enumerate(self.rules, start=1):
            if rule.matches(view.url, view.path, view.fold):
                where = f"{self.origin}: {rule.describe(number)}"
                allow = [Grant(token, f"{where} allow") for token in rule.allow]
                deny += [Grant(token, f"{where} deny") for token in rule.deny]
                return number, Access.of(allow, deny)
        if self.public:
            return 0, Access.of([Grant(PUBLIC, f"{self.origin}: [access] public = true")], deny)
        if self.allow:
            return 0, Access.of([Grant(token, f"{self.origin}: [access] allow") for token in self.allow], deny)
        shown = "" if view.written else f", read as {view.url}"
        raise AccessUnreadable(f"no rule of the source's [access] table covers it{shown} ({self.origin})")


@dataclass(frozen=True)
class View:
    """One way a server may read a URL: the URL the rules' patterns search, the decoded path
    their prefixes match, ``fold``: compared without case; ``written``: the URL as written."""

    url: str
    path: str
    fold: bool = False
    written: bool = False


MAX_DECODINGS = 3  # a path decoded until it does not change, at most this many times


def views(url: str, path: str | None = None) -> list[View]:
    """The ways a server may read ``url`` (see the module's docstring), the URL as written
    first; ``path``: the path to read instead of the URL's (an agent's key)."""
    parts = urlsplit(url)
    encoded = parts.path if path is None else path
    origin = f"{parts.scheme}://{parts.netloc}" if parts.scheme else ""
    found = [View(url, unquote(encoded) if path is None else path, written=True)]
    decoded = [encoded]
    while len(decoded) <= MAX_DECODINGS and unquote(decoded[-1]) != decoded[-1]:
        decoded.append(unquote(decoded[-1]))
    resolved: dict[str, None] = {}
    for text in decoded[1:] or decoded:
        for params in (False, True):
            resolved[resolve_path(text, params)] = None
    queries = ("", f"?{parts.query}") if parts.query and path is None else ("",)
    for resolved_path in resolved:
        for query in queries:
            found.append(View(f"{origin}{resolved_path}{query}", resolved_path))
            folded = _windows_path(resolved_path)
            found.append(View(f"{origin}{folded}{query}", folded, fold=True))
    if parts.query and path is None:
        found.append(View(f"{origin}{encoded}", unquote(encoded)))
    return list(dict.fromkeys(found))


def resolve_path(path: str, drop_params: bool = False) -> str:
    """``path`` (decoded) as a server resolves it: ``\\`` as ``/``, each segment's ``;params``
    dropped (``drop_params``, as a servlet container does), repeated slashes merged, ``.`` and
    ``..`` segments resolved (RFC 3986, 5.2.4: above the root is the root)."""
    segments: list[str] = []
    parts = path.replace("\\", "/").split("/")
    for segment in parts:
        if drop_params:
            segment = segment.split(";", 1)[0]
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    last = parts[-1].split(";", 1)[0] if drop_params else parts[-1]
    trailing = "/" if segments and last in ("", ".", "..") else ""
    return "/" + "/".join(segments) + trailing


def _windows_path(path: str) -> str:
    """``path`` as a Windows server (IIS) finds its file: without case (the caller compares
    lower-cased), each segment without its trailing dots and spaces, and without an NTFS
    stream (``pay.html::$DATA``)."""
    segments = [segment.split("::", 1)[0].rstrip(". ") for segment in path.split("/")]
    return "/".join(segments).lower()


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
