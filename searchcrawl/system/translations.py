"""The interface's languages (issue 79): the web pages' words through gettext catalogues, and their
numbers and dates by the language's locale (Babel's CLDR data).

One language is current at a time, per request: the web application's middleware chooses it
(``negotiate``: the searcher's choice, else the browser's Accept-Language, else English) and sets it
for the request's task (a ContextVar: the views' threads inherit it); the templates and the Python
code that words a page (a flash message, an error, a status code's description) both call
``gettext`` here. Outside a request the current language is English, so the command line, logs,
reports, mail and the JSON API read as they always did.

The rule for every message, in Python and in the templates alike (Jinja's "newstyle" gettext):
a message is %-formatted with its named variables, always, so a literal per cent sign is written
``%%``. The English text is the message id; a message not translated shows in English, never blank.

The catalogues are the ``.po`` files under ``locales/`` (package data): read and compiled in memory
once a process, so no compiled ``.mo`` file is kept in the tree or built at install. A fuzzy entry
is not used. ``python -m searchcrawl.dev.message_catalogues`` brings them up to date with the code.
"""

from __future__ import annotations

import gettext as gettext_module
import importlib.resources
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, Literal

# Babel (17 modules, 15-20 ms) is imported where a language is first needed, not with this module:
# a crawl marks messages (N_) and never shows one, and its start is what issue 74 measures
if TYPE_CHECKING:
    from babel import Locale

# The interface's languages, each by its own name (as a searcher looks for it in a list)
LANGUAGES: dict[str, str] = {"en": "English", "de": "Deutsch", "ja": "日本語"}
ENGLISH = "en"  # the messages' own language: no catalogue
DOMAIN = "messages"
CATALOGUE_PACKAGE = "searchcrawl.system"
# Accept-Language as a browser sends it is short: a longer one is read this far, never parsed whole
ACCEPT_LANGUAGE_CHARS = 1000
ACCEPT_LANGUAGE_RANGES = 32


@dataclass(frozen=True)
class Language:
    """A language of the interface: its code, its locale (numbers, dates) and its translations."""

    code: str
    locale: Locale
    translations: gettext_module.NullTranslations

    @property
    def name(self) -> str:
        return LANGUAGES[self.code]


def catalogue_path(code: str) -> str:
    """The catalogue of ``code`` inside the package (locales/<code>/LC_MESSAGES/messages.po)."""
    return f"locales/{code}/LC_MESSAGES/{DOMAIN}.po"


@cache
def catalogue(code: str) -> gettext_module.NullTranslations:
    """The translations of ``code`` (one of LANGUAGES), its catalogue read and compiled once a process."""
    if code not in LANGUAGES:
        raise KeyError(f"no interface language {code!r}: one of {', '.join(LANGUAGES)}")
    if code == ENGLISH:
        return gettext_module.NullTranslations()
    from babel.messages.mofile import write_mo  # noqa: PLC0415 - see the imports
    from babel.messages.pofile import read_po  # noqa: PLC0415
    from babel.support import Translations  # noqa: PLC0415

    source = importlib.resources.files(CATALOGUE_PACKAGE).joinpath(catalogue_path(code)).read_bytes()
    compiled = io.BytesIO()
    write_mo(compiled, read_po(io.BytesIO(source), locale=code, domain=DOMAIN), use_fuzzy=False)
    compiled.seek(0)
    return Translations(compiled, domain=DOMAIN)


@cache
def known_locales() -> dict[str, str]:
    """CLDR's locale identifiers (``de_CH``), by their lower-case form with ``_``: a tag from a
    request is looked up here before Babel parses it, so no tag CLDR lacks reaches Babel (whose
    ``localedata.exists`` remembers every identifier it is asked, without bound)."""
    from babel import localedata  # noqa: PLC0415 - see the imports

    return {identifier.lower(): identifier for identifier in localedata.locale_identifiers()}


def known_locale(tag: str) -> Locale | None:
    """The CLDR locale of a language tag (``de-CH``, ``ja``), or None when CLDR has none."""
    from babel import Locale  # noqa: PLC0415 - see the imports

    identifier = known_locales().get(tag.replace("-", "_").lower())
    return Locale.parse(identifier) if identifier is not None else None


@lru_cache(maxsize=256)
def language(tag: str) -> Language:
    """The language of ``tag``: ``de`` or a regional one, ``de-CH``, whose numbers and dates are the
    region's (1'234.5) and whose words are its language's. A region CLDR does not know is the
    language's own."""
    from babel import Locale  # noqa: PLC0415 - see the imports

    code = tag.split("-")[0].lower()
    translations = catalogue(code)
    locale = known_locale(tag)
    if locale is None or locale.language != code:
        locale = Locale.parse(code)
    return Language(code, locale, translations)


_CURRENT: ContextVar[Language | None] = ContextVar("searchcrawl_language", default=None)


def current() -> Language:
    """The language of the page being made (English outside a request)."""
    return _CURRENT.get() or language(ENGLISH)


