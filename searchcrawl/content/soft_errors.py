"""Soft errors: pages that answer 200 but are not the page.

A login page served in place of the content (a lost session, a single sign-on redirect), a bot
challenge or "please enable cookies", a maintenance page, a "page not found" answered with 200:
indexed, each would replace the good copy, and its links (a soft-404 link farm) would be
followed. A source's ``[soft_errors]`` table says how to tell them:

- ``defaults`` (default true): the built-in markers of the common cases (``DEFAULT_MARKERS``);
- ``[[soft_errors.markers]]``: markers of the source's own, each of a ``kind`` (``login``,
  ``challenge``, ``maintenance``, ``not_found``) with one or more conditions, all of which must
  hold: ``title`` (a regular expression searched in the page's title), ``text`` (searched in the
  page's text: its content regions' text, content/regions.py), ``css`` (a selector, CSS or
  ``xpath:``, that matches an element), ``header`` (``"Name: regex"`` on a response header),
  ``max_text`` (the page's text is at most this many characters: interstitials are short, and a
  long article that mentions "enable JavaScript" is no challenge); or ``redirect`` alone, a
  regular expression on the target of a temporary redirect (a redirect to a login page; a
  permanent one is a move); ``patterns``: the URLs a marker applies to (default: all);
- ``probe_not_found`` (default true): once per site and crawl, a URL that cannot exist (a random
  name beside the site's first page) is fetched; a site that answers it with a page (200, after
  its redirects on the site) has soft 404s, and a page as like that one as ``similarity``
  (default 0.9: the share of their three-word sequences in common, the URL a page echoes left
  out, and the site's template: what that page shares with the site's home page) is a soft 404
  too.

Such a page is a soft error: not indexed, its indexed version kept (a transient failure of the
URL), its links not followed. A login page, challenge or maintenance page is status 928
(``soft_error``), the source's trouble rather than the page's, never counted toward
``max_failures`` (as a refused login, 936); a not-found page is 929 (``soft_not_found``),
counted: a page that says "not found" for ``max_failures`` crawls in a row has gone.

Plain logic on lxml trees and strings, tested directly; the spider applies it to the tree the
crawl parsed once, the redirect policy to a redirect's target, the probe middleware learns the
not-found page (crawl/middlewares/not_found_probe.py).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import Field, field_validator, model_validator

from searchcrawl.content.regions import RegionText, compiled
from searchcrawl.rules.credentials import origin_of
from searchcrawl.rules.status_codes import Status
from searchcrawl.rules.tables import RuleTable, regular_expression, regular_expressions

Kind = Literal["login", "challenge", "maintenance", "not_found"]
KIND_NAMES: dict[str, str] = {
    "login": "a login page",
    "challenge": "a bot challenge",
    "maintenance": "a maintenance page",
    "not_found": "a not-found page",
}
MAX_TITLE_CHARS = 1_000  # what a title regex reads: a hostile title is not matched whole
MAX_TEXT_CHARS = 20_000  # what a text regex reads of a page without max_text
MAX_SHINGLE_WORDS = 5_000  # the words of a page compared with the not-found page
SHINGLE = 3


def _regex(value: str | None) -> str | None:
    if value is not None:
        regular_expression(value)
    return value


class SoftErrorMarker(RuleTable):
    """A ``[[soft_errors.markers]]`` entry (the module's docstring)."""

    kind: Kind
    title: str | None = None
    text: str | None = None
    css: str | None = None
    header: str | None = None
    redirect: str | None = None
    max_text: int | None = Field(default=None, ge=0)
    patterns: list[str] = Field(default_factory=list)

    @field_validator("title", "text", "redirect")
    @classmethod
    def _regexes(cls, value: str | None) -> str | None:
        return _regex(value)

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, values: list[str]) -> list[str]:
        return regular_expressions(values)

    @field_validator("css")
    @classmethod
    def _selector(cls, value: str | None) -> str | None:
        if value is not None:
            compiled(value)
        return value

    @field_validator("header")
    @classmethod
    def _header(cls, value: str | None) -> str | None:
        if value is not None:
            name, sep, pattern = value.partition(":")
            if not sep or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name.strip()):
                raise ValueError(f"expected 'Header-Name: regular expression', got {value!r}")
            _regex(pattern.strip())
        return value

    @model_validator(mode="after")
    def _conditions(self) -> SoftErrorMarker:
        page = [self.title, self.text, self.css, self.header]
        if self.redirect is not None and (any(c is not None for c in page) or self.max_text is not None):
            raise ValueError("a redirect marker is about the redirect alone: no title, text, css, header or max_text")
        if self.redirect is None and all(c is None for c in page):
            raise ValueError("a marker needs a condition: title, text, css, header or redirect")
        return self


