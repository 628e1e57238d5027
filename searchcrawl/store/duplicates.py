"""The SQL of a content's copies among a source's documents: which copies there are, the
groups put in the index twice at once, and the duplicates released when their original leaves.
Which copy holds a content is decided by the rules (rules/maintenance.py ``holder_of``,
rules/ledger_rules.py), and when, by the Ledger (ledger.py); these read and write as told."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, bindparam, func, literal, or_, select, update

from searchcrawl.rules.lifecycle import COPY_STATUSES, State
from searchcrawl.store.columns import IN_INDEX, WITH_ENTRY, one_of
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


def same_content_as_pending() -> Any:
    """The source's documents in the index, not duplicates themselves, of each content that
    two or more of them have and that a document waiting in one cache (or in none: rows
    from before scale-out) has; by content, in discovery order. Each look-up by key: the
    waiting rows by state, their copies by checksum (``checksum IS NOT NULL`` would make
    SQLite read the source by its checksum index instead)."""
    waiting = select(documents.c.checksum).where(
        documents.c.source == bindparam("source"),
        documents.c.state == State.PENDING.value,
        or_(documents.c.cached_by == bindparam("cached_by"), documents.c.cached_by.is_(None)),
    )
    in_index = and_(
        documents.c.source == bindparam("source"),
        one_of(documents.c.state, IN_INDEX),
        documents.c.duplicate_of.is_(None),
    )
    shared = (
        select(documents.c.checksum)
        .where(in_index, documents.c.checksum.in_(waiting))
        .group_by(documents.c.checksum)
        .having(func.count() > 1)
    )
    return (
        select(documents.c.id, documents.c.url, documents.c.canonical_url, documents.c.checksum)
        .where(in_index, documents.c.checksum.in_(shared))
        .order_by(documents.c.checksum, documents.c.id)
    )


def pending_groups(database: Database, source: str, cached_by: str) -> list[list[dict[str, Any]]]:
    """The groups of ``same_content_as_pending``: one statement a push, returning only the
    contents with copies (issue 58: one a cached page was 3 % of a shared crawl's CPU)."""
    with database.single.connect() as connection:
        rows = connection.execute(
            database.statement("same_content_as_pending", same_content_as_pending), {"source": source, "cached_by": cached_by}
        ).mappings()
        groups: dict[str, list[dict[str, Any]]] = {}
        for found in rows:
            groups.setdefault(found["checksum"], []).append(dict(found))
    return list(groups.values())


def release_duplicates(database: Database, connection: Connection, source: str, url: str, run_id: int | None) -> None:
    """The duplicates of ``url`` are its duplicates no more, and queued again in run ``run_id``
    (None: in no run)."""
    duplicates = and_(documents.c.source == source, documents.c.duplicate_of == url)
    if run_id is not None:
        queue_documents(database, connection, run_id, duplicates)
    connection.execute(update(documents).where(duplicates).values(duplicate_of=None))


def queue_copy(database: Database, connection: Connection, run_id: int, document_id: int) -> None:
    """The copy ``document_id`` queued again in run ``run_id`` (to hold its content)."""
    queue_documents(database, connection, run_id, documents.c.id == document_id)
