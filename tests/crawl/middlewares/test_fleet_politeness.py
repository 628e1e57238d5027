"""The fleet's reservations kept by one process (crawl/middlewares/fleet.py), on a real SQLite
sites table: when a request may go, and when a reserved start is given up."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from scrapy import Request
from scrapy.utils.test import get_crawler

from searchcrawl.config.source import SourceSettings
from searchcrawl.crawl.middlewares.fleet import FleetPolitenessMiddleware
from searchcrawl.store import Database, DocumentTable
from searchcrawl.store.sites import SiteGrant, SitePoliteness

DELAY = 0.3
STALL = 0.5  # seconds the event loop is busy (a page parsed) as a reservation's answer comes


class StallingSites(SitePoliteness):
    """The real reservations, whose first answer reaches a busy event loop: the loop runs a
    callback of ``STALL`` seconds, queued before the answer is handed back to it."""

    def __init__(self, database: Database) -> None:
        super().__init__(database, "node-under-test")
        self.loop: asyncio.AbstractEventLoop | None = None
        self.grants: list[SiteGrant] = []
        self.released: list[int] = []

    def acquire(self, site: str, delay: float, concurrency: int, hold: float) -> SiteGrant:
        grant = super().acquire(site, delay, concurrency, hold)
        if not self.grants and self.loop is not None:
            self.loop.call_soon_threadsafe(time.sleep, STALL)  # runs before the answer's callback
        self.grants.append(grant)
        return grant

    def release(self, lease_id: int) -> None:
        self.released.append(lease_id)
        super().release(lease_id)


def test_a_start_the_loop_woke_late_for_is_given_up(tmp_path: Path) -> None:
    """The wait counts from when the answer was read, not from when the busy loop looked at it:
    counted from then (the old code), the request went ``STALL`` seconds past its reserved start,
    into the next node's turn, and its lateness was never seen."""
    sites = StallingSites(DocumentTable(Database(f"sqlite:///{tmp_path / 'sites.sqlite3'}")).database)
    crawler = get_crawler(settings_dict={"DOWNLOAD_DELAY": DELAY, "CONCURRENT_REQUESTS_PER_DOMAIN": 2})
    middleware = FleetPolitenessMiddleware(crawler, sites, SourceSettings(seeds=["http://h.test/"]))
    request = Request("http://h.test/a")

    async def scenario() -> float:
        sites.loop = asyncio.get_running_loop()
        await middleware.process_request(request)
        return time.monotonic()

    sent = asyncio.run(scenario())
    first, *later = sites.grants
    assert later and sites.released[0] == first.lease_id  # the late start given up, its slot freed
    kept = later[-1]
    assert sent - kept.due <= DELAY / 2, (sent - kept.due, sent - first.due)  # sent near its own start
    assert kept.due >= first.due + DELAY  # and in a start of its own, after the one given up


def test_a_sleep_woken_early_never_moves_a_start_before_its_reservation(tmp_path: Path, monkeypatch) -> None:
    """A sleep that wakes early (another event loop's clock) found the request on time before its
    reserved start; the start this process records, which spaces its next request, was then
    before the reservation. It is never now."""
    sites = StallingSites(DocumentTable(Database(f"sqlite:///{tmp_path / 'sites.sqlite3'}")).database)
    crawler = get_crawler(settings_dict={"DOWNLOAD_DELAY": DELAY, "CONCURRENT_REQUESTS_PER_DOMAIN": 4})
    middleware = FleetPolitenessMiddleware(crawler, sites, SourceSettings(seeds=["http://h.test/"]))
    sleep = asyncio.sleep
    monkeypatch.setattr(asyncio, "sleep", lambda seconds: sleep(seconds / 2))

    other = SitePoliteness(sites.database, "another-node")

    async def scenario() -> None:
        await middleware.process_request(Request("http://h.test/a"))
        other.acquire("h.test", DELAY, 4, 30)  # another node's turn comes between this one's two
        await middleware.process_request(Request("http://h.test/b"))

    asyncio.run(scenario())
    assert len(sites.grants) == 2
    assert middleware.sent["h.test"] >= sites.grants[-1].due, middleware.sent["h.test"] - sites.grants[-1].due