class SoftErrorsTable(RuleTable):
    """A source's ``[soft_errors]`` table (the module's docstring)."""

    defaults: bool = True
    probe_not_found: bool = True
    similarity: float = Field(default=0.9, ge=0.5, le=1.0)
    markers: list[SoftErrorMarker] = Field(default_factory=list)


# The login paths of common products: a redirect to one is a login wall (the path segment itself,
# as /login, /signin.aspx, /adfs/ls/, /cas/login, /wp-login.php, /Shibboleth.sso/, Keycloak's
# /protocol/openid-connect/auth, an OAuth /authorize).
LOGIN_PATHS = (
    r"(?i)^[a-z][a-z0-9+.-]*://[^/]+(/[^?#]*)?/("
    r"log-?in|log-?on|sign-?in|sso|saml2?|auth/login|cas/login|adfs/ls|wp-login\.php|shibboleth\.sso"
    r"|openid-connect/auth|oauth2?/(v2\.0/)?authori[sz]e|idp/profile/saml2"
    r")(\.[a-z]{2,5})?(/|$|[?#;])"
)
# A notice's title is the notice: the whole title, or one part of it beside the site's name
# ("Intranet | Sign in", "Page not found - Intranet"); a title that only mentions a login, an
# error or maintenance ("Login problems after the update", "404 errors explained", "Scheduled
# maintenance of the mail system on Saturday") is content's. ": " parts a site's name from a
# notice, never a notice from what follows ("Not found: what to do"). Possessive and bounded
# quantifiers: a hostile title of separators costs one pass, not one per separator.
_BEFORE = r"(?:.*?\w(?=\W*?(?:[|·•:]|\s[–—-]))\W++)?"
_AFTER = r"(?:\W*+$|\W*?(?:[|·•]|\s[–—-]\s).*)"


def notice_title(phrases: str) -> str:
    """A title regex of a notice: one of ``phrases`` as the whole title or one part of it."""
    return rf"(?i)^{_BEFORE}\W*+(?:{phrases}){_AFTER}"


LOGIN_TITLES = notice_title(
    r"(?:user\s+|member\s+|account\s+)?(?:log\s?in|log\s?on|sign\s?in|sign-in|single sign-on|authentication required"
    r"|anmelden|anmeldung|connexion|se connecter|iniciar sesi[oó]n|accedi|inloggen)"
    r"(?:\s+(?:to|into|with|at|page|required|bei|zu|auf|à|sur|a|en|in)\b[^|·•–—]{0,80}?)?"
)
NOT_FOUND_TITLES = notice_title(
    r"(?:error\W*)?404(?:\W+(?:error|(?:(?:the\s+)?(?:page|file|document|resource|url)(?:\s+or\s+directory)?\s+)?"
    r"(?:was\s+)?not\s+found))?"
    r"|(?:error\W*)?(?:(?:the\s+)?(?:page|file|document|resource|url)\s+(?:was\s+)?)?not\s+found(?:\W+404)?"
    r"|seite nicht gefunden|page (?:introuvable|non trouv[ée]e)|p[aá]gina no encontrada"
)
MAINTENANCE_TITLES = notice_title(
    r"(?:[\w' ]{1,60}?\s(?:is|are)\s+(?:currently\s+)?|(?:sorry\W+)?we(?:'re|\s+are)\s+(?:currently\s+)?)?"
    r"(?:under maintenance|down for (?:scheduled\s+)?maintenance|undergoing (?:scheduled\s+)?maintenance"
    r"|(?:in\s+)?maintenance mode|scheduled maintenance|site maintenance|temporarily unavailable|wartungsarbeiten"
    r"|en maintenance)"
)

