"""The delta report of a run: what it found new, changed, deleted, excluded or failed, per URL.

While a run goes, a URL's delta lives in its document row (written with its state by
DocumentTable.record, in the same statement); when the run ends they are copied into
``run_deltas``, so a run's report survives later runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, literal, select

from searchcrawl.rules.lifecycle import Delta
from searchcrawl.store.database import Database
from searchcrawl.store.models import documents, run_deltas
from searchcrawl.store.runs import Runs


class Deltas:
    def __init__(self, database: Database) -> None:
        self.engine = database.engine

    def report(self, source: str, run_id: int) -> dict[str, list[str]]:
        """What a run found, by kind: kept per run once the run has ended, else read live."""
        report: dict[str, list[str]] = {}
        with self.engine.connect() as connection:
            rows: Sequence[tuple[str | None, str]] = connection.execute(
                select(run_deltas.c.kind, run_deltas.c.url).where(run_deltas.c.run_id == run_id)
            ).all()
            if not rows:
                rows = connection.execute(
                    select(documents.c.delta, documents.c.url).where(
                        documents.c.source == source, documents.c.delta_run == run_id
                    )
                ).all()
        for kind, url in rows:
            if kind is not None:  # as ``keep`` copies them (a run's rows always have one)
                report.setdefault(kind, []).append(url)
        for urls in report.values():
            urls.sort()
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
                    ["run_id", "url", "kind"],
                    select(literal(run_id), documents.c.url, documents.c.delta).where(
                        documents.c.source == source, documents.c.delta_run == run_id, documents.c.delta.is_not(None)
                    ),
                )
            )


def run_report(database: Database, source: str, run_id: int | None = None) -> dict[str, Any] | None:
    """The delta report of one run of ``source`` (the last by default) as ``--json`` prints it:
    the run's id, state, mode and start, each kind of change with its count and URLs, and how
    many entries the listing skipped; None when there is no such run."""
    runs = {run["id"]: run for run in Runs(database).recent(source, limit=1000)}
    run_id = run_id or (max(runs) if runs else None)
    if run_id is None or run_id not in runs:
        return None
    deltas = Deltas(database).report(source, run_id)
    run = runs[run_id]
    return {
        "source": source,
        "run": run_id,
        "state": run["state"],
        "mode": run["mode"],
        "started_at": run["started_at"].isoformat(),
        "counts": {kind.value: len(deltas.get(kind, [])) for kind in Delta},
        "urls": {kind.value: deltas.get(kind, []) for kind in Delta},
        # entries of the repository that have no URL of their own (a database row without a key,
        # a second row of a key): the agent's listing passed them over
        "skipped": json.loads(run["counters"] or "{}").get("skipped", 0),
    }
