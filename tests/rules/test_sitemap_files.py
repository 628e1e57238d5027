"""The sitemap rules alone: lastmod as a moment (a day stands for its end), a sitemap file read
within bounds (gzip, entity and size bombs), one host per sitemap, and the lastmod hints."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta

import pytest

from searchcrawl.rules.sitemap_files import (
    LastmodHints,
    SitemapTooLarge,
    parse_lastmod,
    read_sitemap,
    same_site,
    unchanged_since_fetch,
)
from tests.conftest import fresh_python

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@pytest.mark.parametrize(
    ("text", "moment"),
    [
        ("2026-11-22T10:15:30Z", datetime(2026, 11, 22, 10, 15, 30, 999999, tzinfo=UTC)),  # the second's end
        ("2026-11-22T10:15:30.25+01:00", datetime(2026, 11, 22, 9, 15, 30, 259999, tzinfo=UTC)),  # the hundredth's end
        ("2026-11-22T10:15:30.000Z", datetime(2026, 11, 22, 10, 15, 30, 999, tzinfo=UTC)),  # milliseconds printed
        ("2026-11-22T10:15:30.1234567Z", datetime(2026, 11, 22, 10, 15, 30, 123456, tzinfo=UTC)),
        ("2026-11-22T10:15-05:00", datetime(2026, 11, 22, 15, 15, 59, 999999, tzinfo=UTC)),  # the minute's end
        ("2026-11-22", datetime(2026, 11, 22, 23, 59, 59, 999999, tzinfo=UTC)),  # the day's end
        ("2026-02", datetime(2026, 2, 28, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2026", datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
        (" 2026-11-22T10:15:30 ", datetime(2026, 11, 22, 10, 15, 30, 999999, tzinfo=UTC)),  # no zone: UTC
    ],
)
def test_lastmod_is_the_latest_moment_it_can_mean(text: str, moment: datetime) -> None:
    assert parse_lastmod(text) == moment


@pytest.mark.parametrize("text", [None, "", "yesterday", "2026-13-01", "2026-02-30", "22/11/2026", "2026-11-22T25:00Z", "9999"])
def test_a_lastmod_that_is_no_w3c_datetime_is_no_hint(text: str | None) -> None:
    assert parse_lastmod(text) is None


def test_unchanged_since_fetch_needs_both_an_older_or_equal_lastmod_and_a_recent_fetch() -> None:
    fetched = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    now, month = fetched + timedelta(days=1), timedelta(days=30)

    def unchanged(lastmod: datetime | None, last_fetched: datetime | None, at: datetime = now) -> bool:
        return unchanged_since_fetch(lastmod, last_fetched, at, month)

    assert unchanged(fetched, fetched)
    assert unchanged(fetched - timedelta(days=1), fetched)
    assert not unchanged(fetched + timedelta(seconds=1), fetched)
    assert not unchanged(parse_lastmod("2026-11-22"), fetched)  # changed that afternoon, maybe
    assert not unchanged(None, fetched) and not unchanged(fetched, None)
    # a month after its last fetch, the page is requested whatever its sitemap says (a stale
    # sitemap listing a deleted page would have kept it indexed forever)
    assert unchanged(fetched - timedelta(days=1), fetched, fetched + month - timedelta(seconds=1))
    assert not unchanged(fetched - timedelta(days=1), fetched, fetched + month)


def test_a_urlset_and_an_index_plain_or_gzip() -> None:
    urlset = f"<urlset {NS}><url><loc> http://h/a </loc><lastmod>2026-01-01</lastmod></url><url><loc>http://h/b</loc></url><url><lastmod>2026</lastmod></url></urlset>"
    for body in (urlset.encode(), gzip.compress(urlset.encode())):
        read = read_sitemap(body, 10_000)
        assert read.kind == "urlset"
        assert read.entries == [("http://h/a", parse_lastmod("2026-01-01")), ("http://h/b", None)]
    index = read_sitemap(f"<sitemapindex {NS}><sitemap><loc>http://h/s1.xml</loc></sitemap></sitemapindex>".encode(), 10_000)
    assert index.kind == "sitemapindex" and index.entries == [("http://h/s1.xml", None)]


def test_not_a_sitemap() -> None:
    for body in (b"", b"   ", bytes(range(256)), b"<html><body>hi</body></html>", b"User-agent: *"):
        assert read_sitemap(body, 10_000).kind == ""


def test_bounds_bytes_gzip_bombs_and_entries() -> None:
    with pytest.raises(SitemapTooLarge):
        read_sitemap(b"<urlset>" + b" " * 2000 + b"</urlset>", 1000)
    with pytest.raises(SitemapTooLarge):
        read_sitemap(gzip.compress(b" " * 5_000_000), 1_000_000)  # stops at the bound, not at 5 MB
    many = "".join(f"<url><loc>http://h/{n}</loc></url>" for n in range(30))
    read = read_sitemap(f"<urlset {NS}>{many}</urlset>".encode(), 100_000, max_urls=20)
    assert len(read.entries) == 20 and read.dropped == 10


def test_entities_are_never_resolved() -> None:
    body = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY f SYSTEM "file:///etc/passwd"><!ENTITY a "x">]>'
        b"<urlset><url><loc>http://h/&f;</loc></url><url><loc>http://h/&a;&a;</loc></url></urlset>"
    )
    locs = [loc for loc, _ in read_sitemap(body, 100_000).entries]
    assert not any("root:" in loc for loc in locs)


def test_same_site_is_one_host_and_port_as_scrapy_requests_it() -> None:
    assert same_site("http://h.test/a", "https://h.test/sitemap.xml")  # http and https, default ports
    assert same_site("http://h.test:80/a", "http://H.test/sitemap.xml")
    assert same_site("http://h.test:8080/a", "https://h.test:8080/s.xml")
    assert not same_site("http://h.test/a", "https://h.test:8443/sitemap.xml")  # another port: another service
    assert not same_site("http://h.test:6379/s.xml", "http://h.test/")
    assert not same_site("http://h.test:443/s.xml", "https://h.test/")
    # Scrapy requests evil.test for this one (w3lib reads the backslash as a slash)
    assert not same_site("http://evil.test\\@h.test/index.xml", "http://h.test/")
    assert not same_site("http://localhost/a", "http://127.0.0.1/sitemap.xml")
    assert not same_site("file:///etc/passwd", "http://h.test/")
    assert not same_site("http://[::1/a", "http://h.test/")
    assert not same_site("http://h.test:99999/a", "http://h.test/")


def test_hints_are_bounded_and_keep_the_newest() -> None:
    hints = LastmodHints(limit=2)
    old, new = parse_lastmod("2026-01-01T00:00:00Z"), parse_lastmod("2026-06-01T00:00:00Z")
    hints.add("http://h/a", old)
    hints.add("http://h/a", new)
    hints.add("http://h/a", old)
    hints.add("http://h/b", None)  # no hint
    hints.add("http://h/c", old)
    hints.add("http://h/d", old)  # past the bound
    assert hints.get("http://h/a") == new and hints.get("http://h/b") is None
    assert hints.get("http://h/c") == old and hints.get("http://h/d") is None
    assert len(hints) == 2 and hints.dropped == 1


def test_a_lastmod_at_the_end_of_year_9999_is_kept_and_read_back() -> None:
    """Kept as a float timestamp, 9999-12-31 rounded up into year 10000 and reading it back raised
    (out of SitemapMiddleware.process_request: the page failed on every maintenance crawl)."""
    hints = LastmodHints(limit=10)
    for number, text in enumerate(("9999-12-31", "9999-12", "9999-12-31T23:59Z", "0001-01-01T00:00:00Z")):
        moment = parse_lastmod(text)
        assert moment is not None
        hints.add(f"http://h/{number}", moment)
        assert hints.get(f"http://h/{number}") == moment


def test_an_offset_that_no_zone_has_is_no_hint() -> None:
    assert parse_lastmod("2026-11-22T10:00:00+99:99") is None
    assert parse_lastmod("2026-11-22T10:00:00+15:00") is None
    assert parse_lastmod("2026-11-22T10:00:00+14:00") == datetime(2026, 11, 21, 20, 0, 0, 999999, tzinfo=UTC)


def test_junk_elements_are_freed_as_read() -> None:
    """Scrapy's Sitemap frees <url> and <sitemap> elements only, with their children: 2 MiB of
    <x/> in a <g>, or inside a <url> (2 KB gzipped), were held as trees of 40-60 MB (the second
    found by a reviewer after the first was fixed). Measured in a Python of its own (peak RSS),
    with 1 MiB of junk: Scrapy's Sitemap holds 36 MB for it, and parsing 2 MiB twice cost 2.7 s."""
    code = """
import gzip, resource
from searchcrawl.rules.sitemap_files import read_sitemap
junk = "<x/>" * (2**20 // 4)
bodies = ["<urlset><g>" + junk + "</g><url><loc>http://h/a</loc></url></urlset>",
          "<urlset><url><loc>http://h/a</loc>" + junk + "</url></urlset>"]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for body in bodies:
    read = read_sitemap(gzip.compress(body.encode()), 50 * 2**20)
    print(read.kind, len(read.entries), read.dropped)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""
    *reads, grown = fresh_python(code)
    assert int(grown) < 10, f"peak RSS grew by {grown} MB"
    assert reads == ["urlset 1 0", "urlset 1 0"]  # 262,147 elements each: under the bound


@pytest.mark.parametrize("wrapper", ["{}", "<g>{}</g>"])
def test_reading_stops_at_a_bound_of_elements(wrapper: str) -> None:
    """At most 20 elements per entry allowed are read (an entry's own children aside): junk
    costs CPU as it is parsed, up to SEARCHCRAWL_SITEMAP_MAX_BYTES, and no more."""
    many = "".join(f"<url><loc>http://h/{n}</loc></url>" for n in range(5))
    stopped = read_sitemap(f"<urlset>{wrapper.format('<x/>' * 100)}{many}</urlset>".encode(), 10**6, max_urls=2)
    assert stopped.entries == [] and stopped.dropped == 1  # 40 elements read: the rest unread
    whole = read_sitemap(f"<urlset>{wrapper.format('<x/>' * 10)}{many}</urlset>".encode(), 10**6, max_urls=2)
    assert len(whole.entries) == 2 and whole.dropped == 3
