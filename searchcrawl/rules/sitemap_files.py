"""Sitemaps (sitemaps.org) as plain logic: reading one file within bounds, its ``lastmod`` as a
moment, and whether a known URL can be left unrequested because its sitemap says it has not
changed since its last fetch.

A sitemap is hostile input like any page: its bytes are bounded (gzip included), its entries
are counted, XML entities are never resolved (Scrapy's ``Sitemap`` parses without them), and a
``lastmod`` that is not a W3C datetime is no hint at all. A ``lastmod`` that names a day (or a
month, a year, a minute, a second) stands for the END of that period: a page fetched at noon of
the day its sitemap names is fetched again, since it may have changed that afternoon.
"""

from __future__ import annotations

import calendar
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from searchcrawl.rules.boundary import DEFAULT_PORTS
from searchcrawl.rules.urls import canonical

SITEMAP_MAX_URLS = 50_000  # per file, sitemaps.org's own limit
# elements read per entry allowed: an entry, its <loc>, <lastmod>, ... and what its extensions
# nest (<image:image> and its <image:loc>, <video:video>, ...); past that, the file is junk, and
# reading it stops
ELEMENTS_PER_URL = 20
ENTRY_TAGS = ("url", "sitemap")
GZIP_MAGIC = b"\x1f\x8b"

_W3C = re.compile(
    r"^(?P<year>\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2})"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?"
    r"(?P<zone>Z|[+-]\d{2}:\d{2})?)?)?)?$"
)


class SitemapTooLarge(ValueError):
    """The sitemap's text is larger than allowed (after decompression)."""


@dataclass(frozen=True)
class SitemapFile:
    """What one sitemap file holds: child sitemaps (an index) or page entries (a urlset)."""

    kind: str  # "sitemapindex", "urlset", or "" (neither: not a sitemap)
    entries: list[tuple[str, datetime | None]] = field(default_factory=list)  # (loc, lastmod)
    dropped: int = 0  # entries past SITEMAP_MAX_URLS


def parse_lastmod(text: str | None) -> datetime | None:
    """A W3C datetime (``2026-11-22``, ``2026-11-22T10:00:00+01:00``, ...) as the UTC moment up to
    which the page may have changed: the end of a day, month or year given alone; None when it is
    no W3C datetime (no hint: the page is fetched)."""
    match = _W3C.match((text or "").strip())
    if match is None:
        return None
    parts = match.groupdict()
    try:
        year = int(parts["year"])
        if parts["month"] is None:
            return datetime(year + 1, 1, 1, tzinfo=UTC) - timedelta(microseconds=1) if year < 9999 else None
        month = int(parts["month"])
        if parts["day"] is None:
            last = calendar.monthrange(year, month)[1]
            return datetime(year, month, last, 23, 59, 59, 999999, tzinfo=UTC)
        day = int(parts["day"])
        if parts["hour"] is None:
            return datetime(year, month, day, 23, 59, 59, 999999, tzinfo=UTC)
        second = int(parts["second"] or 0)
        moment = datetime(year, month, day, int(parts["hour"]), int(parts["minute"]), second, tzinfo=UTC)
        if parts["second"] is None:
            moment += timedelta(seconds=59, microseconds=999999)  # to the minute: its end
        elif parts["fraction"]:  # to its last digit: the end of that tenth, hundredth, ...
            digits = parts["fraction"][:6]
            moment += timedelta(microseconds=int(digits.ljust(6, "0")) + 10 ** (6 - len(digits)) - 1)
        else:  # to the second: its end (a page fetched early in the second it changed in is fetched again)
            moment += timedelta(microseconds=999999)
        zone = parts["zone"]
        if zone and zone != "Z":
            hours, minutes = int(zone[1:3]), int(zone[4:6])
            if hours > 14 or minutes > 59:  # no such offset (UTC+14 is the largest)
                return None
            sign = 1 if zone[0] == "+" else -1
            moment -= sign * timedelta(hours=hours, minutes=minutes)
        return moment
    except (ValueError, OverflowError):  # month 13, day 31 of a short month, ...
        return None


def read_sitemap(body: bytes, max_bytes: int, max_urls: int = SITEMAP_MAX_URLS) -> SitemapFile:
    """The entries of a sitemap file's body (gzip-compressed or not), at most ``max_urls``.

    Raises SitemapTooLarge past ``max_bytes`` of text (a gzip bomb stops there)."""
    if body[:2] == GZIP_MAGIC:
        try:
            body = gunzip(body, max_size=max_bytes)
        except ValueError as exc:  # Scrapy's gunzip: "exceeded max_size"
            raise SitemapTooLarge(f"more than {max_bytes} bytes once decompressed") from exc
        except Exception:  # noqa: BLE001 - not gzip after all (OSError, EOFError, zlib.error): read as XML
            pass
    if len(body) > max_bytes:
        raise SitemapTooLarge(f"more than {max_bytes} bytes")
    if not body.strip():
        return SitemapFile("")
    try:
        sitemap = BoundedSitemap(body, max_elements=max_urls * ELEMENTS_PER_URL)
    except Exception:  # not XML at all (lxml raises on an empty or binary document)
        return SitemapFile("")
    if sitemap.type not in ("sitemapindex", "urlset"):
        return SitemapFile("")
    entries: list[tuple[str, datetime | None]] = []
    dropped = 0
    for element in sitemap:
        loc = (element.get("loc") or "").strip()
        if not loc:
            continue
        if len(entries) >= max_urls:
            dropped += 1
            continue
        entries.append((loc, parse_lastmod(element.get("lastmod"))))
    return SitemapFile(sitemap.type, entries, dropped + sitemap.unread)


