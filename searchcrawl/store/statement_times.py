"""Where a crawl's processes wait on the document table, measured (issue 94): each statement's
time by kind (its verb and the table it names: an update of the frontier, a read of the documents), the
commits', and the waits for the write lock that several processes share.

A benchmark's instrument, attached only when ``SEARCHCRAWL_WAIT_PROFILE`` asks for it
(crawl/extensions/wait_profile.py): SQLAlchemy's cursor events cost about 10 µs a statement, which
the crawl does not pay otherwise. A statement's time at ``processes = 2`` less its time alone is
what the other process made it wait; SQLite's own waits for its lock (its busy handler: sleeps of
1, 2, 5, 10, ... ms, whoever releases the lock meanwhile) are inside the first write statement of
a transaction, so they show as that statement's time and as ``slow`` ones (1 ms or more).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, event

SLOW = 0.001  # seconds: SQLite's busy handler sleeps at least this long at each try
_KIND = re.compile(r"\s*(INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|SELECT|WITH|BEGIN|PRAGMA)\s*(\w*)", re.IGNORECASE)
_FROM = re.compile(r"\bFROM\s+(\w+)", re.IGNORECASE)


def kind_of(statement: str) -> str:
    """A statement's kind: its verb and the table it writes or reads first (tests/store/test_writer_lock.py)."""
    found = _KIND.match(statement)
    if found is None:
        return statement.split(None, 1)[0].upper() if statement.strip() else "?"
    verb = " ".join(found.group(1).upper().split())
    table = found.group(2)
    if verb in ("SELECT", "WITH"):
        source = _FROM.search(statement)
        table = source.group(1) if source else ""
        verb = "SELECT"
    return f"{verb} {table}".strip()


@dataclass
class Tally:
    """One kind's statements: how many, their time, and those that took ``SLOW`` or more."""

    count: int = 0
    seconds: float = 0.0
    slow: int = 0
    slow_seconds: float = 0.0
    longest: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.seconds += seconds
        self.longest = max(self.longest, seconds)
        if seconds >= SLOW:
            self.slow += 1
            self.slow_seconds += seconds

    def as_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "seconds": round(self.seconds, 4),
            "slow": self.slow,
            "slow_seconds": round(self.slow_seconds, 4),
            "longest": round(self.longest, 4),
        }


class StatementTimes:
    """The times of an engine's statements and commits by kind, from SQLAlchemy's events, and any
    other waits a caller reports (``add``: the writer lock's). Thread-safe: the crawl's thread and
    its helpers' share an engine."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.tallies: dict[str, Tally] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    def add(self, kind: str, seconds: float) -> None:
        with self._lock:
            self.tallies.setdefault(kind, Tally()).add(seconds)

    def attach(self, engine: Engine) -> None:
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)
        event.listen(engine, "commit", self._commit)
        event.listen(engine.pool, "checkin", self._checkin)

    def detach(self, engine: Engine) -> None:
        event.remove(engine, "before_cursor_execute", self._before)
        event.remove(engine, "after_cursor_execute", self._after)
        event.remove(engine, "commit", self._commit)
        event.remove(engine.pool, "checkin", self._checkin)

    def _before(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self._local.started = self.clock()

    def _after(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        started = getattr(self._local, "started", None)
        if started is not None:
            self.add(kind_of(statement), self.clock() - started)
            self._local.started = None

    def _commit(self, _conn: Any) -> None:
        self._local.committing = self.clock()

    def _checkin(self, *_args: Any) -> None:
        # the commit has run when its connection goes back to the pool (SQLAlchemy has no event
        # after a commit); a connection checked in without a commit carries no mark
        started = getattr(self._local, "committing", None)
        if started is not None:
            self.add("COMMIT", self.clock() - started)
            self._local.committing = None

    def report(self) -> dict[str, dict[str, float | int]]:
        with self._lock:
            return {kind: tally.as_dict() for kind, tally in sorted(self.tallies.items())}
