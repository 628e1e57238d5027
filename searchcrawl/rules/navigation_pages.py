"""Navigation pages and copies, kept out of the index by rule (issue 75): pages a documentation
generator makes to move around its pages, or copies of them, which answer no question yet match
every word of the pages they list or copy, and crowd the hits (measured on the judged sets,
tests/benchmarks/README.md "Search quality").

A source's ``navigation_pages`` is a list of URL path patterns (fnmatch: ``*`` crosses ``/``),
matched against the path of a page; by default the ones recognisable by their generator's fixed
names (``DEFAULT``): Javadoc's lists and indexes (``class-use/``, ``allclasses``, ``index-all``,
``index-files/``, the trees, ``package-use``, the deprecated, constant and serialized lists, its
help page) and Sphinx's (the ``_sources/`` copies of every page's source text, the general and
module indexes). ``navigation_pages = []`` indexes them all. A matching page is fetched, its links
followed (a Javadoc site is reached through them), and it is not indexed: status 917, as a robots
``noindex`` page. The crawl and `scrapy explain` decide it here alike.

Such a page keeps its validators like an indexed one (issue 91): a maintenance crawl asks it
conditionally while it is still one (``revalidated``), and a 304 keeps it out as before. Without
them, a Javadoc site's maintenance crawl fetched its 4,459 navigation pages whole every time.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from searchcrawl.rules.status_codes import Status

DEFAULT: tuple[str, ...] = (
    # Javadoc
    "*/class-use/*",
    "*/allclasses.html",
    "*/allclasses-*.html",
    "*/allclasses-index.html",
    "*/allpackages-index.html",
    "*/index-all.html",
    "*/index-files/index-*.html",
    "*/overview-tree.html",
    "*/package-tree.html",
    "*/package-use.html",
    "*/deprecated-list.html",
    "*/constant-values.html",
    "*/serialized-form.html",
    "*/help-doc.html",
    # Sphinx
    "*/_sources/*",
    "*/genindex.html",
    "*/py-modindex.html",
)
MAX_PATTERNS = 200
MAX_PATTERN_CHARS = 500


def effective_patterns(patterns: Sequence[str] | None) -> list[str]:
    """The patterns in force: the source's, or DEFAULT."""
    return list(DEFAULT if patterns is None else patterns)


def check_pattern(pattern: str) -> str:
    """A pattern as a source gives it, or ValueError: it is matched against a path, which starts
    with ``/``, so one that starts with neither ``/`` nor ``*`` would never match."""
    if not pattern.startswith(("/", "*")):
        raise ValueError(f"{pattern!r} matches a URL's path: start it with / or *")
    return pattern


def navigation_pattern(url: str, patterns: Sequence[str] | None) -> str | None:
    """The first of ``patterns`` (None: DEFAULT) that ``url``'s path matches, or None: the page
    is indexed."""
    path = urlsplit(url).path or "/"
    for pattern in DEFAULT if patterns is None else patterns:
        if fnmatchcase(path, pattern):
            return pattern
    return None


def revalidated(url: str, status: int | None, patterns: Sequence[str] | None) -> bool:
    """Whether a page out of the index (its row's ``status``) may be asked conditionally: one kept
    out as a navigation page (917) that the rules (``patterns``) still keep out. A 304 then says
    all a fetch would: the same page, kept out, its links the ones the document table knows (a
    maintenance crawl queues them all). One the rules no longer keep out is fetched whole, to be
    indexed."""
    return status == Status.NAVIGATION_PAGE and navigation_pattern(url, patterns) is not None
