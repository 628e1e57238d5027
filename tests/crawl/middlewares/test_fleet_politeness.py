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
