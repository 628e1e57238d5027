"""robots.txt decisions (RFC 9309), as plain logic: no Scrapy, no I/O.

Where RFC 9309 leaves room, this follows Google's reference parser (google/robotstxt), because the
conformance cases in ../shared/corpora/robots-cases.json are its decisions. Protego gets 192 of
those 200 right, and it cannot say which group and which line decided, which `scrapy explain`
needs; hence this small parser of our own.

Notable reference-parser behaviour kept here on purpose:

* A URL is compared as the caller gives it: it must already be percent-encoded (Scrapy's
  ``request.url`` always is). Only the *rules* get their non-ASCII characters UTF-8
  percent-encoded, and escapes are never decoded (``%62`` does not match ``b``).
* ``/robots.txt`` is *not* implicitly allowed: the middleware fetches robots.txt itself and never
  needs to ask.
* A ``user-agent`` value in robots.txt counts up to its first character that is not a letter,
  ``_`` or ``-`` (``Googlebot/2.1`` and ``Googlebot-News`` stay apart; ``AB42bot`` means ``AB``).
* A UTF-8 byte-order mark, or any start of one (``\\xef``, ``\\xef\\xbb``), is skipped at the very
  start of the file only.
* A line without a colon whose two words are separated by spaces or tabs is read as key and
  value (``user-agent FooBot``, ``disallow /``); a line of three or more words is not.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = [
    "MAX_ROBOTS_BYTES",
    "MAX_WILDCARD_WORK",
    "RobotsDecision",
    "RobotsTxt",
    "is_allowed",
    "product_token",
    "robots_for_response",
]

MAX_ROBOTS_BYTES = 500 * 1024
"""Only this much of a robots.txt is parsed (RFC 9309 §2.5 asks for at least 500 KiB)."""

MAX_WILDCARD_WORK = 10_000_000
"""The most matching work one URL may take from the rules with a ``*`` after their literal start
(``/*.pdf$``, ``*?sort=``): the length of their patterns, added up, times the length of the URL's
path (each such rule is a search of the path for each of its parts, on the crawl's one thread).
A hostile robots.txt of 2,000 such rules of 200 characters held that thread 165 ms for each
2,000-character URL. A URL that would take more is left undecided: it is not fetched, and fails
for now (a transient failure, as when robots.txt cannot be fetched: nothing leaves the index for
it alone). 1,000 rules of 25 characters stay within it for paths of up to 400 characters; rules
under another start (``/shop/*?sort=``) do not count for URLs outside it."""

MAX_LABEL_AGENTS = 3
"""User-agent lines a decision names (then "+N more"): a file of thousands of them for one group
would put all of them into every refusal's reason, and into the logs."""

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_UTF8_BOM = b"\xef\xbb\xbf"
# A line without a colon: exactly two words, the key and its value (the reference parser's
# "people forget the colon"); spaces and tabs only, as there.
_WITHOUT_COLON = re.compile(r"([^ \t]+)[ \t]+([^ \t]+)")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
# Characters that may never appear raw in a URL: encoded on both sides so that "/a b" and "/a%20b"
# compare equal. Non-ASCII is encoded in rules only (see the module docstring).
_UNSAFE_IN_URL = re.compile(r'[\x00-\x20"<>\\^`{|}\x7f]')
# The same set and every non-ASCII character, written as the complement of what is safe: the range
# up to U+10FFFF made re build a map of all of Unicode as the module was imported, 5-6 ms of every
# `scrapy` command's start (tests/rules/test_robots_txt.py checks the two agree).
_UNSAFE_IN_RULE = re.compile(r"[^!#-;=?-\[\]_a-z~]")
_ROBOTS_AGENT = re.compile(r"[A-Za-z_-]*")
_CRAWLER_TOKEN = re.compile(r"[^\s/;()]*")


def _percent_encode(match: re.Match[str]) -> str:
    return "".join(f"%{byte:02X}" for byte in match.group().encode("utf-8", "surrogatepass"))


def _upper_escape(match: re.Match[str]) -> str:
    return match.group().upper()


def _normalise_rule(value: str) -> str:
    """A rule's path pattern in the form URLs are compared in: %XX upper-cased, non-ASCII encoded."""
    return _UNSAFE_IN_RULE.sub(_percent_encode, _ESCAPE.sub(_upper_escape, value))


def _path_of(url: str) -> str:
    """Path, params and query of ``url`` (what rules match against), without the fragment."""
    url = url.partition("#")[0]
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced "[" in the host: such a URL is never fetched anyway
        return "/"
    path = parts.path or "/"
    if not path.startswith("/"):
        path = "/" + path
    if "?" in url:  # a bare trailing "?" is still part of what rules see
        path += "?" + parts.query
    return _UNSAFE_IN_URL.sub(_percent_encode, _ESCAPE.sub(_upper_escape, path))


def _without_bom(data: bytes) -> bytes:
    """``data`` without the UTF-8 byte-order mark it starts with, or the start of one: the
    reference parser skips each of the mark's bytes in turn for as long as they match, so
    ``\\xef\\xbbUser-agent`` is a user-agent line (decoded, the two bytes would be one U+FFFD
    glued to the key)."""
    skip = 0
    while skip < len(_UTF8_BOM) and data[skip : skip + 1] == _UTF8_BOM[skip : skip + 1]:
        skip += 1
    return data[skip:]


def _key_value(line: str) -> tuple[str, str] | None:
    """The lower-cased key and the value of a line (comment removed, stripped), or None when it
    is no ``key: value`` line: ``key value`` without a colon counts when it is exactly two words."""
    key, colon, value = line.partition(":")
    if not colon:
        match = _WITHOUT_COLON.fullmatch(line)
        if match is None:
            return None
        key, value = match.groups()
    key = key.strip().lower()
    return (key, value.strip()) if key else None


def _leading(pattern: re.Pattern[str], text: str) -> str:
    """What ``pattern``, which matches the empty string too, matches at the start of ``text``."""
    match = pattern.match(text)
    assert match is not None  # a pattern of the form [...]* always matches
    return match.group()


def product_token(user_agent: str) -> str:
    """The crawler's product token, lower-cased: ``"searchcrawl/1.0 (+https://…)"`` -> ``"searchcrawl"``.

    Give the crawler's own name (e.g. ``"searchcrawl/1.0"``), not a browser-like User-Agent
    header: for ``"Mozilla/5.0 (compatible; searchcrawl/1.0)"`` this returns ``"mozilla"``.
    Digits are kept, so ``"XYZ123bot"`` does not match a ``User-agent: XYZ123bot`` line (which
    means ``XYZ``), as in the reference parser.
    """
    return _leading(_CRAWLER_TOKEN, user_agent.strip()).lower()


def _robots_agent(value: str) -> str:
    """The token a ``user-agent`` value in robots.txt names: ``"*"`` or letters, ``_``, ``-``."""
    if value[:1] == "*" and (len(value) == 1 or value[1].isspace()):
        return "*"
    return _leading(_ROBOTS_AGENT, value).lower()


class _Rule:
    """One allow or disallow line, split once into what matching needs."""

    __slots__ = ("allow", "anchored", "last", "line", "middle", "number", "pattern", "start", "wild")

    def __init__(self, allow: bool, pattern: str, line: str, number: int) -> None:
        self.allow, self.pattern, self.line, self.number = allow, pattern, line, number
        self.anchored = pattern.endswith("$")
        body = pattern[:-1] if self.anchored else pattern
        self.wild = "*" in body
        # The literal start every matching path begins with: how rules are indexed.
        self.start, *middle, last = body.split("*") if self.wild else (body, body)
        self.middle, self.last = tuple(middle), last

    @property
    def specificity(self) -> int:
        """RFC 9309 §2.2.2: the most specific match is the one with the most octets."""
        return len(self.pattern)

    def matches(self, path: str) -> bool:
        """Glob matching by greedy leftmost search: linear time, so hostile patterns cannot hang us."""
        if not self.wild:
            return path == self.start if self.anchored else path.startswith(self.start)
        if not path.startswith(self.start):
            return False
        pos = len(self.start)
        for part in self.middle:
            pos = path.find(part, pos)
            if pos < 0:
                return False
            pos += len(part)
        if self.anchored:
            return len(path) - len(self.last) >= pos and path.endswith(self.last)
        return path.find(self.last, pos) >= 0

    def beats(self, other: _Rule | None) -> bool:
        """The longest pattern wins; on equal length allow wins; then the earlier line."""
        if other is None:
            return True
        mine, theirs = self.specificity, other.specificity
        if mine != theirs:
            return mine > theirs
        if self.allow != other.allow:
            return self.allow
        return self.number < other.number


class _RuleIndex:
    """The rules of the groups that apply to one crawler, without repeats, by their literal start.

    A path can only match the rules whose literal start (up to the first ``*``) it begins with,
    so a URL is matched against those alone: a robots.txt of thousands of plain rules costs a
    few dictionary lookups per URL. Rules with a ``*`` after their start cost a scan of the path
    each; more than MAX_WILDCARD_WORK of it for one URL and the URL is left undecided."""

    def __init__(self, groups: list[_Group]) -> None:
        agents = [line for g in groups for line in g.agent_lines]
        more = len(agents) - MAX_LABEL_AGENTS
        self.label = "; ".join(agents[:MAX_LABEL_AGENTS]) + (f" (+{more} more)" if more > 0 else "")
        unique: dict[tuple[str, bool], _Rule] = {}
        for group in groups:
            for rule in group.rules:
                unique.setdefault((rule.pattern, rule.allow), rule)
        self._by_start: dict[str, list[_Rule]] = {}
        self._wild: dict[str, int] = {}  # characters of the rules with a "*" after the start, per start
        for rule in unique.values():
            self._by_start.setdefault(rule.start, []).append(rule)
            self._wild[rule.start] = self._wild.get(rule.start, 0) + (len(rule.pattern) if rule.wild else 0)
        self._lengths = sorted({len(start) for start in self._by_start})

    def candidates(self, path: str) -> tuple[list[list[_Rule]], int]:
        """The rule lists whose start ``path`` begins with, and the characters of their wild rules."""
        found, wild = [], 0
        for length in self._lengths:
            if length > len(path):
                break
            start = path[:length]
            if start in self._by_start:
                found.append(self._by_start[start])
                wild += self._wild[start]
        return found, wild


@dataclass
class _Group:
    agent_lines: list[str] = field(default_factory=list)
    agents: set[str] = field(default_factory=set)  # lower-cased tokens, "*" for the global group
    rules: list[_Rule] = field(default_factory=list)
    crawl_delays: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class RobotsDecision:
    """One decision and why: for logs and ``scrapy explain``."""

    allowed: bool
    group: str | None  # e.g. "User-agent: searchcrawl"; None if no group applied
    line: str | None  # e.g. "line 7: Disallow: /private/"; None if no rule matched
    undecided: bool = False  # too costly to decide (MAX_WILDCARD_WORK): not allowed, but no rule either


def _within_limit(data: bytes) -> bytes:
    """The first MAX_ROBOTS_BYTES of a robots.txt, without the line cut in two ("Allow:
    /private/page" cut to "Allow: /p" allows too much)."""
    if len(data) <= MAX_ROBOTS_BYTES:
        return data
    cut = data[:MAX_ROBOTS_BYTES]
    if data[MAX_ROBOTS_BYTES : MAX_ROBOTS_BYTES + 1] not in (b"\r", b"\n"):
        cut = cut[: max(cut.rfind(b"\n"), cut.rfind(b"\r")) + 1]
    return cut


def _crawl_delay(value: str) -> float | None:
    """A Crawl-delay line's seconds; None for what is no finite, non-negative number."""
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if math.isfinite(delay) and delay >= 0 else None


class RobotsTxt:
    """A parsed robots.txt, or a blanket verdict when none could be used (see robots_for_response)."""

    def __init__(
        self,
        groups: list[_Group] | None = None,
        sitemaps: list[str] | None = None,
        *,
        verdict: RobotsDecision | None = None,
        size: int = 0,
    ) -> None:
        self._groups = groups or []
        self.size = size  # bytes parsed: what its memory grows with (up to some 27 times as much)
        self._sitemaps = sitemaps or []
        self._verdict = verdict
        self._selected: dict[str, _RuleIndex] = {}  # by product token

    # Constructors -------------------------------------------------------------------------------

    @classmethod
    def allow_all(cls, reason: str = "no robots.txt: no restrictions") -> RobotsTxt:
        return cls(verdict=RobotsDecision(True, None, reason))

    @classmethod
    def disallow_all(cls, reason: str) -> RobotsTxt:
        return cls(verdict=RobotsDecision(False, None, reason))

    @classmethod
    def parse(cls, robots_txt: str | bytes) -> RobotsTxt:
        """Parse the first MAX_ROBOTS_BYTES of a robots.txt (UTF-8; invalid bytes replaced)."""
        data = _within_limit(robots_txt.encode("utf-8", "surrogatepass") if isinstance(robots_txt, str) else robots_txt)
        text = _without_bom(data).decode("utf-8", "replace")

        groups: list[_Group] = []
        sitemaps: list[str] = []
        seen_sitemaps: set[str] = set()  # a list's "in" made 40,000 Sitemap lines cost 15 s
        group: _Group | None = None
        in_agent_lines = False  # a user-agent line joins the current group until a rule is seen
        for number, raw in enumerate(_LINE_BREAK.split(text), start=1):
            line = raw.partition("#")[0].strip()
            key_value = _key_value(line)
            if key_value is None:
                continue
            key, value = key_value
            if key == "user-agent":
                if group is None or not in_agent_lines:  # (in_agent_lines: a group is open)
                    group = _Group()
                    groups.append(group)
                    in_agent_lines = True
                group.agent_lines.append(line)
                if agent := _robots_agent(value):
                    group.agents.add(agent)
            elif key in ("allow", "disallow"):
                if group is None:
                    continue  # rules before any user-agent line belong to no group
                in_agent_lines = False
                if value:  # "Disallow:" with nothing means nothing is disallowed
                    rule = _Rule(key == "allow", _normalise_rule(value), f"line {number}: {line}", number)
                    group.rules.append(rule)
            elif key == "crawl-delay":
                # Like the reference parser, this does not end the user-agent lines of a group.
                if group is not None and (delay := _crawl_delay(value)) is not None:
                    group.crawl_delays.append(delay)
            elif key == "sitemap" and value and value not in seen_sitemaps:
                seen_sitemaps.add(value)
                sitemaps.append(value)
        return cls(groups, sitemaps, size=len(data))

    # Queries ------------------------------------------------------------------------------------

    def _groups_for(self, user_agent: str) -> list[_Group]:
        """RFC 9309 §2.2.1: every group naming our token (merged), else every ``*`` group."""
        token = product_token(user_agent)
        own = [g for g in self._groups if token and token != "*" and token in g.agents]
        return own or [g for g in self._groups if "*" in g.agents]

    def _rules_for(self, user_agent: str) -> _RuleIndex:
        token = product_token(user_agent)
        if token not in self._selected:
            self._selected[token] = _RuleIndex(self._groups_for(user_agent))
        return self._selected[token]

    def decide(self, user_agent: str, url: str) -> RobotsDecision:
        """Allowed or not, with the group and the rule line that decided."""
        if self._verdict is not None:
            return self._verdict
        rules = self._rules_for(user_agent)
        if not rules.label:
            return RobotsDecision(True, None, None)
        path = _path_of(url)
        lists, wild = rules.candidates(path)
        if wild * len(path) > MAX_WILDCARD_WORK:
            return RobotsDecision(
                False,
                rules.label,
                f"its rules with '*' that apply to this URL ({wild} characters, for a path of {len(path)}) are too "
                f"costly to match (more than {MAX_WILDCARD_WORK:,} character comparisons): not fetched for now",
                undecided=True,
            )
        best: _Rule | None = None
        for candidates in lists:
            for rule in candidates:
                if rule.matches(path) and rule.beats(best):
                    best = rule
        if best is None:
            return RobotsDecision(True, rules.label, None)
        return RobotsDecision(best.allow, rules.label, best.line)

    def crawl_delay(self, user_agent: str) -> float | None:
        """Seconds between requests asked of us (not part of RFC 9309); the largest if several."""
        if self._verdict is not None:
            return None
        delays = [d for g in self._groups_for(user_agent) for d in g.crawl_delays]
        return max(delays) if delays else None

    def sitemaps(self) -> list[str]:
        """``Sitemap:`` URLs in file order (they belong to no group)."""
        return list(self._sitemaps)


def is_allowed(robots_txt: str | bytes, user_agent: str, url: str) -> bool:
    """The one decision function the crawler uses (parse once and use RobotsTxt.decide for many URLs)."""
    return RobotsTxt.parse(robots_txt).decide(user_agent, url).allowed


def robots_unreachable(status: int | None) -> bool:
    """Is a robots.txt that answered ``status`` (None: no answer) unavailable for now? Then its
    site's URLs fail transiently (status 935): a failure that may pass, not a rule."""
    return status is None or status >= 500 or status == 429


def robots_for_response(status: int | None, body: bytes | None) -> RobotsTxt:
    """The rules to obey after fetching /robots.txt (RFC 9309 §2.3.1).

    ``status`` is the final status after the caller followed redirects (up to 5), or None when the
    server was unreachable (DNS failure, connection refused, timeout).

    * 2xx: the body's rules.
    * 4xx ("unavailable"): no restrictions, except 429, which asks us to come back later and so is
      treated like 5xx (as Google does).
    * 5xx, 429, unreachable, and anything else (an unfollowed 3xx, 1xx): the whole site is
      disallowed for now; the caller retries later.
    """
    if status is None:
        return RobotsTxt.disallow_all("robots.txt unreachable: the whole site is disallowed for now")
    if 200 <= status < 300:
        return RobotsTxt.parse(body or b"")
    if 400 <= status < 500 and status != 429:
        return RobotsTxt.allow_all(f"robots.txt answered {status}: no restrictions")
    if 300 <= status < 400:
        return RobotsTxt.disallow_all(
            f"robots.txt answered {status} (redirect not followed): the whole site is disallowed for now"
        )
    return RobotsTxt.disallow_all(f"robots.txt answered {status}: the whole site is disallowed for now")
