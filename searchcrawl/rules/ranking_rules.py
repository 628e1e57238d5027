"""Relevance administration's rules, without HTTP: best bets, boosts and demotions, synonyms and
stopwords, validated and matched against a query: plain types and functions that the store keeps
and the search applies (their Solr parameters are searchcrawl/search/relevance_params.py's).

The rules are set on the web application's relevance page (/admin/relevance), kept in the
project's database (searchcrawl/store/relevance_rules.py) and applied at query time, as an
administrator of Fess or SharePoint search expects:

* **Best bets** (Fess's "key match", SharePoint's "promoted results"): one or more queries ->
  one or more URLs, pinned above the hits on a search's first page and marked "Best bet". A bet
  matches when the searcher's WHOLE query, normalised (``normal_query``: case-folded, runs of
  whitespace one space), is one of its queries: a bet on "holiday form" is not shown for
  "holiday" nor for "holiday form 2024" (a bet on a single common word would otherwise follow
  every query holding it). The pinned documents are asked of Solr in a request of their own,
  under the searcher's trimming (search/trimmed_index.py adds it to every request): a document the
  searcher may not read is not shown, nor hinted at (a bet without a readable document shows
  nothing at all). Solr's QueryElevationComponent was not used: elevated documents are exempt
  from the collapse on url and from filters that are not tagged, and one mistake in its setup
  would show a hidden document; a plain filtered request cannot. A document shown as a best bet
  is not repeated among the hits below it on that page (the count of matches is Solr's, as is).
  A bet may be scheduled: shown from a start until an end (``parse_when``, UTC; an end date
  alone means through that day), decided at each search (``Rules.pinned``'s ``now``), so the
  cached rules never keep a bet past its end. A bet is edited in place (same id).
* **Boosts and demotions**: a rule matches documents by URL prefix or URL pattern (``*`` and
  ``?`` wildcards; the ``url`` field), source, type (``mimetype``) or age (``last_modified``),
  and multiplies their score by its factor (>1 boosts, <1 demotes). Rules become edismax
  ``boost`` parameters (multiplied together), each a function built from a validated factor
  and a query parameter of its own holding the administrator's value after ``{!prefix f=url}``
  or ``{!term f=...}`` (taken literally), or a pattern's every character but letters, digits and
  the wildcards escaped (search/relevance_params.py ``wildcard_term``): nothing typed on the
  page becomes query syntax. An age rule's factor is given to the newest documents and fades
  with age (half of it at the half-life given, in days: ``1 + (factor - 1) / (1 + age /
  half-life)``); a document without a date gets none of it. The web search page, its "why is this hit here" page and `scrapy search`
  all apply them (one rule, one implementation); `scrapy search` prints the best bets too.
* **Synonyms and stopwords**: kept in Solr's managed resources (searchcrawl/index/managed.py),
  applied at query time only (so a change needs no reindex); a synonym line is a set of
  equivalent words or phrases ("car, automobile, motor vehicle"), each finding the others.

Every field is bounded and checked here (``RelevanceError`` says what is wrong). The search page
reads the rules through ``RuleCache``: reloaded when this process changes them, and at most
``ttl`` seconds stale for changes made by another process; a database that cannot be read (or
hangs) leaves the rules last read (none at first) and the search goes on, logged once until it
reads again. Access never fails open: best bets are trimmed like every search.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from urllib.parse import urlsplit

from searchcrawl.system.translations import N_, number
from searchcrawl.system.translations import gettext as _

logger = logging.getLogger(__name__)

MAX_QUERIES = 20  # queries of one best bet
MAX_QUERY_CHARS = 200
MAX_URLS = 10  # documents one best bet pins
MAX_URL_CHARS = 2000
MAX_PINNED = 10  # best-bet documents shown above a page's hits (several bets may match)
BOOST_KINDS = {  # what a rule matches, as the relevance page says it (translated where shown)
    "url": N_("URL starts with"),
    "glob": N_("URL matches (* and ? wildcards)"),
    "source": N_("Source is"),
    "type": N_("Type (MIME type) is"),
    "age": N_("Newer first (half-life in days)"),
}
MAX_WILDCARDS = 4  # * and ? of one URL pattern together (see parse_boost)
MIN_FACTOR, MAX_FACTOR = 0.01, 100.0
MAX_VALUE_CHARS = 500
MAX_HALF_LIFE_DAYS = 36500
MAX_TERMS = 20  # words or phrases of one synonym set
MAX_TERM_CHARS = 100
# a synonym or stopword: letters and digits, with spaces, hyphens, apostrophes and dots between
# (what a searcher's query holds as words); no slash or percent sign, which Solr's REST API path
# of a managed entry could not carry
TERM = re.compile(r"[^\W_](?:[\w' .\-]*[^\W_])?")
# the schemes a hit's or a best bet's link may have (never javascript: nor data:): the one list
# of the search page's links (search/results.py display_url) and of /click's redirects (analytics.py);
# imap: a message's RFC 5092 URL, which mail clients open (agents/imap.py)
URL_SCHEMES = ("http", "https", "file", "ftp", "imap")
# C0 control characters and DEL: none is anything a searcher means (and PostgreSQL refuses NUL)
CONTROLS = dict.fromkeys([*range(32), 127], " ")
# a best bet's start and end as typed (parse_when): a date, or a date and a time (and an offset)
MAX_WHEN_CHARS = 40
FIRST_YEAR, LAST_YEAR = 1970, 9998  # a start or end outside these years is refused
DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")
DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[+-]\d{2}:\d{2})?")
UTC_SUFFIX = re.compile(r"\s*(?:UTC|Z)\Z", re.IGNORECASE)


class RelevanceError(ValueError):
    """A rule the administrator gave is not valid: the message says why, in words for them (in the
    language of the page they sent it from; English outside a request)."""


def printable(text: str) -> str:
    """``text`` with its control characters (C0 and DEL) as spaces."""
    return text.translate(CONTROLS)


def normal_query(text: str) -> str:
    """A query as best bets match it and query analytics groups it (store/searches.py's
    ``normalize``): case-folded, runs of whitespace and control characters one space, trimmed."""
    return " ".join(printable(text).casefold().split())


@dataclass(frozen=True)
class BestBet:
    """Queries -> URLs, shown from ``start`` (None: at once) until ``end`` (None: for ever;
    excluded: the first moment it is no longer shown), both timezone-aware UTC."""

    queries: tuple[str, ...]
    urls: tuple[str, ...]
    id: int = 0
    start: datetime | None = None
    end: datetime | None = None

    def state(self, now: datetime) -> str:
        """The bet's state at ``now``: scheduled (before its start), expired (from its end on) or
        active."""
        if self.start is not None and now < self.start:
            return "scheduled"
        if self.end is not None and now >= self.end:
            return "expired"
        return "active"

    @property
    def start_text(self) -> str:
        return format_start(self.start)

    @property
    def end_text(self) -> str:
        return format_end(self.end)


@dataclass(frozen=True)
class Boost:
    kind: str  # a key of BOOST_KINDS
    value: str  # a URL prefix, a source, a MIME type, or the half-life in days
    factor: float
    id: int = 0

    @property
    def label(self) -> str:
        return BOOST_KINDS[self.kind]


@dataclass(frozen=True)
class Rules:
    """The rules a search applies (the synonyms and stopwords are Solr's, not here)."""

    bets: tuple[BestBet, ...] = ()
    boosts: tuple[Boost, ...] = ()

    def pinned(self, query: str, now: datetime | None = None) -> list[str]:
        """The URLs pinned for ``query`` (``normal_query`` equal to a bet's query) by the bets
        active ``now`` (the time of the call by default: decided at each search, so rules cached
        by ``RuleCache`` never keep a bet past its end), in the bets' order, each once, at most
        MAX_PINNED."""
        wanted = normal_query(query)
        urls: list[str] = []
        if not wanted:
            return urls
        if now is None:
            now = datetime.now(UTC)
        for bet in self.bets:
            if wanted in bet.queries and bet.state(now) == "active":
                urls.extend(url for url in bet.urls if url not in urls)
        return urls[:MAX_PINNED]


# --- validation -------------------------------------------------------------------------------------


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.replace("\r", "\n").split("\n") if line.strip()]


