"""Display URLs: the URL a searcher is shown, when it differs from the URL the crawler fetches
(an internal mirror crawled, the public address shown). Plain logic.

Rules are tried in order; the first that matches rewrites the access URL. A rule is either a
prefix replacement or a regular expression substitution::

    [[display_urls]]
    prefix = "http://docs-mirror.internal/"
    replace = "https://docs.example.com/"

    [[display_urls]]
    regex = '^http://([a-z]+)\\.internal/'
    replace = 'https://\\1.example.com/'

A prefix that is a folder path (``prefix = "/srv/share/"``) stands for its file URL
(``file:///srv/share/``): the documents of a files source.
"""

from __future__ import annotations

import pathlib
import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, model_validator


class DisplayUrlRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    prefix: str | None = None
    regex: str | None = None
    replace: str

    @model_validator(mode="after")
    def _one_kind(self) -> DisplayUrlRule:
        if (self.prefix is None) == (self.regex is None):
            raise ValueError("expected either 'prefix' or 'regex' (one of them) with 'replace'")
        if self.regex is not None:
            try:
                re.compile(self.regex)
            except re.error as exc:
                raise ValueError(f"'regex' is not a valid regular expression: {exc}") from None
        return self


class DisplayUrls:
    def __init__(self, rules: Sequence[DisplayUrlRule]) -> None:
        self.rules = [(_as_file_url(rule), re.compile(rule.regex) if rule.regex else None) for rule in rules]

    def display_url(self, url: str) -> str:
        """The display URL of an access URL (the URL itself when no rule matches)."""
        for rule, pattern in self.rules:
            if pattern is not None:
                rewritten, count = pattern.subn(rule.replace, url, count=1)
                if count:
                    return rewritten
            elif rule.prefix is not None and url.startswith(rule.prefix):
                return rule.replace + url[len(rule.prefix) :]
        return url


def _as_file_url(rule: DisplayUrlRule) -> DisplayUrlRule:
    """A prefix that is a folder path (``/srv/share/``, a files source's) as the file URL its
    documents have (``file:///srv/share/``), so a rule may name the folder as its users know it."""
    if rule.prefix is None or not rule.prefix.startswith("/"):
        return rule
    uri = pathlib.PurePosixPath(rule.prefix).as_uri()
    return rule.model_copy(update={"prefix": uri + "/" if rule.prefix.endswith("/") else uri})
