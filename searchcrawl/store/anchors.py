"""The SQL of anchor text (content/anchors.py): the words of each indexed page's links, and the
documents whose anchor field is due to be set in Solr.

The anchors table holds, per source, a row for each (linking page, target, text), keyed by the
URLs' hashes (``url_hash``). A page's rows are replaced whole when it is parsed and go when it
leaves the index, with its outcome and in its transaction; the documents whose anchors that
changed are marked due (``documents.anchors_due``, a count each change adds one to), and the
push sets their field and unmarks them, each only if no change came meanwhile (``clear_due``).
What counts for a target is read here (``candidates``: the anchors of the source's pages in the
index, with their access) and decided by content/anchors.py. The writes are the Ledger's alone
(store/ledger.py ``_keep_anchors``, ``mark_anchors_set``; tests/store/test_one_writer.py), and
this module is the only writer of the anchors table.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, and_, bindparam, delete, func, select, update

from searchcrawl.rules.lifecycle import State
from searchcrawl.store.columns import IN_INDEX, each_key, one_of
from searchcrawl.store.database import Database
from searchcrawl.store.models import anchors, documents

AnchorKey = tuple[str, str]  # (the target's url_hash, the text)
# the states of a document Solr may hold: in the index, or held there by the mass-deletion guard
IN_SOLR = (*IN_INDEX, State.REMOVING.value)


def read_page(database: Database, connection: Connection, source: str, page_hash: str) -> set[AnchorKey]:
    """The anchors a page has now, as (target hash, text)."""
    statement = database.statement(
        "anchors_of_page",
        lambda: select(anchors.c.target_hash, anchors.c.text).where(
            anchors.c.source == bindparam("source"), anchors.c.page_hash == bindparam("page_hash")
        ),
    )
    return {(row.target_hash, row.text) for row in connection.execute(statement, {"source": source, "page_hash": page_hash})}


def replace_page(database: Database, connection: Connection, source: str, page_hash: str, wanted: Collection[AnchorKey]) -> None:
    """The page's anchors become ``wanted`` (none: it has none)."""
    connection.execute(
        database.statement(
            "anchors_delete_page",
            lambda: delete(anchors).where(anchors.c.source == bindparam("source"), anchors.c.page_hash == bindparam("page_hash")),
        ),
        {"source": source, "page_hash": page_hash},
    )
    if wanted:
        rows = [{"source": source, "page_hash": page_hash, "target_hash": target, "text": text} for target, text in wanted]
        connection.execute(anchors.insert(), rows)


def mark_due(database: Database, connection: Connection, source: str, targets: Iterable[str]) -> None:
    """The documents of these target hashes that Solr may hold (pending, indexed, or removing:
    held by the mass-deletion guard) are due: their count goes up by one (a document not in the
    index gets its field when it is pushed)."""
    keys = [{"b_source": source, "b_url_hash": target} for target in sorted(set(targets))]
    if not keys:
        return
    statement = database.statement(
        "anchors_mark_due",
        lambda: (
            update(documents)
            .where(
                documents.c.source == bindparam("b_source"),
                documents.c.url_hash == bindparam("b_url_hash"),
                one_of(documents.c.state, IN_SOLR),
            )
            .values(anchors_due=func.coalesce(documents.c.anchors_due, 0) + 1)
        ),
    )
    connection.execute(statement, keys)


def clear_due(database: Database, connection: Connection, source: str, done: Sequence[tuple[str, int]]) -> None:
    """These (url hash, due count) documents' fields were set as their anchors stood when their
    count was read: unmarked, each only while its count is still that one (a change since keeps
    it due, for the next push)."""
    if not done:
        return
    statement = database.statement(
        "anchors_clear_due",
        lambda: (
            update(documents)
            .where(
                documents.c.source == bindparam("b_source"),
                documents.c.url_hash == bindparam("b_url_hash"),
                documents.c.anchors_due == bindparam("b_due"),
            )
            .values(anchors_due=None)
        ),
    )
    connection.execute(statement, [{"b_source": source, "b_url_hash": key, "b_due": due} for key, due in done])


def due_documents(database: Database, source: str, after: int, limit: int) -> list[Any]:
    """The source's documents whose anchor field is due, by id after ``after``, at most ``limit``:
    id, url, url_hash, state and their due count."""
    statement = database.statement(
        "anchors_due",
        lambda: (
            select(documents.c.id, documents.c.url, documents.c.url_hash, documents.c.state, documents.c.anchors_due)
            .where(
                documents.c.source == bindparam("source"),
                documents.c.anchors_due.is_not(None),
                documents.c.id > bindparam("after"),
            )
            .order_by(documents.c.id)
            .limit(bindparam("limit"))
        ),
    )
    with database.single.connect() as connection:
        return list(connection.execute(statement, {"source": source, "after": after, "limit": limit}))


def candidates(database: Database, source: str, targets: Sequence[str]) -> dict[str, list[tuple[str, str, str | None]]]:
    """The anchors of these target hashes from the source's pages in the index (pending or
    indexed), by target: (the linking page's hash, the text, its access column). Whether each
    counts is content/anchors.py's ``anchor_field``'s to say."""
    found: dict[str, list[tuple[str, str, str | None]]] = {}
    if not targets:
        return found
    dialect = database.engine.dialect.name
    statement = database.statement(
        ("anchors_candidates", dialect),
        lambda: each_key(
            dialect,
            select(anchors.c.target_hash, anchors.c.page_hash, anchors.c.text, documents.c.access)
            .select_from(
                anchors.join(documents, and_(documents.c.source == anchors.c.source, documents.c.url_hash == anchors.c.page_hash))
            )
            .where(anchors.c.source == bindparam("source"), one_of(documents.c.state, IN_INDEX)),
            anchors.c.target_hash,
            "targets",
        ),
    )
    with database.single.connect() as connection:
        for row in connection.execute(statement, {"source": source, "targets": list(targets)}):
            found.setdefault(row.target_hash, []).append((row.page_hash, row.text, row.access))
    return found
