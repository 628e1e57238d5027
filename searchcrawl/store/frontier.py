"""The durable frontier: the crawl queue, kept in the document table.

Following SAP's xcrawler, a URL moves through persisted sets: queued (todo), leased (being
retrieved), done. Leases are renewed while their process is alive and expire when it is not;
a resumed run puts its leased URLs back in the queue, and in a shared crawl the other nodes take
back expired leases, so a crash, a kill -9 or a dead node loses nothing. Dequeuing leases a batch in breadth-first order
(by depth, then discovery order), in one statement that chooses and leases the batch (on
PostgreSQL with ``FOR UPDATE SKIP LOCKED``), so that several crawler processes, on one machine
over SQLite or on many over PostgreSQL, can share one frontier.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Row, and_, func, or_, select, update

from searchcrawl.rules.lifecycle import State
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.database import Database, keyed, now
from searchcrawl.store.documents import ROW_KEY
from searchcrawl.store.models import FrontierState, documents

if TYPE_CHECKING:
    from searchcrawl.store.runs import Runs

IN_RUN_LIMIT = 1_000_000  # URLs remembered as in the run (about 100 MB at most), then forgotten


@dataclass(frozen=True, slots=True)
class Known:
    """What the document table knew of a URL when the frontier leased it: what a conditional GET
    (middlewares/conditional.py) and a sitemap's lastmod (middlewares/sitemaps.py) need, read
    with the lease so that they need no lookup of their own. Not the row: only these values."""

    state: str | None
    checksum: str | None = None
    last_modified: str | None = None
    etag: str | None = None
    last_fetched: datetime | None = None
    duplicate_of: str | None = None  # the URL it duplicates, while its status is 'duplicate'

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Known:
        """The values of a document-table row (``DocumentTable.get``, or a lease's)."""
        duplicate = row.get("status") == Status.DUPLICATE
        return cls(
            row.get("state"),
            row.get("checksum"),
            row.get("last_modified"),
            row.get("etag"),
            row.get("last_fetched"),
            row.get("duplicate_of") if duplicate else None,
        )


@dataclass
class Entry:
    """A URL in the frontier, with the request data that must survive a restart (JSON-able)."""

    url: str
    depth: int
    data: dict[str, Any] = field(default_factory=dict)
    known: Known | None = None  # as leased: what the document table knew of it


class Frontier:
    def __init__(self, database: Database, source: str, run_id: int, owner: str, lease_seconds: float = 600) -> None:
        self.database = database
        self.engine = database.engine
        self.source = source
        self.run_id = run_id
        self.owner = owner
        self.lease_duration = timedelta(seconds=lease_seconds)
        self.additions = 0  # URLs queued by this process: lets a scheduler know new work arrived
        self._in_run: set[str] = set()  # URLs this process knows are in the run's frontier already

    def in_run(self, url: str) -> bool:
        """Is ``url`` known to be queued or done in this run? Queuing it again would change
        nothing (the table keeps the first occurrence), so a link to it need not become a
        request at all. Most links of a site lead to pages already queued: this saves them the
        request, the boundary check and the database. A cache: False only means "not known here"."""
        return url in self._in_run

    def _remember(self, urls: Iterable[str]) -> None:
        if len(self._in_run) >= IN_RUN_LIMIT:
            self._in_run.clear()  # bounded memory; the table still discards repeats
        self._in_run.update(urls)

    def add(self, entries: Sequence[Entry], again: bool = False) -> int:
        """Queue URLs not yet queued in this run (others are discarded, as the seeds say), or
        with ``again`` whatever their state in the run (a retry of a failed download).

        Returns how many were queued. A URL known from earlier runs is queued again; its
        document state (indexed, ...) is kept.
        """
        if not entries:
            return 0
        when = now()
        unique: dict[str, Entry] = {}
        for entry in entries:  # the first occurrence wins, and discovery order is kept (row ids)
            unique.setdefault(entry.url, entry)
        rows = [
            keyed(
                {
                    "source": self.source,
                    "url": entry.url,
                    "state": State.QUEUED.value,
                    "depth": entry.depth,
                    "first_seen": when,
                    "run_id": self.run_id,
                    "frontier": FrontierState.QUEUED,
                    "request": json.dumps(entry.data, separators=(",", ":")) if entry.data else None,
                }
            )
            for entry in unique.values()
        ]
        with self.engine.begin() as connection:
            result = connection.execute(self._insert(again), rows)
        self._remember(unique)
        added = result.rowcount if result.rowcount is not None and result.rowcount >= 0 else len(rows)
        self.additions += added
        return added

    @functools.cache  # noqa: B019 - two statements per frontier, built once: building costs more than running
    def _insert(self, again: bool) -> Any:
        statement = self.database.insert(documents)
        current = documents.c
        return statement.on_conflict_do_update(
            index_elements=ROW_KEY,
            set_={
                "run_id": statement.excluded.run_id,
                "frontier": FrontierState.QUEUED,
                "depth": statement.excluded.depth,
                "request": statement.excluded.request,
                "lease_owner": None,
                "lease_expires": None,
            },
            where=None if again else or_(current.run_id.is_(None), current.run_id != self.run_id),
        )

    def lease(self, count: int) -> list[Entry]:
        """Take up to ``count`` queued URLs (shallowest first) for this owner."""
        # One statement: the batch is chosen and leased at once, so two processes never lease the
        # same URL. PostgreSQL locks the chosen rows and skips those another node is taking (SKIP
        # LOCKED); SQLite takes its write lock for the statement (a SELECT, then an UPDATE, in two
        # statements left the gap between them open: several local processes leased one URL).
        chosen = (
            select(documents.c.id)
            .where(
                documents.c.source == self.source, documents.c.run_id == self.run_id, documents.c.frontier == FrontierState.QUEUED
            )
            .order_by(documents.c.depth, documents.c.id)
            .limit(count)
        )
        if self.engine.dialect.name == "postgresql":
            chosen = chosen.with_for_update(skip_locked=True)
        statement = (
            update(documents)
            .where(documents.c.id.in_(chosen.scalar_subquery()))
            .values(frontier=FrontierState.LEASED, lease_owner=self.owner, lease_expires=now() + self.lease_duration)
            .returning(
                documents.c.id,
                documents.c.url,
                documents.c.depth,
                documents.c.request,
                documents.c.state,
                documents.c.checksum,
                documents.c.last_modified,
                documents.c.etag,
                documents.c.last_fetched,
                documents.c.status,
                documents.c.duplicate_of,
            )
        )
        with self.engine.begin() as connection:
            rows = sorted(connection.execute(statement).all(), key=lambda row: (row.depth or 0, row.id))
        if not rows:
            return []
        self._remember(row.url for row in rows)
        return [
            Entry(
                row.url,
                row.depth or 0,
                json.loads(row.request) if row.request else {},
                Known.of(dict(row._mapping)),
            )
            for row in rows
        ]

    def requeue_gone(self, runs: Runs, within: float, keep_own: bool = True) -> int:
        """Put back in the queue the URLs leased by nodes no longer working on the run (their
        process gone, or no heartbeat for ``within`` seconds): a resumed run's, or a shared
        run's dead nodes'. Every other live node's leases stay, and this node's unless not
        ``keep_own`` (as it joins: an earlier session's process may have had its name, host:pid,
        as in a container, and left its leases behind). The live nodes are read
        in the same transaction, under the lock a node joins the run under, so a node joining
        meanwhile waits, and its first leases are never taken for a dead node's. (Read in a
        transaction of their own, they missed a node that joined in between: 16 local processes
        starting together took each other's first leases back, and pages were fetched 2-3 times.)"""
        with self.engine.begin() as connection:
            live = runs.nodes_locked(connection, self.source, self.run_id, within, but=self.owner)
            return self._requeue(connection, keep_owners=[self.owner, *live] if keep_own else live)

    def requeue_leased(self, owner: str | None = None, expired_only: bool = False) -> int:
        """Put leased URLs back in the queue: one owner's (a process that stops), or those whose
        lease expired (a dead node's)."""
        with self.engine.begin() as connection:
            return self._requeue(connection, owner, expired_only)

    def _requeue(
        self, connection: Connection, owner: str | None = None, expired_only: bool = False, keep_owners: Sequence[str] = ()
    ) -> int:
        conditions = [
            documents.c.source == self.source,
            documents.c.run_id == self.run_id,
            documents.c.frontier == FrontierState.LEASED,
        ]
        if owner is not None:
            conditions.append(documents.c.lease_owner == owner)
        if keep_owners:
            conditions.append(or_(documents.c.lease_owner.is_(None), documents.c.lease_owner.notin_(list(keep_owners))))
        if expired_only:
            conditions.append(documents.c.lease_expires < now())
        result = connection.execute(
            update(documents).where(and_(*conditions)).values(frontier=FrontierState.QUEUED, lease_owner=None, lease_expires=None)
        )
        return result.rowcount or 0

    def leased_by(self, owner: str) -> list[tuple[str, int]]:
        """(url, depth) of the URLs ``owner`` holds leased in this run."""
        with self.engine.connect() as connection:
            rows: Sequence[Row[str, int | None]] = connection.execute(
                select(documents.c.url, documents.c.depth).where(
                    documents.c.source == self.source,
                    documents.c.run_id == self.run_id,
                    documents.c.frontier == FrontierState.LEASED,
                    documents.c.lease_owner == owner,
                )
            ).all()
            return [(url, depth or 0) for url, depth in rows]

    def renew(self) -> int:
        """Extend this owner's leases: work in flight (or waiting in its buffer) is not expired
        and handed to another node while this one is alive. Returns how many were renewed."""
        with self.engine.begin() as connection:
            result = connection.execute(
                update(documents)
                .where(
                    documents.c.source == self.source,
                    documents.c.run_id == self.run_id,
                    documents.c.frontier == FrontierState.LEASED,
                    documents.c.lease_owner == self.owner,
                )
                .values(lease_expires=now() + self.lease_duration)
            )
        return result.rowcount or 0

    def present(self) -> set[FrontierState]:
        """Which of the frontier's states (queued, leased, done) at least one URL of this run is in:
        three index look-ups, however large the run, where ``counts`` reads all of its rows; a
        node waiting for the others' work asks it every IDLE_RECHECK."""

        def some(state: FrontierState) -> Any:
            return (
                select(documents.c.id)
                .where(documents.c.source == self.source, documents.c.run_id == self.run_id, documents.c.frontier == state)
                .exists()
            )

        with self.engine.connect() as connection:
            row = connection.execute(select(*(some(state) for state in FrontierState))).one()
        return {state for state, found in zip(FrontierState, row, strict=True) if found}

    def counts(self) -> dict[FrontierState, int]:
        """How many URLs of this run are queued, leased and done."""
        with self.engine.connect() as connection:
            rows: Sequence[Row[str | None, int]] = connection.execute(
                select(documents.c.frontier, func.count())
                .where(documents.c.source == self.source, documents.c.run_id == self.run_id)
                .group_by(documents.c.frontier)
            ).all()
            counts = dict.fromkeys(FrontierState, 0)
            counts.update({FrontierState(state): number for state, number in rows if state in counts})
            return counts
