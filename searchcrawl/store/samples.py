"""A run's progress over time: what RunMonitor saw at each tick, for the run page's chart.

The runs table keeps a run's latest counters only; a live run's page plots how it got there
(pages, the frontier's done and to fetch, documents waiting for Solr), so RunMonitor adds a
sample at each tick (every SEARCHCRAWL_PROGRESS_INTERVAL seconds). Bounded: once a run has more
than MAX_SAMPLES, every second one of its older samples is dropped, so a run of any length keeps
between MAX_SAMPLES / 2 and MAX_SAMPLES samples spread over its whole course (each thinning
doubles the spacing), and a long run's chart reads at most MAX_SAMPLES rows. As a run adds its
first sample, the samples of its source's runs before the latest KEEP_RUNS go: the table holds at
most KEEP_RUNS x MAX_SAMPLES rows per source (an older run's page shows no chart).

In a shared crawl each node adds its samples: the frontier's counts are the run's (the shared
frontier's), pages and indexed the sampling node's own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, select

from searchcrawl.store.database import Database, as_utc, now
from searchcrawl.store.models import run_samples, runs

MAX_SAMPLES = 480  # per run: 4 hours at the default 30 s interval before the first thinning
KEEP_RUNS = 30  # a source's latest runs keep their samples (as many as its page plots)
FIELDS = ("pages", "done", "queued", "leased", "pending", "indexed")


def to_thin(ids: list[int]) -> list[int]:
    """The samples dropped by a thinning: every second of ``ids`` (oldest first), the first
    and the latest kept."""
    return [sample for position, sample in enumerate(ids[:-1]) if position % 2 == 1]


class RunSamples:
    def __init__(self, database: Database, limit: int = MAX_SAMPLES) -> None:
        self.engine = database.engine
        self.limit = limit

    def add(self, run_id: int, values: dict[str, Any], at: datetime | None = None) -> None:
        """A sample of the run (the known FIELDS of ``values``, a number or none), thinned past the limit."""
        row = {key: int(values[key]) if isinstance(values.get(key), int) else None for key in FIELDS}
        with self.engine.begin() as connection:
            connection.execute(run_samples.insert().values(run_id=run_id, at=at or now(), **row))
            kept = connection.execute(select(func.count()).where(run_samples.c.run_id == run_id)).scalar() or 0
            if kept == 1:  # the run's first sample: the samples of the source's older runs go
                self._forget_older(connection, run_id)
            if kept > self.limit:
                ids: list[int] = list(
                    connection.execute(
                        select(run_samples.c.id).where(run_samples.c.run_id == run_id).order_by(run_samples.c.id)
                    ).scalars()
                )
                connection.execute(delete(run_samples).where(run_samples.c.id.in_(to_thin(ids))))

    @staticmethod
    def _forget_older(connection: Connection, run_id: int) -> None:
        """Drop the samples of the runs of ``run_id``'s source before its KEEP_RUNS latest."""
        source = select(runs.c.source).where(runs.c.id == run_id).scalar_subquery()
        kept = select(runs.c.id).where(runs.c.source == source).order_by(runs.c.id.desc()).limit(KEEP_RUNS)
        older = select(runs.c.id).where(runs.c.source == source, runs.c.id.not_in(kept))
        connection.execute(delete(run_samples).where(run_samples.c.run_id.in_(older)))

    def of(self, run_id: int) -> list[dict[str, Any]]:
        """The run's samples, oldest first (times as UTC)."""
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(run_samples).where(run_samples.c.run_id == run_id).order_by(run_samples.c.id).limit(self.limit + 1)
            ).mappings()
            return [{**row, "at": as_utc(row["at"])} for row in rows]
