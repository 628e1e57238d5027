"""The delta report of a run: what it found new, changed, deleted, excluded or failed, per URL.

While a run goes, a URL's delta lives in its document row (written with its state by
DocumentTable.record, in the same statement); when the run ends they are copied into
``run_deltas`` with the row's status and reason, so a run's report, and why each URL failed or
left, survive later runs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import func, literal, select

from searchcrawl.rules.lifecycle import Delta
from searchcrawl.rules.notify_events import status_text
from searchcrawl.store.database import Database
from searchcrawl.store.models import documents, run_deltas
from searchcrawl.store.runs import Runs
from searchcrawl.system.secrets import redact
from searchcrawl.system.translations import gettext as _


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


# the kinds of URLs that entered or stayed in the index: their status and reason say nothing more
ROUTINE = frozenset({Delta.NEW, Delta.CHANGED, Delta.UNCHANGED, Delta.NOT_MODIFIED})


def reason_of(entry: DeltaEntry) -> dict[str, Any] | None:
    """Why a URL of the report is where it is (its status and reason in that run, masked), when
    it did not simply enter or stay in the index and its row says."""
    if entry.kind in ROUTINE or (entry.status is None and not entry.reason):
        return None
    return {"status": entry.status, "reason": redact(entry.reason or "") or None}


def reason_text(why: dict[str, Any]) -> str:
    """Why a URL of the report is where it is, in a line: its status (``936 auth_refused``, the
    code's own name) and its recorded reason (the crawl's words, as stored), joined in the current
    language (a page's; English in `scrapy report`)."""
    status = status_text(why["status"]) if why["status"] is not None else ""
    reason = why["reason"] or ""
    if status and reason:
        return _("%(status)s: %(reason)s", status=status, reason=reason)
    return status or reason


def run_report(database: Database, source: str, run_id: int | None = None) -> dict[str, Any] | None:
    """The delta report of one run of ``source`` (the last by default) as ``--json`` prints it:
    the run's id, state, mode and start, each kind of change with its count and URLs, why each
    URL that did not simply enter or stay in the index is there (``reasons``: its status and
    reason in that run, by URL), and how many entries the listing skipped; None when there is
    no such run."""
    runs = {run["id"]: run for run in Runs(database).recent(source, limit=1000)}
    run_id = run_id or (max(runs) if runs else None)
    if run_id is None or run_id not in runs:
        return None
    deltas: dict[str, list[str]] = {}
    reasons: dict[str, dict[str, Any]] = {}
    for entry in Deltas(database).entries(source, run_id):
        deltas.setdefault(entry.kind, []).append(entry.url)
        why = reason_of(entry)
        if why is not None:
            reasons[entry.url] = why
    run = runs[run_id]
    return {
        "source": source,
        "run": run_id,
        "state": run["state"],
        "mode": run["mode"],
        "started_at": run["started_at"].isoformat(),
        "counts": {kind.value: len(deltas.get(kind, [])) for kind in Delta},
        "urls": {kind.value: deltas.get(kind, []) for kind in Delta},
        "reasons": reasons,
        # entries of the repository that have no URL of their own (a database row without a key,
        # a second row of a key): the agent's listing passed them over
        "skipped": json.loads(run["counters"] or "{}").get("skipped", 0),
    }
