"""A SQLite document table's writers take turns through a lock file (store/writer_lock.py, issue
94): held from a transaction's first write to its commit or rollback, never by reads, handed on
at once, given back by a killed process; its WAL checkpoints on a thread (store/checkpoints.py);
and the benchmark's statement kinds (store/statement_times.py)."""

from __future__ import annotations

import fcntl
import multiprocessing
import multiprocessing.queues
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from searchcrawl.store import Database
from searchcrawl.store.statement_times import StatementTimes, kind_of

WAIT = 30.0  # seconds a condition may take at most on a loaded machine (never a fixed sleep)


def held_elsewhere(database: Database) -> bool:
    """Whether some other open file holds the database's writer lock file."""
    path = f"{database.engine.url.database}.writer-lock"
    handle = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
    finally:
        os.close(handle)


@pytest.fixture
def database(tmp_path: Path) -> Database:
    opened = Database(f"sqlite:///{tmp_path / 'table.sqlite3'}")
    with opened.engine.begin() as connection:
        connection.execute(text("CREATE TABLE notes (n INTEGER)"))
    yield opened
    opened.close()


def test_a_write_transaction_holds_the_lock_file_from_its_first_write_to_its_commit(database: Database) -> None:
    with database.engine.begin() as connection:
        connection.execute(text("SELECT count(*) FROM notes")).scalar()
        assert not held_elsewhere(database)  # a read takes nothing: readers never wait on writers
        connection.execute(text("INSERT INTO notes VALUES (1)"))
        assert held_elsewhere(database)
        connection.execute(text("UPDATE notes SET n = 2"))  # the same transaction: held once
        assert held_elsewhere(database)
    assert not held_elsewhere(database)


def test_a_rollback_and_a_failed_single_statement_give_it_back(database: Database) -> None:
    with pytest.raises(ValueError), database.engine.begin() as connection:
        connection.execute(text("INSERT INTO notes VALUES (1)"))
        raise ValueError("the transaction's work failed")
    assert not held_elsewhere(database)
    with database.single.connect() as connection:
        connection.execute(text("INSERT INTO notes VALUES (3)"))  # autocommit: its own transaction
        assert not held_elsewhere(database)
        with pytest.raises(Exception, match="no such table"):
            connection.execute(text("INSERT INTO missing VALUES (1)"))
        assert not held_elsewhere(database)
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT n FROM notes")).scalars().all() == [3]


def test_a_second_writer_waits_for_the_first_to_commit_and_its_wait_is_counted(database: Database) -> None:
    assert database.writer_lock is not None
    times = StatementTimes()
    database.writer_lock.waited = times.add
    first_wrote, second_wrote = threading.Event(), threading.Event()

    def second() -> None:
        first_wrote.wait(WAIT)
        with database.engine.begin() as connection:
            connection.execute(text("INSERT INTO notes VALUES (2)"))
        second_wrote.set()

    thread = threading.Thread(target=second)
    thread.start()
    with database.engine.begin() as connection:
        connection.execute(text("INSERT INTO notes VALUES (1)"))
        first_wrote.set()
        assert not second_wrote.wait(0.2)  # waiting for its turn (the lock), not failing
    assert second_wrote.wait(WAIT)
    thread.join(WAIT)
    with database.engine.connect() as connection:
        assert connection.execute(text("SELECT n FROM notes ORDER BY n")).scalars().all() == [1, 2]
    waits = times.report()["writer lock: INSERT INTO notes"]
    assert waits["count"] == 2 and waits["longest"] > 0


def _hold_and_wait(path: str, holding: multiprocessing.synchronize.Event) -> None:
    database = Database(f"sqlite:///{path}", migrate=False)
    with database.engine.begin() as connection:
        connection.execute(text("INSERT INTO notes VALUES (9)"))
        holding.set()
        threading.Event().wait(600)  # killed here, in its transaction


def test_a_process_killed_in_its_transaction_gives_the_lock_back(database: Database, tmp_path: Path) -> None:
    holding = multiprocessing.get_context("fork").Event()
    process = multiprocessing.get_context("fork").Process(target=_hold_and_wait, args=(database.engine.url.database, holding))
    process.start()
    try:
        assert holding.wait(WAIT)
        assert held_elsewhere(database)
    finally:
        process.kill()
        process.join(WAIT)
    assert not held_elsewhere(database)
    with database.engine.begin() as connection:  # and SQLite's own lock went with it
        connection.execute(text("INSERT INTO notes VALUES (4)"))
        assert connection.execute(text("SELECT n FROM notes")).scalars().all() == [4]


def test_postgresql_and_memory_databases_have_none() -> None:
    memory = Database("sqlite://")
    assert memory.writer_lock is None
    memory.close()


def test_the_lock_can_be_turned_off(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'off.sqlite3'}", writer_lock=False)
    assert database.writer_lock is None
    with database.engine.begin() as connection:
        connection.execute(text("CREATE TABLE notes (n INTEGER)"))
        connection.execute(text("INSERT INTO notes VALUES (1)"))
        assert not held_elsewhere(database)
    database.close()


