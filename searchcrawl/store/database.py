"""The database of the document table: its engine, its schema version, and what every store shares.

Works on SQLite (the default, in WAL mode so that readers never wait on the crawl) and on
PostgreSQL. A crawl opens it with ``migrate=True``: the schema is brought up to date with
Alembic, so a user's data survives upgrades of searchcrawl. That happens as the crawl's extensions
open its stores (``Database(url)``, in searchcrawl/crawl/extensions/), before its run starts: the
frontier scheduler opens the run later, so no run is ever under way while the schema changes. The
migrations run in one transaction, on SQLite too (``_migration``): one that fails, or a process
killed meanwhile, leaves the database at the revision it had, its data whole. Read-only commands
(status, report, explain, solr migrate-ids) open it without migrating: they never write the
schema, and say so when it is of another revision than this searchcrawl's (a crawl of any source
brings it up to date) or has no searchcrawl tables; a SQLite file no crawl has made yet reads as empty (an
in-memory stand-in), and nothing is created for them.

Each store takes a ``Database``: documents (documents.py), the frontier (frontier.py), the
runs (runs.py), the delta reports (deltas.py) and the sites' politeness (sites.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import logging
import os
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import StaticPool

from searchcrawl.store.checkpoints import Checkpointer
from searchcrawl.store.writer_lock import WriterLock
from searchcrawl.system.resources import package_dir

_migrate_lock = threading.Lock()
logger = logging.getLogger(__name__)
T = TypeVar("T")


class SchemaOutdated(Exception):
    """The database's schema is older (or newer) than this searchcrawl's, and we may not migrate."""


def url_hash(url: str) -> str:
    """The document table's key for ``url``: rows are found and kept unique by it, never by the
    URL itself. A btree index entry holds about 2,700 bytes (PostgreSQL refuses a longer one,
    and the crawler meets URLs of any length); a SHA-256 is 64 characters whatever the URL."""
    return hashlib.sha256(url.encode("utf-8")).hexdigest()


ROW_KEY = ["source", "url_hash"]  # the unique key of a document row: inserts conflict on it


def keyed(row: dict[str, Any]) -> dict[str, Any]:
    """A row to insert, with its key."""
    return {**row, "url_hash": url_hash(row["url"])}


def now() -> datetime:
    return datetime.now(UTC)


def as_utc(moment: datetime | None) -> datetime | None:
    """A timestamp read from the table, timezone-aware (SQLite hands back naive UTC)."""
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


# PostgreSQL's answer to two transactions waiting on each other's rows: it aborts one of them
# (SQLSTATE 40P01, deadlock_detected). Two nodes queueing overlapping links lock their rows in the
# order each page lists them (issue 91: a page's links lost, 8,813 of 8,814 pages indexed).
DEADLOCK_DETECTED = "40P01"
DEADLOCK_ATTEMPTS = 5
DEADLOCK_PAUSE = 0.05  # seconds, at most, times the attempt: the other transaction commits meanwhile


def deadlocked(error: BaseException) -> bool:
    """Whether ``error`` is the database's deadlock_detected: the transaction was rolled back
    whole, and running it again is safe."""
    return getattr(getattr(error, "orig", None), "sqlstate", None) == DEADLOCK_DETECTED


def in_transaction(engine: Engine, work: Callable[[Connection], T], attempts: int = DEADLOCK_ATTEMPTS) -> T:
    """``work`` run in a transaction of its own on ``engine``, and run again (in a new one, after a
    short random pause) when the database aborted it in a deadlock with another process's: what
    two nodes of a shared crawl may run at once. ``work`` must hold nothing of an attempt but what
    it returns. Any other error, or a deadlock on the last attempt, is raised."""
    for attempt in range(1, attempts + 1):
        try:
            with engine.begin() as connection:
                return work(connection)
        except DBAPIError as exc:
            if attempt == attempts or not deadlocked(exc):
                raise
            logger.debug("Deadlock with another process's transaction (attempt %d of %d): run again", attempt, attempts)
            time.sleep(random.uniform(0, DEADLOCK_PAUSE * attempt))  # noqa: S311 - a pause, not a secret
    raise AssertionError("unreachable: the last attempt returns or raises")


def dialect_insert(engine: Engine) -> Callable[..., Any]:
    """The ``insert`` of the engine's dialect (PostgreSQL's and SQLite's have ON CONFLICT)."""
    # Only that dialect's module: `from sqlalchemy.dialects import postgresql` loads some 20 modules in every SQLite crawl
    return importlib.import_module(f"sqlalchemy.dialects.{engine.dialect.name}").insert


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


