"""A SQLite document table's WAL checkpoints on a thread of their own, off the crawl's path (issue 94).

By default SQLite copies the write-ahead log back into the database file (a checkpoint, with its
fsync) in the commit that fills the log past 1,000 pages: a crawl's reactor thread stopped for
that commit, 21 ms on average on the 2-core machine, 81 times in a crawl of 10,000 pages, 0.18 ms
a page, more with several processes (tests/benchmarks/README.md, "Where the processes wait"), and
a SQLite writer lock held through its commit (writer_lock.py) held it for them too. A crawl's
connections turn that off (``wal_autocheckpoint = 0``) and a thread of the process runs a passive
checkpoint every ``interval`` seconds instead, on a connection of its own: SQLite releases
Python's lock while it works, so the crawl goes on meanwhile. A passive checkpoint waits for no
reader or writer, and two processes' checkpoints take turns in SQLite. Nothing changes for safety:
a process killed during one leaves the log whole, and the next connection finishes it.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from typing import Any

from sqlalchemy import Engine, event

logger = logging.getLogger(__name__)

BACKLOG = 1000  # pages of log that start a checkpoint: SQLite's own default
LOG_LIMIT = BACKLOG * (4096 + 24)  # bytes: that many frames of 4 KiB pages (SQLite's default page size)


def _no_autocheckpoint(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA wal_autocheckpoint=0")
    cursor.execute(f"PRAGMA journal_size_limit={LOG_LIMIT}")
    cursor.close()


class Checkpointer:
    """Passive checkpoints of one SQLite file when its log has grown past ``BACKLOG`` pages,
    looked at every ``interval`` seconds, on a daemon thread."""

    def __init__(self, path: str, interval: float) -> None:
        self.path = path
        self.interval = interval
        self.checkpoints = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def take_over(self, *engines: Engine) -> None:
        """Turn the engines' own checkpoints off (their connections from now on: the pooled ones
        are closed) and start the thread."""
        for engine in engines:
            event.listen(engine, "connect", _no_autocheckpoint)
            engine.dispose()
        self._thread = threading.Thread(target=self._run, name="sqlite-checkpoints", daemon=True)
        self._thread.start()

    def checkpoint(self, connection: sqlite3.Connection) -> None:
        busy, log, done = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        self.checkpoints += 1
        if busy or (log > 0 and done < log):
            logger.debug("WAL checkpoint of %s: %s of %s pages (another's under way: %s)", self.path, done, log, bool(busy))

    def due(self) -> bool:
        """Whether the log has grown past ``LOG_LIMIT`` (a stat: the file is never opened here)."""
        try:
            return os.stat(f"{self.path}-wal").st_size > LOG_LIMIT
        except OSError:  # no log yet
            return False

    def _run(self) -> None:
        connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        _no_autocheckpoint(connection, None)
        try:
            while not self._stop.wait(self.interval):
                try:
                    if self.due():
                        self.checkpoint(connection)
                except sqlite3.Error as exc:  # the next one tries again; the log only grows meanwhile
                    logger.debug("WAL checkpoint of %s failed: %s", self.path, exc)
        finally:
            connection.close()

    def stop(self) -> None:
        """Stop the thread (after the checkpoint under way, if any)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
