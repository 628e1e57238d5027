"""rules/urls.py: the extension test of every link agrees with Scrapy's own."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.linkextractors import IGNORED_EXTENSIONS
from scrapy.utils.url import url_has_any_extension

from searchcrawl.crawl.spider import DOCUMENT_EXTENSIONS, ignored_suffixes
from searchcrawl.rules.urls import has_extension

IGNORED = ignored_suffixes(DOCUMENT_EXTENSIONS)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://h.test/a.png", True),
        ("http://h.test/A.PNG", True),  # case does not matter
        ("http://h.test/a.png?x=1#top", True),  # nor do the query and fragment
        ("http://h.test/a.png;jsessionid=1", True),  # path parameters are not the path's end
        ("http://h.test/a.pdf", False),  # documents are followed
        ("http://h.test/a.html", False),
        ("http://photos.png/", False),  # a host named like a file is not a path
        ("http://h.test/", False),
        ("http://h.test/a.tar.gz", True),
    ],
)
def test_a_links_extension_is_read_from_its_path(url: str, expected: bool) -> None:
    assert has_extension(url, IGNORED) is expected
    assert url_has_any_extension(url, {f".{ext}" for ext in IGNORED_EXTENSIONS if ext not in DOCUMENT_EXTENSIONS}) is expected


paths = st.lists(st.sampled_from(["a", "B", ".", "png", "PDF", "tar", "gz", "/", ";", "?", "#", "x=1", "%2e"]), max_size=8)


@settings(max_examples=300)
@given(host=st.sampled_from(["h.test", "photos.png", "127.0.0.1:8080"]), path=paths)
def test_it_decides_as_scrapys_url_has_any_extension(host: str, path: list[str]) -> None:
    url = f"http://{host}/{''.join(path)}"
    assert has_extension(url, IGNORED) == url_has_any_extension(url, set(IGNORED))
