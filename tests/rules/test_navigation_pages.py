"""Navigation pages and copies (rules/navigation_pages.py): the generators' recognisable pages by
default, a source's own patterns, none with []."""

from __future__ import annotations

import pytest

from searchcrawl.rules.navigation_pages import DEFAULT, check_pattern, effective_patterns, navigation_pattern

API = "http://h.test/docs/api/org/apache/nutch"


@pytest.mark.parametrize(
    ("url", "pattern"),
    [
        (f"{API}/crawl/class-use/Injector.html", "*/class-use/*"),
        ("http://h.test/docs/api/allclasses-noframe.html", "*/allclasses-*.html"),
        ("http://h.test/docs/api/index-all.html", "*/index-all.html"),
        ("http://h.test/docs/api/index-files/index-7.html", "*/index-files/index-*.html"),
        (f"{API}/crawl/package-tree.html", "*/package-tree.html"),
        ("http://h.test/_sources/intro/numpy/index.rst.txt", "*/_sources/*"),
        ("http://h.test/genindex.html", "*/genindex.html"),
        (f"{API}/crawl/Injector.html", None),
        (f"{API}/crawl/package-summary.html", None),  # a package's own page answers "the crawl package"
        ("http://h.test/intro/numpy/index.html", None),
        ("http://h.test/class-use.html", None),
    ],
)
def test_the_generators_pages_by_default(url: str, pattern: str | None) -> None:
    assert navigation_pattern(url, None) == pattern


def test_a_sources_own_patterns_replace_the_default_and_none_keeps_every_page() -> None:
    assert navigation_pattern("http://h.test/wiki/Special:AllPages", ["*/Special:*"]) == "*/Special:*"
    assert navigation_pattern("http://h.test/docs/api/index-all.html", ["*/Special:*"]) is None
    assert navigation_pattern("http://h.test/docs/api/index-all.html", []) is None


def test_a_pattern_that_could_never_match_is_refused_and_the_default_is_recorded_in_force() -> None:
    assert check_pattern("*/Special:*") == "*/Special:*" and check_pattern("/wiki/Special:*") == "/wiki/Special:*"
    with pytest.raises(ValueError, match="start it with / or"):
        check_pattern("Special:*")
    assert effective_patterns(None) == list(DEFAULT) and effective_patterns([]) == []