def parse_when(text: str, end: bool = False) -> datetime | None:
    """A start or end from the relevance page's form, in UTC: empty (None), a date
    (``2026-12-01``: from that day's start; as an end, through that day: until the next day's
    start) or a date and time (``2026-12-01 09:30``, ``T`` between them too, seconds allowed; an
    offset such as ``+02:00`` is converted to UTC, none means UTC)."""
    text = UTC_SUFFIX.sub("", text.strip())
    if not text:
        return None
    try:
        if len(text) > MAX_WHEN_CHARS:
            raise ValueError(text)
        if DATE_ONLY.fullmatch(text):
            day = date.fromisoformat(text)
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
            year = day.year
            moment = moment + timedelta(days=1) if end and FIRST_YEAR <= year <= LAST_YEAR else moment
        elif DATE_TIME.fullmatch(text):
            moment = datetime.fromisoformat(text.replace(" ", "T", 1))
            moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
            year = moment.year
        else:
            raise ValueError(text)
        if not FIRST_YEAR <= year <= LAST_YEAR:  # the form gives back four digits, and no overflow
            raise ValueError(text)
    except (ValueError, OverflowError):
        if end:
            message = N_(
                "The end is a date (2026-12-01) or a date and time (2026-12-01 09:30), in UTC, "
                "between %(first)s and %(last)s, or left empty."
            )
        else:
            message = N_(
                "The start is a date (2026-12-01) or a date and time (2026-12-01 09:30), in UTC, "
                "between %(first)s and %(last)s, or left empty."
            )
        raise RelevanceError(_(message, first=FIRST_YEAR, last=LAST_YEAR)) from None  # years: never grouped
    return moment


