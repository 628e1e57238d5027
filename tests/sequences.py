"""A model-based test over sequences of crawls.

A small local site (about 15-30 pages) is changed between crawls by a generator driven by
``random.Random(seed)``; an oracle written from the rules below says, after every crawl, what the
Solr index of each source must hold and what the run's delta report must say. Everything is real:
an HTTP server on 127.0.0.1 (``tests.conftest.Site``), ``scrapy crawl`` subprocesses, SQLite, the
dev Solr. Now and then (seeded) a crawl is killed with SIGKILL in the middle and resumed, or runs
while Solr is down (it must exit 4). Two sources crawl the same site in the same steps:

- ``A``: seed ``/index.html``, the whole site but ``/out/`` (a path exclusion of the source);
- ``B``: seed ``/sub/index.html``, only ``/sub/`` (a path inclusion): a subtree of ``A``.

With ``--processes N`` every crawl is run by N local processes (the sources' ``processes``),
which lease two URLs at a time so that all of them crawl this small site; a crawl killed with
SIGKILL is its first process, and the others must end with it. The oracle is the same: how
many processes crawl changes nothing a user can see.

Run it on its own (it starts its own dev Solr and temporary data dir)::

    .venv/bin/python -m tests.sequences --seeds 1,2,3 --crawls 300 [--processes 2] [--sitemap]

``tests/e2e/test_sequences.py`` runs one short sequence under pytest, with one process (semantic
search on) and two, and with a sitemap.

The rules the oracle follows (the crawler's contract)
-----------------------------------------------------
1. A URL becomes *known* to a source when a crawl meets it (a seed, a link of a fetched page inside
   the boundary, a redirect target). Every later crawl requests every known URL again, whether or
   not a page still links to it (``orphans = "keep"``).
2. After a finished crawl the source's documents are exactly the known URLs that in that crawl
   answered 200 with an HTML page, are inside the boundary (or are the target of a 302/307 from a
   URL of the source that still redirects there in that crawl), carry no robots noindex, are
   allowed by robots.txt and are not a duplicate; each with the title and text served in that crawl.
3. 404, 410: removed. 301/308: the old URL is removed, the target indexed if inside the boundary.
   302/307: the redirecting URL has no document, the target is indexed even outside the boundary
   while the redirect stands; when it goes away an outside target leaves in that crawl.
4. Transient failures (503): the document stays with its old content and leaves after
   ``max_failures`` (3) consecutive failing crawls. robots.txt answering 503 is a transient failure
   of every URL of the site. A robots.txt Disallow removes a URL; Allow brings it back next crawl.
5. Same title AND same text: duplicates, exactly one of the group indexed: the one another member
   names ``rel=canonical`` (DECISION D14), else any. When the indexed one leaves, another takes
   its place in that crawl or the next one.
6. noindex on: removed in that crawl; off: indexed again in that crawl.
7. Sources are independent: Solr id ``<source>!<url>``, field ``source``, field ``url``.
8. A Solr outage (exit 4) changes nothing in Solr; the next finished crawl makes the index equal
   the oracle. A crawl killed with -9 is resumed by the next ``scrapy crawl``; then the index
   equals the oracle.
9. Delta report: ``new`` exactly the URLs that entered the index in the run, ``deleted`` exactly
   those that left it, ``changed`` those in the index before and after whose content changed. A URL
   that stays out of the index with the same status as before is not listed as failed, deleted,
   excluded or redirected again. Checked loosely (at most those URLs) for a crawl that was killed and resumed, for
   the crawl that ran while Solr was down, and for the crawl right after it.
10. Anchor text: each document's ``anchor`` field holds the words of the links to it on the
   source's pages in the index (D17).

Decisions where the rules leave a case open (each marked ``DECISION`` where the code makes it)
----------------------------------------------------------------------------------------------
D1 "A link of a fetched page inside the boundary" is read as "a link, inside the boundary, of any
   fetched page": links of a noindex page, of a duplicate and of a 302 target outside the boundary
   count (README: a temporary target's "own links are then checked against the boundary as usual").
D2 A 302/307 target outside the boundary is *not* a known URL of its own: it is requested only
   through the redirect (README, maintenance crawls: known URLs "but those a rule keeps out").
D3 A redirect "goes away" when its URL answers anything but that redirect (200, 404, 410, 301, a
   302 elsewhere), or when robots.txt disallows the redirecting URL (the redirect is then not met
   in that crawl). A transient failure of the redirecting URL (its own 503, or robots.txt 503) is
   not the redirect going away: the outside target keeps its document with its old content, and
   that crawl counts as a failing crawl of the target too (it leaves after max_failures of them).
D4 robots.txt answering 503 counts as one failing crawl of every URL the source knows (and of the
   outside targets it holds); with the failing crawls before it, a document can reach
   max_failures and leave in that crawl ("nothing is removed for it alone").
D5 "text" is the page's visible body text, which is what Solr's ``content`` holds. The generator
   writes links with empty anchor text (their words in a title attribute: D17), so a page's links
   never change its text: two pages with
   the same title and paragraph are duplicates whatever they link to. An empty paragraph is a
   valid page: title only, no ``content`` field.
D6 A document kept through a transient failure takes part in duplicate groups with its old
   content; a group is one title+text, whoever holds it. One that another member replaces leaves
   the index as a duplicate: its status is no longer its failure's (seed 5, crawl 54: a page
   behind a login wall, replaced by a copy, was reported failed again in the next crawl, rightly).
D7 Lag (rule 5) is allowed for a group when, after the source's previous crawl, the index held
   that title+text at a URL that is not in the group any more; then zero or one member may be
   indexed. Otherwise exactly one. Not when each such URL answered this crawl with another
   title or text: its copies hold the content in that crawl, those fetched before it too
   (docs/maintenance.md; issue 99: the copy came one crawl late). Which member is indexed is
   read back from Solr (not pinned).
D8 ``changed`` must list every URL indexed before and after whose title or content in Solr
   differs, and may list one whose served HTML changed without a change of title or text (a new
   Last-Modified/ETag: ``modified_when`` includes ``date`` and ``etag``); nothing else.
D9 "Same status" (rule 9) compares the oracle's outcome of the URL in the two crawls: 404, 410,
   503, 301, 302, 307, 308, noindex, duplicate, robots (disallowed), excluded (outside the
   boundary, not reached through a redirect), robots503. ``new``/``deleted`` are compared with
   what actually entered and left Solr around the crawl (the Solr check itself compares Solr with
   the oracle).
D10 Rule 9's "crawl right after a Solr outage" is read as both the outage crawl (its run finished,
   only Solr lagged) and the crawl after it; both are checked loosely. Which member of a duplicate
   group the outage crawl chose (a canonical copy come back replaces the one indexed) is read from
   the document table, as Solr is read otherwise: the next crawl pushes it first (seed 16, crawl
   57, two processes). The crawl after it first
   pushes what the outage left pending, so its ``deleted`` may name any document the outage
   crawl allowed, a member of a lagging group too (seed 6, crawl 50: a page fetched after its
   holder's 410 was cached, pushed, then replaced by the holder come back).
D11 The depth rule is not modelled: the sources set ``max_depth = 100``, deeper than any path of
   this site, so depth never excludes a URL.
D12 To keep the model exact the generator never builds redirect chains: a page that is a redirect
   target never becomes a redirect, and a redirect only ever points at a page that is not one.
D13 Rule 9's "same status" is applied literally to every status, transient ones included: a URL
   out of the index that answers 503 in two crawls in a row (say, after max_failures took it out)
   is not listed as failed again in the second; a URL robots.txt keeps disallowing is not listed
   as excluded again; a 302 target outside the boundary that keeps answering 410 (or keeps being a
   duplicate) through a standing redirect is not listed as excluded.
D14 Canonical links (README, "Duplicates"): a page of the site may name another page
   ``rel=canonical``. A group's holder is a member that another member names canonical (among
   several, one naming itself if any), else a member naming itself, else any member; which one
   of those is read back from Solr. Only members count: a canonical outside the group (or outside
   the source's boundary) is no holder. The generator names a canonical only as a page becomes a
   copy (``late_copy``: a copy that arrives later, half the time linked by no page any more,
   naming a member of the group), and a page's canonical goes when its title or text changes:
   its canonical never changes while its content stays (a change a checksum-only page would not
   show). A member may move away for good (``copy_moves_away``: 301), after which the group holds
   one of the rest. After every crawl, every URL the document table says is indexed must be in
   Solr (issue 53, item 26).
D15 Soft errors (issue 57): a page may answer 200 with the site's login page, 302 to the single
   sign-on's login page, or 200 with a "Page not found" page. None is indexed, and none has its
   links followed (each links a trap page that must never be known). The indexed version stays
   as through a 503: the sources sign in nowhere, so a login page says the page went private and
   counts, as a not-found page does (it leaves after max_failures; a login page on an origin a
   source signs in to is its lost session, which does not count: tests/e2e/test_soft_errors.py). A
   redirect standing before a soft error still stands (D3), as for a 503.
D16 Sitemaps (``--sitemap``, issue 58's bulk sparing): the site serves ``/sitemap.xml``, named in
   both sources' ``sitemaps``, an honest one: every page that answers 200 with its HTML, its
   ``lastmod`` the second its HTML last changed in (not the file's modification time, which is
   set 2 s ahead for Last-Modified's sake; the crawler reads a lastmod as the end of its second);
   a page answering anything else is not listed. Its URLs join each crawl as seeds (rule 1: known from then on;
   outside a source's boundary, excluded as a link is). A maintenance crawl does not request an
   indexed page whose lastmod is not newer than its last fetch: the index must still equal the
   oracle, for the page serves what was last read of it. What it found: a page that changed and
   then failed (``changed_then_failed``: 503 or a login page) was spared when it answered again,
   its new version never read, because the failed request counted as its fetch (seeds 1-3 of 30
   crawls); and a sitemap no request reached (robots.txt refusing every known page of source B)
   was not read, its entries a crawl late (seed 6, crawl 11). Both in tests/e2e/test_sitemaps.py.
D17 Anchor text (issue 100): a page's links carry their words in a ``title`` attribute (D5: not its
   text), one of WORDS or none, drawn from a hash of the page, the link and the page's
   ``wording``, which a generator of its own (``rewords``) changes now and then without touching
   the page's title or text: the site's other changes stay the seed's. After every finished crawl
   each document's ``anchor`` field in Solr holds exactly the words the links to it say on the
   pages of its source that Solr holds (itself left out), each such page as the crawl last
   fetched it 200 with its HTML (one kept through a failure: its old links); every page is
   public, so every such page counts. The field is set on a page that changed, and in place on
   one that did not (a 304, a sitemap's spared page) when a page linking it changed, left or came.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pysolr

from searchcrawl.semantic.passage_index import ACCESS_FIELDS
from searchcrawl.semantic.passages import split_passages
from searchcrawl.store.deltas import run_report
from searchcrawl.system.processes import process_alive
from tests.conftest import InFlight, Project, Site, children, free_port, popen_scrapy, wait_for

MAX_FAILURES = 3  # the sources' default max_failures
REDIRECTS = (301, 302, 307, 308)
# Soft errors (content/soft_errors.py): the page answers, but not with itself
LOGIN_PAGE = 1200  # 200 with the site's login page: 928, counted (the sources sign in nowhere)
LOGIN_REDIRECT = 1302  # 302 to the single sign-on's login page: 928, counted
SOFT_404 = 1404  # 200 with a "Page not found" page: 929, counted like a 503
SOFT_ERRORS = {LOGIN_PAGE: "200 login page", LOGIN_REDIRECT: "302 to the login page", SOFT_404: "200 not-found page"}
LOGIN_HTML = (
    b'<html><head><title>Sign in</title></head><body><form method="post" action="/sso/login">'
    b'<input name="user"><input type="password" name="pw"></form><a href="/trap/forgot.html">Forgot?</a></body></html>'
)
TEMPORARY = (302, 307)
PERMANENT = (301, 308)
# Every crawl pushes to Solr during itself as well as at its end, whatever the machine's speed: a
# push every 0.2 s (SEARCHCRAWL_PUSH_INTERVAL) instead of every 2 s, which a crawl of this small
# site often ends before (seed 89 once failed only on a machine slow enough to push mid-crawl).
PUSHING = ("-s", "SEARCHCRAWL_PUSH_INTERVAL=0.2")
# With processes = N, every process crawls this small site: each leases two URLs at a time and
# has two requests in flight (at 16, the first leases the whole site before the others are up),
# and the site answers in SHARED_SLOW seconds.
SHARING = ("-s", "SEARCHCRAWL_FRONTIER_BATCH=2", "-s", "CONCURRENT_REQUESTS=2")
SHARED_SLOW = 0.03
CRAWL_TIMEOUT = 300  # seconds for one scrapy command

WORDS = (
    "budget travel policy holiday pension laptop printer network badge parking canteen training "
    "security password backup server invoice contract meeting calendar project release roadmap "
    "handbook safety office desk visitor payroll expense receipt vendor license archive manual "
    "upgrade ticket helpdesk wiki intranet report quarter forecast audit review design planning"
).split()

# The site: paths served from folders whose validators differ (tests.conftest.Site): /lm/, /sub/,
# /out/ and /index.html send Last-Modified (If-Modified-Since -> 304), /etag/ an ETag
# (If-None-Match -> 304), /plain/ no validator at all (the crawler compares checksums).
INITIAL = (
    ["/index.html"]
    + [f"/lm/p{i:02d}.html" for i in range(5)]
    + [f"/etag/p{i:02d}.html" for i in range(3)]
    + [f"/plain/p{i:02d}.html" for i in range(3)]
    + ["/sub/index.html"]
    + [f"/sub/p{i:02d}.html" for i in range(4)]
    + [f"/out/p{i:02d}.html" for i in range(3)]
)
POOL = (  # pages a "new page" mutation adds, in this order
    [f"/lm/p{i:02d}.html" for i in range(5, 9)]
    + [f"/sub/p{i:02d}.html" for i in range(4, 7)]
    + ["/etag/p03.html", "/plain/p03.html", "/out/p03.html"]
)
ROBOTS_DIRS = ("/lm/", "/etag/", "/plain/", "/sub/", "/out/")


def norm(text: str | None) -> str:
    return " ".join((text or "").split())


Key = tuple[str, str]  # (title, text), normalised


# --- the site model ---------------------------------------------------------------------------


@dataclass
class Page:
    path: str
    title: str
    text: str
    links: list[str] = field(default_factory=list)
    status: int = 200  # 200, 404, 410, 503, 301, 302, 307, 308, or a soft error (SOFT_ERRORS)
    target: str | None = None  # redirect target (a path)
    noindex: bool = False
    canonical: str | None = None  # the path it names rel=canonical (DECISION D14)
    wording: int = 0  # which words its links' titles say (DECISION D17): ``rewords`` changes it

    @property
    def key(self) -> Key:
        return (norm(self.title), norm(self.text))

    def link_title(self, href: str) -> str:
        """DECISION D17: the title attribute of its link to ``href``: a word of WORDS (none for
        about one link in five), drawn from a hash, not from the sequence's random generator."""
        digest = int(hashlib.sha256(f"{self.path}>{href}#{self.wording}".encode()).hexdigest(), 16)
        return "" if digest % 5 == 0 else WORDS[digest // 5 % len(WORDS)]

    def anchors(self) -> dict[str, set[str]]:
        """DECISION D17: what its links say of each page they link (not itself): their titles."""
        said: dict[str, set[str]] = {}
        for href in self.links:
            title = self.link_title(href)
            if title and href != self.path:
                said.setdefault(href, set()).add(title)
        return said

    def html(self) -> str:
        head = '<meta name="robots" content="noindex">' if self.noindex else ""
        if self.canonical:
            head += f'<link rel="canonical" href="{self.canonical}">'
        # DECISION D5: links with empty anchor text, so that they are not part of the page's text;
        # D17: their words in a title attribute
        anchors = "".join(
            f'<a href="{href}" title="{title}"></a>' if (title := self.link_title(href)) else f'<a href="{href}"></a>'
            for href in self.links
        )
        return f"<html><head><title>{self.title}</title>{head}</head><body><p>{self.text}</p>{anchors}</body></html>"

    def describe(self) -> str:
        if self.status in SOFT_ERRORS:
            return SOFT_ERRORS[self.status]
        if self.status in REDIRECTS:
            return f"{self.status} to {self.target}"
        if self.status != 200:
            return str(self.status)
        canonical = f" canonical {self.canonical}" if self.canonical else ""
        return ("200 noindex" if self.noindex else "200") + canonical


class SiteModel:
    """What the site serves: pages (by path), robots.txt rules, robots.txt answering 503."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.pages: dict[str, Page] = {}
        self.pool = list(POOL)
        self.robots: list[tuple[str, str]] = []  # ("Disallow" | "Allow", path prefix)
        self.robots_503 = False
        self.sitemap = False  # DECISION D16: /sitemap.xml, honest, of the pages that answer 200
        self.written: dict[str, bytes] = {}  # path -> bytes on disk
        self.mtimes: dict[str, float] = {}
        self.changed_at: dict[str, float] = {}  # path -> when its bytes last changed (D16: its lastmod)
        self.robots_written: bytes | None = None
        self.words_used: set[str] = set()
        for path in INITIAL:
            self.pages[path] = Page(path, self.new_title(path), self.new_text())
        self.initial_links()

    # content
    def new_title(self, path: str) -> str:
        name = path.strip("/").replace(".html", "").replace("/", " ")
        return f"{name} {self.rng.choice(WORDS)}"

    def new_text(self) -> str:
        while True:  # never a text that was served before: a change is always a change
            text = " ".join(self.rng.sample(WORDS, 6))
            if text not in self.words_used:
                self.words_used.add(text)
                return text

    def initial_links(self) -> None:
        inner = [p for p in INITIAL if p.startswith(("/lm/", "/etag/", "/plain/"))]
        self.pages["/index.html"].links = inner + ["/sub/index.html", "/out/p00.html"]
        self.pages["/sub/index.html"].links = [p for p in INITIAL if p.startswith("/sub/p")] + ["/lm/p00.html"]
        for path, page in self.pages.items():
            if path.endswith("index.html") or path.startswith("/out/"):
                continue
            page.links = self.rng.sample([p for p in INITIAL if p != path], 2)
        for path in INITIAL:
            if path.startswith("/out/"):
                self.pages[path].links = [self.rng.choice(inner)]

    # queries
    def live(self) -> list[str]:
        return sorted(self.pages)

    def redirect_targets(self) -> set[str]:
        return {p.target for p in self.pages.values() if p.status in REDIRECTS and p.target}

    def allowed(self, path: str) -> bool:
        """RFC 9309 for plain prefixes: the longest match wins, Allow wins a tie."""
        best: tuple[int, bool] | None = None
        for kind, prefix in self.robots:
            if path.startswith(prefix):
                candidate = (len(prefix), kind == "Allow")
                best = candidate if best is None else max(best, candidate)
        return best is None or best[1]

    def sitemap_paths(self) -> list[str]:
        """DECISION D16: the pages the sitemap lists: those that answer 200 with their HTML."""
        return sorted(path for path, page in self.pages.items() if page.status == 200)

    def sitemap_xml(self, site_url: str) -> bytes:
        entries = "".join(
            f"<url><loc>{site_url}{path.lstrip('/')}</loc>"
            f"<lastmod>{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(self.changed_at[path]))}</lastmod></url>"
            for path in self.sitemap_paths()
        )
        return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()

    def robots_txt(self) -> bytes | None:
        if not self.robots:
            return None
        lines = ["User-agent: *"] + [f"{kind}: {prefix}" for kind, prefix in self.robots]
        return ("\n".join(lines) + "\n").encode()

    def describe(self) -> str:
        lines = [
            f"  {path}: {page.describe()} title={page.title!r} text={page.text!r} links={page.links}"
            for path, page in sorted(self.pages.items())
        ]
        robots = "503" if self.robots_503 else (self.robots_txt() or b"(none: 404)").decode().replace("\n", " | ")
        return "\n".join(lines + [f"  robots.txt: {robots}"])

    # serving
    def write(self, root: Path, site: Site) -> None:
        """Bring the folder and ``site.responses`` to the model's state. Files are rewritten only
        when their bytes change, each time with a later modification time (Last-Modified)."""
        site.responses.clear()
        for path, page in self.pages.items():
            file = root / path.lstrip("/")
            if page.status == 404:
                if file.exists():
                    file.unlink()
                self.written.pop(path, None)
                continue
            body = page.html().encode()
            if self.written.get(path) != body:
                self.touch(file, body, path)
            if page.status == 410:
                site.responses[path] = (410, {"Content-Type": "text/html"}, b"<html><body>gone</body></html>")
            elif page.status == 503:
                site.responses[path] = (503, {"Content-Type": "text/html"}, b"<html><body>busy</body></html>")
            elif page.status == LOGIN_PAGE:
                site.responses[path] = (200, {"Content-Type": "text/html"}, LOGIN_HTML)
            elif page.status == LOGIN_REDIRECT:
                site.redirect(path, 302, f"{site.url}sso/login?next={path}")
            elif page.status == SOFT_404:
                missing = f"<html><head><title>Page not found</title></head><body>No {path} here. <a href='/trap/x.html'>x</a>"
                site.responses[path] = (200, {"Content-Type": "text/html"}, f"{missing}</body></html>".encode())
            elif page.status in REDIRECTS:
                assert page.target
                site.redirect(path, page.status, site.url + page.target.lstrip("/"))
        robots = root / "robots.txt"
        text = self.robots_txt()
        if text is None:
            if robots.exists():
                robots.unlink()
            self.written.pop("/robots.txt", None)
        elif self.written.get("/robots.txt") != text:
            self.touch(robots, text, "/robots.txt")
        if self.robots_503:
            site.responses["/robots.txt"] = (503, {"Content-Type": "text/plain"}, b"busy")
        if self.sitemap:
            site.responses["/sitemap.xml"] = (200, {"Content-Type": "application/xml"}, self.sitemap_xml(site.url))

    def touch(self, file: Path, body: bytes, path: str) -> None:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(body)
        # HTTP dates have 1 s resolution: every version of a file gets a later Last-Modified
        mtime = max(self.mtimes.get(path, 0) + 2, time.time() + 2)
        os.utime(file, (mtime, mtime))
        self.mtimes[path] = mtime
        self.changed_at[path] = time.time()
        self.written[path] = body


# --- the mutation generator -----------------------------------------------------------------------


class Mutator:
    """Seeded changes to the site between two crawls; each returns a readable line, or None when
    it does not apply to the site as it is."""

    def __init__(self, model: SiteModel, rng: random.Random) -> None:
        self.model = model
        self.rng = rng
        self.kinds: list[tuple[Callable[[], str | None], float]] = [
            (self.edit_text, 3),
            (self.edit_title, 1),
            (self.empty_text, 0.5),
            (self.add_link, 1.5),
            (self.remove_link, 1.5),
            (self.new_page, 1),
            (lambda: self.set_status(404), 1.5),
            (lambda: self.set_status(410), 1),
            (lambda: self.set_status(503), 1.5),
            (lambda: self.set_status(LOGIN_PAGE), 0.8),
            (lambda: self.set_status(LOGIN_REDIRECT), 0.6),
            (lambda: self.set_status(SOFT_404), 0.8),
            (self.restore, 3.5),
            (lambda: self.redirect(301), 0.7),
            (lambda: self.redirect(308), 0.3),
            (lambda: self.redirect(302), 1.2),
            (lambda: self.redirect(307), 0.5),
            (self.noindex_on, 1),
            (self.noindex_off, 1),
            (self.duplicate, 1.5),
            (self.late_copy, 1.2),
            (self.copy_moves_away, 0.7),
            (self.robots_disallow, 1),
            (self.robots_allow, 0.5),
            (self.robots_remove, 1.2),
        ]
        if model.sitemap:  # DECISION D16 (a list of its own: the other sequences draw as before)
            self.kinds.append((self.changed_then_failed, 1))

    def step(self, count: int) -> list[str]:
        done: list[str] = []
        attempts = 0
        while len(done) < count and attempts < 100:
            attempts += 1
            kind = self.rng.choices([k for k, _ in self.kinds], [w for _, w in self.kinds])[0]
            line = kind()
            if line:
                done.append(line)
        return done

    def pick(self, paths: list[str]) -> str | None:
        return self.rng.choice(sorted(paths)) if paths else None

    def page(self, condition: Callable[[Page], bool] = lambda page: True) -> Page | None:
        path = self.pick([p for p, page in self.model.pages.items() if condition(page)])
        return self.model.pages[path] if path else None

    def changed_then_failed(self) -> str | None:
        """DECISION D16: a page gets new text (its lastmod: now) and fails before the next crawl
        reads it (503, or a login page in its place): when it answers again, its lastmod is older
        than the failed request, yet newer than what was last read of it."""
        page = self.page(lambda page: page.status == 200)
        if page is None:
            return None
        edited = self.edit_text(page)
        failed = self.set_status(self.rng.choice([503, LOGIN_PAGE]), page)
        return f"{edited}; {failed}"

    def edit_text(self, page: Page | None = None) -> str | None:
        page = page or self.page()
        if page is None:
            return None
        page.text, page.canonical = self.model.new_text(), None
        return f"{page.path}: new text {page.text!r}"

    def edit_title(self) -> str | None:
        page = self.page()
        if page is None:
            return None
        old = page.title
        while page.title == old:
            page.title = self.model.new_title(page.path)
        page.canonical = None
        return f"{page.path}: new title {page.title!r}"

    def empty_text(self) -> str | None:
        page = self.page(lambda page: page.text != "")
        if page is None:
            return None
        page.text, page.canonical = "", None
        return f"{page.path}: empty text (title {page.title!r} only)"

    def add_link(self) -> str | None:
        page = self.page()
        if page is None:
            return None
        target = self.pick([p for p in self.model.pages if p != page.path and p not in page.links])
        if target is None:
            return None
        page.links.append(target)
        return f"{page.path}: new link to {target}"

    def remove_link(self) -> str | None:
        page = self.page(lambda page: bool(page.links))
        if page is None:
            return None
        target = self.rng.choice(page.links)
        page.links.remove(target)
        return f"{page.path}: link to {target} removed"

    def new_page(self) -> str | None:
        if not self.model.pool:
            return None
        path = self.model.pool.pop(0)
        page = Page(path, self.model.new_title(path), self.model.new_text())
        page.links = self.rng.sample(sorted(self.model.pages), 2)
        self.model.pages[path] = page
        if path.startswith("/sub/"):
            parent = self.page(lambda other: other.path.startswith("/sub/"))
        else:
            parent = self.page(lambda other: not other.path.startswith("/out/"))
        assert parent is not None
        parent.links.append(path)
        return f"{path}: new page {page.title!r} linked from {parent.path} (its links: {page.links})"

    def set_status(self, status: int, page: Page | None = None) -> str | None:
        page = page or self.page(lambda page: page.status != status)
        if page is None:
            return None
        before = page.describe()
        page.status, page.target = status, None
        return f"{page.path}: {before} -> {page.describe()}"

    def restore(self) -> str | None:
        return self.set_status(200)

    def redirect(self, status: int, page: Page | None = None) -> str | None:
        targets = self.model.redirect_targets()
        # DECISION D12: no chains: a redirect target never redirects, a redirect never points at one
        page = page or self.page(lambda page: page.path not in targets)
        if page is None:
            return None
        candidates = [p for p, other in self.model.pages.items() if other.status not in REDIRECTS and p != page.path]
        if status in TEMPORARY and self.rng.random() < 0.5:  # out of the boundary: of A (/out/) or of B
            outside = [
                p for p in candidates if p.startswith("/out/") or (page.path.startswith("/sub/") and not p.startswith("/sub/"))
            ]
            candidates = outside or candidates
        target = self.pick(candidates)
        if target is None:
            return None
        before = page.describe()
        page.status, page.target = status, target
        return f"{page.path}: {before} -> {status} to {target}"

    def noindex_on(self) -> str | None:
        page = self.page(lambda page: not page.noindex)
        if page is None:
            return None
        page.noindex = True
        return f"{page.path}: noindex on ({page.describe()})"

    def noindex_off(self) -> str | None:
        page = self.page(lambda page: page.noindex)
        if page is None:
            return None
        page.noindex = False
        return f"{page.path}: noindex off ({page.describe()})"

    def duplicate(self) -> str | None:
        page = self.page()
        if page is None:
            return None
        original = self.pick([p for p in self.model.pages if p != page.path and self.model.pages[p].key != page.key])
        if original is None:
            return None
        source = self.model.pages[original]
        page.title, page.text, page.canonical = source.title, source.text, None
        return f"{page.path}: now a duplicate of {original} (title {page.title!r}, text {page.text!r})"

    def late_copy(self) -> str | None:
        """DECISION D14: a page becomes a copy of another's title and text naming a member of
        that content's group canonical (another copy than the one it copies, when there is one),
        and half the time no page links to it any more: a known URL that arrives unlinked."""
        seeds = ("/index.html", "/sub/index.html")
        original = self.page(lambda page: page.status == 200)
        if original is None:
            return None
        page = self.page(lambda page: page.key != original.key and page.path not in seeds)
        if page is None:
            return None
        group = sorted(path for path, other in self.model.pages.items() if other.key == original.key)
        page.title, page.text = original.title, original.text
        page.canonical = self.rng.choice([path for path in group if path != original.path] or group)
        unlinked = self.rng.random() < 0.5
        if unlinked:
            for other in self.model.pages.values():
                other.links = [link for link in other.links if link != page.path]
        return (
            f"{page.path}: now a copy of {original.path} naming {page.canonical} canonical"
            f"{', linked by no page' if unlinked else ''} (title {page.title!r}, text {page.text!r})"
        )

    def copy_moves_away(self) -> str | None:
        """DECISION D14: a member of a group of copies (or a page naming a canonical) moves for
        good: 301 to another page."""
        keys = Counter(page.key for page in self.model.pages.values() if page.status == 200)
        targets = self.model.redirect_targets()
        page = self.page(
            lambda page: page.status == 200 and page.path not in targets and (keys[page.key] > 1 or page.canonical is not None)
        )
        if page is None:
            return None
        line = self.redirect(301, page)
        return f"{line} (a copy moves away)" if line else None

    def robots_disallow(self) -> str | None:
        if self.rng.random() < 0.3:
            prefix = self.rng.choice(ROBOTS_DIRS)
        else:
            prefix = self.pick(list(self.model.pages))
        if prefix is None or ("Disallow", prefix) in self.model.robots:
            return None
        self.model.robots.append(("Disallow", prefix))
        return f"robots.txt: Disallow: {prefix} added"

    def robots_allow(self) -> str | None:
        dirs = [prefix for kind, prefix in self.model.robots if kind == "Disallow" and prefix.endswith("/")]
        if not dirs:
            return None
        folder = self.rng.choice(dirs)
        path = self.pick([p for p in self.model.pages if p.startswith(folder)])
        if path is None or ("Allow", path) in self.model.robots:
            return None
        self.model.robots.append(("Allow", path))
        return f"robots.txt: Allow: {path} added"

    def robots_remove(self) -> str | None:
        if not self.model.robots:
            return None
        rule = self.rng.choice(self.model.robots)
        self.model.robots.remove(rule)
        return f"robots.txt: {rule[0]}: {rule[1]} removed"


# --- sources and the oracle -----------------------------------------------------------------------


@dataclass
class SourceSpec:
    label: str  # "A" or "B"
    name: str  # the source's name (unique per sequence)
    seeds: list[str]
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    processes: int = 1  # the source's `processes`: its crawls run in that many local processes
    sitemap: bool = False  # DECISION D16: the source reads the site's /sitemap.xml

    def inside(self, path: str) -> bool:
        if any(path.startswith(prefix) for prefix in self.exclude):
            return False
        return not self.include or any(path.startswith(prefix) for prefix in self.include)

    def toml(self, site_url: str) -> str:
        seeds = ", ".join(f'"{site_url}{seed.lstrip("/")}"' for seed in self.seeds)
        lines = [
            f'description = "sequence test, source {self.label}"',
            f"seeds = [{seeds}]",
            "max_depth = 100  # DECISION D11: depth never excludes a URL of this site",
            "max_delete_share = 1.0",
            *([f"processes = {self.processes}"] if self.processes > 1 else []),
            *([f'sitemaps = ["{site_url}sitemap.xml"]'] if self.sitemap else []),
            "",
            '[paths."*"]',
        ]
        if self.include:
            lines.append("include = [" + ", ".join(f'"{p}"' for p in self.include) + "]")
        if self.exclude:
            lines.append("exclude = [" + ", ".join(f'"{p}"' for p in self.exclude) + "]")
        return "\n".join(lines) + "\n"


@dataclass
class Group:
    key: Key
    members: set[str]
    lag: bool  # zero members indexed is acceptable in this crawl (rule 5, DECISION D7)
    holders: set[str] = field(default_factory=set)  # the members that may hold it (DECISION D14)


@dataclass
class Expectation:
    """What one crawl of a source must leave in Solr."""

    required: dict[str, Key]  # these documents, with this title and text
    groups: list[Group]  # exactly one member of each (or none, with lag)
    statuses: dict[str, str]  # the oracle's outcome of each URL met (DECISION D9)
    kept: set[str]  # documents kept through a transient failure
    html_changed: set[str]  # served with other HTML than when this source last fetched it (D8)

    def allowed(self) -> set[str]:
        return set(self.required) | {m for g in self.groups for m in g.members}

    def describe(self, path: str) -> str:
        if path in self.required:
            return f"required {self.required[path]}" + (" (kept: transient failure)" if path in self.kept else "")
        for group in self.groups:
            if path in group.members:
                return f"one of duplicate group {sorted(group.members)} {group.key}" + (" (lag allowed)" if group.lag else "")
        return f"absent (oracle status {self.statuses.get(path, 'never met')})"


class SourceOracle:
    """The rules, applied to the site model crawl after crawl, for one source."""

    def __init__(self, spec: SourceSpec) -> None:
        self.spec = spec
        self.known: set[str] = set()
        self.failures: Counter[str] = Counter()
        self.redirected_to: dict[str, str] = {}  # redirecting URL -> outside target it last redirected to
        self.index: dict[str, Key] = {}  # the index after the last crawl (duplicates: as Solr chose)
        self.statuses: dict[str, str] = {}  # outcome of each URL in the last crawl
        self.fetched_html: dict[str, bytes] = {}  # the HTML each URL answered 200 with, last time (D8)
        self.fetched_canonical: dict[str, str | None] = {}  # the canonical it named then (D14)
        self.fetched_anchors: dict[str, dict[str, set[str]]] = {}  # what its links said then (D17)

    def crawl(self, model: SiteModel) -> Expectation:
        spec = self.spec
        previous = dict(self.index)
        statuses: dict[str, str] = {}
        candidates: dict[str, Key] = {}
        kept: dict[str, Key] = {}
        html_changed: set[str] = set()

        def transient(path: str, status: str) -> None:
            statuses[path] = status
            self.failures[path] += 1
            if path in previous and self.failures[path] < MAX_FAILURES:
                kept[path] = previous[path]

        if model.robots_503:
            # rule 4, DECISION D4: every URL of the site failed transiently; nothing is fetched
            for path in sorted(self.known | set(spec.seeds) | {p for p in previous if not spec.inside(p)}):
                transient(path, "robots503")
            self.known |= set(spec.seeds)
        else:
            queue = deque(spec.seeds + sorted(self.known))
            seen: set[str] = set()
            met_outside: set[str] = set()
            reached_outside: set[str] = set()
            if spec.sitemap:  # DECISION D16: its entries are seeds, judged by the rules as links are
                for path in model.sitemap_paths():
                    (queue.append if spec.inside(path) else met_outside.add)(path)

            def fetch(path: str) -> None:
                page = model.pages.get(path)
                status = page.status if page is not None else 404
                if page is None or status == 200:
                    self.redirected_to.pop(path, None)
                if page is None or status in (404, 410):
                    statuses[path] = str(status)
                    self.failures[path] = 0
                    self.redirected_to.pop(path, None)
                    return
                if status in (503, SOFT_404, LOGIN_PAGE, LOGIN_REDIRECT):  # soft errors: no links followed (D15)
                    transient(path, "login" if status in (LOGIN_PAGE, LOGIN_REDIRECT) else str(status))
                    return  # a redirect it answered before still stands (D3)
                self.failures[path] = 0
                if status == 200:
                    html = page.html().encode()
                    if self.fetched_html.get(path, html) != html:
                        html_changed.add(path)
                    self.fetched_html[path] = html
                    self.fetched_canonical[path] = page.canonical
                    self.fetched_anchors[path] = page.anchors()
                    if page.noindex:
                        statuses[path] = "noindex"
                    else:
                        statuses[path] = "ok"
                        candidates[path] = page.key
                    for link in page.links:  # DECISION D1: links of every fetched page
                        if spec.inside(link):
                            queue.append(link)
                        else:
                            met_outside.add(link)
                    return
                statuses[path] = str(status)
                target = page.target
                assert target is not None
                if spec.inside(target):
                    self.redirected_to.pop(path, None)
                    queue.append(target)  # known from now on (rule 1)
                elif status in PERMANENT:
                    self.redirected_to.pop(path, None)
                    met_outside.add(target)  # not followed
                else:  # temporary, outside the boundary: followed (rule 3), not known (D2)
                    self.redirected_to[path] = target
                    if target in reached_outside:
                        return
                    reached_outside.add(target)
                    if not model.allowed(target):
                        statuses[target] = "robots"
                        return
                    fetch(target)

            while queue:
                path = queue.popleft()
                if path in seen:
                    continue
                seen.add(path)
                self.known.add(path)
                if not model.allowed(path):
                    statuses[path] = "robots"
                    self.failures[path] = 0
                    self.redirected_to.pop(path, None)  # DECISION D3: the redirect is not met
                    continue
                fetch(path)

            for path in sorted(met_outside - reached_outside):
                statuses.setdefault(path, "excluded")
            for path in sorted(set(previous) - reached_outside):
                if spec.inside(path):
                    continue
                standing = [statuses.get(source) for source, target in self.redirected_to.items() if target == path]
                if {"503", str(SOFT_404), "login"} & set(standing):
                    transient(path, "held")  # DECISION D3: the redirecting URL failed transiently: so does its target
                else:
                    statuses[path] = "excluded"  # the redirect went away: it leaves (rule 3)

        # duplicates (rule 5): groups of one title+text among fetched pages and kept documents (D6)
        by_key: dict[Key, set[str]] = {}
        for path, key in {**candidates, **kept}.items():
            by_key.setdefault(key, set()).add(path)
        required: dict[str, Key] = {}
        groups: list[Group] = []
        for key, members in sorted(by_key.items()):
            holders = {path for path, k in previous.items() if k == key}
            changed = {path for path in holders if candidates.get(path, key) != key}  # answered with other text
            lag = bool(holders) and not (holders & members) and not holders <= changed  # DECISION D7
            if len(members) == 1 and not lag:
                required[next(iter(members))] = key
            else:
                groups.append(Group(key, members, lag, self.holders(members)))
        return Expectation(required, groups, statuses, set(kept), html_changed)

    def holders(self, members: set[str]) -> set[str]:
        """DECISION D14: the members that may hold a group: one another member names canonical
        (among several, those naming themselves if any), else those naming themselves, else all."""
        canonical = {path: self.fetched_canonical.get(path) for path in members}
        named = {target for path, target in canonical.items() if target in members and target != path}
        itself = {path for path, target in canonical.items() if target == path}
        if named:
            return (named & itself) or named
        return itself or set(members)

    def adopt(self, expectation: Expectation, actual: dict[str, Key] | None, intended: set[str] | None = None) -> None:
        """The oracle's index after the crawl: what it required, and for each duplicate group the
        member Solr holds (``actual``; None when Solr could not be read back: an outage). After an
        outage, ``intended`` (when known) is the URLs the document table keeps in the index, which
        the next crawl pushes: the member the crawler chose (D10)."""
        index = dict(expectation.required)
        statuses = dict(expectation.statuses)
        for group in expectation.groups:
            if actual is not None:
                present = sorted(m for m in group.members if m in actual)
            elif intended is not None:
                present = sorted(m for m in group.members if m in intended)
            else:
                present = sorted(m for m in group.members if m in self.index and self.index[m] == group.key)
                if not present and not group.lag:
                    present = sorted(group.members)[:1]
            chosen = present[0] if present else None
            if chosen is not None:
                index[chosen] = group.key
            for member in group.members:
                # D6: a member kept through a failure that another member replaces is a duplicate now
                if member != chosen and (statuses.get(member) == "ok" or member in expectation.kept):
                    statuses[member] = "duplicate"
        self.index = index
        self.statuses = statuses


# --- running a sequence ---------------------------------------------------------------------------


@dataclass
class Mismatch:
    seed: int
    crawl: int
    source: str
    kind: str
    detail: str
    mutations: list[str]
    event: str
    log: str = ""

    def text(self) -> str:
        changes = "\n".join(f"      - {m}" for m in self.mutations) or "      (none)"
        log = f"\n    log: {self.log}" if self.log else ""
        return (
            f"[seed {self.seed}, crawl {self.crawl}, source {self.source}{', ' + self.event if self.event else ''}] "
            f"{self.kind}\n    {self.detail}\n    mutations of this step:\n{changes}{log}"
        )


@dataclass
class Result:
    seed: int
    crawls: int = 0
    checks: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    events: list[str] = field(default_factory=list)

    def summary(self) -> str:
        kinds = Counter(m.kind for m in self.mismatches)
        first = {}
        for mismatch in self.mismatches:
            first.setdefault(mismatch.kind, mismatch)
        lines = [
            f"seed {self.seed}: {self.crawls} crawls, {self.checks} checks, {len(self.mismatches)} mismatches"
            f" (events: {', '.join(self.events) or 'none'})"
        ]
        lines += [
            f"    {count:4d} x {kind} (first: crawl {first[kind].crawl}, source {first[kind].source})"
            for kind, count in kinds.most_common()
        ]
        return "\n".join(lines)


class Sequence:
    """One seeded sequence of crawls of two sources over one site.

    ``events`` forces special crawls: {crawl number: "kill" | "outage" | "robots503"}, optionally
    with the source (``"kill:A"``); other crawls draw their events from the seed."""

    def __init__(
        self,
        seed: int,
        crawls: int,
        project: Project,
        site: Site,
        root: Path,
        solr_url: str,
        events: dict[int, str] | None = None,
        log_dir: Path | None = None,
        progress: Callable[[str], None] | None = None,
        processes: int = 1,
        sitemap: bool = False,
        embeddings: str = "",
    ) -> None:
        self.seed = seed
        self.embeddings = embeddings
        self.crawls = crawls
        self.project = project
        self.site = site
        self.root = root
        self.solr = pysolr.Solr(solr_url, always_commit=False, timeout=30)
        self.events = events or {}
        self.log_dir = log_dir or (project.data_dir.parent / "sequence-logs")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.progress = progress or (lambda line: None)
        self.rng = random.Random(f"{seed}-site")  # the site and its mutations
        self.event_rng = random.Random(f"{seed}-events")  # which crawls are special, kill points
        self.wording_rng = random.Random(f"{seed}-wording")  # whose links' words change (D17), apart from the site's
        self.model = SiteModel(self.rng)
        self.model.sitemap = sitemap
        self.mutator = Mutator(self.model, self.rng)
        tag = uuid.uuid4().hex[:6]
        self.specs = [
            SourceSpec("A", f"seq{seed}-a-{tag}", ["/index.html"], exclude=("/out/",), processes=processes, sitemap=sitemap),
            SourceSpec("B", f"seq{seed}-b-{tag}", ["/sub/index.html"], include=("/sub/",), processes=processes, sitemap=sitemap),
        ]
        self.oracles = {spec.label: SourceOracle(spec) for spec in self.specs}
        self.crawl_args = PUSHING + (SHARING if processes > 1 else ())
        if embeddings:  # semantic search: passages embedded during each crawl (every second) and after it
            self.crawl_args += ("-s", f"SEARCHCRAWL_EMBEDDINGS={embeddings}", "-s", "SEARCHCRAWL_EMBED_INTERVAL=1")
        self.slow = site.slow = SHARED_SLOW if processes > 1 else 0.0
        self.loose_next: dict[str, list[dict[str, Key]]] = {}  # after an outage: the indexes to compare with
        self.result = Result(seed)
        for spec in self.specs:
            project.source(spec.name, spec.toml(site.url))

    # helpers
    def url(self, path: str) -> str:
        return self.site.url + path.lstrip("/")

    def path(self, url: str) -> str | None:
        return "/" + url[len(self.site.url) :] if url.startswith(self.site.url) else None

    def snapshot(self, spec: SourceSpec) -> tuple[dict[str, Key], list[dict]]:
        self.solr.commit(softCommit=True)
        docs = list(
            self.solr.search(
                f'source:"{spec.name}"', fq="-doc_type:passage", rows=100000, fl="id,url,source,title,content,anchor"
            )
        )
        index: dict[str, Key] = {}
        for doc in docs:
            url = doc.get("url") or doc.get("id")
            if isinstance(url, list):
                url = url[0]
            path = self.path(str(url))
            if path is None:
                continue

            def text(value: object) -> str:
                return norm(" ".join(value) if isinstance(value, list) else str(value or ""))

            index[path] = (text(doc.get("title")), text(doc.get("content")))
        return index, docs

    def check_passages(self, spec: SourceSpec, check: Callable) -> None:
        """Semantic search's oracle (issue 76): after a finished crawl, every document of the source
        has exactly the passages its text gives (semantic/passages.py), current for the model and
        carrying the document's access; no passage outlives its document."""
        self.solr.commit(softCommit=True)
        fields = "id,title,content,outline,passages_model," + ",".join(ACCESS_FIELDS)
        parents = {d["id"]: d for d in self.solr.search(f'source:"{spec.name}"', fq="-doc_type:passage", rows=100000, fl=fields)}
        passages = list(self.solr.search(f'source:"{spec.name}"', fq="doc_type:passage", rows=100000, fl="*"))
        orphans = sorted(p["id"] for p in passages if p["parent_id"] not in parents)
        check(not orphans, "passage without its document", lambda: f"passages outlived their documents: {orphans}")
        for parent_id, parent in parents.items():
            mine = sorted((p for p in passages if p["parent_id"] == parent_id), key=lambda p: p["passage_ordinal"])
            wanted = [
                w.text for w in split_passages(parent.get("content", ""), parent.get("title", ""), parent.get("outline", []))
            ]
            got = [p["passage_text"] for p in mine]
            check(
                got == wanted, "passages not the document's", lambda: f"{parent_id}: passages {got!r}, its text gives {wanted!r}"
            )
            check(
                bool(parent.get("passages_model")) and all(p["passage_model"] == parent["passages_model"] for p in mine),
                "passages not current",
                lambda: f"{parent_id}: marked {parent.get('passages_model')!r}, passages of {[p['passage_model'] for p in mine]}",
            )
            stale = [p["id"] for p in mine if any(sorted(p.get(f) or []) != sorted(parent.get(f) or []) for f in ACCESS_FIELDS)]
            check(not stale, "passage access not its document's", lambda: f"{parent_id}: {stale}")

    def plan(self, crawl: int) -> tuple[str, str]:
        """This crawl's event ("", "kill", "outage", "robots503") and the source it concerns."""
        forced = self.events.get(crawl)
        draw = self.event_rng.random()
        label = self.event_rng.choice(["A", "B"])
        if forced:
            event, _, chosen = forced.partition(":")
            return event, "" if event == "robots503" else (chosen or label)
        if crawl < 3:
            return "", ""
        if draw < 0.07:
            return "kill", label
        if draw < 0.14:
            return "outage", label
        if draw < 0.18:
            return "robots503", ""
        return "", ""

    # one step
    def step(self, crawl: int) -> None:
        event, label = self.plan(crawl)
        mutations: list[str] = []
        self.model.robots_503 = False
        if crawl > 1:
            mutations = self.mutator.step(self.rng.choice([1, 1, 2, 2, 2, 3, 3, 4]))
            if event == "outage":
                mutations += self.outage_change(label)
            mutations += self.rewords()
        if event == "robots503":
            self.model.robots_503 = True
            mutations.append("robots.txt answers 503 (this crawl only)")
        self.model.write(self.root, self.site)
        if event:
            self.result.events.append(f"{event}{':' + label if label else ''}@{crawl}")
        described = f"{event} of {label}" if label else event
        self.progress(
            f"seed {self.seed} crawl {crawl}{' (' + described + ')' if event else ''}: "
            + ("; ".join(mutations) or "initial site")
        )
        found = len(self.result.mismatches)
        for spec in self.specs:
            self.crawl_source(crawl, spec, event if label in ("", spec.label) else "", mutations)
        for mismatch in self.result.mismatches[found:]:  # as they happen: a long run may be cut short
            self.progress(f"MISMATCH {mismatch.text()}")
        self.result.crawls = crawl

    def rewords(self) -> list[str]:
        """DECISION D17: now and then, the words of one page's links change (their titles), its
        title and text not: drawn from a generator of its own, so that the site's other changes
        are those of the seed as before."""
        pages = [page for path, page in sorted(self.model.pages.items()) if page.links]
        if not pages or self.wording_rng.random() < 0.4:
            return []
        page = self.wording_rng.choice(pages)
        page.wording += 1
        return [f"{page.path}: its links' words change ({page.anchors()})"]

    def outage_change(self, label: str) -> list[str]:
        """A crawl while Solr is down must have something to push: an indexed page gets new text."""
        oracle = self.oracles[label]
        keys = Counter(oracle.index.values())
        paths = [
            p
            for p, key in oracle.index.items()
            if oracle.spec.inside(p)
            and keys[key] == 1
            and p in self.model.pages
            and self.model.pages[p].status == 200
            and not self.model.pages[p].noindex
            and self.model.allowed(p)
        ]
        if not paths:
            return []
        page = self.model.pages[self.rng.choice(sorted(paths))]
        return ["(for the outage) " + (self.mutator.edit_text(page) or "")]

    def crawl_source(self, crawl: int, spec: SourceSpec, event: str, mutations: list[str]) -> None:
        oracle = self.oracles[spec.label]
        before, _ = self.snapshot(spec)
        log = self.log_dir / f"seed{self.seed}-crawl{crawl:03d}-{spec.label}.log"
        shown_event = event if event in ("kill", "outage") else ("robots.txt 503" if event else "")

        def mismatch(kind: str, detail: str) -> None:
            self.result.mismatches.append(
                Mismatch(self.seed, crawl, f"{spec.label} ({spec.name})", kind, detail, mutations, shown_event, str(log))
            )

        def check(ok: bool, kind: str, detail: Callable[[], str]) -> None:
            self.result.checks += 1
            if not ok:
                mismatch(kind, detail())

        killed_note = ""
        if event == "kill":
            code, killed_note = self.killed_crawl(spec, log)
            if killed_note.startswith("too late"):
                self.result.events[-1] += " (too late: not killed)"
            check(
                code is None or code == 0,
                "crawl exit code",
                lambda: f"the crawl to be killed ended on its own with exit code {code} (expected 0)",
            )
            result = self.scrapy_crawl(spec, log, append=True)
            check(result == 0, "crawl exit code", lambda: f"resumed crawl exited {result}, expected 0")
        elif event == "outage":
            dead = f"http://127.0.0.1:{free_port()}/solr/searchcrawl"
            result = self.scrapy_crawl(
                spec, log, "-s", "SEARCHCRAWL_SOLR_RETRY_TIMES=1", "-s", "SEARCHCRAWL_SOLR_RETRY_BACKOFF=0.1", SOLR_URL=dead
            )
            # 4: documents stay pending; with no page of the source to change (outage_change), the
            # crawl may have nothing to push, and then it exits 0
            pushes = any(m.startswith("(for the outage)") for m in mutations)
            expected = (4,) if pushes else (0, 4)
            check(result in expected, "crawl exit code", lambda: f"crawl with Solr down exited {result}, expected {expected}")
        else:
            result = self.scrapy_crawl(spec, log)
            check(result == 0, "crawl exit code", lambda: f"crawl exited {result}, expected 0")

        previous_index = dict(oracle.index)
        previous_statuses = dict(oracle.statuses)
        expectation = oracle.crawl(self.model)
        after, docs = self.snapshot(spec)

        if event == "outage":
            check(after == before, "Solr changed during an outage", lambda: self.diff(before, after))
            oracle.adopt(expectation, None, self.intended(spec))
            # D10: what the outage crawl left pending is pushed at the start of the next one, and
            # may leave in it; with Solr unread, that is any document it allowed (a lagging
            # group's member too, which the oracle's index does not hold)
            pending = {path: group.key for group in expectation.groups for path in group.members}
            self.loose_next[spec.label] = [previous_index, dict(oracle.index), {**pending, **expectation.required}]
            report = self.report(spec, check)
            if report is not None:
                # Solr was down: what the run did to the index is not visible yet (None)
                self.check_report_loose(report, expectation, [previous_index], before, None, check)
            return

        self.check_index(spec, expectation, after, docs, check)
        self.check_anchors(spec, oracle, docs, check)
        if self.embeddings:
            self.check_passages(spec, check)
        every_state = ("queued", "excluded", "fetched", "failed", "pending", "indexed", "removing", "removed")
        known = self.intended(spec, every_state) or set()
        traps = sorted(p for p in known if p.startswith(("/trap/", "/sso/")))
        check(not traps, "soft error followed", lambda: f"a soft error's links or login redirect were followed: {traps}")
        report = self.report(spec, check)
        oracle.adopt(expectation, after)
        if report is None:
            return
        check(
            report.get("state") == "finished",
            "run not finished",
            lambda: f"run {report.get('run')} is {report.get('state')!r} after the crawl",
        )
        loose = self.loose_next.pop(spec.label, None)
        if loose is not None:
            self.check_report_loose(report, expectation, loose, before, after, check)
        elif event == "kill" and not killed_note.startswith("too late"):
            self.check_report_loose(report, expectation, [previous_index], before, after, check)
        else:
            self.check_report(report, expectation, before, after, previous_statuses, oracle.statuses, check)

    # crawls
    def scrapy_crawl(self, spec: SourceSpec, log: Path, *args: str, append: bool = False, **env: str) -> int:
        with open(log, "a" if append else "w") as out:
            out.write(f"$ scrapy crawl {spec.name} {' '.join(args)} {env}\n")
            out.flush()
            crawl = popen_scrapy(
                ["crawl", spec.name, *self.crawl_args, *args], self.project.env(**env), stdout=out, stderr=subprocess.STDOUT
            )
            try:
                return crawl.wait(CRAWL_TIMEOUT)
            except subprocess.TimeoutExpired:
                crawl.kill()
                crawl.wait()
                return -999

    def killed_crawl(self, spec: SourceSpec, log: Path) -> tuple[int | None, str]:
        """Start the crawl, wait until some pages were requested, SIGKILL it. Returns (exit code
        if it ended by itself, else None; a note)."""
        site = self.site
        known = max(2, len(self.oracles[spec.label].known))
        kill_at = self.event_rng.randint(1, max(1, known // 2))
        site.in_flight, site.slow = InFlight(), 0.25  # slow answers: the kill lands mid-crawl
        start = len(site.requests)
        try:
            with open(log, "w") as out:
                out.write(f"$ scrapy crawl {spec.name}  (to be killed after {kill_at} page requests)\n")
                out.flush()
                process = popen_scrapy(
                    ["crawl", spec.name, *self.crawl_args], self.project.env(), stdout=out, stderr=subprocess.STDOUT
                )
                deadline = time.monotonic() + CRAWL_TIMEOUT
                while process.poll() is None and time.monotonic() < deadline:
                    pages = [p for _m, _h, p in site.requests[start:] if p != "/robots.txt"]
                    if len(pages) >= kill_at:
                        break
                    time.sleep(0.01)
                if process.poll() is None:
                    forked = children(process.pid)  # processes = N: the others, which end with it
                    process.send_signal(signal.SIGKILL)
                    process.wait()
                    out.write(f"\n--- killed with SIGKILL after {kill_at} page requests ---\n\n")
                    # they end with it (SIGTERM from the kernel); a crawl started before is refused
                    wait_for(lambda: not any(map(process_alive, forked)), CRAWL_TIMEOUT, "its other processes to end")
                    return None, f"killed after {kill_at} page requests"
                return process.returncode, f"too late: the crawl ended before {kill_at} page requests"
        finally:
            site.in_flight, site.slow = None, self.slow

    def report(self, spec: SourceSpec, check: Callable) -> dict | None:
        """The delta report, as `scrapy report --json` prints it (the same function, called here:
        a subprocess per crawl would cost a second of CPU each; tests/e2e/test_url_life.py runs
        the command itself)."""
        database = self.project.table().database
        try:
            report = run_report(database, spec.name)
        finally:
            database.close()
        check(report is not None, "report missing", lambda: f"no run of {spec.name} in the run table")
        return report

    # checks
    def diff(self, expected: dict[str, Key], actual: dict[str, Key]) -> str:
        lines = []
        for path in sorted(set(expected) | set(actual)):
            if expected.get(path) != actual.get(path):
                lines.append(f"{path}: expected {expected.get(path)}, actual {actual.get(path)}")
        return "; ".join(lines)

    def intended(self, spec: SourceSpec, states: tuple[str, ...] = ("pending", "indexed")) -> set[str] | None:
        """The paths the document table keeps in the index (pending or indexed; or in ``states``):
        after an outage, which member of a duplicate group the crawler chose, which Solr cannot
        tell yet. None when the table cannot be read."""
        with contextlib.suppress(Exception):
            table = self.project.table()
            try:
                urls = [row["url"] for state in states for row in table.rows(spec.name, state=state, limit=100_000)]
            finally:
                with contextlib.suppress(Exception):
                    table.database.close()
            return {path for path in map(self.path, urls) if path is not None}
        return None

    def row(self, spec: SourceSpec, path: str) -> str:
        """The document table's row of the URL, for the engineers reading a mismatch."""
        with contextlib.suppress(Exception):
            table = self.project.table()
            try:
                row = table.get(spec.name, self.url(path))
            finally:
                with contextlib.suppress(Exception):
                    table.database.close()
            if row is None:
                return "table: no row"
            return "table: " + ", ".join(
                f"{k}={row.get(k)!r}" for k in ("state", "status", "reason", "duplicate_of") if row.get(k) is not None
            )
        return "table: unreadable"

    def page_state(self, path: str) -> str:
        page = self.model.pages.get(path)
        site = (
            "robots.txt 503" if self.model.robots_503 else ("robots allowed" if self.model.allowed(path) else "robots DISALLOWED")
        )
        return f"site: {page.describe() if page else 'no such page'}, {site}"

    def check_index(self, spec: SourceSpec, exp: Expectation, actual: dict[str, Key], docs: list[dict], check: Callable) -> None:
        def about(path: str) -> str:
            return f"{self.page_state(path)}; {self.row(spec, path)}"

        for path, key in sorted(exp.required.items()):
            check(
                path in actual,
                "missing document",
                lambda: (
                    f"{path}: expected in the index with {key}"
                    f"{' (kept through a transient failure)' if path in exp.kept else ''}, "
                    f"but Solr has no document; oracle status {exp.statuses.get(path)}; {about(path)}"
                ),
            )
            if path in actual:
                check(
                    actual[path] == key,
                    "wrong title/content",
                    lambda: (
                        f"{path}: expected {key}{' (old content, kept through a transient failure)' if path in exp.kept else ''},"
                        f" Solr has {actual[path]}; {about(path)}"
                    ),
                )
        for group in exp.groups:
            present = sorted(m for m in group.members if m in actual)
            check(
                len(present) <= 1,
                "duplicates indexed twice",
                lambda: (
                    f"group {sorted(group.members)} with {group.key}: expected one indexed, Solr has {present}; "
                    + "; ".join(f"{p}: {self.row(spec, p)}" for p in present)
                ),
            )
            check(
                len(present) >= 1 or group.lag,
                "duplicate group not indexed",
                lambda: (
                    f"group {sorted(group.members)} with {group.key}: expected one indexed (no lag allowed), "
                    f"Solr has none; " + "; ".join(f"{p}: {self.row(spec, p)}" for p in sorted(group.members))
                ),
            )
            others = [path for path in present if group.holders and path not in group.holders]
            check(
                not others,
                "duplicate group held by another copy than its canonical",
                lambda: (
                    f"group {sorted(group.members)} with {group.key}: expected one of {sorted(group.holders)} "
                    f"(DECISION D14), Solr has {present}; "
                    + "; ".join(f"{p}: {self.row(spec, p)}" for p in sorted(group.members))
                ),
            )
            for path in present:
                check(
                    actual[path] == group.key,
                    "wrong title/content",
                    lambda: f"{path}: expected {group.key}, Solr has {actual[path]}; {about(path)}",
                )
        # issue 53, item 26: a URL whose row says indexed is in Solr
        indexed = self.intended(spec, ("indexed",))
        check(
            indexed is None or indexed <= set(actual),
            "indexed row not in Solr",
            lambda: "; ".join(
                f"{p}: {self.row(spec, p)}; {self.page_state(p)}" for p in sorted((indexed or set()) - set(actual))
            ),
        )
        allowed = exp.allowed()
        for path in sorted(set(actual) - allowed):
            check(
                False,
                "unexpected document",
                lambda: (
                    f"{path}: Solr has {actual[path]}, expected no document (oracle status "
                    f"{exp.statuses.get(path, 'never met')}); {about(path)}"
                ),
            )
        self.result.checks += 1
        urls = Counter(str(doc.get("url") or doc.get("id")) for doc in docs)
        twice = [u for u, n in urls.items() if n > 1]
        if twice:
            check(False, "URL indexed twice in a source", lambda: f"{twice}")
        wrong_ids = [
            (doc.get("id"), doc.get("url"))
            for doc in docs
            if doc.get("id") != f"{spec.name}!{doc.get('url')}" or doc.get("source") != spec.name
        ]
        check(
            not wrong_ids,
            "Solr id not <source>!<url>",
            lambda: (
                f"{len(wrong_ids)} of {len(docs)} documents, e.g. id={wrong_ids[0][0]!r} url={wrong_ids[0][1]!r}"
                f" (expected id '{spec.name}!<url>')"
            ),
        )

    def check_anchors(self, spec: SourceSpec, oracle: SourceOracle, docs: list[dict], check: Callable) -> None:
        """DECISION D17 (issue 100): after a finished crawl, each document's anchor field holds
        exactly the words the links to it say on the source's pages Solr holds, as each of those
        pages was last fetched with its HTML (a page kept through a failure: its old links)."""
        held = {path for doc in docs if (path := self.path(str(doc.get("url") or ""))) is not None}
        for doc in docs:
            target = self.path(str(doc.get("url") or ""))
            if target is None:
                continue
            wanted = {title for page in held for title in oracle.fetched_anchors.get(page, {}).get(target, ())}
            got = set(doc.get("anchor") or [])
            check(
                got == wanted,
                "anchor field",
                lambda: (
                    f"{target}: Solr's anchor field {sorted(got)}, the links to it say {sorted(wanted)} ("
                    + ", ".join(
                        f"{page}: {sorted(oracle.fetched_anchors[page][target])}"
                        for page in sorted(held)
                        if target in oracle.fetched_anchors.get(page, {})
                    )
                    + f"); {self.row(spec, target)}"
                ),
            )

    def report_paths(self, report: dict, kind: str) -> set[str]:
        urls = (report.get("urls") or {}).get(kind) or []
        return {p for p in (self.path(u) for u in urls) if p is not None}

    def check_report(
        self,
        report: dict,
        exp: Expectation,
        before: dict[str, Key],
        after: dict[str, Key],
        old_statuses: dict[str, str],
        new_statuses: dict[str, str],
        check: Callable,
    ) -> None:
        new, deleted, changed = (self.report_paths(report, k) for k in ("new", "deleted", "changed"))
        entered, left = set(after) - set(before), set(before) - set(after)
        check(
            new == entered,
            "report: new",
            lambda: (
                f"report lists new {sorted(new)}, but the URLs that entered the index are {sorted(entered)}"
                f" (extra: {sorted(new - entered)}, missing: {sorted(entered - new)})"
            ),
        )
        check(
            deleted == left,
            "report: deleted",
            lambda: (
                f"report lists deleted {sorted(deleted)}, but the URLs that left the index are {sorted(left)}"
                f" (extra: {sorted(deleted - left)}, missing: {sorted(left - deleted)})"
            ),
        )
        both = set(before) & set(after)
        must = {p for p in both if before[p] != after[p]}
        may = both & exp.html_changed  # DECISION D8
        check(
            must <= changed <= must | may,
            "report: changed",
            lambda: (
                f"report lists changed {sorted(changed)}; content changed in Solr: {sorted(must)}, "
                f"served HTML changed (may be listed): {sorted(may - must)}"
                f" (missing: {sorted(must - changed)}, extra: {sorted(changed - must - may)})"
            ),
        )
        # rule 9: a URL out of the index with the same status as before is not listed again
        again = {kind: self.report_paths(report, kind) for kind in ("failed", "deleted", "excluded", "redirected")}
        for path in sorted(set(old_statuses) & set(new_statuses)):
            status = new_statuses[path]
            if status == "ok" or status != old_statuses[path] or path in before or path in after:
                continue
            listed = [kind for kind, paths in again.items() if path in paths]
            check(
                not listed,
                "report: listed again",
                lambda: (
                    f"{path} stays out of the index with status {status} as in the crawl before, "
                    f"but the report lists it as {'/'.join(listed)}"
                ),
            )

    def check_report_loose(
        self,
        report: dict,
        exp: Expectation,
        previous: list[dict[str, Key]],
        before: dict[str, Key],
        after: dict[str, Key] | None,
        check: Callable,
    ) -> None:
        """After a kill, and around an outage: each list holds at most the URLs it could hold.
        ``after`` is Solr after the crawl, None when Solr was down during it."""
        new, deleted, changed = (self.report_paths(report, k) for k in ("new", "deleted", "changed"))
        allowed_after = exp.allowed() | set(after or ())
        earlier = set(before).union(*previous)
        steady = set(exp.required) & set(before).intersection(*previous)
        gone = earlier - set(exp.required) - set(after or ())
        check(
            new <= allowed_after - steady,
            "report: new (loose)",
            lambda: f"report lists new {sorted(new)}; at most {sorted(allowed_after - steady)}",
        )
        check(
            deleted <= gone, "report: deleted (loose)", lambda: f"report lists deleted {sorted(deleted)}; at most {sorted(gone)}"
        )
        check(
            changed <= allowed_after & earlier,
            "report: changed (loose)",
            lambda: f"report lists changed {sorted(changed)}; at most {sorted(allowed_after & earlier)}",
        )

    def run(self) -> Result:
        for crawl in range(1, self.crawls + 1):
            self.step(crawl)
        return self.result


# --- the command --------------------------------------------------------------------------------


@contextlib.contextmanager
def dev_solr(base: Path) -> Iterator[str]:
    from searchcrawl.dev.solr_runner import DevSolr

    solr = DevSolr(base / "solr-data", free_port())
    solr.start(timeout=600)
    try:
        yield solr.url
    finally:
        solr.stop()


def run_seed(
    seed: int,
    crawls: int,
    base: Path,
    solr_url: str,
    events: dict[int, str] | None = None,
    progress: Callable[[str], None] | None = None,
    processes: int = 1,
    sitemap: bool = False,
    embeddings: str = "",
) -> Result:
    """One sequence in its own folders under ``base``: site, data dir, sources, logs."""
    work = base / f"seed-{seed}"
    (work / "sources").mkdir(parents=True, exist_ok=True)
    (work / "site").mkdir(parents=True, exist_ok=True)
    project = Project(work / "data", work / "sources", solr_url)
    site = Site(work / "site").start()
    try:
        sequence = Sequence(
            seed,
            crawls,
            project,
            site,
            work / "site",
            solr_url,
            events=events,
            log_dir=work / "logs",
            progress=progress,
            processes=processes,
            sitemap=sitemap,
            embeddings=embeddings,
        )
        return sequence.run()
    finally:
        site.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.sequences", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="1", help="comma-separated seeds (default: 1)")
    parser.add_argument("--crawls", type=int, default=30, help="crawls per seed (default: 30)")
    parser.add_argument("--solr-url", default="", help="use this Solr instead of starting a dev Solr")
    parser.add_argument("--processes", type=int, default=1, help="the sources' `processes` (default: 1)")
    parser.add_argument("--sitemap", action="store_true", help="the site has an honest sitemap (DECISION D16)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, sites, data)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--embeddings", default="", help="semantic search's model (e.g. wordllama): passages checked too")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    base = Path(tempfile.mkdtemp(prefix="searchcrawl-sequences-"))
    progress = None if args.quiet else (lambda line: print(line, flush=True))
    results: list[Result] = []
    started = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            solr_url = args.solr_url or stack.enter_context(dev_solr(base))
            for seed in seeds:
                results.append(
                    run_seed(
                        seed,
                        args.crawls,
                        base,
                        solr_url,
                        progress=progress,
                        processes=args.processes,
                        sitemap=args.sitemap,
                        embeddings=args.embeddings,
                    )
                )
    finally:
        print()
        for result in results:
            for mismatch in result.mismatches:
                print(mismatch.text())
                print()
        print(
            f"Summary: seeds {','.join(map(str, seeds))}, crawls {sum(r.crawls for r in results)}, "
            f"checks {sum(r.checks for r in results)}, mismatches {sum(len(r.mismatches) for r in results)}"
            f" ({time.monotonic() - started:.0f} s)"
        )
        for result in results:
            print(result.summary())
        if args.keep:
            print(f"files kept in {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    return 1 if any(r.mismatches for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
