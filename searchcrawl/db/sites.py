"""Fleet-wide politeness: per site, one next-allowed start time and one in-flight count, shared
by every crawler process through the document table's database.

Scrapy's own per-site delay and concurrency hold per process; when several processes (or
machines) crawl together, each would keep its own and the site would see their sum. Here a
process reserves a start time and an in-flight slot before each request: the row of the site is
locked for the reservation (``UPDATE`` takes a row lock on PostgreSQL, the write lock on SQLite),
so reservations are strictly spaced by the delay whichever node makes them. Times come from the
database server's clock on PostgreSQL, so clock skew between machines does not matter. A slot
held by a node that died expires (``hold`` seconds after its start).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, func, select, update

from .models import SiteLease, SiteSlot
from .store import DocumentTable, as_utc, now

FULL_RETRY = 0.1  # seconds before asking again when a site is at its concurrency limit


@dataclass
class Grant:
    """The answer to a reservation: a lease to release after the download and how long to wait
    before starting it; or, with no lease, how long to wait before asking again."""

    lease_id: int | None
    wait: float


class SitePoliteness:
    def __init__(self, table: DocumentTable, owner: str) -> None:
        self.table = table
        self.engine = table.engine
        self.owner = owner
        self.postgres = self.engine.dialect.name == "postgresql"

    def _clock(self, connection: Connection) -> datetime:
        if self.postgres:
            return as_utc(connection.execute(select(func.clock_timestamp())).scalar_one())  # type: ignore[return-value]
        return now()

    def acquire(self, site: str, delay: float, concurrency: int, hold: float) -> Grant:
        """Reserve the site's next start (``delay`` after the previous one, fleet-wide) and one of
        its ``concurrency`` in-flight slots, kept for at most ``hold`` seconds after the start."""
        with self.engine.begin() as connection:
            connection.execute(self.table.insert(SiteSlot).values(site=site).on_conflict_do_nothing(index_elements=["site"]))
            connection.execute(update(SiteSlot).where(SiteSlot.site == site).values(site=site))  # lock the site
            clock = self._clock(connection)
            connection.execute(delete(SiteLease).where(SiteLease.site == site, SiteLease.expires < clock))
            in_flight = connection.execute(select(func.count()).where(SiteLease.site == site)).scalar_one()
            if in_flight >= concurrency:
                return Grant(None, FULL_RETRY)
            next_at = as_utc(connection.execute(select(SiteSlot.next_at).where(SiteSlot.site == site)).scalar_one())
            start = max(next_at or clock, clock)
            connection.execute(update(SiteSlot).where(SiteSlot.site == site).values(next_at=start + timedelta(seconds=delay)))
            lease_id = connection.execute(
                SiteLease.__table__.insert().values(site=site, owner=self.owner, expires=start + timedelta(seconds=hold))
            ).inserted_primary_key[0]
        return Grant(lease_id, (start - clock).total_seconds())

    def release(self, lease_id: int) -> None:
        with self.engine.begin() as connection:
            connection.execute(delete(SiteLease).where(SiteLease.id == lease_id))

    def release_all(self) -> int:
        """Free every slot this process holds (it is closing)."""
        with self.engine.begin() as connection:
            return connection.execute(delete(SiteLease).where(SiteLease.owner == self.owner)).rowcount or 0
