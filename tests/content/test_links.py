"""A page's links (content/links.py) against Scrapy's LinkExtractor, its oracle, on real pages,
and its cache against resolving each link afresh, on generated URLs."""

from __future__ import annotations

import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from lxml import html
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.utils.response import get_base_url
from w3lib.html import strip_html5_whitespace

from searchcrawl.content.links import (
    CACHE_SIZE,
    CACHED_LENGTH,
    LINK_ATTRIBUTES,
    LINK_ELEMENTS,
    DocumentLinks,
    cache_key,
    directory,
    resolve,
)
from searchcrawl.crawl.spider import DOCUMENT_EXTENSIONS, ignored_suffixes
from searchcrawl.rules.urls import has_extension
from tests.conftest import html_pages

IGNORED = ignored_suffixes(DOCUMENT_EXTENSIONS)
# what the crawler followed before content/links.py: Scrapy's extractor, then the suffix test
SCRAPY = LinkExtractor(tags=("a", "area", "frame", "iframe"), attrs=("href", "src"), unique=True, deny_extensions=[])


def scrapy_links(response: HtmlResponse) -> list[str]:
    return [link.url for link in SCRAPY.extract_links(response) if not has_extension(link.url, IGNORED)]


def without_fragment_links(response: HtmlResponse) -> None:
    """Take the links to a fragment of the page itself (``#x``) out of the page's tree, which
    Scrapy's extractor reads too: DocumentLinks drops them, Scrapy's keeps them."""
    for element in response.selector.root.iter(*LINK_ELEMENTS):
        for name in LINK_ATTRIBUTES:
            if strip_html5_whitespace(element.get(name, "x")).startswith("#"):
                del element.attrib[name]


@pytest.mark.parametrize(("archive", "every"), [("scipy-lectures-site.tar.xz", 1), ("nutch-site.tar.xz", 3)])
def test_the_links_of_real_pages_are_scrapys(archive: str, every: int) -> None:
    """Every HTML page of the Sphinx site and every third of the Nutch Javadoc (1,546 pages in
    all), through one DocumentLinks, so that its cache serves page after page: the same URLs in
    the same order as Scrapy's LinkExtractor, but for links to the page's own fragments."""
    links, resolved = DocumentLinks(IGNORED), 0
    pages = html_pages(archive)
    for name, page in pages[every - 1 :: every]:
        url = f"http://intranet.example/{name}"
        response = HtmlResponse(url, body=page, headers={"Content-Type": "text/html; charset=utf-8"})
        without_fragment_links(response)
        expected = scrapy_links(response)
        assert links.of(response.selector.root, url, get_base_url(response), response.encoding) == expected, url
        resolved += len(expected)
    assert len(pages) > 200 and resolved > 3000
    assert 0 < len(links.cache) <= links.cache_size


def test_links_to_the_page_itself_are_dropped_unless_a_base_points_elsewhere() -> None:
    page = (
        b'<a href=" #top">top</a><a href="b.html#x">b</a><a href="mailto:x@y">m</a><a href="a.pdf">pdf</a><a href="c.zip">z</a>'
    )
    tree = html.document_fromstring(page)
    links = DocumentLinks(IGNORED)
    assert links.of(tree, "http://h/d/a.html", "http://h/d/a.html", "utf-8") == ["http://h/d/b.html#x", "http://h/d/a.pdf"]
    with_base = links.of(tree, "http://h/d/a.html", "http://h/e/", "utf-8")
    assert with_base == ["http://h/e/#top", "http://h/e/b.html#x", "http://h/e/a.pdf"]


def test_both_attributes_of_an_element_in_its_own_order_and_the_xhtml_namespace() -> None:
    tree = html.document_fromstring(b'<iframe src="s.html" href="h.html"></iframe><frame href="x.html" src="y.html">')
    assert DocumentLinks().of(tree, "http://h/", "http://h/", "utf-8") == [
        "http://h/s.html",
        "http://h/h.html",
        "http://h/x.html",
        "http://h/y.html",
    ]
    xhtml = html.fromstring('<html xmlns="http://www.w3.org/1999/xhtml"><body><a href="n.html">n</a></body></html>')
    for element in xhtml.iter():  # as an XML parser names them
        element.tag = "{http://www.w3.org/1999/xhtml}" + element.tag
    assert DocumentLinks().of(xhtml, "http://h/", "http://h/", "utf-8") == ["http://h/n.html"]


def test_the_cache_is_bounded_and_keeps_the_latest() -> None:
    links = DocumentLinks(cache_size=3)
    for name in "abcde":
        links.link(f"{name}.html", "http://h/d/x.html", "http://h/d/x.html", "utf-8")
    links.link("c.html", "http://h/d/y.html", "http://h/d/y.html", "utf-8")  # a hit: c is now the newest
    links.link("f.html", "http://h/d/x.html", "http://h/d/x.html", "utf-8")
    assert [key[0][1] for key in links.cache] == ["e.html", "c.html", "f.html"]