# Login pages, challenges and maintenance pages are short (max_text): a long page with a login
# box, or one that mentions them, is content.
DEFAULT_MARKERS: tuple[SoftErrorMarker, ...] = (
    SoftErrorMarker(kind="login", redirect=LOGIN_PATHS),
    SoftErrorMarker(kind="login", css="input[type=password]", title=LOGIN_TITLES, max_text=2_000),
    SoftErrorMarker(kind="challenge", header="cf-mitigated: (?i)challenge"),
    SoftErrorMarker(
        kind="challenge",
        title=r"(?i)^\s*(just a moment\W*|attention required\W*(\|\s*cloudflare)?|ddos-guard|checking your browser\b.*"
        r"|access denied\W*\|?\s*(cloudflare|incapsula|sucuri).*|human verification|are you a robot\W*)\s*$",
        max_text=2_000,
    ),
    SoftErrorMarker(
        kind="challenge",
        # one pass over the tree's ids and one over its classes (as CSS, each class and id would
        # be a pass of its own), by their attributes, not every element's predicate (0.44 of the
        # time on the Nutch Javadoc, issue 102); the first of each: a marker asks whether there is
        # one, and a union of every match had libxml2 merge them pairwise (a page of 32,000: 8.7 s)
        css="xpath:(//@id[.='challenge-form' or .='px-captcha' or .='cf-challenge-running'])[1]/.."
        " | (//@class[contains(., 'g-recaptcha') or contains(., 'h-captcha') or contains(., 'cf-turnstile')])[1]/..",
        max_text=600,  # a challenge says little; a short page of a large tree (a big menu) is spared the search
    ),
    SoftErrorMarker(
        kind="challenge",
        # "please enable JavaScript" ends its sentence: "... to view the comments" (Disqus's
        # <noscript>) is a page's, not a challenge's
        text=r"(?i)\b(enable (javascript|cookies)( and cookies)? to continue"
        r"|please (turn on|enable) (javascript|cookies)( and (javascript|cookies))?( in your browser| and reload( the page)?)?"
        r"\s*([.!]|$)"
        r"|checking (if the site connection is secure|your browser)|verify (that )?you are (a )?human"
        r"|are you a robot|unusual traffic from your (computer )?network)",
        max_text=1_500,
    ),
    SoftErrorMarker(kind="maintenance", title=MAINTENANCE_TITLES, max_text=1_500),
    SoftErrorMarker(
        kind="maintenance",
        text=r"(?i)\b(is (currently )?(down for|under(going)?) (scheduled )?maintenance|we('| a)re performing "
        r"(scheduled )?maintenance|will be back (shortly|soon))\b",
        max_text=1_500,
    ),
    SoftErrorMarker(kind="not_found", title=NOT_FOUND_TITLES),
)


@dataclass(frozen=True)
class SoftError:
    """A page that is not the page: of what ``kind``, and why (the row's reason); ``session``:
    the source signs in to its origin (a login page there is its session lost)."""

    kind: Kind
    reason: str
    session: bool = False

    @property
    def status(self) -> Status:
        return Status.SOFT_NOT_FOUND if self.kind == "not_found" else Status.SOFT_ERROR

    @property
    def counted(self) -> bool:
        """Whether it counts toward max_failures. A not-found page does (the page may have gone),
        and so does a login page where the source has no session to lose: the page went private,
        and who may read it now is unknown (fail closed: it leaves after max_failures crawls). A
        login page in a session (lost, or expired), a challenge or a maintenance page do not:
        the trouble is the crawler's or the site's, not the page's."""
        return self.kind == "not_found" or (self.kind == "login" and not self.session)


def _without_url(text: str, url: str) -> str:
    """``text`` without the URL a not-found page echoes (the whole URL, its path, its last
    segment, as written or decoded): two soft 404s differ in nothing else."""
    parts = urlsplit(url)
    echoes = {url, parts.path, unquote(parts.path), parts.path.rstrip("/").rsplit("/", 1)[-1]}
    for echo in sorted((e for e in echoes if len(e) > 1), key=len, reverse=True):
        text = text.replace(echo, " ")
        decoded = unquote(echo)
        if decoded != echo:
            text = text.replace(decoded, " ")
    return text


