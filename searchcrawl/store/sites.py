"""Fleet-wide politeness: per site, one next-allowed start time and one in-flight count, shared
by every crawler process through the document table's database.

Scrapy's own per-site delay and concurrency hold per process; when several processes (or
machines) crawl together, each would keep its own and the site would see their sum. Here a
process reserves a start time and an in-flight slot before each request: the row of the site is
locked for the reservation (``UPDATE`` takes a row lock on PostgreSQL, the write lock on SQLite),
so reservations are strictly spaced by the delay whichever node makes them. Times come from the
database server's clock on PostgreSQL, so clock skew between machines does not matter. A slot
held by a node that died expires (``hold`` seconds after its start: the download timeout and a
margin). A process of this host that is gone (killed) is known at once: while a site is full, its
slots there are freed (within ``GONE_RECHECK`` seconds of the site being found full), so that a
crawl resumed after a kill -9, or the processes left of a local fleet, do not wait out its holds
(a minute by default) with the site's limit taken by nobody.

On PostgreSQL the reservation is one call of the function ``searchcrawl_site_acquire``
(migration 0008), which holds the row lock for microseconds instead of four round trips; on
SQLite (one machine) the same steps run from here, in one transaction.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Row, bindparam, delete, func, select, text, update
from sqlalchemy.exc import SQLAlchemyError

from searchcrawl.store.database import Database, as_utc, local_pid, now, this_host
from searchcrawl.store.models import site_leases, site_slots
from searchcrawl.system.processes import process_alive

logger = logging.getLogger(__name__)

FULL_RETRY = 0.1  # seconds before asking again when a site is at its concurrency limit
GONE_RECHECK = 2.0  # seconds between looks, per site found full, for slots of this host's processes gone


@dataclass
class SiteGrant:
    """The answer to a reservation: a lease to release after the download and how long to wait
    before starting it; or, with no lease, how long to wait before asking again.

    The wait counts from ``answered`` (``time.monotonic()`` as the answer was read, in the thread
    that asked), not from whenever its caller looks at it: an event loop busy with a page when the
    answer comes resumes its waiter late, and a wait counted from then sent the request that much
    past its reserved start, into the next node's turn, with its lateness unseen (CI: three
    requests to a site within 0.23 s, for a fleet delay of 0.3 s)."""

    lease_id: int | None
    wait: float
    answered: float = field(default_factory=time.monotonic)

    @property
    def due(self) -> float:
        """The reserved start on ``time.monotonic()``'s clock (never before the one the
        database decided: the answer is read after it decided)."""
        return self.answered + self.wait


class SitePoliteness:
    def __init__(self, database: Database, owner: str) -> None:
        self.database = database
        self.engine = database.engine
        self.owner = owner
        self.postgres = self.engine.dialect.name == "postgresql"
        self.known: set[str] = set()  # sites whose row exists
        self.here = this_host()
        self.looked: dict[str, float] = {}  # site: when its slots' owners were last looked at (free_gone)
        # SQLite: lock the site's row (the database's write lock) and read its next start
        self.lock = (
            update(site_slots)
            .where(site_slots.c.site == bindparam("key"))
            .values(site=site_slots.c.site)
            .returning(site_slots.c.next_at)
        )
        # The rest built once too: they run while the site's row is locked, for every request of
        # the fleet, so the Python that builds a statement would hold up every node.
        self.in_flight = select(func.count()).where(
            site_leases.c.site == bindparam("key"), site_leases.c.expires >= bindparam("clock")
        )
        self.expire = delete(site_leases).where(
            site_leases.c.site == bindparam("key"), site_leases.c.expires < bindparam("clock")
        )
        self.advance = update(site_slots).where(site_slots.c.site == bindparam("key")).values(next_at=bindparam("next_at"))
        self.take = site_leases.insert().values(site=bindparam("key"), owner=bindparam("owner"), expires=bindparam("expires"))
        self.free = delete(site_leases).where(site_leases.c.id == bindparam("lease_id"))
        self.acquire_call = text(
            "SELECT lease_id, wait FROM searchcrawl_site_acquire(:site, :delay, :concurrency, :hold, :owner)"
        )

    def acquire(self, site: str, delay: float, concurrency: int, hold: float) -> SiteGrant:
        """Reserve the site's next start (``delay`` after the previous one, fleet-wide) and one of
        its ``concurrency`` in-flight slots, kept for at most ``hold`` seconds after the start.
        The site's row lock serialises the fleet."""
        if self.postgres:
            with self.database.single.connect() as connection:  # one statement: autocommit
                row: Row[int | None, float] = connection.execute(
                    self.acquire_call,
                    {"site": site, "delay": delay, "concurrency": concurrency, "hold": hold, "owner": self.owner},
                ).one()
            lease_id, wait = row
            if lease_id is None:
                self.free_gone(site)
                return SiteGrant(None, FULL_RETRY)
            return SiteGrant(lease_id, max(0.0, wait))
        with self.engine.begin() as connection:
            if site not in self.known:
                connection.execute(
                    self.database.insert(site_slots).values(site=site).on_conflict_do_nothing(index_elements=["site"])
                )
                self.known.add(site)
            next_at: datetime | None = connection.execute(self.lock, {"key": site}).scalar_one()
            clock = now()  # one machine: its clock (SQLite's has whole seconds only)
            grant = None  # full
            if connection.execute(self.in_flight, {"key": site, "clock": clock}).scalar_one() >= concurrency:
                connection.execute(self.expire, {"key": site, "clock": clock})
            else:
                start = max(as_utc(next_at) or clock, clock)
                connection.execute(self.advance, {"key": site, "next_at": start + timedelta(seconds=delay)})
                key = connection.execute(
                    self.take, {"key": site, "owner": self.owner, "expires": start + timedelta(seconds=hold)}
                ).inserted_primary_key
                assert key is not None  # one row inserted (not executemany): its key is known
                grant = SiteGrant(key[0], (start - clock).total_seconds())
        if grant is None:  # out of the transaction: SQLite's write lock is not held while processes are looked up
            self.free_gone(site)
            return SiteGrant(None, FULL_RETRY)
        return grant

    def free_gone(self, site: str) -> int:
        """Free the slots of ``site`` held by processes of this host that are gone (killed,
        crashed), about every GONE_RECHECK seconds (two worker threads may both look): the site
        is full, and may be full of them. Another host's processes cannot be looked up from here:
        their slots expire. Only the slots read are freed, by id: a process that took a gone
        one's name (host:pid, a pid reused) in between keeps its own. A database error here is
        logged and the request asks again, as for a full site."""
        moment = time.monotonic()
        if moment - self.looked.get(site, float("-inf")) < GONE_RECHECK:
            return 0
        self.looked[site] = moment
        try:
            with self.database.single.connect() as connection:  # autocommit: a read, then one delete
                slots: Sequence[Row[int, str]] = connection.execute(
                    select(site_leases.c.id, site_leases.c.owner).where(site_leases.c.site == site)
                ).all()
                owners = {owner for _id, owner in slots}
                gone = {owner for owner in owners if (pid := local_pid(owner, self.here)) is not None and not process_alive(pid)}
                if not gone:
                    return 0
                ids = [lease_id for lease_id, owner in slots if owner in gone]
                freed = connection.execute(delete(site_leases).where(site_leases.c.id.in_(ids))).rowcount or 0
        except SQLAlchemyError:
            logger.warning("Looking for slots of site %s held by processes gone failed", site, exc_info=True)
            return 0
        if freed:
            logger.info(
                "Freed %d in-flight slot(s) of site %s held by processes of this host that are gone: %s",
                freed,
                site,
                ", ".join(sorted(gone)),
            )
        return freed

    def release(self, lease_id: int) -> None:
        with self.database.single.connect() as connection:  # one statement: autocommit
            connection.execute(self.free, {"lease_id": lease_id})

    def release_all(self) -> int:
        """Free every slot this process holds (it is closing)."""
        with self.engine.begin() as connection:
            return connection.execute(delete(site_leases).where(site_leases.c.owner == self.owner)).rowcount or 0