@contextmanager
def speaking(tag: str) -> Iterator[Language]:
    """``tag`` the current language for the ``with`` block (and the threads it starts with its context)."""
    chosen = language(tag)
    token = _CURRENT.set(chosen)
    try:
        yield chosen
    finally:
        _CURRENT.reset(token)


def accepted(header: str | None) -> list[str]:
    """The language ranges of an Accept-Language header, most wanted first (q=0 ones dropped; a
    malformed weight counts as 0). Read within bounds: the header comes from anyone."""
    ranges: list[tuple[float, int, str]] = []
    for position, item in enumerate((header or "")[:ACCEPT_LANGUAGE_CHARS].split(",")[:ACCEPT_LANGUAGE_RANGES]):
        tag, _, parameters = item.strip().partition(";")
        tag = tag.strip()
        weight = 1.0
        for parameter in parameters.split(";"):
            name, _, value = parameter.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        if 0 < weight <= 1 and all(0 < len(part) <= 8 and part.isascii() and part.isalnum() for part in tag.split("-")):
            ranges.append((-weight, position, tag))
    return [tag for _, _, tag in sorted(ranges)]


def negotiate(choice: str | None, accept_language: str | None) -> str:
    """The language of a page (a tag for ``language``): the searcher's ``choice`` when it is one of
    LANGUAGES, else the first of the browser's ranges that one of them serves (``de-AT`` is served by
    ``de``, with Austria's numbers and dates), else English. The browser's region is kept for the
    chosen language when the browser asks for that language in a region (``en-GB``, then ``de``)."""
    ranges = accepted(accept_language)
    if choice not in LANGUAGES:
        choice = next((tag.split("-")[0].lower() for tag in ranges if tag.split("-")[0].lower() in LANGUAGES), ENGLISH)
    regional = next(
        (tag for tag in ranges if tag.split("-")[0].lower() == choice and "-" in tag and known_locale(tag) is not None), None
    )
    return regional or choice  # a tag CLDR knows, or a language's code: a bounded set


def translated(message: str) -> str:
    """``message`` in the current language, unformatted (for Jinja's newstyle gettext, which formats)."""
    return current().translations.gettext(message)


def translated_plural(singular: str, plural: str, num: int) -> str:
    """The singular or plural of a message for ``num`` in the current language, unformatted."""
    return current().translations.ngettext(singular, plural, num)


def translated_in_context(context: str, message: str) -> str:
    """``message`` as meant in ``context`` (a word with two senses: "title" as a kind of suggestion),
    in the current language, unformatted."""
    return current().translations.pgettext(context, message)


def gettext(message: str, **variables: Any) -> str:
    """``message`` in the current language, formatted with ``variables`` (always: ``%%`` is a per cent sign)."""
    return translated(message) % variables


def ngettext(singular: str, plural: str, num: int, **variables: Any) -> str:
    """The singular or plural of a message for ``num`` in the current language; ``%(num)s`` is ``num``
    (formatted by the caller when given as a variable of its own, e.g. ``count=number(num)``)."""
    return translated_plural(singular, plural, num) % {"num": num, **variables}


def N_(message: str) -> str:  # noqa: N802 - the name gettext's tools look for
    """Marks a message for the catalogues where it is defined (a constant); ``gettext`` words it where shown."""
    return message


def number(value: float, digits: int | None = None) -> str:
    """``value`` as the current language writes numbers (its grouping and decimal signs); with ``digits``,
    that many after the decimal sign."""
    from babel import numbers  # noqa: PLC0415 - see the imports

    pattern = None if digits is None else "#,##0" + ("." + "0" * digits if digits else "")
    return numbers.format_decimal(value, format=pattern, locale=current().locale)


def percent(fraction: float, digits: int = 0) -> str:
    """``fraction`` (0.25) as a percentage in the current language (25 %, 25%: its own pattern), with
    ``digits`` after the decimal sign."""
    from babel import numbers  # noqa: PLC0415 - see the imports

    locale = current().locale
    pattern = locale.percent_formats[None].pattern
    if digits:
        pattern = re.sub(r"0(?=[^0#]*%)", "0." + "0" * digits, pattern.split(";")[0], count=1)
    return numbers.format_percent(fraction, format=pattern, locale=locale)


def moment(value: datetime | None, seconds: bool = True) -> str:
    """A date and time in the current language (its order and separators, the 24- or 12-hour clock it
    uses), in the time zone ``value`` carries (a naive one is shown as it is: the database's UTC)."""
    if value is None:
        return ""
    from babel import dates  # noqa: PLC0415 - see the imports

    pattern: Literal["medium", "short"] = "medium" if seconds else "short"
    date_part = dates.format_date(value, "medium", locale=current().locale)
    time_part = dates.format_time(value, pattern, tzinfo=value.tzinfo, locale=current().locale)
    joined = str(dates.get_datetime_format(pattern, locale=current().locale))  # "{1}, {0}", "{1} {0}"
    return joined.replace("{1}", date_part).replace("{0}", time_part)


def day(value: date | None) -> str:
    """A date in the current language."""
    from babel import dates  # noqa: PLC0415 - see the imports

    return "" if value is None else dates.format_date(value, "medium", locale=current().locale)
