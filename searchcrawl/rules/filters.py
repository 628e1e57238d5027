"""SAP-style resource filters: which documents are crawled and which are indexed. Plain logic.

A source has two filter sets, ``[filters.scope]`` and ``[filters.result]``, with the same keys:

- A **scope filter** stops a document being crawled. ``check_url`` decides on the URL alone
  (URL and file-name rules) before anything is fetched; ``check_document`` decides again once the
  response headers give the MIME type, length and date. The crawler reports a scope-filtered URL
  as ``Status.EXCLUDED_FILTER``.
- A **result filter** lets a document be crawled (its links are followed) but keeps it out of
  the index: the SAP xcrawler applies it to the result of the crawl, not to its scope.

Rule kinds, each an include list and an exclude list (exclusion overrides inclusion; with an
include list, a document must match one of its patterns); the kinds combine with AND:

- ``include_urls``/``exclude_urls``: fnmatch wildcards on the whole URL, case-sensitive (as the
  boundary's ``[patterns]`` globs: URL paths are case-sensitive).
- ``include_file_names``/``exclude_file_names``: fnmatch wildcards on the file name, the last
  segment of the URL path, percent-decoded, without query, fragment or ``;params``
  (``http://h/a/b.zip?x=1`` -> ``b.zip``), compared case-insensitively (``*.pdf`` matches
  ``REPORT.PDF``). A URL ending in ``/`` (or with no path) names a folder, not a file: it has no
  file name, and the file-name rules do not apply to it, so ``include_file_names = ["*.pdf"]``
  as a scope filter still lets the crawl walk through folder pages to reach the PDFs.
- ``include_mime_types``/``exclude_mime_types``: wildcards on ``type/subtype`` (``text/*``,
  ``application/vnd.*``), case-insensitive; parameters of the Content-Type are ignored
  (``text/html; charset=utf-8`` is ``text/html``).
- ``min_length``/``max_length``: content length in bytes, inclusive bounds.
- ``modified_within_days``: a document last modified more than N days before now is filtered.

An unknown value (``None``: no Content-Type, no Content-Length, no Last-Modified) passes the rule
that needs it. In particular a document without a date is kept by ``modified_within_days``:
servers send no Last-Modified for dynamic pages, which are often the freshest ones, and a filter
that dropped them would empty a portal's index.

Every decision names the rule that made it, for the document table and ``scrapy explain``.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import unquote, urlsplit

from pydantic import Field, field_validator, model_validator

from searchcrawl.rules.tables import RuleTable

FILTER_NAMES = ("scope", "result")
NO_FILTER = "no filter applies"

# type/subtype, each part made of MIME token characters and wildcards (*, ?, [...]).
_MIME_PATTERN = re.compile(r"^[a-z0-9!#$%&'*+.^_`|~\-\[\]?]+/[a-z0-9!#$%&'*+.^_`|~\-\[\]?]+$")


def _patterns(patterns: list[str], example: str) -> list[str]:
    """Non-empty, stripped, de-duplicated patterns; or ValueError."""
    result: list[str] = []
    for pattern in patterns:
        value = pattern.strip()
        if not value:
            raise ValueError(f"expected a non-empty pattern such as {example!r}, got {pattern!r}")
        result.append(value)
    return list(dict.fromkeys(result))


class FilterRules(RuleTable):
    """One filter set (``[filters.scope]`` or ``[filters.result]``); every key is optional."""

    include_urls: list[str] = Field(default_factory=list)
    exclude_urls: list[str] = Field(default_factory=list)
    include_file_names: list[str] = Field(default_factory=list)
    exclude_file_names: list[str] = Field(default_factory=list)
    include_mime_types: list[str] = Field(default_factory=list)
    exclude_mime_types: list[str] = Field(default_factory=list)
    min_length: int | None = Field(default=None, ge=0)
    max_length: int | None = Field(default=None, ge=0)
    modified_within_days: int | None = Field(default=None, ge=1)

    @field_validator("include_urls", "exclude_urls")
    @classmethod
    def _url_patterns(cls, patterns: list[str]) -> list[str]:
        return _patterns(patterns, "*/print/*")

    @field_validator("include_file_names", "exclude_file_names")
    @classmethod
    def _file_name_patterns(cls, patterns: list[str]) -> list[str]:
        patterns = _patterns(patterns, "*.zip")
        for pattern in patterns:
            if "/" in pattern:
                raise ValueError(
                    f"expected a file name pattern such as '*.zip' without '/' (it matches the last "
                    f"segment of the URL path; use include_urls/exclude_urls for paths), got {pattern!r}"
                )
        return patterns

    @field_validator("include_mime_types", "exclude_mime_types")
    @classmethod
    def _mime_patterns(cls, patterns: list[str]) -> list[str]:
        result: list[str] = []
        for pattern in _patterns(patterns, "text/*"):
            value = pattern.lower()
            if ";" in value:
                raise ValueError(f"expected a MIME type without parameters (they are ignored when matching), got {pattern!r}")
            value = value.replace(" ", "")
            if not _MIME_PATTERN.match(value):
                raise ValueError(f"expected a MIME type 'type/subtype' such as 'application/pdf' or 'image/*', got {pattern!r}")
            result.append(value)
        return list(dict.fromkeys(result))

    @model_validator(mode="after")
    def _length_range(self) -> FilterRules:
        if self.min_length is not None and self.max_length is not None and self.min_length > self.max_length:
            raise ValueError(f"expected min_length <= max_length, got {self.min_length} > {self.max_length}")
        return self


class Filters(RuleTable):
    """The ``[filters]`` table of a source: ``scope`` narrows the crawl, ``result`` the index."""

    scope: FilterRules = Field(default_factory=FilterRules)
    result: FilterRules = Field(default_factory=FilterRules)


@dataclass(frozen=True)
class FilterDecision:
    passed: bool
    rule: str  # the rule that filtered the document, or why it passed


def file_name(url: str) -> str:
    """The file name of ``url``: the last path segment, percent-decoded, without query, fragment
    or ``;params``; ``''`` for a folder (a path ending in ``/``, or none)."""
    try:
        path = urlsplit(url).path
    except ValueError:
        return ""
    name = path.rsplit("/", 1)[-1].split(";", 1)[0]
    return unquote(name)


def mime_type(content_type: str | None) -> str | None:
    """``type/subtype`` of a Content-Type value, lower case; ``None`` when unknown or empty."""
    if content_type is None:
        return None
    value = content_type.split(";", 1)[0].strip().lower()
    return value or None


def _compile(patterns: list[str], case_sensitive: bool = True) -> tuple[tuple[re.Pattern[str], str], ...]:
    flags = 0 if case_sensitive else re.IGNORECASE
    return tuple((re.compile(fnmatch.translate(pattern), flags), pattern) for pattern in patterns)


def _first(compiled: tuple[tuple[re.Pattern[str], str], ...], value: str) -> str | None:
    return next((source for regex, source in compiled if regex.match(value)), None)


def _listing(items: list[str], limit: int = 5) -> str:
    shown = ", ".join(f'"{item}"' for item in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


class FilterSet:
    """One compiled filter set. ``check_url`` and ``check_document`` run for many URLs, so the
    patterns are compiled here once."""

    def __init__(self, rules: FilterRules, name: str) -> None:
        if not isinstance(rules, FilterRules):
            raise TypeError(f"FilterSet(rules, name) takes FilterRules, got {rules!r}")
        if name not in FILTER_NAMES:
            raise ValueError(f"expected a filter set name 'scope' or 'result', got {name!r}")
        self.rules = rules
        self.name = name
        self._include_urls = _compile(rules.include_urls)
        self._exclude_urls = _compile(rules.exclude_urls)
        self._include_names = _compile(rules.include_file_names, case_sensitive=False)
        self._exclude_names = _compile(rules.exclude_file_names, case_sensitive=False)
        self._include_mimes = _compile(rules.include_mime_types)  # patterns are lower case
        self._exclude_mimes = _compile(rules.exclude_mime_types)
        self._url_rules = bool(self._include_urls or self._exclude_urls or self._include_names or self._exclude_names)
        self._document_rules = self._url_rules or bool(
            self._include_mimes
            or self._exclude_mimes
            or rules.min_length is not None
            or rules.max_length is not None
            or rules.modified_within_days is not None
        )

    def __repr__(self) -> str:
        return f"FilterSet({self.rules!r}, {self.name!r})"

    def _fail(self, text: str) -> FilterDecision:
        return FilterDecision(False, f"{self.name} filter {text}")

    def _passed(self) -> FilterDecision:
        return FilterDecision(True, f"{self.name} filters passed")

    def check_url(self, url: str) -> FilterDecision:
        """The URL and file-name rules only: what can be decided before fetching."""
        if not self._url_rules:
            return FilterDecision(True, NO_FILTER)
        failed = self._check_url(url)
        return failed or self._passed()

    def _check_url(self, url: str) -> FilterDecision | None:
        if self._exclude_urls:
            matched = _first(self._exclude_urls, url)
            if matched is not None:
                return self._fail(f'exclude_urls "{matched}"')
        if self._include_urls and _first(self._include_urls, url) is None:
            return self._fail(f"include_urls: the URL matches none of {_listing(self.rules.include_urls)}")
        if self._exclude_names or self._include_names:
            name = file_name(url)
            if name:  # a folder has no file name: the file-name rules do not apply
                if self._exclude_names:
                    matched = _first(self._exclude_names, name)
                    if matched is not None:
                        return self._fail(f'exclude_file_names "{matched}"')
                if self._include_names and _first(self._include_names, name) is None:
                    return self._fail(f'include_file_names: "{name}" matches none of {_listing(self.rules.include_file_names)}')
        return None

    def check_document(
        self,
        url: str,
        mimetype: str | None,
        length: int | None,
        last_modified: datetime | None,
        now: datetime | None = None,
    ) -> FilterDecision:
        """Every rule, once the response headers are known. ``mimetype`` may be a whole
        Content-Type value; ``None`` for any value means unknown and passes the rules needing
        it. A naive ``last_modified`` or ``now`` is taken as UTC; ``now`` defaults to the clock."""
        if not self._document_rules:
            return FilterDecision(True, NO_FILTER)
        rules = self.rules
        failed = self._check_url(url) if self._url_rules else None
        if failed is not None:
            return failed

        mime = mime_type(mimetype)
        if mime is not None:
            if self._exclude_mimes:
                matched = _first(self._exclude_mimes, mime)
                if matched is not None:
                    return self._fail(f'exclude_mime_types "{matched}" ({mime})')
            if self._include_mimes and _first(self._include_mimes, mime) is None:
                return self._fail(f'include_mime_types: "{mime}" matches none of {_listing(rules.include_mime_types)}')

        if length is not None:
            if rules.min_length is not None and length < rules.min_length:
                return self._fail(f"min_length {rules.min_length} (length {length})")
            if rules.max_length is not None and length > rules.max_length:
                return self._fail(f"max_length {rules.max_length} (length {length})")

        if last_modified is not None and rules.modified_within_days is not None:
            now = _utc(now or datetime.now(UTC))
            age = now - _utc(last_modified)
            if age > timedelta(days=rules.modified_within_days):
                return self._fail(
                    f"modified_within_days {rules.modified_within_days} "
                    f"(last modified {_utc(last_modified):%Y-%m-%d}, {age.days} days ago)"
                )
        return self._passed()


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
