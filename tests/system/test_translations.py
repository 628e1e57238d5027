"""The interface's languages (issue 79, searchcrawl/system/translations.py): the language a page is
made in (the searcher's choice, the browser's ranges, English), numbers and dates by its locale, and
catalogues that are up to date with the code and complete: every message of the code and the
templates translated into every language, its placeholders the message's own."""

from __future__ import annotations

import threading
from datetime import UTC, date, datetime

import pytest

from searchcrawl.dev import message_catalogues
from searchcrawl.system import translations
from searchcrawl.system.translations import (
    LANGUAGES,
    accepted,
    current,
    day,
    gettext,
    language,
    moment,
    negotiate,
    ngettext,
    number,
    percent,
    speaking,
)


@pytest.mark.parametrize(
    ("choice", "header", "tag"),
    [
        (None, None, "en"),
        (None, "de-DE,de;q=0.9,en;q=0.8", "de-DE"),
        (None, "fr-FR, fr;q=0.9, ja;q=0.8, de;q=0.7", "ja"),
        (None, "en;q=0.5, de;q=0.9", "de"),
        (None, "de;q=0, ja", "ja"),  # q=0: not acceptable
        (None, "fr, *", "en"),
        (None, "de;q=abc, ja;q=0.1", "ja"),  # a malformed weight counts as 0
        ("ja", "de-DE", "ja"),  # the searcher's choice wins
        ("de", "en-GB, de-AT;q=0.5", "de-AT"),  # chosen, in the browser's region for it
        ("xx", "de-CH", "de-CH"),  # a choice not offered: the browser decides
        (None, "en-GB", "en-GB"),
        (None, "<script>, de", "de"),  # a range that is not a language tag is skipped
    ],
)
def test_the_language_of_a_page(choice: str | None, header: str | None, tag: str) -> None:
    assert negotiate(choice, header) == tag


def test_accept_language_is_read_within_bounds() -> None:
    assert len(accepted(",".join(["de"] * 10_000))) == translations.ACCEPT_LANGUAGE_RANGES
    assert accepted("ja;q=0.2, de;q=0.8, en") == ["en", "de", "ja"]
    assert accepted("x" * 5000) == []  # cut at ACCEPT_LANGUAGE_CHARS, and no language tag (subtags of 1-8 letters)
    assert accepted("de-" + "a" * 9 + ", ja") == ["ja"]


def test_tags_from_requests_never_grow_a_cache_without_bound() -> None:
    """A hostile review sent 20,000 Accept-Language headers, each a new tag: Babel's
    ``localedata.exists`` remembered every one (8 MB, never freed). Only tags CLDR has reach it now,
    and the tags ``negotiate`` gives are CLDR's or a language's code."""
    from babel import localedata

    negotiate(None, "de-CH")
    before = localedata.exists.cache_info().currsize
    tags = {negotiate(None, f"de-x{count}-y{count}, ja") for count in range(5000)}
    for count in range(5000):
        language(f"de-q{count}")
    assert tags == {"de"} and localedata.exists.cache_info().currsize - before < 10
    assert language.cache_info().currsize <= 256


def test_a_region_gives_numbers_and_dates_and_its_language_the_words() -> None:
    swiss = language("de-CH")
    assert swiss.code == "de" and str(swiss.locale) == "de_CH"
    assert language("de-XX").locale == language("de").locale  # a region CLDR does not know
    assert language("ja-Latn-JP").code == "ja"
    with pytest.raises(KeyError):
        language("fr")


def test_numbers_and_dates_by_locale() -> None:
    when = datetime(2026, 11, 27, 17, 42, 41, tzinfo=UTC)
    shown = {}
    for tag in ("en", "de", "de-CH", "ja"):
        with speaking(tag):
            shown[tag] = (
                number(1234567),
                number(0.6126, 3),
                percent(0.256, 1),
                moment(when),
                moment(when, False),
                day(date(2026, 1, 2)),
            )
    assert shown["en"] == (
        "1,234,567",
        "0.613",
        "25.6%",
        "Nov 27, 2026, 5:42:41\u202fPM",
        "Nov 27, 2026, 5:42\u202fPM",
        "Jan 2, 2026",
    )
    assert shown["de"] == ("1.234.567", "0,613", "25,6\u00a0%", "27.11.2026, 17:42:41", "27.11.2026, 17:42", "02.01.2026")
    assert shown["de-CH"][1] == "0.613"  # Switzerland's decimal sign, not Germany's
    assert shown["ja"] == ("1,234,567", "0.613", "25.6%", "2026/11/27 17:42:41", "2026/11/27 17:42", "2026/01/02")
    assert moment(None) == "" and day(None) == ""


def test_outside_a_request_the_interface_speaks_english_and_a_thread_inherits_the_language() -> None:
    assert current().code == "en" and gettext("Search") == "Search"
    seen: list[str] = []
    with speaking("de"):
        import contextvars

        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(lambda: seen.append(gettext("Search")),))
        thread.start()
        thread.join()
    assert seen == [language("de").translations.gettext("Search")] and seen != ["Search"]
    assert current().code == "en"


def test_messages_are_always_formatted_and_plurals_follow_the_language() -> None:
    assert gettext("%(count)s of %(total)s", count=1, total=2) == "1 of 2"
    assert gettext("100%%") == "100%"  # the one rule: a literal per cent sign is %%
    assert ngettext("%(num)s hit", "%(num)s hits", 1) == "1 hit"
    assert ngettext("%(num)s hit", "%(num)s hits", 3) == "3 hits"


def test_every_catalogue_is_up_to_date_with_the_code_and_complete() -> None:
    template = message_catalogues.extracted()
    assert len(template) > 300  # the pages' messages are marked, not a handful
    for code in LANGUAGES:
        if code == "en":
            continue
        catalogue = message_catalogues.updated(code, template)
        stored = (message_catalogues.LOCALES / translations.catalogue_path(code)).read_bytes()
        assert stored == message_catalogues.rendered(catalogue), (
            f"the {code} catalogue is out of date: run python -m searchcrawl.dev.message_catalogues"
        )
        assert message_catalogues.missing(catalogue) == [], f"the {code} catalogue is not complete"


def test_a_translation_keeps_the_messages_placeholders() -> None:
    """Babel's checks, which ``missing`` applies: a translation that drops or renames a placeholder
    would raise a KeyError on the page, so it counts as missing."""
    from babel.messages.catalog import Catalog

    catalogue = Catalog(locale="de")
    catalogue.add("%(count)s hits", "%(anzahl)s Treffer", flags=["python-format"])
    catalogue.add("Search", "Suche")
    catalogue.add("Run", "")
    assert [problem.split(":")[0] for problem in message_catalogues.missing(catalogue)] == ["'%(count)s hits'", "'Run'"]
