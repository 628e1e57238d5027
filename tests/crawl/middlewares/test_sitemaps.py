"""SitemapMiddleware built alone (``build_from_crawler`` on a ``get_crawler`` crawler of a
source): when it is on, which robots.txt sitemaps it reads, and which requests a sitemap's
lastmod spares (only a known, indexed URL in a maintenance crawl, lastmod not newer than its
last fetch)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.utils.misc import build_from_crawler

from searchcrawl.crawl.exceptions import RequestRefused
from searchcrawl.crawl.meta import KNOWN_ROW
from searchcrawl.crawl.middlewares.sitemaps import SitemapMiddleware
from searchcrawl.rules.lifecycle import Event
from searchcrawl.rules.robots_txt import RobotsTxt
from searchcrawl.rules.status_codes import Status
from tests.components import source_crawler, state_of

SITE = "http://h.test"
FETCHED = datetime(2026, 11, 1, 12, tzinfo=UTC)


def build(tmp_path: Path, extra: str = "") -> SitemapMiddleware:
    crawler = source_crawler(tmp_path, f'seeds = ["{SITE}/"]\n{extra}')
    middleware = build_from_crawler(SitemapMiddleware, crawler)
    state_of(crawler).mode = "maintenance"
    return middleware


def known(url: str, state: str = "indexed", fetched: datetime | None = FETCHED) -> Request:
    return Request(url, meta={KNOWN_ROW: {"state": state, "last_fetched": fetched}})


def test_off_without_sitemaps_to_read(tmp_path: Path) -> None:
    with pytest.raises(NotConfigured):
        build_from_crawler(SitemapMiddleware, source_crawler(tmp_path, f'seeds = ["{SITE}/"]\nsitemaps_from_robots = false\n'))
    with pytest.raises(NotConfigured):
        build_from_crawler(SitemapMiddleware, source_crawler(tmp_path, f'seeds = ["{SITE}/"]\nobey_robots = false\n'))
    assert build(tmp_path, f'obey_robots = false\nsitemaps = ["{SITE}/s.xml"]\n').configured == [f"{SITE}/s.xml"]


def test_robots_txt_sitemaps_on_the_sites_host_only(tmp_path: Path) -> None:
    middleware = build(tmp_path)
    robots = RobotsTxt.parse(f"Sitemap: {SITE}/a.xml\nSitemap: https://h.test/b.xml\nSitemap: http://cdn.test/c.xml\n")
    middleware.robots_txt_read(site=SITE, robots=robots)
    assert middleware.sitemaps_of(SITE) == [f"{SITE}/a.xml", "https://h.test/b.xml"]


def test_only_a_known_indexed_page_not_newer_than_its_fetch_is_spared(tmp_path: Path) -> None:
    middleware = build(tmp_path)
    middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
    middleware.hints.add(f"{SITE}/same.html", FETCHED)
    middleware.hints.add(f"{SITE}/new.html", FETCHED + timedelta(seconds=1))
    for url in ("old.html", "same.html"):
        with pytest.raises(RequestRefused) as refused:
            middleware.refuse_if_unchanged(known(f"{SITE}/{url}"))
        outcome = refused.value.outcome
        assert (outcome.event, outcome.status, outcome.fetched) == (Event.UNCHANGED, Status.SITEMAP_UNCHANGED, False)
    middleware.refuse_if_unchanged(known(f"{SITE}/new.html"))  # newer: requested
    middleware.refuse_if_unchanged(known(f"{SITE}/unlisted.html"))  # no hint
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html", state="failed"))  # not in the index as it is
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html", fetched=None))
    state_of(middleware.crawler).mode = "initial"
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html"))


def test_no_sparing_when_told_not_to_trust_lastmod_or_when_orphans_need_every_page(tmp_path: Path) -> None:
    for extra in ("trust_sitemap_lastmod = false\n", 'orphans = "delete"\n'):
        middleware = build(tmp_path, extra)
        middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
        middleware.refuse_if_unchanged(known(f"{SITE}/old.html"))
    middleware = build(tmp_path)
    middleware.hints.add(f"{SITE}/old.html", FETCHED - timedelta(days=3))
    state_of(middleware.crawler).forced = True
    middleware.refuse_if_unchanged(known(f"{SITE}/old.html"))
