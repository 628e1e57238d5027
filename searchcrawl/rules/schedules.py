"""When a source is due, as plain logic (the seeds' synchronization schedules).

A source has either a ``refresh_interval`` ("6h": the next crawl starts that long after the last
one started) or a cron ``schedule`` ("0 3 * * *", read by croniter, in the scheduler host's
local time). The scheduler keeps one mark per source: the slot it last started (or skipped).
After downtime the newest missed slot is due once; older missed slots are not made up.

croniter is imported by the cron functions themselves, never with this module (which every source
file's validation imports): on import it runs `file -b` on the Python executable (its 32-bit
check, platform.architecture), a process of 0.1-0.2 s of CPU in every crawl that has no cron.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

INTERVAL = re.compile(r"^\s*(\d+)\s*(s|m|h|d|w)\s*$")
UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_interval(text: str) -> timedelta:
    """'90s', '30m', '6h', '1d', '2w' as a timedelta; ValueError says what is expected."""
    match = INTERVAL.match(text)
    if not match or int(match[1]) == 0:
        raise ValueError(f"expected a positive number and a unit s, m, h, d or w, such as '6h', got {text!r}")
    return timedelta(**{UNITS[match[2]]: int(match[1])})


def _croniter() -> Any:  # croniter's class
    from croniter import croniter  # here: see the module's docstring

    return croniter


def check_cron(expression: str) -> str:
    if not _croniter().is_valid(expression):
        raise ValueError(f"expected a cron expression such as '0 3 * * *' (minute hour day month weekday), got {expression!r}")
    return expression


@dataclass(frozen=True)
class Schedule:
    """A source's schedule: an interval or a cron expression (exactly one)."""

    interval: timedelta | None = None
    cron: str | None = None

    def __post_init__(self) -> None:
        if (self.interval is None) == (self.cron is None):
            raise ValueError("a schedule has either an interval or a cron expression")

    def latest_slot(self, now: datetime) -> datetime:
        """The newest cron slot at or before ``now`` (for an interval: ``now``)."""
        if self.cron is None:
            return now
        croniter = _croniter()
        if croniter.match(self.cron, now.replace(second=0, microsecond=0)) and now.second == 0 and not now.microsecond:
            return now
        previous: datetime = croniter(self.cron, now).get_prev(datetime)
        return previous

    def initial_mark(self, now: datetime) -> datetime | None:
        """The mark of a source the scheduler sees for the first time: an interval source is due
        at once; a cron source waits for its next slot (its past slots were not missed by us)."""
        return None if self.cron is None else self.latest_slot(now)

    def due(self, now: datetime, mark: datetime | None) -> datetime | None:
        """The slot to start now (to be stored as the new mark), or None if not due."""
        if self.interval is not None:
            return now if mark is None or now >= mark + self.interval else None
        slot = self.latest_slot(now)
        return slot if mark is None or slot > mark else None

    def next_due(self, now: datetime, mark: datetime | None) -> datetime:
        """When the source will next be due (``now`` if it is due already)."""
        if self.due(now, mark) is not None:
            return now
        if self.interval is not None:
            assert mark is not None
            return mark + self.interval
        assert self.cron is not None
        following: datetime = _croniter()(self.cron, now).get_next(datetime)
        return following

    def describe(self) -> str:
        return f"every {self.interval}" if self.interval is not None else f"cron {self.cron!r}"
