"""Each crawl process's progress report (the ``run_progress`` table, issue 60).

Runs already say when their counters were last saved (``runs.updated_at``, every progress
interval, by any node) and shared crawls keep a heartbeat per node (``crawl_nodes``). Neither says
when a page last came back, nor what a process waits on: this table does, one row per process
in a run, written by the ProgressReport extension (crawl/extensions/progress_report.py) every
SEARCHCRAWL_PROGRESS_INTERVAL and read by stall detection (ops/stalls.py). A row is one small
upsert per interval; the rows of ended runs stay (one per process of a run, a few hundred bytes)
and are only ever read by run id.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import select

from searchcrawl.store.database import Database, as_utc
from searchcrawl.store.models import run_progress

MAX_WAITS = 5  # entries of ``waits`` kept per row: the oldest waits first


@dataclass(frozen=True)
class Wait:
    """What a process waited on when it reported: ``kind`` is ``retry-after`` (a site asked for a
    pause until ``until``), ``in-flight`` (``count`` requests to ``site`` without an answer,
    the oldest sent at ``since``) or ``delay`` (``site`` has the process's longest download
    delay now, ``seconds``, and its requests time out after ``timeout`` seconds: stall detection
    waits that long between answers before it says "nothing fetched")."""

    kind: str
    site: str
    since: datetime | None = None
    until: datetime | None = None
    count: int = 0
    seconds: float | None = None
    timeout: float | None = None

    def as_json(self) -> dict[str, Any]:
        value: dict[str, Any] = {"kind": self.kind, "site": self.site[:300], "count": self.count}
        if self.since is not None:
            value["since"] = self.since.isoformat()
        if self.until is not None:
            value["until"] = self.until.isoformat()
        if self.seconds is not None:
            value["seconds"] = self.seconds
        if self.timeout is not None:
            value["timeout"] = self.timeout
        return value

    @classmethod
    def of(cls, value: Any) -> Wait | None:
        """A wait read back from the table (None for anything malformed)."""
        if not isinstance(value, dict) or not isinstance(value.get("kind"), str) or not isinstance(value.get("site"), str):
            return None
        try:
            since = as_utc(datetime.fromisoformat(value["since"])) if value.get("since") else None
            until = as_utc(datetime.fromisoformat(value["until"])) if value.get("until") else None
            count = int(value.get("count") or 0)
            seconds = _seconds(value.get("seconds"))
            timeout = _seconds(value.get("timeout"))
        except (TypeError, ValueError):
            return None
        return cls(value["kind"], value["site"], since, until, count, seconds, timeout)


def _seconds(value: Any) -> float | None:
    """A recorded number of seconds: finite, not negative, at most a day (else ValueError)."""
    if value is None:
        return None
    seconds = float(value)
    if not 0 <= seconds <= 86_400:  # NaN fails too
        raise ValueError(value)
    return seconds


@dataclass(frozen=True)
class Report:
    """One process's last progress report in a run."""

    run_id: int
    owner: str
    source: str
    reported_at: datetime
    fetched_at: datetime
    pages: int
    waits: tuple[Wait, ...] = field(default_factory=tuple)


class RunProgress:
    def __init__(self, database: Database) -> None:
        self.database = database
        self.engine = database.engine

    def report(
        self, run_id: int, owner: str, source: str, reported_at: datetime, fetched_at: datetime, pages: int, waits: Iterable[Wait]
    ) -> None:
        """Save this process's report (one upsert)."""
        shown = json.dumps([wait.as_json() for wait in list(waits)[:MAX_WAITS]])
        values = {"source": source, "reported_at": reported_at, "fetched_at": fetched_at, "pages": pages, "waits": shown}
        statement = self.database.insert(run_progress).values(run_id=run_id, owner=owner, **values)
        with self.engine.begin() as connection:
            connection.execute(statement.on_conflict_do_update(index_elements=["run_id", "owner"], set_=values))

    def of_runs(self, run_ids: Iterable[int]) -> dict[int, list[Report]]:
        """The reports of these runs, by run."""
        ids = sorted(set(run_ids))
        found: dict[int, list[Report]] = {run_id: [] for run_id in ids}
        if not ids:
            return found
        with self.engine.connect() as connection:
            rows = connection.execute(select(run_progress).where(run_progress.c.run_id.in_(ids))).mappings().all()
        for row in rows:
            try:
                waits = json.loads(row["waits"] or "[]")
            except ValueError:
                waits = []
            parsed = tuple(wait for wait in map(Wait.of, waits if isinstance(waits, list) else []) if wait is not None)
            reported, fetched = as_utc(row["reported_at"]), as_utc(row["fetched_at"])
            assert reported is not None and fetched is not None  # NOT NULL columns
            found[row["run_id"]].append(
                Report(row["run_id"], row["owner"], row["source"], reported, fetched, row["pages"], parsed[:MAX_WAITS])
            )
        return found