class BoundedSitemap(Sitemap):
    """Scrapy's ``Sitemap`` parser (its lxml options: no entities, no network, recovery), read
    within bounds for hostile files: every element is freed as soon as it ends (an entry's
    children once their text is taken), and at most ``max_elements`` elements are read. Scrapy's
    own reading frees ``<url>`` and ``<sitemap>`` only, with their children: 5 MiB of ``<x/>``
    (5 KB gzipped) beside or inside an entry were held as a tree of 160 MB. An entry is a
    ``<url>`` or ``<sitemap>`` at any depth, as in Scrapy: the text of its own children by their
    local names (``loc``, ``lastmod``, ...), the last one of a name winning."""

    __slots__ = ("max_elements", "unread")

    def __init__(self, xmltext: bytes, max_elements: int) -> None:
        super().__init__(xmltext)
        self.max_elements = max_elements
        self.unread = 0  # 1 when reading stopped at max_elements: entries may have been left

    def __iter__(self) -> Iterator[dict[str, Any]]:
        read = 0
        entries: list[dict[str, str]] = []  # the fields of the entries open around this element
        for event, element in self.xmliter:
            name = local_name(element)
            if event == "start":
                if name in ENTRY_TAGS:
                    entries.append({})
                continue
            parent = element.getparent()
            if parent is None:
                continue  # the root
            if name in ENTRY_TAGS and entries:
                entry = entries.pop()
                if "loc" in entry:
                    yield entry
            elif entries and local_name(parent) in ENTRY_TAGS and name:
                entries[-1][name] = (element.text or "").strip()
            element.clear()
            while element.getprevious() is not None:
                del parent[0]
            read += 1
            if read >= self.max_elements:
                self.unread = 1
                return


def local_name(element: Any) -> str:
    """An element's tag without its namespace ("" for a comment or processing instruction)."""
    tag = element.tag
    if not isinstance(tag, str):
        return ""
    return tag.partition("}")[2] or tag


def site_key(url: str) -> tuple[str, int | None] | None:
    """The host and port an http(s) URL reaches as Scrapy will request it (``canonical``: w3lib's
    parsing, which turns ``http://evil.test\\@h.test/`` into a request to ``evil.test``); the
    port None for the scheme's default one. None for another scheme or no host."""
    try:
        return canonical_site_key(canonical(url))
    except ValueError:
        return None


def canonical_site_key(url: str) -> tuple[str, int | None] | None:
    """``site_key`` of a URL that is ``canonical`` already (a sitemap's entries, canonicalised
    once for all their uses: a million of them)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts.hostname, None if port == DEFAULT_PORTS[parts.scheme] else port


def same_site(url: str, other: str) -> bool:
    """Both http(s) URLs of one host and port, as they will be requested. http and https on
    their default ports are one site (a sitemap of ``http://host/`` may list ``https://host/``
    pages); another port is another service, which the source did not admit. sitemaps.org: a
    sitemap lists, and an index names, its own site's URLs only."""
    key = site_key(url)
    return key is not None and key == site_key(other)


def unchanged_since_fetch(lastmod: datetime | None, last_fetched: datetime | None, now: datetime, trust_for: timedelta) -> bool:
    """A known URL's sitemap ``lastmod`` is not newer than its last fetch, and that fetch is less
    than ``trust_for`` old: the page has not changed since, by the site's own word (the source's
    ``trust_sitemap_lastmod`` and ``sitemap_trust_days``). Past ``trust_for`` the page is
    requested anyway: a stale sitemap listing a deleted page would keep it indexed forever."""
    return lastmod is not None and last_fetched is not None and lastmod <= last_fetched and now - last_fetched < trust_for


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)


class LastmodHints:
    """URL -> sitemap ``lastmod``, for at most ``limit`` URLs (a URL is kept as an 8-byte hash, so
    a million hints take tens of MB, not the URLs' text). The newest ``lastmod`` of a URL listed
    twice wins; a URL listed once without one has no hint. Moments are kept as whole
    microseconds since 1970, exact to the last one of year 9999 (a float timestamp of
    ``9999-12-31`` rounded up into year 10000, and reading it back raised)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.moments: dict[int, int] = {}
        self.dropped = 0

    @staticmethod
    def key(url: str) -> int:
        return int.from_bytes(hashlib.blake2b(url.encode("utf-8"), digest_size=8).digest(), "big")

    def add(self, url: str, lastmod: datetime | None) -> None:
        if lastmod is None:
            return
        key = self.key(url)
        known = self.moments.get(key)
        if known is None and len(self.moments) >= self.limit:
            self.dropped += 1  # no hint: the page is fetched, as without a sitemap
            return
        stamp = (lastmod - EPOCH) // MICROSECOND
        self.moments[key] = stamp if known is None else max(known, stamp)

    def get(self, url: str) -> datetime | None:
        stamp = self.moments.get(self.key(url))
        return None if stamp is None else EPOCH + stamp * MICROSECOND

    def __len__(self) -> int:
        return len(self.moments)
