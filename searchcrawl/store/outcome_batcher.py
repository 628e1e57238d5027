"""OutcomeBatcher: the outcomes of a crawl's pages written in batches, on a thread of their own.

Recording one page's outcome costs one write transaction of the document table (about 0.76 ms
on the 2-core machine, SQLite), and SQLite serialises those of every process on one machine: on
16 cores, ``processes = 8`` ran at 3.9 times one process, and one process below bare Scrapy on
the short Sphinx crawl (issue 74). Here the outcomes a crawl reports wait in memory until
``size`` of them are there or ``interval`` seconds have passed since the first (whichever comes
first), and are then written in order, in one transaction (the ledger's ``record_batch``): by the
``add`` that fills a batch and by the owner's timer (``write_due``), on the crawl's own thread, or
with ``threaded`` by a writer thread of its own, so that the reactor waits on the database only
when the backlog is full. Measured on SQLite (issue 74, tests/benchmarks/README.md): the thread's
hand-over of Python's lock, at every statement SQLite releases it for, cost more CPU than the
batch saved, and the crawl's own thread is the default.

Why nothing is lost (issue 74's terms): an outcome not yet written is one of a URL still leased
in the frontier by this process. A kill -9 loses the outcome, not the URL: the resumed run (or,
in a shared crawl, another node once the lease is taken back) fetches it again. What depends on
an outcome being written waits for it with ``flush``: the crawl's idle check (a URL leased
without an outcome gets 925), the scheduler's close (leased URLs go back to the queue), the
ledger's ``closing``, each Solr push (what is pending is read from the table), a full cache
spool before it is sealed (a push deletes a sealed spool whose records the table does not
expect), and a pipeline about to compare a page with a checksum or display URL an outcome still
waiting here carries (``flush_for``: within a process, duplicates are settled exactly as before).

Plain threading, no Scrapy: the ledger writer (crawl/ledger_writer.py) owns one and feeds it.
With ``size`` 1 every outcome is written at once, on the caller's thread, as before batching.

Writes that must precede an outcome (``add_before``: a page's links, issue 94) wait with the
outcomes and run first in the transaction of the next batch, whose write then takes them as its
second argument: a page's links and its outcome commit together, or neither does (the page stays
leased and is fetched again, its links with it), in one transaction for a hundred pages instead
of one a page. ``flush`` writes them too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from searchcrawl.rules.lifecycle import Outcome

logger = logging.getLogger(__name__)

BACKLOG = 4  # batches that may wait at most: beyond that, ``add`` waits for the writer (bounded memory)
KEY_COLUMNS = ("checksum", "display_url")  # an outcome's columns a pipeline may look up before it is written

OutcomeList = Sequence[tuple[str, Outcome]]
Before = Callable[[Any], object]  # a write run first in a batch's transaction, given its connection


def keys_of(outcome: Outcome) -> Iterable[tuple[str, Any]]:
    """What a pipeline may look for in the document table that ``outcome`` will write: its
    checksum (a duplicate) and its display URL (a conflict)."""
    for column in KEY_COLUMNS:
        value = outcome.columns.get(column)
        if value is not None:
            yield column, value


class OutcomeBatcher:
    """Outcomes written by ``write`` in batches of at most ``size``, at least every ``interval``
    seconds, in the order they were added (see the module's docstring)."""

    def __init__(
        self,
        write: Callable[..., object],  # (outcomes), or (outcomes, writes before them)
        size: int = 100,
        interval: float = 0.5,
        name: str = "",
        threaded: bool = True,
    ) -> None:
        self._write = write
        self.size = max(1, size)
        self.interval = max(0.0, interval)
        self.name = name or "searchcrawl-outcomes"
        # Without a thread of its own, a full batch is written by the ``add`` that fills it, and
        # one whose interval passed by ``write_due`` (the owner's timer): no thread hand-over
        self.threaded = threaded
        self._write_lock = threading.Lock()  # inline: one batch written at a time, in order
        self._condition = threading.Condition()
        self._pending: list[tuple[str, Outcome]] = []
        self._before: list[Before] = []  # writes to run first in the next batch's transaction
        self._keys: Counter[Hashable] = Counter()  # of every outcome added and not yet written
        self._added = self._written = 0  # outcomes added and written since the start: flush's marks
        self._flush_to = 0  # a flush waits until this many are written
        self._first_at = 0.0  # when the oldest outcome waiting was added
        self._thread: threading.Thread | None = None
        self._closed = False
        self.batches = 0  # transactions written (for the benchmark and the tests)

    @property
    def batching(self) -> bool:
        """Whether outcomes wait for a batch (else each is written at once by ``add``)."""
        return self.size > 1 and not self._closed

    def add(self, url: str, outcome: Outcome) -> None:
        """Record ``outcome`` of ``url``: at once (not batching), or with the next batch. Waits
        only while ``BACKLOG`` batches are waiting already (the database is slower than the crawl)."""
        if not self.batching:
            self._write([(url, outcome)])
            return
        if not self.threaded:
            self._add_inline(url, outcome)
            return
        with self._condition:
            while len(self._pending) >= BACKLOG * self.size and not self._closed:
                self._condition.wait()
            queued = not self._closed  # closed meanwhile: written at once, below
            if queued:
                if not self._pending:  # the writer, asleep without a deadline, sets one now
                    self._first_at = time.monotonic()
                    self._condition.notify_all()
                self._pending.append((url, outcome))
                self._added += 1
                self._keys.update(keys_of(outcome))
                self._start_writer()
                if len(self._pending) >= self.size:
                    self._condition.notify_all()
        if not queued:
            self._write([(url, outcome)])

    def _add_inline(self, url: str, outcome: Outcome) -> None:
        with self._condition:
            if not self._waiting():
                self._first_at = time.monotonic()
            self._pending.append((url, outcome))
            self._added += 1
            self._keys.update(keys_of(outcome))
            full = len(self._pending) >= self.size
        if full:
            self._write_inline()

    def add_before(self, write: Before) -> None:
        """Run ``write`` (given the transaction's connection) first in the next batch's
        transaction: before the outcomes added after it. Not batching: at once, in a
        transaction of its own."""
        if not self.batching:
            self._write([], [write])
            return
        with self._condition:
            if not self._waiting():
                self._first_at = time.monotonic()
                self._condition.notify_all()  # the writer, asleep without a deadline, sets one now
            self._before.append(write)
            self._added += 1
            if self.threaded:
                self._start_writer()

    def _start_writer(self) -> None:
        """The writer thread, on the first thing to write (under the condition's lock)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def holds_before(self) -> bool:
        """Whether writes added with ``add_before`` wait for their batch (the scheduler, finding
        the frontier empty, flushes them: they may be its next URLs)."""
        with self._condition:
            return bool(self._before)

    def _waiting(self) -> bool:
        """Whether anything waits for a batch (under the condition's lock)."""
        return bool(self._pending or self._before)

    def write_due(self) -> int:
        """Without a thread: write what waits if its interval has passed (the owner's timer)."""
        with self._condition:
            due = self._waiting() and time.monotonic() - self._first_at >= self.interval
        return self._write_inline() if due else 0

    def _write_inline(self) -> int:
        with self._write_lock:
            with self._condition:
                batch, self._pending = self._pending, []
                before, self._before = self._before, []
                self._first_at = 0.0
            if not batch and not before:
                return 0
            self._write_batch(batch, before)
        return len(batch) + len(before)

    def _write_batch(self, batch: OutcomeList, before: Sequence[Before] = ()) -> None:
        """Write ``batch`` (after ``before``), then count it written (its keys forgotten, whoever
        waits told)."""
        try:
            if before:
                self._write(batch, before)
            else:  # the write of outcomes alone takes them alone
                self._write(batch)
        except Exception:  # written one by one already where the batch failed (Ledger.record_batch)
            logger.exception("Writing a batch of %d outcomes failed: their URLs stay leased, fetched again", len(batch))
        with self._condition:
            self._written += len(batch) + len(before)
            self.batches += 1
            for _url, outcome in batch:
                self._keys.subtract(keys_of(outcome))
            self._keys += Counter()  # drops the keys at zero
            self._condition.notify_all()

    def holds(self, column: str, value: Any) -> bool:
        """Whether an outcome not yet written carries ``value`` in ``column`` (``KEY_COLUMNS``)."""
        with self._condition:
            return self._keys[(column, value)] > 0

    def flush_for(self, column: str, value: Any) -> int:
        """Before a pipeline reads the table for ``value`` in ``column``: the outcomes waiting are
        written first when one of them carries it (rarely: a duplicate, a display URL's
        conflict), so the pipeline reads what it would have read before batching."""
        return self.flush() if self.holds(column, value) else 0

    def flush(self) -> int:
        """Write every outcome added so far, and wait until it is written. Returns how many
        waited (0: none, and no wait)."""
        if not self.threaded:
            return self._write_inline()
        with self._condition:
            target = self._added
            waiting = target - self._written
            if waiting <= 0:
                return 0
            self._flush_to = max(self._flush_to, target)
            self._condition.notify_all()
            while self._written < target:
                if self._thread is None or not self._thread.is_alive():  # pragma: no cover - the writer died
                    logger.error("The outcome writer is gone: %d outcomes were not written", target - self._written)
                    return waiting
                self._condition.wait(timeout=1.0)
        return waiting

    def close(self) -> None:
        """Write what waits, and stop the writer thread: later outcomes are written at once."""
        self.flush()
        with self._condition:
            self._closed = True
            self._condition.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=60)

    def _due(self) -> bool:
        """Whether a batch is to be written now (under the condition's lock)."""
        if self._closed or self._flush_to > self._written or len(self._pending) >= self.size:
            return True
        return self._waiting() and time.monotonic() - self._first_at >= self.interval

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._due():
                    timeout = None if not self._waiting() else max(0.0, self.interval - (time.monotonic() - self._first_at))
                    self._condition.wait(timeout)
                if not self._waiting():
                    if self._closed:
                        return
                    continue
                batch, self._pending = self._pending[: self.size], self._pending[self.size :]
                before, self._before = self._before, []  # added before every outcome of the batch
                if not self._pending:
                    self._first_at = 0.0  # else the oldest left is older still: due at once, or soon
                self._condition.notify_all()  # an ``add`` waiting for room
            self._write_batch(batch, before)
