"""SAP-style scope and result filters: each rule kind as include and exclude, the rule texts, the
handling of unknown values, and the validation messages."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from searchcrawl.rules.filters import NO_FILTER, FilterDecision, FilterRules, Filters, FilterSet, file_name, mime_type

NOW = datetime(2026, 11, 21, 9, 0, tzinfo=UTC)
URL = "http://h/docs/report.pdf"


def filters(name: str = "scope", **data: Any) -> FilterSet:
    return FilterSet(FilterRules.model_validate(data), name)


def doc(
    f: FilterSet,
    url: str = URL,
    mimetype: str | None = None,
    length: int | None = None,
    last_modified: datetime | None = None,
) -> FilterDecision:
    return f.check_document(url, mimetype, length, last_modified, now=NOW)


def errors(data: dict[str, Any], model: type[FilterRules] | type[Filters] = FilterRules) -> list[str]:
    """The validation errors as a user sees them: the key path, then the message."""
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    messages = []
    for error in info.value.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        messages.append(f"{where}: {message}" if where else message)
    return messages


# -- the TOML shape -----------------------------------------------------------------------------

SOURCE_TOML = """
[filters.scope]
exclude_urls = ["*/print/*"]
exclude_file_names = ["*.zip", "*.exe"]
include_mime_types = ["text/html", "application/pdf", "application/vnd.*"]
max_length = 52428800

