"""What stall detection (ops/stalls.py) reads of the database: the running runs, their nodes'
heartbeats, their URLs to fetch and leased, the documents waiting for Solr, and PostgreSQL's
sessions waiting on a lock. Each read is bounded (the URLs to fetch counted up to TO_FETCH_CAP)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, text

from searchcrawl.store.database import APPLICATION, Database, as_utc
from searchcrawl.store.models import FrontierState, RunState, crawl_nodes, documents, frontier, runs
from searchcrawl.store.progress import Report

TO_FETCH_CAP = 10_000  # URLs to fetch are counted up to this many: a bounded read per run


class StallCheck:
    """Reads what stall detection's ``judge`` and the waits need (ops/stalls.py)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.engine = database.engine

    def running(self, sources: Iterable[str] | None = None) -> list[dict[str, Any]]:
        query = select(runs).where(runs.c.state == RunState.RUNNING).order_by(runs.c.id)
        if sources is not None:
            query = query.where(runs.c.source.in_(list(sources)))
        with self.engine.connect() as connection:
            return [dict(row) for row in connection.execute(query).mappings()]

    def node_heartbeats(self, run_ids: Iterable[int]) -> dict[int, datetime]:
        """The latest node heartbeat (lease renewal, every third of SEARCHCRAWL_LEASE_SECONDS) of each run."""
        query = (
            select(crawl_nodes.c.run_id, func.max(crawl_nodes.c.heartbeat))
            .where(crawl_nodes.c.run_id.in_(list(run_ids)))
            .group_by(crawl_nodes.c.run_id)
        )
        with self.engine.connect() as connection:
            rows: list[Any] = list(connection.execute(query))
        return {run_id: moment for run_id, beat in rows if (moment := as_utc(beat)) is not None}

    def to_fetch(self, source: str, run_id: int) -> int:
        inner = (
            select(frontier.c.document_id)
            .where(
                frontier.c.source == source,
                frontier.c.run_id == run_id,
                frontier.c.state.in_([FrontierState.QUEUED.value, FrontierState.LEASED.value]),
            )
            .limit(TO_FETCH_CAP)
            .subquery()
        )
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(inner)).scalar_one())

    def leases(self, source: str, run_id: int) -> list[tuple[str, int, datetime | None]]:
        """(owner, URLs, earliest expiry) of the run's leased URLs."""
        query = (
            select(frontier.c.lease_owner, func.count(), func.min(frontier.c.lease_expires))
            .where(frontier.c.source == source, frontier.c.run_id == run_id, frontier.c.state == FrontierState.LEASED.value)
            .group_by(frontier.c.lease_owner)
        )
        with self.engine.connect() as connection:
            rows: list[Any] = list(connection.execute(query))
        return [(str(owner or ""), int(count), as_utc(expires)) for owner, count, expires in rows]

    def live_owners(self, run_id: int, now: datetime, within: float, reports: Iterable[Report]) -> set[str]:
        since = now - timedelta(seconds=within)
        with self.engine.connect() as connection:
            rows: list[Any] = list(
                connection.execute(select(crawl_nodes.c.owner, crawl_nodes.c.heartbeat).where(crawl_nodes.c.run_id == run_id))
            )
        nodes = {str(owner) for owner, heartbeat in rows if (as_utc(heartbeat) or since - timedelta(seconds=1)) >= since}
        return nodes | {report.owner for report in reports if report.reported_at >= since}

    def pending(self, source: str) -> int:
        with self.engine.connect() as connection:
            return int(
                connection.execute(
                    select(func.count()).where(documents.c.source == source, documents.c.state.in_(["pending", "removing"]))
                ).scalar_one()
            )

    def lock_waiters(self) -> dict[str, int]:
        """PostgreSQL: the sessions of this database waiting on a lock now, by their
        ``application_name`` (a searchcrawl process's: store/database.py's ``application_name``
        of its owner; "" for any other). Empty on SQLite: unknowable from outside, judged from a
        live process's silent heartbeat instead. A database user sees the waits of its own
        sessions, and of every session with ``pg_read_all_stats``."""
        if self.engine.dialect.name != "postgresql":
            return {}
        statement = text(
            "SELECT coalesce(application_name, ''), count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock' GROUP BY 1"
        )
        with self.engine.connect() as connection:
            rows: list[Any] = list(connection.execute(statement).all())
        return {name if name.startswith(APPLICATION) else "": int(count) for name, count in rows}
