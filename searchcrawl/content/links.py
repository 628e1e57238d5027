"""The links of an HTML page: what Scrapy's ``LinkExtractor`` finds, at a fraction of its cost.

``LinkExtractor(tags=("a", "area", "frame", "iframe"), attrs=("href", "src"), unique=True)``
walks every element of the page in Python and, for each link, joins it twice, quotes it, parses
it again to check its scheme and computes its text (which the crawler never reads): the largest
stage of a crawl's CPU on link-heavy pages (tests/benchmarks/README.md). ``DocumentLinks`` gives
the same URLs in the same order, by the same steps (``resolve``), but

- lxml finds the elements (``iter`` with the tag names, in C);
- each distinct attribute value of a page is resolved once;
- a link to a fragment of the page itself (``#section``: a third of the Javadoc's links) is
  dropped before it is resolved: it is the page, fetched already, never a link to follow (on a
  page with a ``<base href>`` of another URL, ``#section`` is a link to that URL, and is kept);
  the same page written another way (``index.html#top`` on index.html) is still found, in its
  own place in the page, where Scrapy's list would have had it first at the dropped one's;
- a resolved link is remembered, in a bounded cache, by what its result depends on: a relative
  path (``../api/index.html``, the sidebar and navigation links that recur on every page of a
  folder) by the base URL's directory, an absolute URL by the base URL's scheme. Values whose
  resolution could depend on more of the base URL (empty, ``?query``, ``#fragment``, ``;params``,
  ``//`` network paths, a scheme without an authority or with an authority that is not a plain
  host name, control characters) and pages with a
  ``<base href>`` of their own are resolved afresh on each page.
- the cache is bounded in entries (``CACHE_SIZE``) and in each entry's size: a value, a base
  directory or a link longer than ``CACHED_LENGTH`` characters is resolved afresh, so that
  hostile pages of long, distinct links cannot make it hold more than some 50 MB.

``tests/content/test_links.py`` checks the URLs against Scrapy's ``LinkExtractor`` on every page
of the shared corpora's real sites, and the cache against resolving afresh on generated URLs.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from urllib.parse import urljoin

from lxml import etree
from w3lib.html import strip_html5_whitespace
from w3lib.url import safe_url_string

from searchcrawl.rules.urls import first_of, has_extension

XHTML = "{http://www.w3.org/1999/xhtml}"
LINK_TAGS = ("a", "area", "frame", "iframe")
LINK_ELEMENTS = (*LINK_TAGS, *(XHTML + tag for tag in LINK_TAGS))  # Scrapy strips the XHTML namespace too
LINK_ATTRIBUTES = ("href", "src")
FOLLOWED_SCHEMES = frozenset({"http", "https", "file", "ftp"})  # what LinkExtractor keeps (_is_valid_url)
SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")  # as urllib.parse recognises a scheme
PLAIN_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]*")
CONTROL = re.compile(r"[\x00-\x1f]")  # urllib removes or strips some of them: resolved afresh
CACHE_SIZE = 16_384
CACHED_LENGTH = 512  # longer values, directories or links are not cached (ordinary ones: under 200)


def resolve(value: str, base_url: str, response_url: str, encoding: str) -> str | None:
    """One attribute value as ``LinkExtractor`` resolves it: stripped of HTML5 whitespace, joined
    to the base URL, made safe in the page's encoding, joined to the page's URL; None when it is
    bogus or not of a followed scheme."""
    try:
        url = urljoin(base_url, strip_html5_whitespace(value))
        url = safe_url_string(url, encoding=encoding)
    except ValueError:
        return None
    url = urljoin(response_url, url)
    return url if url.split("://", 1)[0] in FOLLOWED_SCHEMES else None


def directory(url: str) -> str | None:
    """``url`` up to the last ``/`` of its path (what a relative path is joined to), or None when
    its path has no ``/``."""
    start = url.find("://")
    if start < 0:
        return None
    start += 3
    end = first_of(url, "?#", start)
    path = url.find("/", start, end)
    if path < 0:
        return None
    return url[: url.rfind("/", path, end) + 1]


def cache_key(value: str, base_url: str, response_url: str) -> Hashable | None:
    """What ``resolve(value, base_url, response_url, ...)`` depends on besides the encoding, when
    that is less than the whole base URL; None when the value is resolved afresh."""
    if base_url != response_url:
        return None  # the page has a <base href> of its own: rare, and not worth reasoning about
    value = strip_html5_whitespace(value)
    if len(value) > CACHED_LENGTH:
        return None
    if not value or value[0] in "?#;" or value.startswith("//") or CONTROL.search(value):
        return None
    scheme = SCHEME.match(value)
    if scheme is None:  # a relative path: joined to the base's directory
        folder = directory(base_url)
        return None if folder is None or len(folder) > CACHED_LENGTH else (folder, value)
    base_scheme = base_url.split(":", 1)[0].lower()
    if value[: scheme.end() - 1].lower() != base_scheme:
        return ("", value)  # another scheme (mailto:, javascript:, https: from http:): kept as it is
    rest = value[scheme.end() :]
    if rest.startswith("//") and plain_host(rest):
        return (base_scheme, value)  # an absolute URL with a host: nothing of the base is used
    return None


def plain_host(rest: str) -> bool:
    """Whether ``//authority...`` names a host of letters, digits, dots and hyphens (with or
    without userinfo and port). Any other authority may come out of w3lib empty (``http://:/x``,
    ``http://\\x`` and ``http:// #`` all become ``http:///...``), and the page's own host and
    path then fill it in: such a link is resolved afresh on each page, never taken from another
    site's page."""
    end = first_of(rest, "/?#\\", 2)
    host = rest[2:end].rpartition("@")[2].partition(":")[0]
    return PLAIN_HOST.fullmatch(host) is not None


class DocumentLinks:
    """The followed links of HTML pages, with a bounded cache of resolved values shared by the
    pages of one crawl; links to files of the ``ignored`` suffixes are dropped."""

    def __init__(self, ignored: tuple[str, ...] = (), cache_size: int = CACHE_SIZE) -> None:
        self.ignored = ignored
        self.cache_size = cache_size
        self.cache: OrderedDict[Hashable, str | None] = OrderedDict()

    def values(self, root: etree._Element) -> Iterable[str]:
        """The page's distinct link attribute values, in document order."""
        values: dict[str, None] = {}
        for element in root.iter(*LINK_ELEMENTS):
            href, src = element.get("href"), element.get("src")
            if href is not None and src is not None:  # both: in the element's own order
                for name, value in element.items():
                    if name in LINK_ATTRIBUTES:
                        values[value] = None
            elif href is not None:
                values[href] = None
            elif src is not None:
                values[src] = None
        return values

    def of(self, root: etree._Element, response_url: str, base_url: str, encoding: str) -> list[str]:
        """The page's links, each once, in document order, but for those to the page itself."""
        return self.followed_in(self.resolved(root, response_url, base_url, encoding))

    def resolved(self, root: etree._Element, response_url: str, base_url: str, encoding: str) -> dict[str, str | None]:
        """Each distinct link attribute value of the page, in document order, with its link
        (``link``; None for one to the page itself, or none followed). Made once a page: its
        links and its anchors' targets both read it (issue 102: the anchors resolved each value
        a second time, a quarter of a millisecond a Javadoc page)."""
        same_page = base_url == response_url
        return {
            value: None
            if same_page and strip_html5_whitespace(value).startswith("#")
            else self.link(value, base_url, response_url, encoding)
            for value in self.values(root)
        }

    @staticmethod
    def followed_in(resolved: dict[str, str | None]) -> list[str]:
        """The links of a page's ``resolved`` values, each once, in document order."""
        return list(dict.fromkeys(url for url in resolved.values() if url is not None))

    def link(self, value: str, base_url: str, response_url: str, encoding: str) -> str | None:
        """One attribute value's link (``resolve``), from the cache when its key is known."""
        key = cache_key(value, base_url, response_url)
        if key is None:
            return self.followed(resolve(value, base_url, response_url, encoding))
        key = (key, encoding)
        cache = self.cache
        try:
            cache.move_to_end(key)
            return cache[key]
        except KeyError:
            url = self.followed(resolve(value, base_url, response_url, encoding))
            if url is not None and len(url) > CACHED_LENGTH:
                return url  # made long by quoting: resolved afresh each time
            cache[key] = url
            if len(cache) > self.cache_size:
                cache.popitem(last=False)
            return url

    def followed(self, url: str | None) -> str | None:
        """``url`` unless it is None or a file of an ignored suffix."""
        return None if url is None or has_extension(url, self.ignored) else url
