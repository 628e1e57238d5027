"""The delta report of a run: what it found new, changed, deleted, excluded or failed, per URL.

While a run goes, a URL's delta lives in its document row (written with its state by
DocumentTable.record, in the same statement); when the run ends they are copied into
``run_deltas`` with the row's status and reason, so a run's report, and why each URL failed or
left, survive later runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import func, literal, select

from searchcrawl.store.database import Database
from searchcrawl.store.models import documents, run_deltas


class DeltaEntry(NamedTuple):
    """One URL of a run's delta report: its kind, and its status and reason in that run."""

    kind: str
    url: str
    status: int | None
    reason: str | None


class Deltas:
    def __init__(self, database: Database) -> None:
        self.engine = database.engine

    def entries(self, source: str, run_id: int) -> list[DeltaEntry]:
        """What a run found, URL by URL (sorted): kept per run once the run has ended, else read
        live from the document table."""
        with self.engine.connect() as connection:
            rows: Sequence[tuple[str | None, str, int | None, str | None]] = connection.execute(
                select(run_deltas.c.kind, run_deltas.c.url, run_deltas.c.status, run_deltas.c.reason).where(
                    run_deltas.c.run_id == run_id
                )
            ).all()
            if not rows:
                rows = connection.execute(
                    select(documents.c.delta, documents.c.url, documents.c.status, documents.c.reason).where(
                        documents.c.source == source, documents.c.delta_run == run_id
                    )
                ).all()
        # a row without a kind is skipped, as ``keep`` skips it (a run's rows always have one)
        found = [DeltaEntry(kind, url, status, reason) for kind, url, status, reason in rows if kind is not None]
        return sorted(found, key=lambda entry: (entry.kind, entry.url))

    def report(self, source: str, run_id: int) -> dict[str, list[str]]:
        """What a run found, by kind: its URLs, sorted (``entries``)."""
        report: dict[str, list[str]] = {}
        for entry in self.entries(source, run_id):
            report.setdefault(entry.kind, []).append(entry.url)
        return report

    def counts(self, source: str, run_id: int) -> dict[str, int]:
        """How many URLs of each kind a run found (``report``'s lengths), counted by the
        database: a run of a million URLs ends without holding them (issue 58: the report's
        lists were 270 MB of the crawler's peak at the end of a first crawl of 1,000,000)."""
        with self.engine.connect() as connection:
            rows: Sequence[tuple[str | None, int]] = connection.execute(
                select(run_deltas.c.kind, func.count()).where(run_deltas.c.run_id == run_id).group_by(run_deltas.c.kind)
            ).all()
            if not rows:
                rows = connection.execute(
                    select(documents.c.delta, func.count())
                    .where(documents.c.source == source, documents.c.delta_run == run_id)
                    .group_by(documents.c.delta)
                ).all()
        return {kind: count for kind, count in rows if kind is not None}

    def keep(self, source: str, run_id: int) -> None:
        """Copy the run's deltas into run_deltas: the report survives later runs."""
        with self.engine.begin() as connection:
            connection.execute(run_deltas.delete().where(run_deltas.c.run_id == run_id))
            connection.execute(
                run_deltas.insert().from_select(
                    ["run_id", "url", "kind", "status", "reason"],
                    select(literal(run_id), documents.c.url, documents.c.delta, documents.c.status, documents.c.reason).where(
                        documents.c.source == source, documents.c.delta_run == run_id, documents.c.delta.is_not(None)
                    ),
                )
            )