def shingles(title: str, text: str, url: str) -> frozenset[int]:
    """The page's three-word sequences (hashed; the first ``MAX_SHINGLE_WORDS`` words of title
    and text, lower case, the URL it echoes left out)."""
    words = re.findall(r"\w+", _without_url(f"{title[:MAX_TITLE_CHARS]} {text[: MAX_TEXT_CHARS * 4]}", url).lower())
    words = words[:MAX_SHINGLE_WORDS]
    if len(words) < SHINGLE:
        return frozenset({hash(tuple(words))}) if words else frozenset()
    return frozenset(hash(tuple(words[i : i + SHINGLE])) for i in range(len(words) - SHINGLE + 1))


@dataclass(frozen=True)
class NotFoundPage:
    """What a site answers for a URL that cannot exist (``probe``): the page its soft 404s look
    like, its three-word sequences as 64-bit hashes (held for the whole crawl, one per site: at
    most 40 KB, where a frozenset of them took 670 KiB), less its ``template``: those it shares
    with the site's home page (a menu or footer that is no landmark), compared with no page."""

    probe: str
    shingles: array[int]
    template: array[int] = field(default_factory=lambda: array("q"))

    @classmethod
    def of(cls, probe: str, title: str, text: str) -> NotFoundPage | None:
        """The site's not-found page from its answer to ``probe``; None when it has no words to
        compare (an empty page is not indexed anyway)."""
        found = shingles(title, text, probe)
        return cls(probe, array("q", sorted(found))) if found else None

    def without(self, template: frozenset[int]) -> NotFoundPage | None:
        """This page less the sequences of ``template`` (the home page's): None when nothing is left."""
        common = template.intersection(self.shingles)
        own = [shingle for shingle in self.shingles if shingle not in common]
        return NotFoundPage(self.probe, array("q", own), array("q", sorted(common))) if own else None

    def own(self, other: frozenset[int]) -> frozenset[int]:
        """A page's sequences less the site's template."""
        return other.difference(self.template) if self.template else other

    def similarity(self, other: frozenset[int]) -> float:
        """The share of three-word sequences the two pages have in common (Jaccard)."""
        if not other:
            return 0.0
        common = len(other.intersection(self.shingles))
        return common / (len(self.shingles) + len(other) - common)

    def could_match(self, other_size: int, threshold: float) -> bool:
        """Whether a page of ``other_size`` sequences could be as similar as ``threshold``: the
        cheap test that spares most pages the comparison."""
        small, large = sorted((len(self.shingles), other_size))
        return large > 0 and small / large >= threshold


class Page:
    """What the markers read of a fetched page: its URL, headers, tree, title and text (its
    content regions' text, computed once on first use and handed on to the attributes pipeline:
    ``text`` may give the regions' whole ``RegionText``, its prose too)."""

    def __init__(self, url: str, headers: Mapping[str, Sequence[str]], root: Any, text: Callable[[], str | RegionText]) -> None:
        self.url = url
        self.headers = {name.lower(): list(values) for name, values in headers.items()}
        self.root = root
        self._text = text

    @cached_property
    def title(self) -> str:
        element = None
        if self.root is not None:  # where it belongs first: a search of the whole tree costs more
            element = self.root.find("head/title")
            element = self.root.find(".//title") if element is None else element
        return " ".join((element.text_content() if element is not None else "")[:MAX_TITLE_CHARS].split())

    @cached_property
    def read(self) -> str | RegionText:
        return self._text()

    @property
    def text(self) -> str:
        read = self.read
        return read if isinstance(read, str) else read.text

    @property
    def text_read(self) -> bool:
        """Whether the text has been computed (then the pipeline need not compute it again)."""
        return "read" in self.__dict__


