"""The decision: may a searcher with these principals read a document with this access?

One rule, in two forms that must agree: ``decide`` (Python: `scrapy explain-access`, the
administration page) and ``solr_filters`` (the filter queries every search sends, so that Solr
trims the hits, their counts, facets and suggestions itself, and a page of hits is always full).
The rule: deny wins (one principal among the deny tokens: refused; principals that may lack
some of the user's: any deny token refuses); so does a late deny token (an ordered ACL's deny
after its first allow entries), unless one of the principals is among the overriding tokens;
then every level needs one of the principals among its allow tokens. Every searcher has the principal ``public``; a visitor who
is not signed in has nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from searchcrawl.access.tokens import (
    DENY_FIELD,
    LATE_DENY_FIELD,
    LEVEL_FIELDS,
    OVERRIDING_FIELD,
    PUBLIC,
    Access,
    Grant,
    normal_token,
)

# the terms query parser's separator (tokens cannot hold a control character: normal_token)
SEPARATOR = "\x1f"


@dataclass(frozen=True)
class Principal:
    """A token that stands for the searcher, and where it came from ("uidNumber of uid=alice,...")."""

    token: str
    origin: str


@dataclass(frozen=True)
class Principals:
    """Who is searching: a user name (None: not signed in) and its principals, ``public`` always
    among them. ``error``: why the principals are only public (a directory that did not answer);
    ``partial``: why they may lack some of the user's groups (a group walk cut at its bounds).
    Either makes them ``incomplete``: a deny token they lack may be the user's, so a document
    with any deny token is refused (fail closed)."""

    user: str | None
    entries: tuple[Principal, ...] = ()
    error: str = ""
    partial: str = ""

    @classmethod
    def anonymous(cls, error: str = "") -> Principals:
        return cls(None, (Principal(PUBLIC, "every searcher"),), error)

    @classmethod
    def of(cls, user: str, entries: Iterable[Principal], error: str = "", partial: str = "") -> Principals:
        """``user``'s principals: ``entries`` normalised, each token once, with ``public``."""
        seen: dict[str, Principal] = {PUBLIC: Principal(PUBLIC, "every searcher")}
        for entry in entries:
            token = normal_token(entry.token)
            seen.setdefault(token, Principal(token, entry.origin))
        return cls(user, tuple(seen.values()), error, partial)

    @property
    def incomplete(self) -> str:
        """Why a signed-in user's principals may lack a deny token of theirs ("" when complete)."""
        return (self.error or self.partial) if self.user is not None else ""

    @property
    def tokens(self) -> frozenset[str]:
        return frozenset(entry.token for entry in self.entries) | {PUBLIC}

    def origin(self, token: str) -> str:
        return next((entry.origin for entry in self.entries if entry.token == token), "")


@dataclass(frozen=True)
class Decision:
    """Granted or not, why, and the entries that decided: the deny token that refused, the level
    none of whose tokens matched, or one matching allow token per level."""

    granted: bool
    reason: str
    entries: tuple[Grant, ...] = ()


def decide(access: Access, principals: Principals) -> Decision:
    """The rule of the module's docstring, over the levels the index holds."""
    tokens = principals.tokens
    for denied in access.deny:
        if denied.token in tokens:
            why = principals.origin(denied.token)
            return Decision(False, f"denied: {denied.token} ({denied.origin}), the searcher's own ({why})", (denied,))
    late = next((denied for denied in access.late_deny if denied.token in tokens), None)
    if late is not None and not any(grant.token in tokens for grant in access.overriding):
        why = principals.origin(late.token)
        return Decision(
            False, f"denied: {late.token} ({late.origin}), the searcher's own ({why}), before any entry allowing them", (late,)
        )
    if (access.deny or access.late_deny) and principals.incomplete:
        why = principals.incomplete
        return Decision(False, f"refused: it denies some readers, and the searcher's principals are incomplete ({why})", ())
    _access, levels = access.indexed_levels()
    matched: list[Grant] = []
    for level in levels:
        allowed = next((grant for grant in level.allow if grant.token in tokens), None)
        if allowed is None:
            return Decision(False, f"no principal of the searcher is allowed by {level.name}", ())
        matched.append(allowed)
    return Decision(True, "granted: " + "; ".join(f"{grant.token} ({grant.origin})" for grant in matched), tuple(matched))


TERMS = "{!terms f=FIELD separator=$access_separator v=$access_tokens}"


def solr_trimming(principals: Principals) -> tuple[list[str], dict[str, str]]:
    """The filter queries of a search trimmed to ``principals`` (one per level field, and the
    deny field's), and the request parameters they read (the principals once, the separator, the
    deny query), with Solr's macros off. A document indexed without access fields matches none: it is shown to no one.
    Incomplete principals (``Principals.incomplete``) see no document with a deny token."""
    filters = [TERMS.replace("FIELD", name) for name in LEVEL_FIELDS]
    filters.append("{!bool must_not=$access_denied}")
    # a late deny refuses unless an overriding token is the searcher's
    filters.append("{!bool must_not=$access_denied_late}")
    if principals.incomplete:
        filters.append(f"*:* -{DENY_FIELD}:[* TO *]")
        filters.append(f"*:* -{LATE_DENY_FIELD}:[* TO *]")
    params = {
        # Solr expands ${name} in every request parameter (its macros) before any parser reads
        # it: a group whose cn is ${q} would take the searcher's query text as more principals
        "expandMacros": "false",
        "access_tokens": SEPARATOR.join(sorted(principals.tokens)),
        "access_separator": SEPARATOR,
        "access_denied": TERMS.replace("FIELD", DENY_FIELD),
        "access_denied_late": "{!bool must=$access_late must_not=$access_early}",
        "access_late": TERMS.replace("FIELD", LATE_DENY_FIELD),
        "access_early": TERMS.replace("FIELD", OVERRIDING_FIELD),
    }
    return filters, params
