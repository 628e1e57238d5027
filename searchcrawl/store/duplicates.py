"""The SQL of a content's copies among a source's documents: which copies there are, the
groups put in the index twice at once, and the duplicates released when their original leaves
or changes. Which copy holds a content is decided by the rules (rules/maintenance.py
``holder_of``, rules/ledger_rules.py), and when, by the Ledger (ledger.py); these read and
write as told."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, bindparam, exists, literal, or_, select, update

from searchcrawl.rules.lifecycle import COPY_STATUSES, State
from searchcrawl.store.columns import IN_INDEX, WITH_ENTRY, each_key, one_of
from searchcrawl.store.database import Database
from searchcrawl.store.frontier import queue_documents
from searchcrawl.store.models import FrontierState, documents, frontier


def copies(database: Database, connection: Connection, source: str, checksum: str, run_id: int | None) -> list[dict[str, Any]]:
    """The copies of a content among the source's URLs, in discovery order: those that hold
    it in the index (``holds``), and those out of it last found its duplicates (status 911,
    or 912: a replaced copy that answered 304 since; also while queued again to take the
    place of an original that left, when they keep the canonical they name), each as id,
    url, canonical_url, holds, and ``done``: fetched in run ``run_id`` already (or not in it)."""
    statement = database.statement(
        "copies",
        lambda: (
            select(
                documents.c.id,
                documents.c.url,
                documents.c.canonical_url,
                documents.c.state,
                documents.c.duplicate_of,
                frontier.c.run_id,
                frontier.c.state.label("frontier"),
            )
            .select_from(WITH_ENTRY)
            .where(
                documents.c.source == bindparam("source"),
                documents.c.checksum == bindparam("checksum"),
                or_(
                    one_of(documents.c.state, IN_INDEX) & documents.c.duplicate_of.is_(None),
                    ~one_of(documents.c.state, IN_INDEX)
                    & documents.c.status.in_([literal(code, documents.c.status.type) for code in COPY_STATUSES]),
                ),
            )
            .order_by(documents.c.id)
        ),
    )
    return [
        {
            "id": row.id,
            "url": row.url,
            "canonical_url": row.canonical_url,
            "holds": row.state in IN_INDEX and row.duplicate_of is None,
            "done": run_id is None or row.run_id != run_id or row.frontier == FrontierState.DONE,
        }
        for row in connection.execute(statement, {"source": source, "checksum": checksum}).mappings()
    ]


# The waiting contents looked up in one statement for their copies.
PENDING_CHUNK = 500


def waiting_contents() -> Any:
    """The contents (checksums) of the source's documents waiting in one cache (or in none:
    rows from before scale-out): looked up by state (``DISTINCT`` would make SQLite read the
    source by its checksum index instead, for the order)."""
    return select(documents.c.checksum).where(
        documents.c.source == bindparam("source"),
        documents.c.state == State.PENDING.value,
        or_(documents.c.cached_by == bindparam("cached_by"), documents.c.cached_by.is_(None)),
    )


def in_index_with_contents(dialect: str) -> Any:
    """The source's documents in the index, not duplicates themselves, of the given contents
    (``checksums``), by content, in discovery order: each content looked up by its checksum
    (columns.py ``each_key``)."""
    query = select(documents.c.id, documents.c.url, documents.c.canonical_url, documents.c.checksum).where(
        documents.c.source == bindparam("source"),
        one_of(documents.c.state, IN_INDEX),
        documents.c.duplicate_of.is_(None),
    )
    statement = each_key(dialect, query, documents.c.checksum, "checksums")
    return statement.order_by(statement.selected_columns.checksum, statement.selected_columns.id)


def pending_groups(database: Database, source: str, cached_by: str) -> list[list[dict[str, Any]]]:
    """The source's documents in the index, not duplicates themselves, of each content that
    two or more of them have and that a document waiting in ``cached_by`` (or in no cache) has;
    each as id, url, canonical_url, checksum; by content, in discovery order. Run on every push
    (issue 58: a statement per cached page was 3 % of a shared crawl's CPU): the waiting rows by
    state, then each content's copies by key (columns.py ``each_key``). PostgreSQL plans a table
    it has not analysed yet (a first crawl's first minute) as holding a row or so, and the one
    statement with two nested subqueries this was ran as nested loops over the whole source,
    for more than ten minutes at a thousand rows, while that crawl waited on it."""
    groups: dict[str, list[dict[str, Any]]] = {}
    with database.single.connect() as connection:
        rows = connection.execute(
            database.statement("waiting_contents", waiting_contents), {"source": source, "cached_by": cached_by}
        )
        waiting = sorted({row.checksum for row in rows if row.checksum is not None})
        statement = database.statement("in_index_with_contents", lambda: in_index_with_contents(database.engine.dialect.name))
        for start in range(0, len(waiting), PENDING_CHUNK):
            chunk = waiting[start : start + PENDING_CHUNK]
            for found in connection.execute(statement, {"source": source, "checksums": chunk}).mappings():
                groups.setdefault(found["checksum"], []).append(dict(found))
    return [group for group in groups.values() if len(group) > 1]


def release_duplicates(database: Database, connection: Connection, source: str, url: str, run_id: int | None) -> None:
    """The duplicates of ``url`` are its duplicates no more, and queued again in run ``run_id``
    (None: in no run)."""
    duplicates = and_(documents.c.source == source, documents.c.duplicate_of == url)
    if run_id is not None:
        queue_documents(database, connection, run_id, duplicates)
    connection.execute(update(documents).where(duplicates).values(duplicate_of=None))


def free_copies(database: Database, connection: Connection, source: str, url: str, run_id: int, content: str) -> None:
    """``url``'s content changed to ``content``: its duplicates in run ``run_id`` (queued, leased
    or fetched in it) of another content are its duplicates no more, and queued again in it.
    Those not in the run are left to their next fetch, which compares them afresh (a redirect
    target outside the boundary is fetched only through its redirect, which may be gone)."""
    in_run = exists().where(frontier.c.document_id == documents.c.id, frontier.c.run_id == run_id)
    freed = and_(
        documents.c.source == source,
        documents.c.duplicate_of == url,
        documents.c.checksum.is_distinct_from(content),
        in_run,
    )
    queue_documents(database, connection, run_id, freed)
    connection.execute(update(documents).where(freed).values(duplicate_of=None))


def queue_copy(database: Database, connection: Connection, run_id: int, document_id: int) -> None:
    """The copy ``document_id`` queued again in run ``run_id`` (to hold its content)."""
    queue_documents(database, connection, run_id, documents.c.id == document_id)
