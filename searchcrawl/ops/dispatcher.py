"""The scheduler's decisions: which scheduled sources to start now, without overlap.

Plain logic over the document table (marks and runs) and a launcher; `scrapy scheduler` calls
``tick`` every ``SEARCHCRAWL_SCHEDULER_TICK`` seconds. Decisions:

- a source seen for the first time: an interval source starts at once, a cron source waits
  for its next slot;
- a due source whose previous crawl still runs (a pending or running scrapyd job, or a live run
  in the runs table) is not started: a cron slot is then skipped for good, an interval source
  starts as soon as the earlier crawl ends;
- after downtime, only the newest missed slot is run (once);
- a start that fails (scrapyd unreachable) leaves the mark alone, so the next tick tries again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from searchcrawl.ops.launchers import Launcher, LaunchError
from searchcrawl.rules.schedules import Schedule
from searchcrawl.store.database import Database
from searchcrawl.store.runs import Runs
from searchcrawl.store.schedule_marks import ScheduleMarks

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Dispatch:
    source: str
    action: str  # started, skipped, failed, waiting
    detail: str


class Dispatcher:
    def __init__(self, database: Database, launcher: Launcher, stale_after: float = 600) -> None:
        self.marks = ScheduleMarks(database)
        self.runs = Runs(database)
        self.launcher = launcher
        self.stale_after = stale_after

    def running(self, source: str) -> str | None:
        """Why ``source`` counts as running (None: it does not)."""
        if self.launcher.active(source):
            return "its previous job is still pending or running"
        if self.runs.live(source, self.stale_after):
            return "a crawl of it is running"
        return None

    def tick(self, schedules: dict[str, Schedule], now: datetime) -> list[Dispatch]:
        """Start every due source that is not running; one Dispatch per source acted on."""
        decisions = []
        for source, schedule in sorted(schedules.items()):
            row = self.marks.get(source)
            if row is None:
                mark = schedule.initial_mark(now)
                self.marks.save(source, mark=mark, outcome="first seen")
            else:
                mark = row["mark"]
            slot = schedule.due(now, mark)
            if slot is None:
                continue
            try:
                busy = self.running(source)
            except LaunchError as exc:
                decisions.append(Dispatch(source, "failed", str(exc)))
                logger.error("Schedule of %s: cannot check its jobs: %s", source, exc)
                continue
            if busy:
                if schedule.cron is not None:
                    self.marks.save(source, mark=slot, outcome=f"skipped slot {slot:%Y-%m-%d %H:%M}: {busy}")
                decisions.append(Dispatch(source, "skipped", busy))
                logger.info("Schedule of %s (%s): due, not started: %s", source, schedule.describe(), busy)
                continue
            try:
                job = self.launcher.start(source)
            except LaunchError as exc:
                decisions.append(Dispatch(source, "failed", str(exc)))
                logger.error("Schedule of %s: could not start a crawl (next tick tries again): %s", source, exc)
                continue
            self.marks.save(source, mark=slot, started_at=now, job=job, outcome="started")
            decisions.append(Dispatch(source, "started", job))
            logger.info("Schedule of %s (%s): started crawl %s", source, schedule.describe(), job)
        return decisions

    def describe(self, schedules: dict[str, Schedule], now: datetime) -> list[str]:
        """One line per scheduled source: its schedule, last start and next due time."""
        lines = []
        for source, schedule in sorted(schedules.items()):
            row = self.marks.get(source)
            mark = row["mark"] if row else schedule.initial_mark(now)
            due = schedule.next_due(now, mark)
            started = row["started_at"] if row else None
            parts = [
                f"{source}: {schedule.describe()}",
                f"last started {started.astimezone():%Y-%m-%d %H:%M:%S}" if started else "never started",
                "due now" if due <= now else f"next due {due.astimezone():%Y-%m-%d %H:%M:%S}",
            ]
            if row and row["outcome"]:
                parts.append(f"last decision: {row['outcome']}")
            lines.append("; ".join(parts))
        return lines
