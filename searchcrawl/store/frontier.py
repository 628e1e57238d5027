"""The durable frontier: the crawl queue, a table of its own beside the documents (models.frontier).

Following SAP's xcrawler, a URL moves through persisted sets: queued (todo), leased (being
retrieved), done. Leases are renewed while their process is alive and expire when it is not;
a resumed run puts its leased URLs back in the queue, and in a shared crawl the other nodes take
back expired leases, so a crash, a kill -9 or a dead node loses nothing. Dequeuing leases a batch in breadth-first order
(by depth, then discovery order), in one statement that chooses and leases the batch (on
PostgreSQL with ``FOR UPDATE SKIP LOCKED``), so that several crawler processes, on one machine
over SQLite or on many over PostgreSQL, can share one frontier.

This module owns the frontier table: every statement that writes it is here. The frontier queues,
leases and gives back; the ledger's document table (documents.py) finishes a URL in its run, or
queues it again, as it records an outcome, through ``place`` and ``queue_documents`` below, in the
transaction of that write (tests/store/test_one_writer.py).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Integer, Row, and_, bindparam, case, func, literal, literal_column, or_, select, update

from searchcrawl.rules.lifecycle import State
from searchcrawl.rules.status_codes import Status
from searchcrawl.store.database import ROW_KEY, Database, now, url_hash
from searchcrawl.store.models import FrontierState, documents, frontier

if TYPE_CHECKING:
    from searchcrawl.store.runs import Runs

# URLs remembered as in the run, then forgotten. Each is kept as its hash (Python's 64-bit hash of
# the string), not its text: about 70 bytes a URL (the int and its set slot), 70 MB for a million,
# where the URLs' strings took about 110 bytes more each (they are not held elsewhere once queued).
# Two URLs of one run share a hash with odds of about 1 in 10^13 per look-up at a million URLs.
IN_RUN_LIMIT = 1_000_000
# URLs queued in one statement: a sitemap's 50,000 in one batch made some 50 MB of rows and
# parameters at once, on top of all the crawl holds (one transaction all the same)
ADD_CHUNK = 2_000


@dataclass(frozen=True, slots=True)
class Known:
    """What the document table knew of a URL when the frontier leased it: what a conditional GET
    (middlewares/conditional.py) and a sitemap's lastmod (middlewares/sitemaps.py) need, read
    with the lease so that they need no lookup of their own. Not the row: only these values."""

    state: str | None
    checksum: str | None = None
    last_modified: str | None = None
    etag: str | None = None
    last_fetched: datetime | None = None
    duplicate_of: str | None = None  # the URL it duplicates, while its status is 'duplicate'
    failures: int = 0  # its consecutive failing crawls (a sitemap's lastmod spares none of them)
    status: int | None = None  # its status: a navigation page out of the index is asked conditionally too

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> Known:
        """The values of a document-table row (``DocumentTable.get``, or a lease's)."""
        duplicate = row.get("status") == Status.DUPLICATE
        return cls(
            row.get("state"),
            row.get("checksum"),
            row.get("last_modified"),
            row.get("etag"),
            row.get("last_fetched"),
            row.get("duplicate_of") if duplicate else None,
            row.get("failures") or 0,
            row.get("status"),
        )


@dataclass
class Entry:
    """A URL in the frontier, with the request data that must survive a restart (JSON-able)."""

    url: str
    depth: int
    data: dict[str, Any] = field(default_factory=dict)
    known: Known | None = None  # as leased: what the document table knew of it


class Frontier:
    def __init__(self, database: Database, source: str, run_id: int, owner: str, lease_seconds: float = 600) -> None:
        self.database = database
        self.engine = database.engine
        self.source = source
        self.run_id = run_id
        self.owner = owner
        self.lease_duration = timedelta(seconds=lease_seconds)
        self.additions = 0  # URLs queued by this process: lets a scheduler know new work arrived
        self._in_run: set[int] = set()  # hash(url) of URLs this process knows are in the run's frontier already

    def in_run(self, url: str) -> bool:
        """Is ``url`` known to be queued or done in this run? Queuing it again would change
        nothing (the table keeps the first occurrence), so a link to it need not become a
        request at all. Most links of a site lead to pages already queued: this saves them the
        request, the boundary check and the database. A cache: False only means "not known here"."""
        return hash(url) in self._in_run

    def forget(self) -> None:
        """Forget which URLs are in the run (``in_run``): links remembered as queued by a
        transaction that did not commit after all are queued again when next met."""
        self._in_run.clear()

    def _remember(self, urls: Iterable[str]) -> None:
        if len(self._in_run) >= IN_RUN_LIMIT:
            self._in_run.clear()  # bounded memory; the table still discards repeats
        self._in_run.update(map(hash, urls))

    def add(self, entries: Sequence[Entry], again: bool = False, connection: Connection | None = None) -> int:
        """Queue URLs not yet queued in this run (others are discarded, as the seeds say), or
        with ``again`` whatever their state in the run (a retry of a failed download); in the
        caller's transaction on ``connection`` (the ledger's batch: a page's links with its
        outcome), else in one of its own.

        Returns how many were queued. A URL the document table does not know gets its row there
        (state queued); one known from earlier runs is queued again, its document state
        (indexed, ...) kept, and its depth the one it is queued with.
        """
        if not entries:
            return 0
        when = now()
        unique: dict[str, Entry] = {}
        for entry in entries:  # the first occurrence wins, and discovery order is kept (row ids)
            unique.setdefault(entry.url, entry)
        documents_insert, frontier_insert = self._inserts(again)
        pending = list(unique.values())

        keys = [url_hash(entry.url) for entry in pending]

        def queue(connection: Connection) -> int:
            added = 0
            # Two nodes queueing overlapping links would lock their rows in their pages' orders and
            # wait on each other (PostgreSQL aborts one: DeadlockDetected). On PostgreSQL the rows
            # are written in the order of their keys, every chunk included, so that any two such
            # transactions lock what they share in one order; their ids, taken from the sequence
            # first, still follow discovery order (which decides which copy of a content is indexed).
            ids = self.database.new_ids(connection, "documents", len(pending)) if len(pending) > 1 else None
            order = sorted(range(len(pending)), key=keys.__getitem__) if ids is not None else range(len(pending))
            for start in range(0, len(pending), ADD_CHUNK):
                chunk = [(index, pending[index]) for index in order[start : start + ADD_CHUNK]]
                rows = self._document_rows(chunk, keys, ids, when)
                requests = {
                    row["url_hash"]: json.dumps(entry.data, separators=(",", ":")) if entry.data else None
                    for row, (_index, entry) in zip(rows, chunk, strict=True)
                }
                # the rows written (new, or known and not in the run yet; with ``again`` all), with
                # their ids: the frontier's entries are written by id, never looked up by URL (on
                # PostgreSQL that look-up, planned while a first crawl's table was still empty,
                # read every row of the source: 13,000 rows a URL at 100,000)
                written = connection.execute(documents_insert, rows).all()
                if not written:
                    continue
                queued = self._frontier_rows(written, requests)
                result = connection.execute(frontier_insert, queued)
                added += result.rowcount if result.rowcount is not None and result.rowcount >= 0 else len(queued)
            return added

        # a deadlock with another transaction (one that does not write in key order) rolls this
        # one back, and it is run again (Database.transaction)
        added = queue(connection) if connection is not None else self.database.transaction(queue)
        self._remember(unique)
        self.additions += added
        return added

    def _document_rows(
        self, chunk: Sequence[tuple[int, Entry]], keys: Sequence[str], ids: Sequence[int] | None, when: datetime
    ) -> list[dict[str, Any]]:
        """The document-table rows of ``chunk``'s entries (by their index in the batch), as queued
        URLs; with their ids, when the batch took them from the sequence first (``add``)."""
        return [
            {
                **({"id": ids[index]} if ids is not None else {}),
                "source": self.source,
                "url": entry.url,
                "url_hash": keys[index],
                "state": State.QUEUED.value,
                "depth": entry.depth,
                "first_seen": when,
            }
            for index, entry in chunk
        ]

    def _frontier_rows(self, written: Iterable[Any], requests: Mapping[str, str | None]) -> list[dict[str, Any]]:
        """The frontier's rows of the document rows ``written`` (id, url hash, depth), queued in
        this run with their requests' data."""
        return [
            {
                "document_id": document_id,
                "source": self.source,
                "run_id": self.run_id,
                "state": FrontierState.QUEUED.value,
                "depth": depth,
                "request": requests[key],
            }
            for document_id, key, depth in written
        ]

    @functools.cache  # noqa: B019 - four statements per frontier, built once: building costs more than running
    def _inserts(self, again: bool) -> tuple[Any, Any]:
        """The document rows (new ones; a known URL queued anew takes the depth it is queued
        with when that is smaller: a link met before the maintenance plan, made while the crawl
        goes on, reaches the URL never makes it deeper than it is known), then the frontier's
        (each URL not in the run yet, or with ``again`` any), at its document's depth, by the
        ids the first returns."""
        # the row the insert met, by the name SQLite and PostgreSQL give it in ON CONFLICT's WHERE:
        # SQLAlchemy does not correlate a subquery there, and read ``documents`` anew in it ("not
        # in the run" became "nothing of the table in the run": once the run had begun, a known URL
        # met again was not queued, the sequence test's seed 5, crawl 3)
        in_run = (
            select(frontier.c.document_id)
            .where(frontier.c.document_id == literal_column("documents.id"), frontier.c.run_id == literal(self.run_id, Integer))
            .exists()
        )
        statement = self.database.insert(documents)
        shallower = case(
            (documents.c.depth.is_(None), statement.excluded.depth),
            (statement.excluded.depth < documents.c.depth, statement.excluded.depth),
            else_=documents.c.depth,
        )
        documents_insert = statement.on_conflict_do_update(
            index_elements=ROW_KEY, set_={"depth": shallower}, where=None if again else ~in_run
        ).returning(documents.c.id, documents.c.url_hash, documents.c.depth)
        entries = self.database.insert(frontier)
        frontier_insert = entries.on_conflict_do_update(
            index_elements=["document_id"],
            set_={
                "run_id": entries.excluded.run_id,
                "state": FrontierState.QUEUED.value,
                "depth": entries.excluded.depth,
                "request": entries.excluded.request,
                "lease_owner": None,
                "lease_expires": None,
            },
            where=None if again else frontier.c.run_id != entries.excluded.run_id,
        )
        return documents_insert, frontier_insert

    def _mine(self, state: FrontierState) -> list[Any]:
        """The conditions of this run's URLs in ``state``."""
        return [frontier.c.source == self.source, frontier.c.run_id == self.run_id, frontier.c.state == state]

    def lease(self, count: int) -> list[Entry]:
        """Take up to ``count`` queued URLs (shallowest first) for this owner."""
        # One statement: the batch is chosen and leased at once, so two processes never lease the
        # same URL. PostgreSQL locks the chosen rows and skips those another node is taking (SKIP
        # LOCKED); SQLite takes its write lock for the statement (a SELECT, then an UPDATE, in two
        # statements left the gap between them open: several local processes leased one URL).
        # Then, in the same transaction, what the document table knows of them (Known).
        chosen = (
            select(frontier.c.document_id)
            .where(*self._mine(FrontierState.QUEUED))
            .order_by(frontier.c.depth, frontier.c.document_id)
            .limit(count)
        )
        if self.engine.dialect.name == "postgresql":
            chosen = chosen.with_for_update(skip_locked=True)
        statement = (
            update(frontier)
            .where(frontier.c.document_id.in_(chosen.scalar_subquery()))
            .values(state=FrontierState.LEASED, lease_owner=self.owner, lease_expires=now() + self.lease_duration)
            .returning(frontier.c.document_id, frontier.c.depth, frontier.c.request)
        )

        def take(connection: Connection) -> tuple[list[Any], dict[int, Any]]:
            leased = sorted(connection.execute(statement).all(), key=lambda row: (row.depth or 0, row.document_id))
            if not leased:
                return [], {}
            known = {
                row["id"]: row
                for row in connection.execute(
                    select(
                        documents.c.id,
                        documents.c.url,
                        documents.c.state,
                        documents.c.checksum,
                        documents.c.last_modified,
                        documents.c.etag,
                        documents.c.last_fetched,
                        documents.c.status,
                        documents.c.duplicate_of,
                        documents.c.failures,
                    ).where(documents.c.id.in_([row.document_id for row in leased]))
                ).mappings()
            }
            return leased, known

        leased, known = self.database.transaction(take)
        if not leased:
            return []
        entries = [
            Entry(
                known[row.document_id]["url"],
                row.depth or 0,
                json.loads(row.request) if row.request else {},
                Known.of(dict(known[row.document_id])),
            )
            for row in leased
        ]
        self._remember(entry.url for entry in entries)
        return entries

    def requeue_gone(self, runs: Runs, within: float, keep_own: bool = True) -> int:
        """Put back in the queue the URLs leased by nodes no longer working on the run (their
        process gone, or no heartbeat for ``within`` seconds): a resumed run's, or a shared
        run's dead nodes'. Every other live node's leases stay, and this node's unless not
        ``keep_own`` (as it joins: an earlier session's process may have had its name, host:pid,
        as in a container, and left its leases behind). The live nodes are read
        in the same transaction, under the lock a node joins the run under, so a node joining
        meanwhile waits, and its first leases are never taken for a dead node's. (Read in a
        transaction of their own, they missed a node that joined in between: 16 local processes
        starting together took each other's first leases back, and pages were fetched 2-3 times.)"""

        def requeue(connection: Connection) -> int:
            live = runs.nodes_locked(connection, self.source, self.run_id, within, but=self.owner)
            return self._requeue(connection, keep_owners=[self.owner, *live] if keep_own else live)

        return self.database.transaction(requeue)

    def requeue_leased(self, owner: str | None = None, expired_only: bool = False) -> int:
        """Put leased URLs back in the queue: one owner's (a process that stops), or those whose
        lease expired (a dead node's)."""
        return self.database.transaction(lambda connection: self._requeue(connection, owner, expired_only))

    def _requeue(
        self, connection: Connection, owner: str | None = None, expired_only: bool = False, keep_owners: Sequence[str] = ()
    ) -> int:
        conditions = self._mine(FrontierState.LEASED)
        if owner is not None:
            conditions.append(frontier.c.lease_owner == owner)
        if keep_owners:
            conditions.append(or_(frontier.c.lease_owner.is_(None), frontier.c.lease_owner.notin_(list(keep_owners))))
        if expired_only:
            conditions.append(frontier.c.lease_expires < now())
        result = connection.execute(
            update(frontier).where(and_(*conditions)).values(state=FrontierState.QUEUED, lease_owner=None, lease_expires=None)
        )
        return result.rowcount or 0

    def leased_by(self, owner: str) -> list[tuple[str, int]]:
        """(url, depth) of the URLs ``owner`` holds leased in this run."""
        with self.engine.connect() as connection:
            rows: Sequence[Row[str, int | None]] = connection.execute(
                select(documents.c.url, frontier.c.depth)
                .join_from(frontier, documents, documents.c.id == frontier.c.document_id)
                .where(*self._mine(FrontierState.LEASED), frontier.c.lease_owner == owner)
            ).all()
            return [(url, depth or 0) for url, depth in rows]

    def renew(self) -> int:
        """Extend this owner's leases: work in flight (or waiting in its buffer) is not expired
        and handed to another node while this one is alive. Returns how many were renewed."""
        statement = (
            update(frontier)
            .where(*self._mine(FrontierState.LEASED), frontier.c.lease_owner == self.owner)
            .values(lease_expires=now() + self.lease_duration)
        )
        return self.database.transaction(lambda connection: connection.execute(statement).rowcount or 0)

    def present(self) -> set[FrontierState]:
        """Which of the frontier's states (queued, leased, done) at least one URL of this run is in:
        three index look-ups, however large the run, where ``counts`` reads all of its rows; a
        node waiting for the others' work asks it every IDLE_RECHECK."""

        def some(state: FrontierState) -> Any:
            return select(frontier.c.document_id).where(*self._mine(state)).exists()

        with self.engine.connect() as connection:
            row = connection.execute(select(*(some(state) for state in FrontierState))).one()
        return {state for state, found in zip(FrontierState, row, strict=True) if found}

    def counts(self) -> dict[FrontierState, int]:
        """How many URLs of this run are queued, leased and done."""
        with self.engine.connect() as connection:
            rows: Sequence[Row[str | None, int]] = connection.execute(
                select(frontier.c.state, func.count())
                .where(frontier.c.source == self.source, frontier.c.run_id == self.run_id)
                .group_by(frontier.c.state)
            ).all()
            counts = dict.fromkeys(FrontierState, 0)
            counts.update({FrontierState(state): number for state, number in rows if state in counts})
            return counts


# --- the ledger's writes of the frontier (documents.py), in the transaction of its own -----------

# the columns of a frontier entry the ledger sets as it finishes a URL or queues it again
ENTRY_COLUMNS = ("run_id", "state", "lease_owner", "lease_expires", "request")


def place(
    database: Database,
    connection: Connection,
    source: str,
    url: str,
    values: Mapping[str, Any],
    entry: int | None = None,
    depth: int | None = None,
) -> None:
    """Put ``url``'s entry where ``values`` say (``run_id`` and ``state``, and which of
    ENTRY_COLUMNS they name): an outcome recorded finishes the URL in the current run (done),
    or queues it again. Its document row is written already (in this transaction). ``entry``:
    the document id of a URL known to have an entry, which is updated (one look-up by key, on
    every page's outcome); otherwise one is made if the URL has none, at its document's depth.
    ``depth``: the depth its outcome says (None: as it is)."""
    if entry is not None:
        columns = (*values, *(("depth",) if depth is not None else ()))

        def build_update() -> Any:
            return (
                update(frontier)
                .where(frontier.c.document_id == bindparam("w_id"))
                .values({column: bindparam(f"v_{column}", type_=frontier.c[column].type) for column in columns})
            )

        parameters = {f"v_{column}": value for column, value in values.items()}
        if depth is not None:
            parameters["v_depth"] = depth
        connection.execute(database.statement(("frontier_update", columns), build_update), {**parameters, "w_id": entry})
        return
    columns = tuple(values)

    def build() -> Any:
        chosen = select(
            documents.c.id,
            documents.c.source,
            documents.c.depth,
            *(bindparam(f"v_{column}", type_=frontier.c[column].type) for column in columns),
        ).where(documents.c.source == bindparam("w_source"), documents.c.url_hash == bindparam("w_url_hash"))
        statement = database.insert(frontier).from_select(["document_id", "source", "depth", *columns], chosen)
        return statement.on_conflict_do_update(
            index_elements=["document_id"],
            set_={column: statement.excluded[column] for column in ("depth", *columns)},
        )

    statement = database.statement(("frontier_place", columns), build)
    parameters = {f"v_{column}": value for column, value in values.items()}
    connection.execute(statement, {**parameters, "w_source": source, "w_url_hash": url_hash(url)})


def queue_documents(
    database: Database, connection: Connection, run_id: int, where: Any, *, new_in_run: bool = False, drop_request: bool = False
) -> int:
    """Queue again in run ``run_id`` the documents ``where`` selects (a condition on the
    documents table), each at its document's depth: a duplicate whose original left the index,
    a holder called back, a maintenance crawl's known URLs. With ``new_in_run``, only those not
    in the run yet (a node that joined may have queued, leased or fetched them meanwhile); with
    ``drop_request``, the request data of an earlier run goes. Returns how many were queued."""
    chosen = select(
        documents.c.id, documents.c.source, documents.c.depth, literal(run_id, Integer), literal(FrontierState.QUEUED.value)
    ).where(where)
    statement = database.insert(frontier).from_select(["document_id", "source", "depth", "run_id", "state"], chosen)
    assignments: dict[str, Any] = {
        "run_id": statement.excluded.run_id,
        "state": FrontierState.QUEUED.value,
        "depth": statement.excluded.depth,
        "lease_owner": None,
        "lease_expires": None,
    }
    if drop_request:
        assignments["request"] = None
    statement = statement.on_conflict_do_update(
        index_elements=["document_id"],
        set_=assignments,
        where=frontier.c.run_id != statement.excluded.run_id if new_in_run else None,
    )
    # counted from what the statement returns: PostgreSQL's driver gives no row count (-1) for an
    # INSERT ... SELECT ... ON CONFLICT, and the plan said it queued -200 URLs
    return len(connection.execute(statement.returning(frontier.c.document_id)).all())


def finish_queued(
    database: Database, connection: Connection, run_id: int, document_ids: Sequence[int], values: Mapping[str, Any]
) -> set[int]:
    """Finish (``values``: done) in run ``run_id`` the entries of ``document_ids`` still queued
    in it, or not in it yet (an earlier run's), in the caller's transaction; an entry leased
    meanwhile keeps its request. Returns the ids finished, whose documents the caller writes
    (DocumentTable.record_spared).

    On PostgreSQL no sequential scan, for the rest of the caller's transaction (whose other
    statements are all by key): the planner read the whole frontier for each batch of 500 ids
    while the table's statistics were stale or it held fewer than about 300,000 rows (issue
    58: 21 scans, 200,001 rows, for 10,000 URLs), where 500 look-ups by the primary key read 500."""
    columns = tuple(values)
    if database.engine.dialect.name == "postgresql":
        connection.exec_driver_sql("SET LOCAL enable_seqscan = off")

    def build() -> Any:
        return (
            update(frontier)
            .where(
                frontier.c.document_id.in_(bindparam("w_ids", expanding=True)),
                or_(frontier.c.run_id != bindparam("w_run"), frontier.c.state == FrontierState.QUEUED.value),
            )
            .values({column: bindparam(f"v_{column}", type_=frontier.c[column].type) for column in columns})
            .returning(frontier.c.document_id)
        )

    parameters = {f"v_{column}": value for column, value in values.items()}
    finished = connection.execute(
        database.statement(("finish_queued", columns), build), {**parameters, "w_ids": list(document_ids), "w_run": run_id}
    )
    return set(finished.scalars())