def test_long_values_directories_and_links_are_resolved_afresh_so_the_cache_stays_small() -> None:
    """A hostile site's pages of long, distinct links: each link is still right, but none is kept,
    and a full cache of the longest entries it keeps stays under 50 MB."""
    links = DocumentLinks()
    long_value, long_folder = "a" * (CACHED_LENGTH + 1) + ".html", "http://h/" + "d" * CACHED_LENGTH + "/"
    assert links.link(long_value, "http://h/x.html", "http://h/x.html", "utf-8") == f"http://h/{long_value}"
    assert links.link("b.html", long_folder + "x.html", long_folder + "x.html", "utf-8") == long_folder + "b.html"
    quoted = "\u00e9" * 100  # 100 characters, 600 once quoted
    assert links.link(quoted, "http://h/x.html", "http://h/x.html", "utf-8") == "http://h/" + "%C3%A9" * 100
    assert len(links.cache) == 0
    # the largest entries it keeps: a 512-character value of 4-byte characters that resolves to
    # nothing (no followed scheme), and 512-character links, both under a 512-character folder
    links = DocumentLinks(cache_size=1_000)
    folder = "http://h/" + "f" * (CACHED_LENGTH - 10) + "/"
    for number in range(1_000):
        wide = f"mailto:{number:06d}" + "\U0001f600" * CACHED_LENGTH
        assert links.link(wide[:CACHED_LENGTH], folder + "x.html", folder + "x.html", "utf-8") is None
        narrow = f"{number:06d}".ljust(CACHED_LENGTH - 20, "z")
        assert links.link(narrow, folder + "x.html", folder + "x.html", "utf-8") == folder + narrow
    assert len(links.cache) == 1_000
    entry = sum(deep_size(key) + sys.getsizeof(url) for key, url in links.cache.items()) / len(links.cache)
    full = (entry + sys.getsizeof(links.cache) / len(links.cache)) * CACHE_SIZE
    assert full < 50 * 2**20, f"a full cache of such entries: {full / 2**20:.0f} MB"


def deep_size(value: object) -> int:
    """The bytes of a tuple and what it holds (tuples and strings)."""
    return sys.getsizeof(value) + (sum(map(deep_size, value)) if isinstance(value, tuple) else 0)


def test_directory() -> None:
    assert directory("http://h/a/b.html?x=/y#z/") == "http://h/a/"
    assert directory("http://h/a;p/b;q") == "http://h/a;p/"
    assert directory("http://h") is None
    assert directory("http://h?x=/") is None
    assert directory("not a url") is None


# URLs made of the pieces that change what urljoin and w3lib do: dots, params, queries,
# fragments, percent signs, non-ASCII letters, schemes with and without an authority, control
# characters and whitespace
PIECES = st.sampled_from(
    ["a", "b.html", "/", "//", ".", "..", "./", "../", ";", ";p", "?", "?q=1", "#", "#f", "%", "%2F", "é", " ", "\t",
     "\x01", ":", "@", "[", "\\", "http:", "HTTP:", "https:", "mailto:", "file:", "http://", "http://h", "https://h2", "//h3",
     "http://:", "http://u@", "http://[::1]"]
)  # fmt: skip
VALUES = st.lists(PIECES, max_size=4).map("".join)
SEGMENTS = st.lists(st.sampled_from(["a", "b", "c.html", ";p", "é", "%41", ".", ".."]), max_size=3)
QUERIES = st.sampled_from(["", "?", "?x=1", "?x=/y", "#f", "?x#/f"])


@st.composite
def pages_sharing_keys(draw: st.DrawFn) -> tuple[str, str]:
    """Two page URLs of one scheme (which share a cache key for absolute URLs), often of one
    folder (which share one for relative paths too)."""
    scheme = draw(st.sampled_from(["http", "https", "file"]))

    def folder() -> str:
        host = draw(st.sampled_from(["h", "H:81", "u@h", "", "other.example"]))
        return f"{scheme}://{host}/" + "".join(segment + "/" for segment in draw(SEGMENTS))

    first_folder = folder()
    second_folder = first_folder if draw(st.booleans()) else folder()
    first, second = draw(st.lists(st.sampled_from(["", "x.html", "y", ";p", "é.html"]), min_size=2, max_size=2))
    return first_folder + first + draw(QUERIES), second_folder + second + draw(QUERIES)


@settings(max_examples=400, deadline=None)
# values whose link depends on more than the page's folder, each found by mutating cache_key
@example(pages=("http://h/x.html?q", "http://h/y.html"), value=";", encoding="utf-8")
@example(pages=("http://h/x.html?q", "http://h/y.html"), value="\x01?q", encoding="utf-8")
@example(pages=("http://h/x.html?q", "http://h/y.html"), value="http://", encoding="utf-8")
@example(pages=("http://h/x.html?q", "http://h/y.html"), value="//?q", encoding="utf-8")
# absolute URLs whose authority w3lib empties, so that the page's own host fills it (found by a
# hostile review: one site's page chose the host of another site's links)
@example(pages=("http://evil.example/p.html", "http://intranet.example/d/i.html"), value="http://:/admin", encoding="utf-8")
@example(pages=("http://evil.example/p.html", "http://intranet.example/d/i.html"), value="http://\\x", encoding="utf-8")
@example(pages=("http://evil.example/p.html", "http://intranet.example/d/i.html"), value="HTTP:// #", encoding="utf-8")
@given(pages=pages_sharing_keys(), value=VALUES, encoding=st.sampled_from(["utf-8", "latin-1"]))
def test_a_cached_link_is_the_link_resolved_afresh(pages: tuple[str, str], value: str, encoding: str) -> None:
    """Whatever a value and two pages of one scheme or one folder: the link the cache gives on the
    second page is the one resolving it there gives (and a value resolved afresh has no key)."""
    first, second = pages
    links = DocumentLinks()
    links.link(value, first, first, encoding)
    assert links.link(value, second, second, encoding) == resolve(value, second, second, encoding)
    if cache_key(value, first, first) == cache_key(value, second, second) is not None:
        assert resolve(value, first, first, encoding) == resolve(value, second, second, encoding)
