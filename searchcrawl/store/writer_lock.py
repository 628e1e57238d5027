"""The turn of a SQLite database's writers, across processes (issue 94).

SQLite lets one connection write at a time. One that finds the write lock taken waits in SQLite's
busy handler, which polls: it sleeps 1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100 ms between tries,
whenever the lock is given back meanwhile. A crawl's write transactions hold it for a fraction of
a millisecond, so with ``processes = N`` a process that met the lock slept several times longer
than the other held it, its event loop stopped meanwhile: measured on 2 cores
(tests/benchmarks/README.md, "Where the processes wait"), the frontier's leases and the link
inserts of ``processes = 2`` waited many times their own time.

So before its first write a transaction takes a lock file beside the database (``flock``, which
the kernel hands to the next waiter the moment it is given back), and gives it back when it
commits or rolls back; SQLite's lock is then free when it asks for it. One connection of a
process at a time holds it (a thread lock first, then the file). The file lock is only a queue in
front of SQLite's: correctness never depends on it (SQLite still takes its own lock, and a writer
that does not take the file, another program, is served by SQLite's busy handler as before), a
process killed while holding it gives it back with its file descriptors, and a thread that waits
longer than SQLite's busy timeout for another thread of its process goes ahead without it.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event

from searchcrawl.store.statement_times import kind_of

logger = logging.getLogger(__name__)

WRITES = re.compile(r"\s*(?:INSERT|UPDATE|DELETE|REPLACE|BEGIN\s+IMMEDIATE)\b", re.IGNORECASE)


class WriterLock:
    """One SQLite file's writers' turn (see the module's docstring), for the engines of one process."""

    def __init__(self, database: str, timeout: float = 30.0) -> None:
        self.path = f"{database}.writer-lock"
        self.timeout = timeout
        self.waited: Callable[[str, float], None] | None = None  # a benchmark's tally (wait_profile)
        self._threads = threading.Lock()
        self._fd: int | None = None
        self._pid = 0
        self._holder: int | None = None  # id() of the DBAPI connection holding the lock
        self._file_held = False

    def attach(self, engine: Engine, autocommit: bool = False) -> None:
        """Take the lock before an engine's first write of a transaction; give it back after its
        commit or rollback (``autocommit``: after the statement, which is its own transaction)."""
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine.pool, "close", self.release)
        event.listen(engine.pool, "invalidate", self.release)
        if autocommit:
            event.listen(engine, "after_cursor_execute", self._after_statement)
            event.listen(engine, "handle_error", self._on_error)
            return
        dialect = engine.dialect
        commit, rollback = dialect.do_commit, dialect.do_rollback

        def do_commit(dbapi_connection: Any) -> None:
            try:
                commit(dbapi_connection)
            finally:
                self.release(dbapi_connection)

        def do_rollback(dbapi_connection: Any) -> None:
            try:
                rollback(dbapi_connection)
            finally:
                self.release(dbapi_connection)

        # SQLAlchemy has an event before a commit, none after it: the dialect's own calls are wrapped
        setattr(dialect, "do_commit", do_commit)  # noqa: B010 - an instance's method, this engine's alone
        setattr(dialect, "do_rollback", do_rollback)  # noqa: B010

    def acquire(self, connection: Any, statement: str = "") -> None:
        """The lock for ``connection`` (a DBAPI connection, or the pool's proxy of one), unless it
        holds it already; ``statement``: the write it is taken for."""
        key = id(getattr(connection, "dbapi_connection", connection))
        if self._holder == key:
            return
        started = time.perf_counter()
        if not self._threads.acquire(timeout=self.timeout):
            logger.debug("Another thread has written to %s for %.0f s: going ahead without its lock", self.path, self.timeout)
            return
        try:
            fcntl.flock(self._file(), fcntl.LOCK_EX)
        except OSError as exc:  # a read-only folder, say: SQLite's own lock still holds
            logger.debug("No writer lock file %s (%s): SQLite's lock alone", self.path, exc)
        else:
            self._file_held = True
        self._holder = key
        if self.waited is not None:
            self.waited(f"writer lock: {kind_of(statement)}", time.perf_counter() - started)

    def release(self, connection: Any, *_args: Any) -> None:
        """Give the lock back if ``connection`` (as ``acquire`` takes it) holds it."""
        if self._holder != id(getattr(connection, "dbapi_connection", connection)):
            return
        self._holder = None
        if self._file_held:
            self._file_held = False
            fcntl.flock(self._file(), fcntl.LOCK_UN)
        self._threads.release()

    def _file(self) -> int:
        if self._fd is None or self._pid != os.getpid():  # a forked process opens its own
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._pid = os.getpid()
        return self._fd

    def _before(self, connection: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if WRITES.match(statement):
            self.acquire(connection.connection, statement)

    def _after_statement(self, connection: Any, *_args: Any) -> None:
        self.release(connection.connection)

    def _on_error(self, context: Any) -> None:
        # in autocommit a failed statement ends its transaction (in a transaction, its rollback does)
        if context.connection is not None:
            self.release(context.connection.connection)