# Connections a crawler process keeps open to PostgreSQL. It uses up to one a thread: the reactor,
# asyncio's worker threads (min(32, cpus + 4): fleet reservations and releases), the Solr push,
# lease renewal. SQLAlchemy keeps 5 by default and opens and closes any beyond them on every use:
# a 2,021-page crawl started 312 PostgreSQL backends, and two processes crawled 1.3 times as fast
# as one instead of 1.9 (tests/benchmarks/README.md). Only what is used at once is ever opened.
POOL_SIZE = min(32, (os.cpu_count() or 1) + 4) + 4
APPLICATION = "searchcrawl "  # PostgreSQL sessions are named "searchcrawl host:pid" (application_name)


MEMORY = "sqlite://"  # an in-memory SQLite database, one for every connection of its engine


def _no_sqlite_file(url: str) -> bool:
    """A SQLite URL whose file does not exist yet (or is empty): no crawl has made it."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite") or not parsed.database or parsed.database == ":memory:":
        return False
    path = Path(parsed.database)
    return not path.exists() or path.stat().st_size == 0


INIT_PID_NAMESPACE = 0xEFFFFFFC  # the inode of a Linux machine's first process-id namespace (PROC_PID_INIT_INO)


def this_host() -> str:
    """This machine as runs, leases and progress reports name it, where a process id is
    checked: its host name, and, in a process-id namespace of its own (a container), that
    namespace (``name~inode``). Containers that share a host name (host networking) but not
    their process ids are then different hosts, whose pids are never looked up here: a live
    crawl in one was taken for gone by another, its leases taken, its run called dead."""
    name = socket.gethostname()
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:  # not Linux, or no /proc: the host name alone
        return name
    return name if namespace == INIT_PID_NAMESPACE else f"{name}~{namespace}"


def process_owner() -> str:
    """This process in leases and node rows: ``host:pid`` (``this_host``; not cached: a forked
    process is another)."""
    return f"{this_host()}:{os.getpid()}"


def local_pid(owner: str, here: str) -> int | None:
    """The process id of ``owner`` (``host:pid``, as ``process_owner`` names it) when it runs on
    ``here`` (``this_host()``), else None: only a process of this host can be looked up."""
    host, _, pid = owner.rpartition(":")
    if host != here or not (pid.isascii() and pid.isdigit()) or not 0 < int(pid) < 2**22:  # Linux's PID_MAX_LIMIT
        return None
    return int(pid)


def application_name(owner: str) -> str:
    """The PostgreSQL ``application_name`` of ``owner``'s sessions: stall detection
    (ops/stalls.py) tells a run's own sessions waiting on a lock from others' by it. At most 63
    bytes: PostgreSQL keeps no more (a long host name is cut, in both places alike)."""
    return f"{APPLICATION}{owner}".encode("ascii", "replace")[:63].decode("ascii")


def _name_the_session(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
    """A PostgreSQL connection names its process (``application_name``), unless the database URL
    names one already (the administrator's choice wins)."""
    params.setdefault("application_name", application_name(process_owner()))


def create_db_engine(url: str, autocommit: bool = False) -> Engine:
    """An engine for the document table, with the settings each database needs; ``autocommit``:
    one whose connections run each statement as its own transaction (a file SQLite database's
    only, see ``single_statement_engine``)."""
    if url == MEMORY:
        return create_engine(url, connect_args={"check_same_thread": False}, poolclass=StaticPool)
    if url.startswith("sqlite"):
        engine = create_engine(
            url,
            connect_args={"timeout": 30, "check_same_thread": False},
            **({"isolation_level": "AUTOCOMMIT"} if autocommit else {}),
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    engine = create_engine(url, pool_pre_ping=True, pool_size=POOL_SIZE, max_overflow=POOL_SIZE)
    if engine.dialect.name == "postgresql":
        from searchcrawl.store.models import add_postgresql_options

        add_postgresql_options()
        event.listen(engine, "do_connect", _name_the_session)
    return engine


def single_statement_engine(engine: Engine) -> Engine:
    """For work that is one statement: the statement is its own transaction, so no BEGIN and no
    COMMIT or ROLLBACK go to the server (on PostgreSQL one round trip instead of three, for calls
    made once or more per page on the reactor thread). A file SQLite database gets an engine of
    its own, whose connections are in autocommit from the start: SQLAlchemy's per-use switch
    (``execution_options(isolation_level=...)``, which the others use) runs a PRAGMA each time
    SQLite's connection goes back, and the switch cost as much as the statement: 0.21 ms for
    ``display_url_owner``, 0.08 ms without it (tests/benchmarks/README.md)."""
    database = engine.url.database
    if engine.dialect.name == "sqlite" and database not in (None, "", ":memory:"):
        return create_db_engine(engine.url.render_as_string(hide_password=False), autocommit=True)
    return engine.execution_options(isolation_level="AUTOCOMMIT")


@contextlib.contextmanager
def _across_processes(engine: Engine, connection: Connection) -> Iterator[None]:
    """Several crawler processes opening a new database at once migrate it one after the other
    (PostgreSQL: an advisory lock for the transaction; SQLite: a lock file beside the database)."""
    if engine.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(hashtext('searchcrawl-migrate'))"))
        yield
        return
    database = engine.url.database
    if not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# The newest revision in migrations/versions (tests/store/test_document_table.py checks it against
# Alembic's own answer). Opening a database already at it reads one row and loads no Alembic: a
# fifth of a second of every `scrapy` command's start, and tests run hundreds of them.
SCHEMA_REVISION = "0026"


def current_revision(engine: Engine) -> str | None:
    """The database's schema revision (Alembic's version table), None before the first migration."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def upgrade_schema(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to the newest revision (idempotent); tests of a migration ask for an
    older ``revision`` first."""
    if revision == "head" and current_revision(engine) == SCHEMA_REVISION:
        return
    if revision == "head" and engine.dialect.name == "sqlite" and _create_new_sqlite(engine):
        return
    run_migrations(engine, revision)


def _create_new_sqlite(engine: Engine) -> bool:
    """A SQLite database without any table (a first crawl's new file) gets its schema from the
    models at once, stamped with SCHEMA_REVISION, instead of Alembic replaying every migration
    over empty tables: 0.3-0.4 s of a first one-page crawl's CPU, most of it importing Alembic.
    Same schema: tests/store/test_document_table.py compares it with the migrations' (on SQLite
    they hold nothing else; PostgreSQL's functions come only from them, so it always migrates).
    False, and nothing done, when the database has tables: the migrations bring those up to date."""
    from searchcrawl.store.models import metadata

    with _migrate_lock, _migration(engine) as connection, _across_processes(engine, connection):
        if inspect(connection).get_table_names():  # made meanwhile, or an older schema
            return False
        metadata.create_all(connection)
        connection.execute(text(ALEMBIC_VERSION_TABLE))
        connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:revision)"), {"revision": SCHEMA_REVISION})
    logger.debug("Document table: a new SQLite database, made at revision %s", SCHEMA_REVISION)
    return True


# Alembic's own version table, as Alembic makes it (its name, column and constraint)
ALEMBIC_VERSION_TABLE = (
    "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
)


@contextlib.contextmanager
def _migration(engine: Engine) -> Iterator[Connection]:
    """A connection in one transaction for schema work, committed at the end, rolled back on any
    error. On SQLite the driver (pysqlite) opens a transaction only before an INSERT or UPDATE and
    runs CREATE, DROP and ALTER in autocommit: a migration failing half-way kept the tables it had
    made and dropped. An explicit BEGIN (IMMEDIATE: the write lock at once) makes every statement
    part of it; SQLite's DDL is transactional."""
    with engine.begin() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        yield connection


def run_migrations(engine: Engine, revision: str = "head") -> None:
    """Alembic's upgrade to ``revision`` (the migrations in migrations/versions), whatever the
    database holds."""
    from alembic import command  # here: only when there is something to migrate
    from alembic.config import Config

    config = Config()
    with (
        _migrate_lock,
        package_dir("searchcrawl.store", "migrations") as scripts,
        _migration(engine) as connection,
        _across_processes(engine, connection),
    ):
        config.set_main_option("script_location", str(scripts))
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def schema_revisions(engine: Engine) -> tuple[str | None, str]:
    """(the database's schema revision, this searchcrawl's newest), read without writing."""
    return current_revision(engine), SCHEMA_REVISION


def alembic_head() -> str:
    """The newest revision as Alembic finds it in migrations/versions (which SCHEMA_REVISION names)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    with package_dir("searchcrawl.store", "migrations") as scripts:
        config = Config()
        config.set_main_option("script_location", str(scripts))
        head = ScriptDirectory.from_config(config).get_current_head()
    assert head is not None
    return head


class Database:
    """One database of searchcrawl, opened once per process and shared by its stores."""

    def __init__(self, url: str, migrate: bool = True, writer_lock: bool = True, checkpoint_interval: float = 0) -> None:
        """``writer_lock``: a SQLite file's writers take turns through a lock file (writer_lock.py);
        ``checkpoint_interval``: its WAL checkpoints on a thread every this many seconds, not in
        the commits (checkpoints.py; 0: in the commits, SQLite's default)."""
        self.url = url
        if not migrate and _no_sqlite_file(url):
            # nothing crawled yet: read-only users see an empty table, kept in memory, and no
            # file (nor folder) is made for them
            url = MEMORY
        self.engine = create_db_engine(url)
        self.single = single_statement_engine(self.engine)
        self.insert = dialect_insert(self.engine)
        self._statements: dict[Any, Any] = {}
        if migrate:
            upgrade_schema(self.engine)
        else:
            self.check_schema()
        database = self.engine.url.database
        sqlite_file = self.engine.dialect.name == "sqlite" and database not in (None, "", ":memory:")
        self.writer_lock = WriterLock(str(database)) if sqlite_file and writer_lock else None
        if self.writer_lock is not None:
            self.writer_lock.attach(self.engine)
            if self.single is not self.engine:
                self.writer_lock.attach(self.single, autocommit=True)
        self.checkpointer = Checkpointer(str(database), checkpoint_interval) if sqlite_file and checkpoint_interval > 0 else None
        if self.checkpointer is not None:
            self.checkpointer.take_over(*{id(engine): engine for engine in (self.engine, self.single)}.values())

    def check_schema(self) -> None:
        """Without migrating: a database of another revision, or one without searchcrawl's
        tables (another application's PostgreSQL database, a mistyped URL), is refused, never
        changed. Only the empty in-memory stand-in for a SQLite file not made yet gets tables."""
        current, head = schema_revisions(self.engine)
        if current is None and self.engine.url.database in (None, "", ":memory:"):
            upgrade_schema(self.engine)
        elif current != head:
            self.engine.dispose()
            found = f"at revision {current}" if current else "without searchcrawl's tables"
            raise SchemaOutdated(
                f"the document table ({self.engine.url.render_as_string(hide_password=True)}) is {found}, "
                f"this searchcrawl needs {head}: a crawl of any source brings it up to date"
            )

    def new_ids(self, connection: Connection, table: str, count: int) -> list[int] | None:
        """``count`` ids of ``table`` taken from its sequence in ascending order, for rows that are
        inserted in another order than the one their ids must follow (Frontier.add: by key, so that
        two nodes lock overlapping rows in one order, while ids keep discovery order); None on
        SQLite, which has one writer at a time and no deadlock to avoid."""
        if self.engine.dialect.name != "postgresql":
            return None
        statement = text("SELECT nextval(pg_get_serial_sequence(:table, 'id')) FROM generate_series(1, :count)")
        return sorted(connection.execute(statement, {"table": table, "count": count}).scalars())

    def transaction(self, work: Callable[[Connection], T]) -> T:
        """``work`` in a transaction of its own, run again after a deadlock (``in_transaction``)."""
        return in_transaction(self.engine, work)

    def statement(self, key: Any, build: Callable[[], Any]) -> Any:
        """A statement built once and run with bound parameters: on the per-page path, building
        a statement costs more than running it."""
        statement = self._statements.get(key)
        if statement is None:
            statement = self._statements[key] = build()
        return statement

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.stop()
        self.engine.dispose()
        self.single.dispose()  # its own connections, or (the same engine's) none left to close