def format_start(moment: datetime | None) -> str:
    """A start as the form takes it back (``parse_when``): a date alone at midnight UTC."""
    if moment is None:
        return ""
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d") if _midnight(moment) else _minutes(moment)


def format_end(moment: datetime | None) -> str:
    """An end as the form takes it back: an end at midnight UTC is the day before's date (shown
    through that day), so what was typed comes back as it was."""
    if moment is None:
        return ""
    moment = moment.astimezone(UTC)
    if _midnight(moment) and moment.date() > date.min:
        return (moment - timedelta(days=1)).strftime("%Y-%m-%d")
    return _minutes(moment)


def _midnight(moment: datetime) -> bool:
    return not (moment.hour or moment.minute or moment.second or moment.microsecond)


def _minutes(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S").removesuffix(":00")


def parse_bet(queries: str, urls: str, start: str = "", end: str = "") -> BestBet:
    """A best bet from the relevance page's form: queries and URLs one a line, an optional start
    and end (``parse_when``; an end not after the start is refused)."""
    found: list[str] = []
    for line in _lines(queries):
        query = normal_query(line)
        if len(query) > MAX_QUERY_CHARS:
            raise RelevanceError(_("A query of a best bet is longer than %(chars)s characters.", chars=number(MAX_QUERY_CHARS)))
        if query not in found:
            found.append(query)
    if not found or len(found) > MAX_QUERIES:
        raise RelevanceError(_("Give from 1 to %(most)s queries, one a line.", most=number(MAX_QUERIES)))
    pinned: list[str] = []
    for url in _lines(urls):
        if len(url) > MAX_URL_CHARS or any(ord(char) < 33 or ord(char) == 127 for char in url):
            raise RelevanceError(
                _("A URL is longer than %(chars)s characters or holds spaces or control characters.", chars=number(MAX_URL_CHARS))
            )
        try:
            scheme = urlsplit(url).scheme.lower()
        except ValueError:
            scheme = ""
        if scheme not in URL_SCHEMES:
            raise RelevanceError(_("Give absolute URLs (http://, https://, ftp:// or file:), one a line."))
        if url not in pinned:
            pinned.append(url)
    if not pinned or len(pinned) > MAX_URLS:
        raise RelevanceError(_("Give from 1 to %(most)s URLs, one a line.", most=number(MAX_URLS)))
    starts, ends = parse_when(start), parse_when(end, end=True)
    if starts is not None and ends is not None and ends <= starts:
        raise RelevanceError(_("The end is before the start: the best bet would never be shown."))
    return BestBet(tuple(found), tuple(pinned), start=starts, end=ends)


def parse_factor(text: str) -> float:
    try:
        factor = float(text.strip())
    except ValueError:
        factor = math.nan
    if not math.isfinite(factor) or not MIN_FACTOR <= factor <= MAX_FACTOR or factor == 1:
        least, most = f"{MIN_FACTOR:g}", f"{MAX_FACTOR:g}"  # as the field takes them: not the page's number format
        raise RelevanceError(
            _("The factor is a number from %(least)s to %(most)s, not 1 (>1 boosts, <1 demotes).", least=least, most=most)
        )
    return round(factor, 4)


def parse_boost(kind: str, value: str, factor: str) -> Boost:
    """A boost or demotion from the relevance page's form."""
    if kind not in BOOST_KINDS:
        raise RelevanceError(_("Choose what the rule matches."))
    value = value.strip()
    if kind == "age":
        if not value.isascii() or not value.isdigit() or not 1 <= int(value) <= MAX_HALF_LIFE_DAYS:
            raise RelevanceError(
                _("The half-life is a whole number of days from 1 to %(most)s.", most=MAX_HALF_LIFE_DAYS)  # as typed: no grouping
            )
        value = str(int(value))
    elif not value or len(value) > MAX_VALUE_CHARS or any(ord(char) < 32 or ord(char) == 127 for char in value):
        raise RelevanceError(
            _(
                "Give the value the rule matches (at most %(chars)s characters, no control characters).",
                chars=number(MAX_VALUE_CHARS),
            )
        )
    elif kind == "glob" and sum(value.count(char) for char in "*?") > MAX_WILDCARDS:
        raise RelevanceError(_("A URL pattern holds at most %(most)s wildcards (* and ? together).", most=number(MAX_WILDCARDS)))
    return Boost(kind, value, parse_factor(factor))


def parse_term(text: str) -> str:
    term = " ".join(text.casefold().split())
    if len(term) > MAX_TERM_CHARS or not TERM.fullmatch(term):
        raise RelevanceError(
            _(
                "%(given)s is not a word or phrase (letters and digits, with spaces, hyphens, apostrophes or dots between;"
                " at most %(chars)s characters).",
                given=repr(text.strip()[:MAX_TERM_CHARS]),
                chars=number(MAX_TERM_CHARS),
            )
        )
    return term


def parse_synonyms(text: str) -> tuple[str, ...]:
    """A set of equivalent words or phrases, comma-separated (or one a line)."""
    terms: list[str] = []
    for part in re.split(r"[,\n]", text):
        if part.strip():
            term = parse_term(part)
            if term not in terms:
                terms.append(term)
    if not 2 <= len(terms) <= MAX_TERMS:
        raise RelevanceError(_("Give from 2 to %(most)s different words or phrases, comma-separated.", most=number(MAX_TERMS)))
    return tuple(terms)


def parse_stopword(text: str) -> str:
    word = parse_term(text)
    if " " in word:
        raise RelevanceError(_("A stopword is one word."))
    return word


def synonym_map(sets: Iterable[Iterable[str]]) -> dict[str, list[str]]:
    """Solr's managed synonym map of equivalence sets: each term to every term of each set it is
    in (itself too, so it still finds itself), sorted."""
    mapping: dict[str, set[str]] = {}
    for terms in sets:
        group = set(terms)
        for term in group:
            mapping.setdefault(term, set()).update(group)
    return {term: sorted(found) for term, found in sorted(mapping.items())}


# --- the relevance page's forms ---------------------------------------------------------------------

BET_FIELDS = ("key", "queries", "urls", "start", "end")
BOOST_FIELDS = ("key", "kind", "value", "factor")


def edit_form(rule: BestBet | Boost) -> dict[str, str]:
    """The form that edits ``rule`` in place, filled with it as ``parse_bet`` or ``parse_boost``
    takes it back (saved unchanged, it stays the same rule)."""
    if isinstance(rule, BestBet):
        return {
            "action": "edit-bet",
            "key": str(rule.id),
            "queries": "\n".join(rule.queries),
            "urls": "\n".join(rule.urls),
            "start": rule.start_text,
            "end": rule.end_text,
        }
    return {"action": "edit-boost", "key": str(rule.id), "kind": rule.kind, "value": rule.value, "factor": f"{rule.factor:g}"}


def rule_forms(values: dict[str, str]) -> dict[str, dict[str, str]]:
    """The best-bet and the boost forms of the page: empty forms to add a rule, but the one that
    ``values`` fill (a rule to edit, or a form the administrator sent that was refused: nothing
    they typed is lost)."""
    action = values.get("action", "")
    bet = {"action": "add-bet"}
    boost = {"action": "add-boost"}
    if action in ("add-bet", "edit-bet"):
        bet = {"action": action} | {name: values.get(name, "") for name in BET_FIELDS}
    elif action in ("add-boost", "edit-boost"):
        boost = {"action": action} | {name: values.get(name, "") for name in BOOST_FIELDS}
    return {"bet_form": bet, "boost_form": boost}


# --- the search page's view of the rules ------------------------------------------------------------


@dataclass
class RuleCache:
    """The rules as ``load`` reads them, read again after ``ttl`` seconds or ``changed()``. A
    failed read keeps the rules last read (none at first): relevance fails open, the search goes
    on (access never depends on it). Reads run in a thread of their own, one at a time: the
    search that starts one waits for it at most ``wait`` seconds, the others meanwhile use the
    rules there are, so a database that hangs delays one search a ``ttl`` by ``wait`` at most.
    Each ``changed()`` starts a new generation: a read started before it may hold the rules of
    before the change, so it never marks the cache fresh (nor overwrites rules read after it),
    and the next search reads again (one read of each generation at a time)."""

    load: Callable[[], Rules]
    ttl: float = 30
    clock: Callable[[], float] = time.monotonic
    wait: float = 2
    rules: Rules = field(default_factory=Rules)
    _read_at: float | None = field(default=None, init=False)
    _reading: threading.Thread | None = field(default=None, init=False)
    _reading_generation: int = field(default=0, init=False)
    _generation: int = field(default=0, init=False)  # changes made by this process
    _rules_generation: int = field(default=-1, init=False)  # of the read that gave self.rules
    _failing: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def _fresh(self) -> bool:
        return self._read_at is not None and self.clock() - self._read_at < self.ttl

    def get(self) -> Rules:
        if self._fresh():
            return self.rules
        with self._lock:
            reading = self._reading
            if self._fresh() or (reading is not None and reading.is_alive() and self._reading_generation == self._generation):
                return self.rules  # read meanwhile, or being read by another search
            generation = self._reading_generation = self._generation
            reading = self._reading = threading.Thread(
                target=self._reload, args=(generation,), name="relevance-rules", daemon=True
            )
            reading.start()
        reading.join(self.wait)
        if reading.is_alive():
            with self._lock:
                if generation == self._generation:
                    self._read_at = self.clock()  # not waited for again before ttl
                if not self._failing:
                    logger.warning("Relevance rules: the database is slow to answer; searches go on without waiting")
                self._failing = True
        return self.rules

    def _reload(self, generation: int) -> None:
        try:
            rules = self.load()
        except Exception as exc:  # noqa: BLE001 - any failure of the database: search goes on
            with self._lock:
                if not self._failing:
                    logger.warning("Relevance rules cannot be read (searches go on without changes): %s", type(exc).__name__)
                self._failing = True
                if generation == self._generation:
                    self._read_at = self.clock()
            return
        with self._lock:
            if generation >= self._rules_generation:  # never rules read earlier over rules read after a change
                self.rules, self._rules_generation = rules, generation
            if self._failing:
                logger.info("Relevance rules can be read again")
            self._failing = False
            if generation == self._generation:  # else a change came meanwhile: read again at the next search
                self._read_at = self.clock()

    def changed(self) -> None:
        """This process changed the rules: the next search reads them again (a read already
        under way may have read them before the change: it does not count)."""
        with self._lock:
            self._generation += 1
            self._read_at = None
