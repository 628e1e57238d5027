"""The webdav source's logic alone (no server): its options, and the hrefs of a hostile server's
listing. tests/e2e/test_webdav_sources.py crawls a real Apache."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from searchcrawl.agents.webdav import WebdavAgent, WebdavOptions, _etag

ROOT = "https://files.example.org/dav/projects/"


def agent(**changes: Any) -> WebdavAgent:
    return WebdavAgent("files", WebdavOptions.model_validate({"root": ROOT, **changes}))


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("/dav/projects/a/b.txt", "a/b.txt"),
        ("https://files.example.org/dav/projects/a%20b.txt", "a b.txt"),
        ("b.txt", "b.txt"),  # relative to the collection asked
        ("https://evil.example.org/dav/projects/x.txt", None),  # another host
        ("http://files.example.org/dav/projects/x.txt", None),  # another scheme
        ("https://files.example.org:8443/dav/projects/x.txt", None),  # another port
        ("/dav/other/x.txt", None),  # outside the root
        ("/dav/projects/../other/x.txt", None),
        ("/dav/projects/a/%2e%2e/%2e%2e/x.txt", None),
        ("/dav/projects/x%0A.txt", None),  # a control character
    ],
)
def test_a_listing_names_only_what_is_below_the_root_on_its_origin(href: str, expected: str | None) -> None:
    assert agent()._relative(ROOT, href) == expected  # noqa: SLF001


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"root": "ftp://files.example.org/"}, "http"),
        ({"root": "https://user:pw@files.example.org/"}, "without user"),
        ({"root": "http://files.example.org/dav/", "username": "c", "password_secret": "P"}, "in clear"),
        ({"username": "c"}, "go together"),
        ({"apache_config": ["dav.conf"]}, "absolute"),
        ({"group_token": "group:x"}, "one {id}"),
        ({"authenticated_token": "staff"}, "not an access token"),
    ],
)
def test_options_refused_with_one_line_each(changes: dict[str, Any], error: str) -> None:
    with pytest.raises(ValidationError, match=error.replace("{", r"\{").replace("}", r"\}")):
        WebdavOptions.model_validate({"root": ROOT, **changes})


def test_roots_tokens_and_scope() -> None:
    assert WebdavOptions.model_validate({"root": "http://127.0.0.1:8080/dav"}).root == "http://127.0.0.1:8080/dav/"
    assert WebdavOptions.model_validate({"root": "http://127.0.0.1/dav/", "username": "c", "password_secret": "P"})
    assert _etag('"5-abc"') == '"5-abc"' and _etag('W/"5-abc"') is None and _etag("") is None  # weak: read again
    crawled = agent(exclude=["*.tmp"], apache_config=["/etc/apache2/dav.conf"])
    assert crawled.refusal("a/x.tmp") == "excluded by '*.tmp'" and crawled.refusal("a/x.txt") is None
    assert crawled.refusal("/etc/passwd") is not None and crawled.dav.gives_access
    assert crawled.http_url("a b/c#d.txt") == ROOT + "a%20b/c%23d.txt"


def test_a_collection_names_its_own_entries_and_nothing_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile server: a collection naming another folder's (hidden, excluded) files, and two
    collections naming each other."""
    answers = {
        "": [("a", True, {}), ("b", True, {}), (".private/x.pdf", False, {}), ("top.txt", False, {})],
        "a": [("b", True, {}), ("a/x.txt", False, {}), ("drafts/y.pdf", False, {})],
        "b": [("a", True, {}), ("b/y.txt", False, {}), ("b/a", True, {})],
        "b/a": [("b/a/z.txt", False, {})],
    }
    crawled = agent(exclude=["drafts/**"])
    monkeypatch.setattr(crawled, "_propfind", lambda folder: iter(answers[folder]))
    monkeypatch.setattr(crawled, "_read_rules", lambda: None)
    assert [reference.key for reference in crawled.references(None)] == ["top.txt", "a/x.txt", "b/y.txt", "b/a/z.txt"]