@pytest.mark.parametrize(
    ("statement", "kind"),
    [
        ("UPDATE frontier SET state=?, lease_owner=? WHERE frontier.document_id IN (SELECT ...)", "UPDATE frontier"),
        ("INSERT INTO documents (source, url) VALUES (?, ?) ON CONFLICT (source, url_hash) DO UPDATE", "INSERT INTO documents"),
        ("  insert or replace into runs (id) values (?)", "INSERT OR REPLACE INTO runs"),
        ("SELECT documents.id, documents.url \nFROM documents WHERE documents.id IN (?)", "SELECT documents"),
        ("DELETE FROM site_slots WHERE owner = ?", "DELETE FROM site_slots"),
        ("PRAGMA journal_mode=WAL", "PRAGMA journal_mode"),
        ("", "?"),
    ],
)
def test_statement_kinds(statement: str, kind: str) -> None:
    assert kind_of(statement) == kind


@pytest.fixture
def checkpointed(tmp_path: Path) -> Iterator[Callable[[float], Database]]:
    """Databases whose checkpoints run on a thread looking every ``interval`` seconds (closed after)."""
    opened: list[Database] = []

    def open_one(interval: float) -> Database:
        opened.append(Database(f"sqlite:///{tmp_path / f'checkpointed{len(opened)}.sqlite3'}", checkpoint_interval=interval))
        assert opened[-1].checkpointer is not None
        return opened[-1]

    yield open_one
    for database in opened:
        database.close()


def test_checkpoints_run_on_a_thread_not_in_the_commits(checkpointed: Callable[[float], Database]) -> None:
    database = checkpointed(0.05)
    path = database.engine.url.database
    assert database.checkpointer is not None
    with database.engine.begin() as connection:
        assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
        connection.execute(text("CREATE TABLE pages (body TEXT)"))
        # 1,500 pages of 4 KB: past the 1,000 after which a commit would checkpoint itself
        connection.execute(text("INSERT INTO pages VALUES (:body)"), [{"body": "x" * 4000}] * 1500)
    with database.single.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 0
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with sqlite3.connect(path) as observer:  # what the log holds that is not in the file yet
            busy, log, done = observer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        # busy: the checkpointer's own checkpoint was under way, and SQLite answers (1, -1, -1),
        # whose -1 == -1 had passed for "all done" (stop 107's CI dry run): asked again
        if not busy and database.checkpointer.checkpoints and done == log:
            break
        time.sleep(0.05)
    assert not busy and database.checkpointer.checkpoints > 0 and log >= 1000 and done == log
    database.close()
    assert database.checkpointer._thread is not None and not database.checkpointer._thread.is_alive()


def _dms_lock_free(shm: str, answer: multiprocessing.queues.Queue) -> None:
    """In another process: whether the WAL index's "dead man switch" byte (128, which every
    process with the database open holds a shared POSIX lock on) could be locked exclusively."""
    handle = os.open(shm, os.O_RDWR)
    try:
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 128)
    except OSError:
        answer.put(False)
    else:
        answer.put(True)
    finally:
        os.close(handle)


def test_looking_at_the_log_keeps_sqlites_locks(checkpointed: Callable[[float], Database]) -> None:
    """Closing any descriptor of a file drops every POSIX lock the process holds on it: a
    checkpointer that read the log's index (<db>-shm) dropped SQLite's own, and another process
    opening the database took the index over and truncated it under this one's mapping (SIGBUS)."""
    database = checkpointed(60)
    path = database.engine.url.database
    context = multiprocessing.get_context("fork")
    assert database.checkpointer is not None
    with database.engine.connect() as connection:  # open: its process holds the index's lock
        connection.execute(text("SELECT 1"))
        for _ in range(3):
            assert not database.checkpointer.due()
        answer = context.Queue()
        child = context.Process(target=_dms_lock_free, args=(f"{path}-shm", answer))
        child.start()
        child.join(WAIT)
        assert answer.get(timeout=WAIT) is False


def test_a_checkpoint_is_due_once_the_log_passes_its_limit(checkpointed: Callable[[float], Database]) -> None:
    database = checkpointed(60)
    assert database.checkpointer is not None
    with database.engine.begin() as connection:
        connection.execute(text("CREATE TABLE pages (body TEXT)"))
        connection.execute(text("INSERT INTO pages VALUES (:body)"), [{"body": "x" * 4000}] * 300)
    assert not database.checkpointer.due()
    with database.engine.begin() as connection:
        connection.execute(text("INSERT INTO pages VALUES (:body)"), [{"body": "x" * 4000}] * 1000)
    assert database.checkpointer.due()


def test_checkpoints_stay_in_the_commits_without_an_interval(database: Database) -> None:
    assert database.checkpointer is None
    with database.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar() == 1000