[filters.result]
exclude_mime_types = ["image/*"]
min_length = 100
modified_within_days = 365
"""


def test_toml_source_example() -> None:
    parsed = Filters.model_validate(tomllib.loads(SOURCE_TOML)["filters"])
    scope, result = FilterSet(parsed.scope, "scope"), FilterSet(parsed.result, "result")
    assert parsed.scope.max_length == 52428800
    assert parsed.result.modified_within_days == 365

    assert scope.check_url("http://h/a/print/x.html") == FilterDecision(False, 'scope filter exclude_urls "*/print/*"')
    assert scope.check_url("http://h/a/setup.EXE") == FilterDecision(False, 'scope filter exclude_file_names "*.exe"')
    assert scope.check_url("http://h/a/index.html") == FilterDecision(True, "scope filters passed")
    assert doc(scope, "http://h/a/x.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
    assert doc(scope, mimetype="application/pdf", length=52428800).passed
    assert doc(scope, mimetype="application/pdf", length=52428801).rule == ("scope filter max_length 52428800 (length 52428801)")
    assert not doc(scope, "http://h/a/logo.png", "image/png").passed

    # The result filter keeps the PNG out of the index, but the scope filter above already
    # stops it being crawled; an old page is crawled (scope passes) and not indexed.
    assert doc(result, mimetype="image/png").rule == 'result filter exclude_mime_types "image/*" (image/png)'
    old = NOW - timedelta(days=400)
    assert doc(scope, "http://h/old.html", "text/html", 5000, old).passed
    assert doc(result, "http://h/old.html", "text/html", 5000, old).rule == (
        "result filter modified_within_days 365 (last modified 2025-10-17, 400 days ago)"
    )
    assert doc(result, "http://h/new.html", "text/html", 5000, NOW - timedelta(days=3)).passed
    # A result filter has no URL rules here: nothing to decide before fetching.
    assert result.check_url("http://h/logo.png") == FilterDecision(True, NO_FILTER)


def test_defaults_filter_nothing() -> None:
    parsed = Filters()
    assert parsed == Filters.model_validate({}) == Filters.model_validate({"scope": {}, "result": {}})
    for name in ("scope", "result"):
        f = FilterSet(parsed.scope, name)
        assert f.check_url("http://h/a.zip") == FilterDecision(True, NO_FILTER)
        assert doc(f, "http://h/a.zip", "image/png", 0, datetime(1990, 1, 1)) == FilterDecision(True, NO_FILTER)


def test_models_are_frozen() -> None:
    rules = FilterRules(min_length=1)
    with pytest.raises(ValidationError):
        rules.min_length = 2  # type: ignore[misc]


# -- each kind, include and exclude, for both names ---------------------------------------------


@pytest.mark.parametrize("name", ["scope", "result"])
def test_url_wildcards(name: str) -> None:
    f = filters(name, exclude_urls=["*/print/*", "*?*session=*"])
    assert f.check_url("http://h/docs/print/a.html") == FilterDecision(False, f'{name} filter exclude_urls "*/print/*"')
    assert f.check_url("http://h/a?session=1").rule == f'{name} filter exclude_urls "*?*session=*"'
    assert f.check_url("http://h/docs/a.html").passed
    # Whole URL, case-sensitive (URL paths are).
    assert f.check_url("http://h/docs/PRINT/a.html").passed
    assert filters(name, exclude_urls=["/print/*"]).check_url("http://h/print/a").passed  # not the whole URL

    f = filters(name, include_urls=["http://h/docs/*", "https://*"])
    assert f.check_url("http://h/docs/a.html").passed
    assert f.check_url("https://other/x").passed
    assert f.check_url("http://h/other/a.html") == FilterDecision(
        False, f'{name} filter include_urls: the URL matches none of "http://h/docs/*", "https://*"'
    )
    # check_document applies the URL rules too (e.g. to a redirect's final URL).
    assert doc(f, "http://h/other/a.html", "text/html").rule.startswith(f"{name} filter include_urls")


@pytest.mark.parametrize("name", ["scope", "result"])
def test_file_name_wildcards(name: str) -> None:
    f = filters(name, exclude_file_names=["*.zip", "setup*"])
    assert f.check_url("http://h/a/b.zip") == FilterDecision(False, f'{name} filter exclude_file_names "*.zip"')
    assert f.check_url("http://h/a/SETUP.msi").rule == f'{name} filter exclude_file_names "setup*"'
    assert f.check_url("http://h/a/b.zip.html").passed
    # Only the last segment: a folder named like the pattern does not match.
    assert f.check_url("http://h/x.zip/readme.txt").passed

    f = filters(name, include_file_names=["*.pdf", "*.htm?"])
    assert f.check_url("http://h/a/report.PDF").passed
    assert f.check_url("http://h/a/index.html").passed
    assert f.check_url("http://h/a/b.doc") == FilterDecision(
        False, f'{name} filter include_file_names: "b.doc" matches none of "*.pdf", "*.htm?"'
    )


def test_file_name_from_urls() -> None:
    assert file_name("http://h/a/b.zip?x=1") == "b.zip"
    assert file_name("http://h/a/b.zip#part") == "b.zip"
    assert file_name("http://h/a/b.zip;jsessionid=ABC?x=1") == "b.zip"
    assert file_name("http://h/a/my%20file.pdf") == "my file.pdf"
    assert file_name("file:///srv/share/a/notes.txt") == "notes.txt"
    # A folder has no file name.
    assert file_name("http://h/a/") == ""
    assert file_name("http://h/a/?x=1") == ""
    assert file_name("http://h") == ""
    assert file_name("http://[::1") == ""  # not a valid URL


def test_folder_urls_pass_file_name_rules() -> None:
    # A folder URL has no file name: the file-name rules do not apply, so a scope filter
    # including only PDFs still lets the crawl walk through folder pages.
    f = filters(include_file_names=["*.pdf"], exclude_file_names=["*"])
    assert f.check_url("http://h/a/") == FilterDecision(True, "scope filters passed")
    assert f.check_url("http://h/a/?page=2").passed
    assert f.check_url("http://h").passed
    assert not f.check_url("http://h/a/b.pdf").passed  # exclude "*" overrides the inclusion
    f = filters(include_file_names=["*.pdf"])
    assert f.check_url("http://h/a/b.zip?x=a.pdf").rule == ('scope filter include_file_names: "b.zip" matches none of "*.pdf"')
    assert f.check_url("http://h/a/b.pdf?x=1").passed
    assert f.check_url("http://h/a/my%20report.pdf").passed
    assert filters(exclude_file_names=["my report.pdf"]).check_url("http://h/my%20report.pdf").passed is False


@pytest.mark.parametrize("name", ["scope", "result"])
def test_mime_type_wildcards(name: str) -> None:
    f = filters(name, exclude_mime_types=["image/*", "application/x-msdownload"])
    assert doc(f, mimetype="image/png") == FilterDecision(False, f'{name} filter exclude_mime_types "image/*" (image/png)')
    assert doc(f, mimetype="IMAGE/SVG+XML; charset=utf-8").rule == (f'{name} filter exclude_mime_types "image/*" (image/svg+xml)')
    assert not doc(f, mimetype="application/x-msdownload").passed
    assert doc(f, mimetype="text/html").passed

    f = filters(name, include_mime_types=["text/*", "application/vnd.*", "Application/PDF"])
    assert doc(f, mimetype="text/html; charset=utf-8").passed
    assert doc(f, mimetype="text/plain").passed
    assert doc(f, mimetype="application/pdf").passed
    assert doc(f, mimetype="application/vnd.ms-excel").passed
    assert doc(f, mimetype="application/zip") == FilterDecision(
        False,
        f'{name} filter include_mime_types: "application/zip" matches none of "text/*", "application/vnd.*", "application/pdf"',
    )
    # "text/*" is about the type: "text" alone or another type does not match.
    assert not doc(f, mimetype="application/text").passed
    # MIME rules need the response headers: nothing to decide on the URL.
    assert f.check_url("http://h/a.zip") == FilterDecision(True, NO_FILTER)


def test_mime_type_of_content_type() -> None:
    assert mime_type("Text/HTML; charset=UTF-8") == "text/html"
    assert mime_type(" application/pdf ") == "application/pdf"
    assert mime_type("") is None
    assert mime_type(";charset=utf-8") is None
    assert mime_type(None) is None
    assert filters(include_mime_types=["*/*"]).check_document(URL, "anything/else", None, None).passed


@pytest.mark.parametrize("name", ["scope", "result"])
def test_content_length(name: str) -> None:
    f = filters(name, min_length=100, max_length=1000)
    assert doc(f, length=42) == FilterDecision(False, f"{name} filter min_length 100 (length 42)")
    assert doc(f, length=1001) == FilterDecision(False, f"{name} filter max_length 1000 (length 1001)")
    # Inclusive bounds.
    assert doc(f, length=100).passed
    assert doc(f, length=1000).passed
    assert doc(filters(name, min_length=0, max_length=0), length=0).passed
    assert not doc(filters(name, max_length=0), length=1).passed
    assert f.check_url(URL) == FilterDecision(True, NO_FILTER)


@pytest.mark.parametrize("name", ["scope", "result"])
def test_modified_within_days(name: str) -> None:
    f = filters(name, modified_within_days=30)
    assert doc(f, last_modified=NOW - timedelta(days=30)).passed  # within: age <= N days
    assert doc(f, last_modified=NOW - timedelta(days=30, seconds=1)) == FilterDecision(
        False, f"{name} filter modified_within_days 30 (last modified 2026-10-22, 30 days ago)"
    )
    assert doc(f, last_modified=NOW - timedelta(days=1000)).rule.endswith("1000 days ago)")
    assert doc(f, last_modified=NOW + timedelta(days=2)).passed  # a date in the future is new
    # Naive datetimes are UTC; aware ones in another zone are converted.
    assert doc(f, last_modified=datetime(2026, 11, 1)).passed
    assert not doc(f, last_modified=datetime(2026, 10, 1)).passed
    plus_two = timezone(timedelta(hours=2))
    assert doc(f, last_modified=datetime(2026, 10, 22, 12, 0, tzinfo=plus_two)).passed  # 10:00 UTC: 29 d 23 h
    assert not doc(f, last_modified=datetime(2026, 10, 22, 10, 0, tzinfo=plus_two)).passed  # 08:00 UTC: 30 d 1 h
    # now defaults to the clock.
    assert f.check_document(URL, None, None, datetime.now(UTC) - timedelta(days=1)).passed
    assert not f.check_document(URL, None, None, datetime(2000, 1, 1)).passed
    assert f.check_url(URL) == FilterDecision(True, NO_FILTER)


# -- unknown values and the order of rules ------------------------------------------------------


def test_unknown_values_pass() -> None:
    f = filters(
        "result",
        include_mime_types=["text/html"],
        exclude_mime_types=["*/*"],
        min_length=100,
        max_length=200,
        modified_within_days=1,
    )
    # No Content-Type, no Content-Length, no Last-Modified: no rule can say no.
    assert doc(f) == FilterDecision(True, "result filters passed")
    assert doc(f, mimetype="") == FilterDecision(True, "result filters passed")
    assert not doc(f, mimetype="text/html").passed
    assert not doc(f, length=5).passed
    assert not doc(f, last_modified=datetime(2020, 1, 1)).passed


def test_exclusion_overrides_inclusion() -> None:
    f = filters(include_urls=["http://h/docs/*"], exclude_urls=["*/drafts/*"])
    assert f.check_url("http://h/docs/a.html").passed
    assert f.check_url("http://h/docs/drafts/a.html").rule == 'scope filter exclude_urls "*/drafts/*"'
    f = filters("result", include_file_names=["*.pdf"], exclude_file_names=["draft-*"])
    assert f.check_url("http://h/draft-1.pdf").rule == 'result filter exclude_file_names "draft-*"'
    f = filters(include_mime_types=["application/*"], exclude_mime_types=["application/zip"])
    assert doc(f, mimetype="application/pdf").passed
    assert doc(f, mimetype="application/zip").rule == ('scope filter exclude_mime_types "application/zip" (application/zip)')


def test_kinds_combine_with_and() -> None:
    f = filters(include_urls=["http://h/docs/*"], include_file_names=["*.pdf"], include_mime_types=["application/pdf"])
    assert doc(f, "http://h/docs/a.pdf", "application/pdf").passed
    assert not doc(f, "http://h/other/a.pdf", "application/pdf").passed
    assert not doc(f, "http://h/docs/a.html", "application/pdf").passed
    assert not doc(f, "http://h/docs/a.pdf", "text/html").passed
    # check_url decides only what the URL can tell.
    assert f.check_url("http://h/docs/a.pdf") == FilterDecision(True, "scope filters passed")


# -- validation ---------------------------------------------------------------------------------


def test_length_errors() -> None:
    assert errors({"min_length": 500, "max_length": 100}) == ["expected min_length <= max_length, got 500 > 100"]
    assert errors({"min_length": -1}) == ["min_length: Input should be greater than or equal to 0"]
    assert errors({"max_length": "100"}) == ["max_length: Input should be a valid integer"]
    assert errors({"max_length": True}) == ["max_length: Input should be a valid integer"]
    assert errors({"modified_within_days": 0}) == ["modified_within_days: Input should be greater than or equal to 1"]
    assert errors({"scope": {"min_length": 9, "max_length": 8}}, Filters) == [
        "scope: expected min_length <= max_length, got 9 > 8"
    ]


def test_pattern_errors() -> None:
    assert errors({"exclude_urls": [""]}) == ["exclude_urls: expected a non-empty pattern such as '*/print/*', got ''"]
    assert errors({"include_file_names": ["  "]}) == [
        "include_file_names: expected a non-empty pattern such as '*.zip', got '  '"
    ]
    assert errors({"exclude_file_names": ["/downloads/*.zip"]}) == [
        "exclude_file_names: expected a file name pattern such as '*.zip' without '/' (it matches the last "
        "segment of the URL path; use include_urls/exclude_urls for paths), got '/downloads/*.zip'"
    ]
    assert errors({"include_mime_types": [""]}) == ["include_mime_types: expected a non-empty pattern such as 'text/*', got ''"]
    assert errors({"include_mime_types": ["pdf"]}) == [
        "include_mime_types: expected a MIME type 'type/subtype' such as 'application/pdf' or 'image/*', got 'pdf'"
    ]
    assert errors({"exclude_mime_types": ["text/html; charset=utf-8"]}) == [
        "exclude_mime_types: expected a MIME type without parameters (they are ignored when matching), "
        "got 'text/html; charset=utf-8'"
    ]
    assert errors({"exclude_urls": "*.zip"}) == ["exclude_urls: Input should be a valid list"]


def test_patterns_normalised() -> None:
    rules = FilterRules(exclude_urls=[" */print/* ", "*/print/*"], include_mime_types=["Text/HTML", "text/html", "image/*"])
    assert rules.exclude_urls == ["*/print/*"]
    assert rules.include_mime_types == ["text/html", "image/*"]


def test_unknown_keys() -> None:
    assert errors({"exclude_url": ["*"]}) == [
        "unknown key 'exclude_url' (known keys: include_urls, exclude_urls, include_file_names, "
        "exclude_file_names, include_mime_types, exclude_mime_types, min_length, max_length, modified_within_days)"
    ]
    assert errors({"scopes": {}}, Filters) == ["unknown key 'scopes' (known keys: scope, result)"]
    assert errors({"result": {"max_size": 1}}, Filters)[0].startswith("result: unknown key 'max_size' (known keys:")


def test_filter_set_arguments() -> None:
    with pytest.raises(ValueError, match="expected a filter set name 'scope' or 'result', got 'index'"):
        FilterSet(FilterRules(), "index")
    with pytest.raises(TypeError, match="takes FilterRules"):
        FilterSet({"min_length": 1}, "scope")  # type: ignore[arg-type]
    assert FilterSet(FilterRules(), "result").name == "result"