class _Compiled:
    """A marker with its expressions compiled."""

    def __init__(self, marker: SoftErrorMarker, own: bool) -> None:
        self.marker = marker
        self.own = own
        self.patterns = [re.compile(p) for p in marker.patterns]
        self.title = re.compile(marker.title) if marker.title else None
        self.text = re.compile(marker.text) if marker.text else None
        self.css = compiled(marker.css) if marker.css else None
        self.redirect = re.compile(marker.redirect) if marker.redirect else None
        self.header: tuple[str, re.Pattern[str]] | None = None
        if marker.header:
            name, _, pattern = marker.header.partition(":")
            self.header = (name.strip().lower(), re.compile(pattern.strip()))

    def applies(self, url: str) -> bool:
        return not self.patterns or any(p.search(url) for p in self.patterns)

    def matches(self, page: Page) -> str | None:
        """Which conditions held (for the reason), or None when one did not."""
        said: list[str] = []
        if self.header is not None:
            name, pattern = self.header
            if not any(pattern.search(value[:MAX_TITLE_CHARS]) for value in page.headers.get(name, ())):
                return None
            said.append(f"header {name}")
        if self.title is not None:
            if not self.title.search(page.title):
                return None
            said.append(f"title {page.title[:60]!r}")
        if self.marker.max_text is not None:  # before a selector: the cheaper test first
            if len(page.text) > self.marker.max_text:
                return None
            said.append(f"{len(page.text)} characters of text")
        if self.css is not None:
            if page.root is None or not self.css(page.root):
                return None
            said.append(f"an element {self.marker.css!r}")
        if self.text is not None:
            found = self.text.search(page.text[: self.marker.max_text or MAX_TEXT_CHARS])
            if found is None:
                return None
            said.append(f"text {found.group(0)[:60]!r}")
        return ", ".join(said)


class SoftErrors:
    """A source's soft-error rules (the module's docstring), compiled once."""

    def __init__(self, table: SoftErrorsTable | None = None, signed_in: Collection[str] = ()) -> None:
        self.table = table or SoftErrorsTable()
        self.signed_in = frozenset(signed_in)  # the origins the source signs in to ([[auth]])
        markers = [_Compiled(m, own=True) for m in self.table.markers]
        if self.table.defaults:
            markers.extend(_Compiled(m, own=False) for m in DEFAULT_MARKERS)
        self.redirects = [m for m in markers if m.redirect is not None]
        self.pages = [m for m in markers if m.redirect is None]

    @property
    def probes(self) -> bool:
        return self.table.probe_not_found

    def in_session(self, url: str) -> bool:
        """Whether the source signs in to ``url``'s origin."""
        return origin_of(url) in self.signed_in

    def of_redirect(self, url: str, target: str) -> SoftError | None:
        """A soft error when a redirect of ``url`` to ``target`` leads to a login page (a
        redirect marker matches the target, and not the redirecting URL itself: a login page's
        own redirect, /login to /login/, is no wall)."""
        for marker in self.redirects:
            assert marker.redirect is not None
            if marker.applies(url) and marker.redirect.search(target) and not marker.redirect.search(url):
                kind = marker.marker.kind
                return SoftError(kind, f"{KIND_NAMES[kind]}: redirected to {target}", self.in_session(url))
        return None

    def of_page(self, page: Page, not_found: NotFoundPage | None = None) -> SoftError | None:
        """A soft error when a marker matches ``page``, or it is as like the site's not-found page
        as the source's ``similarity``; else None."""
        for marker in self.pages:
            if not marker.applies(page.url):
                continue
            said = marker.matches(page)
            if said is not None:
                origin = "the source's marker" if marker.own else "a default marker"
                kind = marker.marker.kind
                return SoftError(kind, f"{KIND_NAMES[kind]} ({origin}: {said})", self.in_session(page.url))
        if not_found is not None:
            found = not_found.own(shingles(page.title, page.text, page.url))
            threshold = self.table.similarity
            if not_found.could_match(len(found), threshold):
                similarity = not_found.similarity(found)
                if similarity >= threshold:
                    reason = f"a not-found page (as like the site's answer to {not_found.probe} as {similarity:.2f})"
                    return SoftError("not_found", reason)
        return None
